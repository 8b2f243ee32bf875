package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/queuehq/queue/app"
)

// countPicked makes q, a claim statement of claimSQL, count the jobs it
// claims and their pickup waits (app.PickupWait, in milliseconds) into the
// throughput counters of this second, as app.Claimed does through the Tx
// for every other claim: a piped write flushes nothing after its
// statements, so the one-statement claim upserts them itself, in the same
// statement (no round trip more).
func (w *wtx) countPicked(q string, a args) (string, args) {
	second := a.add(time.Unix(w.now.Unix(), 0).UTC())
	return `WITH claimed AS (` + q + `),
		counted AS (
			INSERT INTO throughput (queue, second, shard, claimed, wait_ms, wait_max_ms)
			SELECT queue, ` + second + `::timestamptz, ` + throughputShard + `, count(*), sum(wait)::bigint, max(wait)
			FROM (SELECT queue, greatest(0, floor(extract(epoch FROM started_at - greatest(run_at, created_at)) * 1000))::bigint AS wait
				FROM claimed) c
			GROUP BY queue
			ON CONFLICT (queue, second, shard) DO UPDATE SET claimed = throughput.claimed + excluded.claimed,
				wait_ms = throughput.wait_ms + excluded.wait_ms, wait_max_ms = greatest(throughput.wait_max_ms, excluded.wait_max_ms))
		SELECT * FROM claimed`, a
}

// RollUp implements app.ChartStore: its statements in one transaction.
// Two nodes never roll up at once (only the leader does), and each row is
// computed whole, so the order of concurrent roll-ups would not matter.
func (s *Store) RollUp(ctx context.Context, r app.RollUp) error {
	err := s.write(ctx, func(w *wtx) error {
		if _, err := w.exec(`INSERT INTO series (queue, step, at, completed, failed, claimed, wait_ms, wait_max_ms)
			SELECT queue, 60, date_trunc('minute', second), sum(completed), sum(failed), sum(claimed), sum(wait_ms), max(wait_max_ms)
			FROM throughput WHERE second >= $1 AND second < $2 GROUP BY queue, date_trunc('minute', second)
			ON CONFLICT (queue, step, at) DO UPDATE SET completed = excluded.completed, failed = excluded.failed,
				claimed = excluded.claimed, wait_ms = excluded.wait_ms, wait_max_ms = excluded.wait_max_ms`,
			r.From.UTC(), r.To.UTC()); err != nil {
			return fmt.Errorf("minutes: %w", err)
		}
		if !r.DepthAt.IsZero() {
			at := r.DepthAt.Truncate(time.Minute).UTC()
			queues, depths := make([]string, 0, len(r.Depth)), make([]int64, 0, len(r.Depth))
			for q, n := range r.Depth {
				queues, depths = append(queues, q), append(depths, n)
			}
			if _, err := w.exec(`UPDATE series SET depth = 0, depth_max = 0 WHERE step = 60 AND at = $1 AND depth_max > 0`, at); err != nil {
				return fmt.Errorf("depth: %w", err)
			}
			if _, err := w.exec(`INSERT INTO series (queue, step, at, depth, depth_max)
				SELECT q, 60, $1, n, n FROM unnest($2::text[], $3::bigint[]) AS u(q, n)
				ON CONFLICT (queue, step, at) DO UPDATE SET depth = excluded.depth, depth_max = excluded.depth_max`,
				at, queues, depths); err != nil {
				return fmt.Errorf("depth: %w", err)
			}
		}
		if err := w.Fault(app.FaultRollUp, 0); err != nil {
			return err
		}
		if _, err := w.exec(`INSERT INTO series (queue, step, at, completed, failed, claimed, wait_ms, wait_max_ms, depth, depth_max)
			SELECT queue, 3600, date_trunc('hour', at), sum(completed), sum(failed), sum(claimed), sum(wait_ms), max(wait_max_ms),
				sum(depth), max(depth_max)
			FROM series WHERE step = 60 AND at >= $1 AND at < $2 GROUP BY queue, date_trunc('hour', at)
			ON CONFLICT (queue, step, at) DO UPDATE SET completed = excluded.completed, failed = excluded.failed,
				claimed = excluded.claimed, wait_ms = excluded.wait_ms, wait_max_ms = excluded.wait_max_ms,
				depth = excluded.depth, depth_max = excluded.depth_max`,
			r.HoursFrom.UTC(), r.To.UTC()); err != nil {
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
		WHERE step = $1 AND at >= $2 AND queue = $3 ORDER BY at`
	a := []any{int64(step / time.Second), from.UTC(), queue}
	if queue == "" {
		q = `SELECT at, sum(completed)::bigint, sum(failed)::bigint, sum(claimed)::bigint, sum(wait_ms)::bigint, max(wait_max_ms),
				sum(depth)::bigint, sum(depth_max)::bigint
			FROM series WHERE step = $1 AND at >= $2 GROUP BY at ORDER BY at`
		a = a[:2]
	}
	out, err := readRows(ctx, s, func(row pgx.Row) (r app.SeriesRow, err error) {
		err = row.Scan(&r.At, &r.Completed, &r.Failed, &r.Claimed, &r.WaitMS, &r.WaitMaxMS, &r.Depth, &r.DepthMax)
		r.At = r.At.UTC()
		return r, err
	}, q, a...)
	if err != nil {
		return nil, fmt.Errorf("series of %q: %w", queue, err)
	}
	return out, nil
}
