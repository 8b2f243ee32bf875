package sqlite

import (
	"context"
	"fmt"

	"github.com/queuehq/queue/app"
)

// ListDead implements app.Store.
func (s *Store) ListDead(ctx context.Context, f app.DeadFilter) ([]*app.DeadJob, error) {
	w := deadWhere(f)
	rows, err := s.rdb.QueryContext(ctx, `SELECT `+deadCols+` FROM dead_letter_jobs`+w.String()+order(f.Asc)+limit(f.Limit, 50), w.args...)
	out, err := collect(rows, err, scanDead)
	if err != nil {
		return nil, fmt.Errorf("list dead-letter queue: %w", mapErr(err))
	}
	return out, nil
}

// CountDead implements app.Store.
func (s *Store) CountDead(ctx context.Context, f app.DeadFilter) (int, error) {
	f.AfterID = 0
	w := deadWhere(f)
	var n int
	err := s.rdb.QueryRowContext(ctx, `SELECT count(*) FROM dead_letter_jobs`+w.String(), w.args...).Scan(&n)
	return n, mapErr(err)
}

func (w *wtx) selectDead(f app.DeadFilter) ([]*app.DeadJob, error) {
	f.Asc = true
	wh := deadWhere(f)
	rows, err := w.query(`SELECT `+deadCols+` FROM dead_letter_jobs`+wh.String()+order(true)+limit(f.Limit, app.BulkBatch), wh.args...)
	return collect(rows, err, scanDead)
}
