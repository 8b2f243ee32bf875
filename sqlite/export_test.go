package sqlite

import (
	"context"
	"strings"

	"github.com/queuehq/queue/app"
)

// ClaimSQLForTest is the claim statement with literal values, for plan tests.
var ClaimSQLForTest = strings.NewReplacer("?", "1").Replace(claimSQL(`? + timeout_ms`, ` AND kind IN ('a', 'b')`))

// CountStats counts every row, the truth the maintained counters must equal.
func (s *Store) CountStats(ctx context.Context) ([]app.QueueStats, error) { return s.countStats(ctx) }
