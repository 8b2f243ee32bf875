package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/queuehq/queue/app"
)

// Values implements app.Store. Kinds: a walk of jobs_kind (in byte order,
// COLLATE "C"), each step the next kind after the last, one index seek per
// value however many jobs share a kind. Tags: the newest app.MaxTagScan
// jobs' (they have no index).
func (s *Store) Values(ctx context.Context, field, prefix string, limit int) ([]string, error) {
	var q string
	args := []any{prefix, app.PrefixEnd(prefix), limit}
	switch field {
	case "kind":
		q = `WITH RECURSIVE k(v, n) AS (
			SELECT (SELECT kind FROM jobs WHERE kind COLLATE "C" >= $1 AND kind COLLATE "C" < $2 ORDER BY kind COLLATE "C" LIMIT 1), 1
			UNION ALL
			SELECT (SELECT kind FROM jobs WHERE kind COLLATE "C" > k.v COLLATE "C" AND kind COLLATE "C" < $2 ORDER BY kind COLLATE "C" LIMIT 1), n + 1
			FROM k WHERE k.v IS NOT NULL AND n < $3)
			SELECT v FROM k WHERE v IS NOT NULL`
	case "tag":
		q = `SELECT DISTINCT t COLLATE "C" FROM (SELECT tags FROM jobs ORDER BY id DESC LIMIT $4) AS j, unnest(j.tags) AS t
			WHERE t COLLATE "C" >= $1 AND t COLLATE "C" < $2 ORDER BY 1 LIMIT $3`
		args = append(args, app.MaxTagScan)
	default:
		return nil, fmt.Errorf("values of %q: not a field with values", field)
	}
	out, err := readRows(ctx, s, func(row pgx.Row) (v string, err error) { return v, row.Scan(&v) }, q, args...)
	if err != nil {
		return nil, fmt.Errorf("values of %s: %w", field, err)
	}
	return out, nil
}
