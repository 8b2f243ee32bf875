package postgres

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

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
		p := &pipe{}
		njs := make([]*app.NewJob, len(rows))
		ids := make([]int64, len(rows))
		for i, d := range rows {
			nj := app.ReplayJob(d, start.Add(req.Spacing*time.Duration(i)))
			njs[i], ids[i] = &nj, d.ID
		}
		out = w.insertJobs(p, njs)
		p.exec(`UPDATE dead_letter_jobs SET resurrection_count = resurrection_count + 1,
			last_resurrection_at = $1 WHERE id = ANY($2::bigint[])`, w.now, ids)
		if err := w.run(p); err != nil {
			return err
		}
		for i, d := range rows {
			data, _ := json.Marshal(map[string]any{"dead_letter_id": d.ID, "job_id": out[i].ID})
			w.Event(app.EventDLQReplayed, d.ID, d.Queue, d.Kind, data)
		}
		return w.Audit(req.Audit, len(out))
	})
	if err != nil {
		return nil, fmt.Errorf("replay: %w", mapErr(err))
	}
	return out, nil
}

// Jobs implements app.Tx: it reads and locks the jobs of f, in id order.
func (w *wtx) Jobs(f app.JobFilter) ([]*app.Job, error) {
	f.Asc = true
	wh := jobWhere(f, w.now)
	return scanJobs(w.query(`SELECT `+jobCols+` FROM jobs`+wh.String()+order(true)+limit(f.Limit, app.BulkBatch)+` FOR UPDATE`, wh.args...))
}
