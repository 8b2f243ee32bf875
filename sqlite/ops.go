package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/queuehq/queue/app"
	"github.com/queuehq/queue/internal/sqlq"
)

func scanQueue(sc scanner) (q app.QueueState, err error) {
	var paused int
	var at sql.NullInt64
	err = sc.Scan(&q.Name, &paused, &at)
	q.Paused, q.PausedAt = paused != 0, fromNullMS(at)
	return q, err
}

// Queues implements app.Store.
func (s *Store) Queues(ctx context.Context) ([]app.QueueState, error) {
	rows, err := s.rdb.QueryContext(ctx, `SELECT name, paused, paused_at FROM queues ORDER BY name`)
	out, err := collect(rows, err, scanQueue)
	if err != nil {
		return nil, fmt.Errorf("list queues: %w", mapErr(err))
	}
	return out, nil
}

// Stats implements app.Store. The counts per status come from the counters
// the writer keeps; only what depends on the clock is read from the
// database: the scheduled jobs of each queue (an index range over queued
// rows with a later run_at), its oldest run_at (the first entry of that
// index) and the last minute's throughput.
func (s *Store) Stats(ctx context.Context) ([]app.QueueStats, error) {
	now := s.clock.Now()
	t := app.NewTally()
	queued := map[string]int64{}
	s.countsMu.Lock()
	if s.counts == nil { // a read-only store (doctor) reads the counters once
		if err := s.loadCounts(ctx, s.rdb); err != nil {
			// A database not yet migrated has no counters: count the rows.
			if s.counts, err = readCounts(ctx, s.rdb, countRowsSQL); err != nil {
				s.countsMu.Unlock()
				return nil, fmt.Errorf("stats: %w", mapErr(err))
			}
		}
	}
	for k, n := range s.counts {
		if k.status == app.StatusQueued {
			queued[k.queue] = n
		} else {
			t.Add(k.queue, string(k.status), n)
		}
	}
	s.countsMu.Unlock()
	return s.readStats(ctx, now, t, func(tx *sql.Tx) error {
		for q, n := range queued {
			var sched int64
			var first sql.NullInt64
			if err := tx.QueryRowContext(ctx, queuedByPrioritySQL, q, ms(now)).Scan(&sched, &first); err != nil {
				return err
			}
			t.Add(q, "scheduled", sched)
			t.Add(q, string(app.StatusQueued), max(0, n-sched))
			if first.Valid && first.Int64 <= ms(now) {
				t.Due(q, fromMS(first.Int64))
			}
		}
		return nil
	})
}

// queuedByPrioritySQL counts a queue's scheduled jobs (run_at later than
// ?2) and finds its earliest run_at through the claim index alone: a
// recursive skip-scan visits each distinct (kind, priority) of the queue (a
// seek each), then counts the scheduled tail and reads the first run_at of
// each such range. Its cost grows with the number of kinds and priorities
// and of scheduled jobs, not with the depth of the queue.
const queuedByPrioritySQL = `WITH RECURSIVE kp(kind, pr) AS (
		SELECT (SELECT kind FROM jobs INDEXED BY jobs_claim WHERE queue = ?1 AND status = 'queued' AND held = 0 ORDER BY kind LIMIT 1),
			(SELECT priority FROM jobs INDEXED BY jobs_claim WHERE queue = ?1 AND status = 'queued' AND held = 0
				AND kind = (SELECT kind FROM jobs INDEXED BY jobs_claim WHERE queue = ?1 AND status = 'queued' AND held = 0 ORDER BY kind LIMIT 1)
				ORDER BY priority LIMIT 1)
		UNION ALL
		SELECT CASE WHEN ` + nextPriority + ` IS NOT NULL THEN kp.kind ELSE ` + nextKind + ` END,
			coalesce(` + nextPriority + `, (SELECT priority FROM jobs INDEXED BY jobs_claim
				WHERE queue = ?1 AND status = 'queued' AND held = 0 AND kind = ` + nextKind + ` ORDER BY priority LIMIT 1))
		FROM kp WHERE kp.kind IS NOT NULL)
	SELECT coalesce(sum((SELECT count(*) FROM jobs INDEXED BY jobs_claim
			WHERE queue = ?1 AND status = 'queued' AND held = 0 AND kind = kp.kind AND priority = kp.pr AND run_at > ?2)), 0),
		min((SELECT run_at FROM jobs INDEXED BY jobs_claim
			WHERE queue = ?1 AND status = 'queued' AND held = 0 AND kind = kp.kind AND priority = kp.pr ORDER BY run_at LIMIT 1))
	FROM kp WHERE kp.kind IS NOT NULL`

// The seeks of the skip-scan: the next priority of the same kind, and the next kind.
const (
	nextPriority = `(SELECT priority FROM jobs INDEXED BY jobs_claim
		WHERE queue = ?1 AND status = 'queued' AND held = 0 AND kind = kp.kind AND priority > kp.pr ORDER BY priority LIMIT 1)`
	nextKind = `(SELECT kind FROM jobs INDEXED BY jobs_claim
		WHERE queue = ?1 AND status = 'queued' AND held = 0 AND kind > kp.kind ORDER BY kind LIMIT 1)`
)

// readStats runs counts in a read transaction, then adds the last
// minute's throughput and the queues without jobs to t.
func (s *Store) readStats(ctx context.Context, now time.Time, t *app.Tally, counts func(tx *sql.Tx) error) ([]app.QueueStats, error) {
	tx, err := s.rdb.BeginTx(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("stats: %w", mapErr(err))
	}
	defer tx.Rollback()
	if err := counts(tx); err != nil {
		return nil, fmt.Errorf("stats: %w", mapErr(err))
	}
	rows, err := tx.QueryContext(ctx, `SELECT queue, sum(completed), sum(failed) FROM throughput WHERE second > ? GROUP BY queue
		UNION ALL SELECT name, 0, 0 FROM queues`, now.Unix()-60)
	if err != nil {
		return nil, fmt.Errorf("stats: %w", mapErr(err))
	}
	defer rows.Close()
	for rows.Next() {
		var q string
		var c, f int64
		if err := rows.Scan(&q, &c, &f); err != nil {
			return nil, fmt.Errorf("stats: %w", err)
		}
		t.LastMinute(q, c, f)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("stats: %w", mapErr(err))
	}
	return t.Stats(now), nil
}

// Waiting implements app.Store. It walks the claim index one (queue, kind,
// priority) at a time (a seek each: the first entry of each such range is
// its earliest run_at), so finding the kinds costs the number of kinds and
// priorities, not the depth of the queues; only a kind whose oldest due job
// is older than dueBefore has its due jobs counted.
func (s *Store) Waiting(ctx context.Context, dueBefore time.Time) ([]app.KindWait, error) {
	now := ms(s.clock.Now())
	tx, err := s.rdb.BeginTx(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("waiting kinds: %w", mapErr(err))
	}
	defer tx.Rollback()
	var out []app.KindWait
	var queue, kind string
	var prio, runAt int64
	first := true
	// next finds the first entry after (queue, kind, prio): a later
	// priority of the same kind, else the next kind of the queue, else the
	// next queue (each a seek: a row-value comparison would walk the
	// entries equal to its first columns).
	const cols = `SELECT queue, kind, priority, run_at FROM jobs INDEXED BY jobs_claim WHERE status = 'queued' AND held = 0 AND `
	next := func() (w app.KindWait, p, at int64, ok bool, err error) {
		steps := []struct {
			cond string
			args []any
		}{
			{`queue = ? AND kind = ? AND priority > ? ORDER BY priority, run_at`, []any{queue, kind, prio}},
			{`queue = ? AND kind > ? ORDER BY kind, priority, run_at`, []any{queue, kind}},
			{`queue > ? ORDER BY queue, kind, priority, run_at`, []any{queue}},
		}
		if first {
			steps = steps[2:]
			steps[0].cond, steps[0].args = `1 ORDER BY queue, kind, priority, run_at`, nil
		}
		for _, st := range steps {
			err = tx.QueryRowContext(ctx, cols+st.cond+` LIMIT 1`, st.args...).Scan(&w.Queue, &w.Kind, &p, &at)
			if err == nil {
				return w, p, at, true, nil
			}
			if !errors.Is(err, sql.ErrNoRows) {
				return w, 0, 0, false, err
			}
		}
		return w, 0, 0, false, nil
	}
	for len(out) < 100 {
		w, p, at, ok, err := next()
		if err != nil {
			return nil, fmt.Errorf("waiting kinds: %w", mapErr(err))
		}
		if !ok {
			break
		}
		if first || w.Queue != queue || w.Kind != kind { // a new kind: settle the last one
			if !first && runAt <= now && runAt < ms(dueBefore) {
				out = append(out, app.KindWait{Queue: queue, Kind: kind, Oldest: fromMS(runAt)})
			}
			runAt = at
		}
		first, queue, kind, prio, runAt = false, w.Queue, w.Kind, p, min(runAt, at)
	}
	if !first && len(out) < 100 && runAt <= now && runAt < ms(dueBefore) {
		out = append(out, app.KindWait{Queue: queue, Kind: kind, Oldest: fromMS(runAt)})
	}
	for i := range out {
		if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM jobs INDEXED BY jobs_claim
			WHERE queue = ? AND kind = ? AND status = 'queued' AND held = 0 AND run_at <= ?`, out[i].Queue, out[i].Kind, now).Scan(&out[i].Queued); err != nil {
			return nil, fmt.Errorf("waiting kinds: %w", mapErr(err))
		}
	}
	return out, nil
}

// Throughput implements app.Store.
func (s *Store) Throughput(ctx context.Context, since time.Time) ([]app.MinuteCount, error) {
	rows, err := s.rdb.QueryContext(ctx, `SELECT queue, second / 60 * 60 AS minute, sum(completed), sum(failed)
		FROM throughput WHERE second >= ? GROUP BY queue, minute ORDER BY minute, queue`, since.Unix())
	out, err := collect(rows, err, func(sc scanner) (m app.MinuteCount, err error) {
		var minute int64
		err = sc.Scan(&m.Queue, &minute, &m.Completed, &m.Failed)
		m.Minute = time.Unix(minute, 0).UTC()
		return m, err
	})
	if err != nil {
		return nil, fmt.Errorf("throughput: %w", mapErr(err))
	}
	return out, nil
}

// DeleteOld implements app.Store: one bounded DELETE of the rows of
// oldRows[req.What] older than req.Before.
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
	w := &where{}
	if req.What == app.OldThroughput {
		w.add(o.cond, req.Before.Unix())
	} else {
		w.add(o.cond, ms(req.Before))
	}
	if o.status != "" && req.Queue != "" {
		w.add("queue = ?", req.Queue)
	}
	if o.status != "" && len(req.Except) > 0 {
		w.add("queue NOT IN ("+strings.TrimSuffix(strings.Repeat("?,", len(req.Except)), ",")+")", anys(req.Except)...)
	}
	q := `DELETE FROM ` + o.table + ` WHERE ` + o.key + ` IN (SELECT ` + o.key + ` FROM ` + o.table + ` p` + w.String() + ` LIMIT ?)`
	args := append(w.args, min(max(req.Limit, 1), app.BulkBatch))
	var n int64
	err := s.write(ctx, func(w *wtx) error {
		n = 0
		if o.status == "" {
			res, err := w.exec(q, args...)
			if err == nil {
				n, err = res.RowsAffected()
			}
			return err
		}
		rows, err := w.query(q+` RETURNING queue, `+o.status, args...) // deleted jobs leave the counters too
		refs, err := collect(rows, err, func(sc scanner) (k statusKey, err error) { return k, sc.Scan(&k.queue, &k.status) })
		if err != nil {
			return err
		}
		for _, k := range refs {
			w.Moved(k.queue, k.status, "", 1)
		}
		n = int64(len(refs))
		return w.Fault(app.FaultDelete, 0)
	})
	if err != nil {
		return 0, fmt.Errorf("delete old %s: %w", req.What, mapErr(err))
	}
	return int(n), nil
}

// oldRows is what DeleteOld deletes of each kind: the table, its key,
// the condition of an old row (? is the cutoff: milliseconds, seconds for
// throughput), and for jobs and dead-letter rows the status they leave.
var oldRows = map[string]struct{ table, key, cond, status string }{
	app.OldFinished:   {"jobs", "id", "status IN ('done', 'cancelled') AND finished_at < ? AND workflow_id IS NULL", "status"},
	app.OldDead:       {"dead_letter_jobs", "id", "moved_to_dead_letter_at < ?", "'dead_letter'"},
	app.OldEvents:     {"events", "id", "at < ?", ""},
	app.OldAudit:      {"audit", "id", "at < ?", ""},
	app.OldOnce:       {"once_records", "key", "done = 1 AND done_at < ?", ""},
	app.OldPeriodic:   {"periodic_fires", "rowid", "fire_at < ? AND fire_at < (SELECT max(fire_at) FROM periodic_fires l WHERE l.entry = p.entry)", ""},
	app.OldThroughput: {"throughput", "rowid", "second < ?", ""},
	app.OldMinutes:    {"series", "rowid", "step = 60 AND at < ?", ""},
	app.OldHours:      {"series", "rowid", "step = 3600 AND at < ?", ""},
}

// anys is v as arguments.
func anys[T any](v []T) []any {
	out := make([]any, len(v))
	for i, x := range v {
		out[i] = x
	}
	return out
}

// LastFire implements app.Store.
func (s *Store) LastFire(ctx context.Context, entry string) (time.Time, error) {
	var v sql.NullInt64
	if err := s.rdb.QueryRowContext(ctx, `SELECT max(fire_at) FROM periodic_fires WHERE entry = ?`, entry).Scan(&v); err != nil {
		return time.Time{}, fmt.Errorf("last fire of %s: %w", entry, mapErr(err))
	}
	if !v.Valid {
		return time.Time{}, nil
	}
	return fromMS(v.Int64), nil
}

func scanAudit(sc scanner) (e app.AuditEntry, err error) {
	var at int64
	var target, filter sql.NullString
	err = sc.Scan(&e.ID, &at, &e.Actor, &e.Action, &target, &filter, &e.Count)
	e.At, e.Target, e.Filter = fromMS(at), target.String, nullJSON(filter)
	return e, err
}

// ListAudit implements app.Store.
func (s *Store) ListAudit(ctx context.Context, f app.AuditFilter) ([]app.AuditEntry, error) {
	w := &where{}
	if f.Action != "" {
		w.add("action = ?", f.Action)
	}
	if f.BeforeID > 0 {
		w.add("id < ?", f.BeforeID)
	}
	rows, err := s.rdb.QueryContext(ctx, `SELECT id, at, actor, action, target, filter, count FROM audit`+w.String()+
		sqlq.Page(false, f.Limit, 50, "id"), w.args...)
	out, err := collect(rows, err, scanAudit)
	if err != nil {
		return nil, fmt.Errorf("list audit: %w", mapErr(err))
	}
	return out, nil
}

const onceCols = `key, token, done, result, held_until, created_at, done_at`

func scanOnce(sc scanner) (*app.OnceRecord, error) {
	var r app.OnceRecord
	var token, result sql.NullString
	var done int
	var held, doneAt sql.NullInt64
	var created int64
	if err := sc.Scan(&r.Key, &token, &done, &result, &held, &created, &doneAt); err != nil {
		return nil, err
	}
	r.Token, r.Done = token.String, done != 0
	if result.Valid {
		r.Result = json.RawMessage(result.String)
	}
	r.HeldUntil, r.CreatedAt, r.DoneAt = fromNullMS(held), fromMS(created), fromNullMS(doneAt)
	return &r, nil
}

// Once implements app.Tx.
func (w *wtx) Once(key string) (*app.OnceRecord, error) {
	if _, err := w.exec(`INSERT INTO once_records (key, done, created_at) VALUES (?, 0, ?) ON CONFLICT (key) DO NOTHING`, key, ms(w.now)); err != nil {
		return nil, err
	}
	return scanOnce(w.queryRow(`SELECT `+onceCols+` FROM once_records WHERE key = ?`, key))
}

// SaveOnce implements app.Tx.
func (w *wtx) SaveOnce(r *app.OnceRecord) error {
	_, err := w.exec(`UPDATE once_records SET token = ?, done = ?, result = ?, held_until = ?, done_at = ? WHERE key = ?`,
		nullString(r.Token), r.Done, nullRaw(r.Result), nullMS(r.HeldUntil), nullMS(r.DoneAt), r.Key)
	return err
}
