package sqlite

import (
	"context"
	"fmt"

	"github.com/queuehq/queue/app"
	"github.com/queuehq/queue/internal/sqlq"
)

// ListDead implements app.Store.
func (s *Store) ListDead(ctx context.Context, f app.DeadFilter) ([]*app.DeadJob, error) {
	w := deadWhere(f)
	rows, err := s.rdb.QueryContext(ctx, `SELECT `+deadCols+` FROM dead_letter_jobs`+w.String()+sqlq.Page(f.Asc, f.Limit, 50, "moved_to_dead_letter_at", "id"), w.args...)
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
	rows, err := w.query(`SELECT `+deadCols+` FROM dead_letter_jobs`+wh.String()+sqlq.Page(true, f.Limit, app.BulkBatch, "id"), wh.args...)
	return collect(rows, err, scanDead)
}

// DeadGroups implements app.Store.
func (s *Store) DeadGroups(ctx context.Context) ([]app.DeadGroup, error) {
	rows, err := s.rdb.QueryContext(ctx, `SELECT queue, kind, dead_letter_reason,
			strftime('%Y-%m-%d', moved_to_dead_letter_at / 1000, 'unixepoch') AS day, count(*),
			sum(resurrection_count > 0), sum(resurrection_count), min(moved_to_dead_letter_at)
		FROM dead_letter_jobs GROUP BY queue, kind, dead_letter_reason, day`)
	out, err := collect(rows, err, func(sc scanner) (g app.DeadGroup, err error) {
		var oldest int64
		err = sc.Scan(&g.Queue, &g.Kind, &g.Reason, &g.Day, &g.Rows, &g.Replayed, &g.Replays, &oldest)
		g.Oldest = fromMS(oldest)
		return g, err
	})
	if err != nil {
		return nil, fmt.Errorf("dead-letter stats: %w", mapErr(err))
	}
	return out, nil
}
