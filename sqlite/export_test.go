package sqlite

import (
	"context"
	"strings"
	"time"

	"github.com/queuehq/queue/app"
)

// ClaimSQLForTest is the claim statement with literal values, for plan tests.
var ClaimSQLForTest = literal(claimSQL(`:now + timeout_ms`, 0))

// ClaimKindSQLForTest is the claim statement for one kind, for plan tests.
var ClaimKindSQLForTest = literal(claimSQL(`:now + timeout_ms`, 1))

// ClaimKindsSQLForTest is the claim statement for two kinds, for plan tests.
var ClaimKindsSQLForTest = literal(claimSQL(`:now + timeout_ms`, 2))

func literal(q string) string {
	return strings.NewReplacer(":now", "1", ":due", "1", ":worker", "'w'", ":queue", "'q'", ":n", "10", ":kind0", "'a'", ":kind1", "'b'").Replace(q)
}

// CountStats counts every row, the truth the maintained counters must
// equal: the Stats of a read-only store, which counts them when asked.
func (s *Store) CountStats(ctx context.Context) ([]app.QueueStats, error) {
	ro, err := Open(ctx, s.path, Options{ReadOnly: true, StoreOptions: app.StoreOptions{Clock: s.clock}})
	if err != nil {
		return nil, err
	}
	defer ro.Close()
	return ro.Stats(ctx)
}

// SetJoinFor stretches how long a write transaction takes in late requests,
// so a test can line requests up behind a running one.
func (s *Store) SetJoinFor(d time.Duration) { s.joinFor = d }

// WriteForTest runs fn as a write request, as the store's own writes do.
func (s *Store) WriteForTest(ctx context.Context, fn func(exec func(q string, args ...any) error) error) error {
	return s.write(ctx, func(w *wtx) error {
		return fn(func(q string, args ...any) error { _, err := w.exec(q, args...); return err })
	})
}

// QueuedWrites is how many write requests wait for the writer.
func (s *Store) QueuedWrites() int { return len(s.reqs) }

// KeyLoadsSQLForTest and ReleaseSQLForTest are the key statements, for plan tests.
var (
	KeyLoadsSQLForTest = strings.NewReplacer("?1", "'q'", "?2", `'["a","b"]'`, "?3", "1").Replace(keyLoadsSQL)
	ReleaseSQLForTest  = strings.NewReplacer("?1", "1", "?2", "1", "?3", "'q'", "?4", `'["a","b"]'`).Replace(releaseSQL)
)

// ListSQLForTest is List's statement for f at now with its arguments, for
// plan tests.
func ListSQLForTest(f app.JobFilter, now time.Time) (string, []any) {
	w := jobWhere(f, now)
	return `SELECT ` + jobCols + ` FROM jobs` + w.String() + listOrder(f), w.args
}
