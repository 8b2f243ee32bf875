package postgres

import (
	"context"
	"fmt"

	"github.com/queuehq/queue/app"
)

// ListDead implements app.Store.
func (s *Store) ListDead(ctx context.Context, f app.DeadFilter) ([]*app.DeadJob, error) {
	w := deadWhere(f)
	out, err := readRows(ctx, s, scanDead, `SELECT `+deadCols+` FROM dead_letter_jobs`+w.String()+order(f.Asc)+limit(f.Limit, 50), w.args...)
	if err != nil {
		return nil, fmt.Errorf("list dead-letter queue: %w", err)
	}
	return out, nil
}

// CountDead implements app.Store.
func (s *Store) CountDead(ctx context.Context, f app.DeadFilter) (n int, err error) {
	f.AfterID = 0
	w := deadWhere(f)
	if err := s.readRow(ctx, `SELECT count(*) FROM dead_letter_jobs`+w.String(), w.args, &n); err != nil {
		return 0, fmt.Errorf("count dead-letter queue: %w", err)
	}
	return n, nil
}

// selectDead reads and locks the dead-letter rows of f, in id order.
func (w *wtx) selectDead(f app.DeadFilter) ([]*app.DeadJob, error) {
	f.Asc = true
	wh := deadWhere(f)
	return scanDeads(w.query(`SELECT `+deadCols+` FROM dead_letter_jobs`+wh.String()+order(true)+limit(f.Limit, app.BulkBatch)+` FOR UPDATE`, wh.args...))
}

// Jobs implements app.Tx: it reads and locks the jobs of f, in id order.
func (w *wtx) Jobs(f app.JobFilter) ([]*app.Job, error) {
	f.Asc = true
	wh := jobWhere(f, w.now)
	return scanJobs(w.query(`SELECT `+jobCols+` FROM jobs`+wh.String()+order(true)+limit(f.Limit, app.BulkBatch)+` FOR UPDATE`, wh.args...))
}
