package sqlite

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

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

// Replay implements app.Store.
func (s *Store) Replay(ctx context.Context, req app.ReplayRequest) ([]*app.Job, error) {
	var out []*app.Job
	err := s.write(ctx, func(w *wtx) error {
		out = nil
		rows, err := w.selectDead(req.Filter)
		if err != nil {
			return err
		}
		if len(rows) == 0 && len(req.Filter.IDs) == 1 {
			return fmt.Errorf("dead-letter row %d: %w", req.Filter.IDs[0], app.ErrNotFound)
		}
		start := req.RunAt
		if start.IsZero() || start.Before(w.now) {
			start = w.now
		}
		for i, d := range rows {
			nj := app.ReplayJob(d, start.Add(req.Spacing*time.Duration(i)))
			job, err := w.insertJob(&nj)
			if err != nil {
				return err
			}
			if _, err := w.exec(`UPDATE dead_letter_jobs SET resurrection_count = resurrection_count + 1,
				last_resurrection_at = ? WHERE id = ?`, ms(w.now), d.ID); err != nil {
				return err
			}
			data, _ := json.Marshal(map[string]any{"dead_letter_id": d.ID, "job_id": job.ID})
			w.Event(app.EventDLQReplayed, d.ID, d.Queue, d.Kind, data)
			out = append(out, job)
		}
		return w.Audit(req.Audit, len(out))
	})
	if err != nil {
		return nil, fmt.Errorf("replay: %w", mapErr(err))
	}
	return out, nil
}
