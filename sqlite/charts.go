package sqlite

import (
	"context"
	"fmt"
	"time"

	"github.com/queuehq/queue/app"
)

// RollUp implements app.ChartStore: three statements and a sample per
// queue, in one write of the single writer.
func (s *Store) RollUp(ctx context.Context, r app.RollUp) error {
	err := s.write(ctx, func(w *wtx) error {
		if _, err := w.exec(`INSERT INTO series (queue, step, at, completed, failed, claimed, wait_ms, wait_max_ms)
			SELECT queue, 60, second / 60 * 60000, sum(completed), sum(failed), sum(claimed), sum(wait_ms), max(wait_max_ms)
			FROM throughput WHERE second >= ? AND second < ? GROUP BY queue, second / 60
			ON CONFLICT (queue, step, at) DO UPDATE SET completed = excluded.completed, failed = excluded.failed,
				claimed = excluded.claimed, wait_ms = excluded.wait_ms, wait_max_ms = excluded.wait_max_ms`,
			r.From.Unix(), r.To.Unix()); err != nil {
			return fmt.Errorf("minutes: %w", err)
		}
		if !r.DepthAt.IsZero() {
			at := ms(r.DepthAt.Truncate(time.Minute))
			if _, err := w.exec(`UPDATE series SET depth = 0, depth_max = 0 WHERE step = 60 AND at = ? AND depth_max > 0`, at); err != nil {
				return fmt.Errorf("depth: %w", err)
			}
			for q, n := range r.Depth {
				if _, err := w.exec(`INSERT INTO series (queue, step, at, depth, depth_max) VALUES (?, 60, ?, ?, ?)
					ON CONFLICT (queue, step, at) DO UPDATE SET depth = excluded.depth, depth_max = excluded.depth_max`, q, at, n, n); err != nil {
					return fmt.Errorf("depth of %s: %w", q, err)
				}
			}
		}
		if err := w.Fault(app.FaultRollUp, 0); err != nil {
			return err
		}
		if _, err := w.exec(`INSERT INTO series (queue, step, at, completed, failed, claimed, wait_ms, wait_max_ms, depth, depth_max)
			SELECT queue, 3600, at / 3600000 * 3600000, sum(completed), sum(failed), sum(claimed), sum(wait_ms), max(wait_max_ms),
				sum(depth), max(depth_max)
			FROM series WHERE step = 60 AND at >= ? AND at < ? GROUP BY queue, at / 3600000
			ON CONFLICT (queue, step, at) DO UPDATE SET completed = excluded.completed, failed = excluded.failed,
				claimed = excluded.claimed, wait_ms = excluded.wait_ms, wait_max_ms = excluded.wait_max_ms,
				depth = excluded.depth, depth_max = excluded.depth_max`,
			ms(r.HoursFrom), ms(r.To)); err != nil {
			return fmt.Errorf("hours: %w", err)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("roll up %s to %s: %w", r.From.UTC().Format(time.DateTime), r.To.UTC().Format(time.DateTime), mapErr(err))
	}
	return nil
}

// Series implements app.ChartStore. Every queue's steps are summed (the
// largest depth too: the sum of each queue's largest).
func (s *Store) Series(ctx context.Context, queue string, from time.Time, step time.Duration) ([]app.SeriesRow, error) {
	q := `SELECT at, completed, failed, claimed, wait_ms, wait_max_ms, depth, depth_max FROM series
		WHERE queue = ? AND step = ? AND at >= ? ORDER BY at`
	args := []any{queue, int64(step / time.Second), ms(from)}
	if queue == "" {
		q = `SELECT at, sum(completed), sum(failed), sum(claimed), sum(wait_ms), max(wait_max_ms), sum(depth), sum(depth_max)
			FROM series WHERE step = ? AND at >= ? GROUP BY at ORDER BY at`
		args = args[1:]
	}
	rows, err := s.rdb.QueryContext(ctx, q, args...)
	out, err := collect(rows, err, func(sc scanner) (r app.SeriesRow, err error) {
		var at int64
		err = sc.Scan(&at, &r.Completed, &r.Failed, &r.Claimed, &r.WaitMS, &r.WaitMaxMS, &r.Depth, &r.DepthMax)
		r.At = fromMS(at)
		return r, err
	})
	if err != nil {
		return nil, fmt.Errorf("series of %q: %w", queue, mapErr(err))
	}
	return out, nil
}
