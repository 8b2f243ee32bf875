package sqlite

import (
	"context"
	"fmt"

	"github.com/queuehq/queue/app"
)

// Values implements app.Store. Kinds: a walk of jobs_kind, each step the
// next kind after the last (one index seek per value, however many jobs
// share a kind). Tags: the newest app.MaxTagScan jobs' (they have no index).
func (s *Store) Values(ctx context.Context, field, prefix string, limit int) ([]string, error) {
	var q string
	args := []any{prefix, app.PrefixEnd(prefix), limit}
	switch field {
	case "kind":
		q = `WITH RECURSIVE k(v, n) AS (
			SELECT (SELECT min(kind) FROM jobs WHERE kind >= ?1 AND kind < ?2), 1
			UNION ALL
			SELECT (SELECT min(kind) FROM jobs WHERE kind > k.v AND kind < ?2), n + 1 FROM k WHERE k.v IS NOT NULL AND n < ?3)
			SELECT v FROM k WHERE v IS NOT NULL`
	case "tag":
		q = `SELECT DISTINCT t.value FROM (SELECT tags FROM jobs ORDER BY id DESC LIMIT ?4) AS j, json_each(j.tags) AS t
			WHERE t.value >= ?1 AND t.value < ?2 ORDER BY t.value LIMIT ?3`
		args = append(args, app.MaxTagScan)
	default:
		return nil, fmt.Errorf("values of %q: not a field with values", field)
	}
	rows, err := s.rdb.QueryContext(ctx, q, args...)
	out, err := collect(rows, err, func(sc scanner) (v string, err error) { return v, sc.Scan(&v) })
	if err != nil {
		return nil, fmt.Errorf("values of %s: %w", field, mapErr(err))
	}
	return out, nil
}
