package postgres

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/queuehq/queue/app"
	"github.com/queuehq/queue/internal/sqlq"
)

// sortBy sorts s by the int64 key of each element.
func sortBy[T any](s []T, key func(T) int64) {
	sort.Slice(s, func(i, j int) bool { return key(s[i]) < key(s[j]) })
}

// Queues implements app.Store.
func (s *Store) Queues(ctx context.Context) ([]app.QueueState, error) {
	out, err := readRows(ctx, s, func(row pgx.Row) (q app.QueueState, err error) {
		err = row.Scan(&q.Name, &q.Paused, &q.PausedAt)
		q.PausedAt = msPtr(q.PausedAt)
		return q, err
	}, `SELECT name, paused, paused_at FROM queues ORDER BY name`)
	if err != nil {
		return nil, fmt.Errorf("list queues: %w", err)
	}
	return out, nil
}

// Stats implements app.Store: the counts come from one snapshot, so they
// agree with each other. The counts per status are the counters
// (job_counts plus the deltas not yet folded into it, see
// postgres/counts.go), never a count of the rows; only what depends on the
// clock is read from the jobs: each queue's scheduled jobs and its oldest
// run_at, through the claim index (statsQueuedSQL). Jobs held for their
// key count as queued, as on SQLite, whatever their run_at, and not in the
// oldest claimable job's age (they are not claimable).
func (s *Store) Stats(ctx context.Context) ([]app.QueueStats, error) {
	now := s.now()
	var t *app.Tally
	err := s.read(ctx, func(tx pgx.Tx) error {
		t = app.NewTally()
		queued := map[string]int64{}
		rows, err := tx.Query(ctx, countersSQL)
		if err != nil {
			return err
		}
		for rows.Next() {
			var name, status string
			var n int64
			if err := rows.Scan(&name, &status, &n); err != nil {
				rows.Close()
				return err
			}
			if app.Status(status) == app.StatusQueued {
				queued[name] = n
			} else {
				t.Add(name, status, n)
			}
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		sched := map[string]int64{}
		rows, err = tx.Query(ctx, statsQueuedSQL, now)
		if err != nil {
			return err
		}
		for rows.Next() {
			var name string
			var n int64
			var first *time.Time
			if err := rows.Scan(&name, &n, &first); err != nil {
				rows.Close()
				return err
			}
			sched[name] = n
			if first != nil && !first.After(now) {
				t.Due(name, first.UTC())
			}
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		for q, n := range queued {
			t.Add(q, "scheduled", sched[q])
			t.Add(q, string(app.StatusQueued), max(0, n-sched[q]))
		}
		rows, err = tx.Query(ctx, `SELECT queue, sum(completed)::bigint, sum(failed)::bigint FROM throughput WHERE second > $1 GROUP BY queue
			UNION ALL SELECT name, 0, 0 FROM queues`, time.Unix(now.Unix()-60, 0).UTC())
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var name string
			var completed, failed int64
			if err := rows.Scan(&name, &completed, &failed); err != nil {
				return err
			}
			t.LastMinute(name, completed, failed)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("stats: %w", mapErr(err))
	}
	return t.Stats(now), nil
}

// statsQueuedSQL counts each queue's scheduled jobs (claimable, run_at
// later than $1) and finds its earliest run_at through the claim index
// alone: a recursive skip-scan visits each distinct (queue, priority) of
// jobs_claim (one seek each), then counts the scheduled tail of each such
// range and reads its first run_at. Its cost grows with the number of
// queues and priorities and of scheduled jobs, not with the depth of the
// queues.
const statsQueuedSQL = `WITH RECURSIVE qp AS (
		(SELECT queue, priority FROM jobs WHERE status = 'queued' AND NOT held ORDER BY queue, priority LIMIT 1)
		UNION ALL
		SELECT nx.queue, nx.priority FROM qp, LATERAL (
			SELECT queue, priority FROM jobs WHERE status = 'queued' AND NOT held AND (queue, priority) > (qp.queue, qp.priority)
			ORDER BY queue, priority LIMIT 1) nx)
	SELECT qp.queue, sum(sc.n)::bigint, min(f.run_at) FROM qp,
		LATERAL (SELECT count(*) AS n FROM jobs WHERE status = 'queued' AND NOT held
			AND queue = qp.queue AND priority = qp.priority AND run_at > $1) sc,
		LATERAL (SELECT run_at FROM jobs WHERE status = 'queued' AND NOT held
			AND queue = qp.queue AND priority = qp.priority ORDER BY run_at LIMIT 1) f
	GROUP BY qp.queue`

// Waiting implements app.Store: claimable jobs only (a job held for its
// key waits for its key, not for a worker), as on SQLite. A recursive
// skip-scan walks jobs_claim_kind one (queue, kind, priority) at a time (a
// seek each; the first entry of each is its earliest run_at), so finding
// the kinds costs the number of kinds and priorities, not the depth of the
// queues; only a kind whose oldest due job is older than dueBefore has its
// due jobs counted.
func (s *Store) Waiting(ctx context.Context, dueBefore time.Time) ([]app.KindWait, error) {
	now := s.now()
	out, err := readRows(ctx, s, func(row pgx.Row) (w app.KindWait, err error) {
		err = row.Scan(&w.Queue, &w.Kind, &w.Oldest)
		w.Oldest = w.Oldest.UTC()
		return w, err
	}, `WITH RECURSIVE qk AS (
			(SELECT queue, kind, priority FROM jobs WHERE status = 'queued' AND NOT held ORDER BY queue, kind, priority LIMIT 1)
			UNION ALL
			SELECT nx.queue, nx.kind, nx.priority FROM qk, LATERAL (
				SELECT queue, kind, priority FROM jobs WHERE status = 'queued' AND NOT held
					AND (queue, kind, priority) > (qk.queue, qk.kind, qk.priority)
				ORDER BY queue, kind, priority LIMIT 1) nx)
		SELECT qk.queue, qk.kind, min(f.run_at) FROM qk, LATERAL (
			SELECT run_at FROM jobs WHERE status = 'queued' AND NOT held
				AND queue = qk.queue AND kind = qk.kind AND priority = qk.priority ORDER BY run_at LIMIT 1) f
		GROUP BY qk.queue, qk.kind HAVING min(f.run_at) <= $1 AND min(f.run_at) < $2
		ORDER BY qk.queue, qk.kind LIMIT 100`, now, ms(dueBefore))
	if err != nil {
		return nil, fmt.Errorf("waiting kinds: %w", err)
	}
	for i := range out {
		if err := s.pool.QueryRow(ctx, `SELECT count(*) FROM jobs WHERE status = 'queued' AND NOT held
			AND queue = $1 AND kind = $2 AND run_at <= $3`, out[i].Queue, out[i].Kind, now).Scan(&out[i].Queued); err != nil {
			return nil, fmt.Errorf("waiting kinds: %w", mapErr(err))
		}
	}
	return out, nil
}

// Throughput implements app.Store.
func (s *Store) Throughput(ctx context.Context, since time.Time) ([]app.MinuteCount, error) {
	out, err := readRows(ctx, s, func(row pgx.Row) (m app.MinuteCount, err error) {
		var minute int64
		err = row.Scan(&m.Queue, &minute, &m.Completed, &m.Failed)
		m.Minute = time.Unix(minute, 0).UTC()
		return m, err
	}, `SELECT queue, floor(extract(epoch FROM second) / 60)::bigint * 60 AS minute, sum(completed)::bigint, sum(failed)::bigint
		FROM throughput WHERE second >= $1 GROUP BY queue, minute ORDER BY minute, queue`, time.Unix(since.Unix(), 0).UTC())
	if err != nil {
		return nil, fmt.Errorf("throughput: %w", err)
	}
	return out, nil
}

// DeleteOld implements app.Store: one bounded DELETE of the rows of
// oldRows[req.What] older than req.Before; workflows go by app's rule
// (app.DeleteOldWorkflows).
func (s *Store) DeleteOld(ctx context.Context, req app.DeleteOldRequest) (int, error) {
	if req.What == app.OldLogs {
		return s.deleteOldLogs(ctx, req)
	}
	if req.What == app.OldWorkflows {
		n, err := app.DeleteOldWorkflows(ctx, s, req.Before, req.Limit)
		return n, mapErr(err)
	}
	o, ok := oldRows[req.What]
	if !ok {
		return 0, fmt.Errorf("delete old: unknown kind %q", req.What)
	}
	wh := &where{}
	before := ms(req.Before)
	if req.What == app.OldThroughput {
		before = time.Unix(req.Before.Unix(), 0).UTC()
	}
	wh.cond(fmt.Sprintf(o.cond, wh.add(before)))
	if o.queued && req.Queue != "" {
		wh.cond("queue = " + wh.add(req.Queue))
	}
	if o.queued && len(req.Except) > 0 {
		wh.cond("queue <> ALL(" + wh.add(req.Except) + ")")
	}
	q := `DELETE FROM ` + o.table + ` WHERE ` + o.key + ` = ANY(ARRAY(SELECT ` + o.key + ` FROM ` + o.table + ` p` + wh.String() +
		` LIMIT ` + wh.add(min(max(req.Limit, 1), app.BulkBatch)) + `))`
	var deleted int64
	err := s.write(ctx, func(w *wtx) error {
		tag, err := w.exec(q, wh.args...)
		if err != nil {
			return err
		}
		deleted = tag.RowsAffected()
		if o.queued {
			return w.Fault(app.FaultDelete, 0)
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("delete old %s: %w", req.What, mapErr(err))
	}
	return int(deleted), nil
}

// oldRows is what DeleteOld deletes of each kind: the table, its key, the
// condition of an old row (%s is the cutoff), and whether its rows are
// jobs or dead-letter rows of a queue.
var oldRows = map[string]struct {
	table, key, cond string
	queued           bool
}{
	// A workflow's jobs go with their workflow (see app.DeleteOldWorkflows).
	app.OldFinished:   {"jobs", "id", "status IN ('done', 'cancelled') AND finished_at < %s AND workflow_id IS NULL", true},
	app.OldDead:       {"dead_letter_jobs", "id", "moved_to_dead_letter_at < %s", true},
	app.OldEvents:     {"events", "id", "at < %s", false},
	app.OldAudit:      {"audit", "id", "at < %s", false},
	app.OldOnce:       {"once_records", "key", "done AND done_at < %s", false},
	app.OldPeriodic:   {"periodic_fires", "ctid", "fire_at < %s AND fire_at < (SELECT max(fire_at) FROM periodic_fires l WHERE l.entry = p.entry)", false},
	app.OldThroughput: {"throughput", "ctid", "second < %s", false},
	app.OldMinutes:    {"series", "ctid", "step = 60 AND at < %s", false},
	app.OldHours:      {"series", "ctid", "step = 3600 AND at < %s", false},
}

// LastFire implements app.Store.
func (s *Store) LastFire(ctx context.Context, entry string) (time.Time, error) {
	var v *time.Time
	if err := s.readRow(ctx, `SELECT max(fire_at) FROM periodic_fires WHERE entry = $1`, []any{entry}, &v); err != nil {
		return time.Time{}, fmt.Errorf("last fire of %s: %w", entry, err)
	}
	if v == nil {
		return time.Time{}, nil
	}
	return v.UTC(), nil
}

// ListAudit implements app.Store.
func (s *Store) ListAudit(ctx context.Context, f app.AuditFilter) ([]app.AuditEntry, error) {
	w := &where{}
	if f.Action != "" {
		w.cond("action = " + w.add(f.Action))
	}
	if f.BeforeID > 0 {
		w.cond("id < " + w.add(f.BeforeID))
	}
	out, err := readRows(ctx, s, func(row pgx.Row) (e app.AuditEntry, err error) {
		var target, filter *string
		err = row.Scan(&e.ID, &e.At, &e.Actor, &e.Action, &target, &filter, &e.Count)
		e.At, e.Target, e.Filter = e.At.UTC(), deref(target), rawPtr(filter)
		return e, err
	}, `SELECT id, at, actor, action, target, filter::text, count FROM audit`+w.String()+sqlq.Page(false, f.Limit, 50, "id"), w.args...)
	if err != nil {
		return nil, fmt.Errorf("list audit: %w", err)
	}
	return out, nil
}

const onceCols = `key, token, done, result::text, held_until, created_at, done_at`

func scanOnce(row pgx.Row) (*app.OnceRecord, error) {
	var r app.OnceRecord
	var token, result *string
	if err := row.Scan(&r.Key, &token, &r.Done, &result, &r.HeldUntil, &r.CreatedAt, &r.DoneAt); err != nil {
		return nil, err
	}
	r.Token = deref(token)
	if result != nil {
		r.Result = json.RawMessage(*result)
	}
	r.HeldUntil, r.CreatedAt, r.DoneAt = msPtr(r.HeldUntil), r.CreatedAt.UTC(), msPtr(r.DoneAt)
	return &r, nil
}

// Once implements app.Tx: the insert of a missing record waits for a
// racing one to commit, and the row lock holds the record to the commit.
func (w *wtx) Once(key string) (*app.OnceRecord, error) {
	if _, err := w.exec(`INSERT INTO once_records (key, done, created_at) VALUES ($1, false, $2) ON CONFLICT (key) DO NOTHING`, key, w.now); err != nil {
		return nil, err
	}
	return scanOnce(w.queryRow(`SELECT `+onceCols+` FROM once_records WHERE key = $1 FOR UPDATE`, key))
}

// SaveOnce implements app.Tx.
func (w *wtx) SaveOnce(r *app.OnceRecord) error {
	_, err := w.exec(`UPDATE once_records SET token = $1, done = $2, result = $3, held_until = $4, done_at = $5 WHERE key = $6`,
		nullString(r.Token), r.Done, rawText(r.Result), r.HeldUntil, r.DoneAt, r.Key)
	return err
}
