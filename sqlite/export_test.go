package sqlite

import (
	"context"
	"strings"

	"github.com/queuehq/queue/app"
)

// ClaimSQLForTest is the claim statement with literal values, for plan tests.
var ClaimSQLForTest = literal(claimSQL(`:now + timeout_ms`, 0))

// ClaimKindsSQLForTest is the claim statement for two kinds, for plan tests.
var ClaimKindsSQLForTest = literal(claimSQL(`:now + timeout_ms`, 2))

func literal(q string) string {
	return strings.NewReplacer(":now", "1", ":worker", "'w'", ":queue", "'q'", ":n", "10", ":kind0", "'a'", ":kind1", "'b'").Replace(q)
}

// CountStats counts every row, the truth the maintained counters must equal.
func (s *Store) CountStats(ctx context.Context) ([]app.QueueStats, error) { return s.countStats(ctx) }
