package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/queuehq/queue/app"
	"github.com/queuehq/queue/internal/sqlq"
)

// ListDead implements app.Store.
func (s *Store) ListDead(ctx context.Context, f app.DeadFilter) ([]*app.DeadJob, error) {
	w := deadWhere(f)
	out, err := readRows(ctx, s, scanDead, `SELECT `+deadCols+` FROM dead_letter_jobs`+w.String()+sqlq.Page(f.Asc, f.Limit, 50, "moved_to_dead_letter_at", "id"), w.args...)
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
	return scanDeads(w.query(`SELECT `+deadCols+` FROM dead_letter_jobs`+wh.String()+sqlq.Page(true, f.Limit, app.BulkBatch, "id")+` FOR UPDATE`, wh.args...))
}

// Jobs implements app.Tx: it reads and locks the jobs of f, in id order.
func (w *wtx) Jobs(f app.JobFilter) ([]*app.Job, error) {
	f.Asc = true
	wh := jobWhere(f, w.now)
	return scanJobs(w.query(`SELECT `+jobCols+` FROM jobs`+wh.String()+sqlq.Page(true, f.Limit, app.BulkBatch, "id")+` FOR UPDATE`, wh.args...))
}

// DeadGroups implements app.Store.
func (s *Store) DeadGroups(ctx context.Context) ([]app.DeadGroup, error) {
	out, err := readRows(ctx, s, func(row pgx.Row) (g app.DeadGroup, err error) {
		err = row.Scan(&g.Queue, &g.Kind, &g.Reason, &g.Day, &g.Rows, &g.Replayed, &g.Replays, &g.Oldest)
		g.Oldest = g.Oldest.UTC()
		return g, err
	}, `SELECT queue, kind, dead_letter_reason, to_char(moved_to_dead_letter_at AT TIME ZONE 'UTC', 'YYYY-MM-DD') AS day,
			count(*), count(*) FILTER (WHERE resurrection_count > 0), sum(resurrection_count)::bigint, min(moved_to_dead_letter_at)
		FROM dead_letter_jobs GROUP BY queue, kind, dead_letter_reason, day`)
	if err != nil {
		return nil, fmt.Errorf("dead-letter stats: %w", err)
	}
	return out, nil
}
