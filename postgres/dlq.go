package postgres

import (
	"context"
	"fmt"

	"github.com/queuehq/queue/app"
)

// ListDead implements app.Store.
func (s *Store) ListDead(ctx context.Context, f app.DeadFilter) ([]*app.DeadJob, error) {
	if err := s.enter(); err != nil {
		return nil, err
	}
	defer s.leave()
	w := deadWhere(f)
	out, err := scanDeads(s.pool.Query(ctx, `SELECT `+deadCols+` FROM dead_letter_jobs`+w.String()+order(f.Asc)+limit(f.Limit, 50), w.args...))
	if err != nil {
		return nil, fmt.Errorf("list dead-letter queue: %w", mapErr(err))
	}
	return out, nil
}

// CountDead implements app.Store.
func (s *Store) CountDead(ctx context.Context, f app.DeadFilter) (int, error) {
	if err := s.enter(); err != nil {
		return 0, err
	}
	defer s.leave()
	f.AfterID = 0
	w := deadWhere(f)
	var n int
	if err := s.pool.QueryRow(ctx, `SELECT count(*) FROM dead_letter_jobs`+w.String(), w.args...).Scan(&n); err != nil {
		return 0, fmt.Errorf("count dead-letter queue: %w", mapErr(err))
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
