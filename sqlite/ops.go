package sqlite

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/queuehq/queue/app"
)

// Queues implements app.Store.
func (s *Store) Queues(ctx context.Context) ([]app.QueueState, error) {
	rows, err := s.rdb.QueryContext(ctx, `SELECT name, paused, paused_at FROM queues ORDER BY name`)
	if err != nil {
		return nil, fmt.Errorf("list queues: %w", mapErr(err))
	}
	defer rows.Close()
	var out []app.QueueState
	for rows.Next() {
		var q app.QueueState
		var paused int
		var at sql.NullInt64
		if err := rows.Scan(&q.Name, &paused, &at); err != nil {
			return nil, fmt.Errorf("list queues: %w", err)
		}
		q.Paused = paused != 0
		q.PausedAt = fromNullMS(at)
		out = append(out, q)
	}
	return out, mapErr(rows.Err())
}

// SetPaused implements app.Store.
func (s *Store) SetPaused(ctx context.Context, queue string, paused bool, audit *app.AuditEntry) error {
	err := s.write(ctx, func(w *wtx) error {
		var at any
		typ := app.EventQueueResumed
		if paused {
			at, typ = ms(w.now), app.EventQueuePaused
		}
		if _, err := w.exec(`INSERT INTO queues (name, paused, paused_at) VALUES (?, ?, ?)
			ON CONFLICT (name) DO UPDATE SET paused = excluded.paused, paused_at = excluded.paused_at`,
			queue, boolInt(paused), at); err != nil {
			return err
		}
		w.queues = append(w.queues, queue)
		w.event(typ, 0, queue, "", nil)
		if !paused {
			w.wake = append(w.wake, queue)
		}
		return w.audit(audit, 1)
	})
	if err != nil {
		return fmt.Errorf("pause queue %s: %w", queue, mapErr(err))
	}
	return nil
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// Stats implements app.Store. Every count walks a partial index of its own
// status, in one read transaction, so the numbers agree with each other.
func (s *Store) Stats(ctx context.Context) ([]app.QueueStats, error) {
	now := s.clock.Now()
	tx, err := s.rdb.BeginTx(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("stats: %w", mapErr(err))
	}
	defer tx.Rollback()
	byQueue := map[string]*app.QueueStats{}
	get := func(q string) *app.QueueStats {
		st := byQueue[q]
		if st == nil {
			st = &app.QueueStats{Queue: q}
			byQueue[q] = st
		}
		return st
	}
	oldest := map[string]time.Time{}
	for _, q := range []struct {
		sql  string
		args []any
		add  func(st *app.QueueStats, n int64)
	}{
		{`SELECT queue, count(*), min(run_at) FROM jobs WHERE status = 'queued' AND run_at <= ? GROUP BY queue`, []any{ms(now)}, nil},
		{`SELECT queue, count(*), 0 FROM jobs WHERE status = 'queued' AND run_at > ? GROUP BY queue`, []any{ms(now)}, func(st *app.QueueStats, n int64) { st.Scheduled = n }},
		{`SELECT queue, count(*), 0 FROM jobs WHERE status = 'processing' GROUP BY queue`, nil, func(st *app.QueueStats, n int64) { st.Processing = n }},
		{`SELECT queue, count(*), 0 FROM jobs WHERE status IN ('done', 'cancelled') AND status = 'done' GROUP BY queue`, nil, func(st *app.QueueStats, n int64) { st.Done = n }},
		{`SELECT queue, count(*), 0 FROM jobs WHERE status IN ('done', 'cancelled') AND status = 'cancelled' GROUP BY queue`, nil, func(st *app.QueueStats, n int64) { st.Cancelled = n }},
		{`SELECT queue, count(*), 0 FROM dead_letter_jobs GROUP BY queue`, nil, func(st *app.QueueStats, n int64) { st.DeadLetter = n }},
		{`SELECT queue, sum(completed), sum(failed) FROM throughput WHERE second > ? GROUP BY queue`, []any{now.Unix() - 60}, nil},
	} {
		rows, err := tx.QueryContext(ctx, q.sql, q.args...)
		if err != nil {
			return nil, fmt.Errorf("stats: %w", mapErr(err))
		}
		for rows.Next() {
			var name string
			var n, extra sql.NullInt64
			if err := rows.Scan(&name, &n, &extra); err != nil {
				rows.Close()
				return nil, fmt.Errorf("stats: %w", err)
			}
			st := get(name)
			switch {
			case q.add != nil:
				q.add(st, n.Int64)
			case strings.Contains(q.sql, "throughput"):
				st.CompletedLastMinute, st.FailedLastMinute = n.Int64, extra.Int64
			default:
				st.Queued = n.Int64
				oldest[name] = fromMS(extra.Int64)
			}
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, fmt.Errorf("stats: %w", mapErr(err))
		}
	}
	qs, err := tx.QueryContext(ctx, `SELECT name FROM queues`)
	if err != nil {
		return nil, fmt.Errorf("stats: %w", mapErr(err))
	}
	for qs.Next() {
		var name string
		if err := qs.Scan(&name); err == nil {
			get(name)
		}
	}
	qs.Close()
	return app.FinishStats(byQueue, oldest, now), nil
}

// Throughput implements app.Store.
func (s *Store) Throughput(ctx context.Context, since time.Time) ([]app.MinuteCount, error) {
	rows, err := s.rdb.QueryContext(ctx, `SELECT queue, second / 60 * 60 AS minute, sum(completed), sum(failed)
		FROM throughput WHERE second >= ? GROUP BY queue, minute ORDER BY minute, queue`, since.Unix())
	if err != nil {
		return nil, fmt.Errorf("throughput: %w", mapErr(err))
	}
	defer rows.Close()
	var out []app.MinuteCount
	for rows.Next() {
		var m app.MinuteCount
		var minute int64
		if err := rows.Scan(&m.Queue, &minute, &m.Completed, &m.Failed); err != nil {
			return nil, fmt.Errorf("throughput: %w", err)
		}
		m.Minute = time.Unix(minute, 0).UTC()
		out = append(out, m)
	}
	return out, mapErr(rows.Err())
}

// RecoverStale implements app.Store.
func (s *Store) RecoverStale(ctx context.Context, limit int, backoff app.BackoffFunc) (int, error) {
	n := 0
	err := s.write(ctx, func(w *wtx) error {
		n = 0
		rows, err := w.query(`SELECT `+jobCols+` FROM jobs WHERE status = 'processing' AND lease_expires_at <= ?
			ORDER BY lease_expires_at LIMIT ?`, ms(w.now), max(limit, 1))
		if err != nil {
			return err
		}
		var stale []*app.Job
		for rows.Next() {
			j, err := scanJob(rows)
			if err != nil {
				rows.Close()
				return err
			}
			stale = append(stale, j)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		for _, j := range stale {
			data, _ := json.Marshal(map[string]any{"lease": j.Lease, "worker_id": j.WorkerID, "attempt": j.Attempts})
			w.event(app.EventLeaseLost, j.ID, j.Queue, j.Kind, data)
			if j.CancelRequested {
				if _, err := w.finishCancel(j); err != nil {
					return err
				}
			} else if _, err := w.failAttempt(j, app.LeaseExpiredError, true, true, 0, backoff); err != nil {
				return err
			}
			n++
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("recover stale leases: %w", mapErr(err))
	}
	return n, nil
}

// ExpireTTL implements app.Store.
func (s *Store) ExpireTTL(ctx context.Context, limit int) (int, error) {
	n := 0
	err := s.write(ctx, func(w *wtx) error {
		n = 0
		rows, err := w.query(`UPDATE jobs SET status = 'cancelled', cancel_reason = 'expired', finished_at = ?, updated_at = ?
			WHERE id IN (SELECT id FROM jobs WHERE status = 'queued' AND expires_at IS NOT NULL AND expires_at <= ? LIMIT ?)
			RETURNING id, queue, kind`, ms(w.now), ms(w.now), ms(w.now), max(limit, 1))
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var id int64
			var queue, kind string
			if err := rows.Scan(&id, &queue, &kind); err != nil {
				return err
			}
			w.event(app.EventExpired, id, queue, kind, nil)
			n++
		}
		return rows.Err()
	})
	if err != nil {
		return 0, fmt.Errorf("expire jobs: %w", mapErr(err))
	}
	return n, nil
}

// DeleteOld implements app.Store.
func (s *Store) DeleteOld(ctx context.Context, req app.DeleteOldRequest) (int, error) {
	var q string
	args := []any{}
	queueCond := func(col string) string {
		c := ""
		if req.Queue != "" {
			c += " AND " + col + " = ?"
			args = append(args, req.Queue)
		}
		if len(req.Except) > 0 {
			c += " AND " + col + " NOT IN (" + strings.TrimSuffix(strings.Repeat("?,", len(req.Except)), ",") + ")"
			for _, e := range req.Except {
				args = append(args, e)
			}
		}
		return c
	}
	before := ms(req.Before)
	switch req.What {
	case app.OldFinished:
		args = append(args, before)
		q = `DELETE FROM jobs WHERE id IN (SELECT id FROM jobs WHERE status IN ('done', 'cancelled') AND finished_at < ?` + queueCond("queue") + ` LIMIT ?)`
	case app.OldDead:
		args = append(args, before)
		q = `DELETE FROM dead_letter_jobs WHERE id IN (SELECT id FROM dead_letter_jobs WHERE moved_to_dead_letter_at < ?` + queueCond("queue") + ` LIMIT ?)`
	case app.OldEvents:
		args = append(args, before)
		q = `DELETE FROM events WHERE id IN (SELECT id FROM events WHERE at < ? LIMIT ?)`
	case app.OldAudit:
		args = append(args, before)
		q = `DELETE FROM audit WHERE id IN (SELECT id FROM audit WHERE at < ? LIMIT ?)`
	case app.OldOnce:
		args = append(args, before)
		q = `DELETE FROM once_records WHERE key IN (SELECT key FROM once_records WHERE done = 1 AND done_at < ? LIMIT ?)`
	case app.OldPeriodic:
		args = append(args, before)
		q = `DELETE FROM periodic_fires WHERE rowid IN (SELECT rowid FROM periodic_fires p WHERE fire_at < ?
			AND fire_at < (SELECT max(fire_at) FROM periodic_fires l WHERE l.entry = p.entry) LIMIT ?)`
	case app.OldThroughput:
		args = append(args, req.Before.Unix())
		q = `DELETE FROM throughput WHERE rowid IN (SELECT rowid FROM throughput WHERE second < ? LIMIT ?)`
	default:
		return 0, fmt.Errorf("delete old: unknown kind %q", req.What)
	}
	args = append(args, min(max(req.Limit, 1), app.BulkBatch))
	var n int64
	err := s.write(ctx, func(w *wtx) error {
		res, err := w.exec(q, args...)
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("delete old %s: %w", req.What, mapErr(err))
	}
	return int(n), nil
}

// FirePeriodic implements app.Store.
func (s *Store) FirePeriodic(ctx context.Context, fire app.PeriodicFire) (*app.Job, bool, error) {
	var job *app.Job
	var created bool
	err := s.write(ctx, func(w *wtx) error {
		job, created = nil, false
		res, err := w.exec(`INSERT INTO periodic_fires (entry, fire_at, created_at) VALUES (?, ?, ?)
			ON CONFLICT (entry, fire_at) DO NOTHING`, fire.Entry, ms(fire.FireAt), ms(w.now))
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return nil // this fire was enqueued before, here or on another node
		}
		if fire.SkipIfPending {
			var one int
			err := w.queryRow(`SELECT 1 FROM periodic_fires p JOIN jobs j ON j.id = p.job_id
				WHERE p.entry = ? AND j.status IN ('queued', 'processing') LIMIT 1`, fire.Entry).Scan(&one)
			if err == nil {
				return nil
			}
			if !errors.Is(err, sql.ErrNoRows) {
				return err
			}
		}
		nj := fire.Job
		job, err = w.insertJob(&nj)
		if err != nil {
			return err
		}
		created = true
		_, err = w.exec(`UPDATE periodic_fires SET job_id = ? WHERE entry = ? AND fire_at = ?`, job.ID, fire.Entry, ms(fire.FireAt))
		return err
	})
	if err != nil {
		return nil, false, fmt.Errorf("periodic %s: %w", fire.Entry, mapErr(err))
	}
	return job, created, nil
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

// RecordAudit implements app.Store.
func (s *Store) RecordAudit(ctx context.Context, e app.AuditEntry) error {
	err := s.write(ctx, func(w *wtx) error { return w.audit(&e, e.Count) })
	if err != nil {
		return fmt.Errorf("record audit: %w", mapErr(err))
	}
	return nil
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
		` ORDER BY id DESC`+limit(f.Limit, 50), w.args...)
	if err != nil {
		return nil, fmt.Errorf("list audit: %w", mapErr(err))
	}
	defer rows.Close()
	var out []app.AuditEntry
	for rows.Next() {
		var e app.AuditEntry
		var at int64
		var target, filter sql.NullString
		if err := rows.Scan(&e.ID, &at, &e.Actor, &e.Action, &target, &filter, &e.Count); err != nil {
			return nil, fmt.Errorf("list audit: %w", err)
		}
		e.At, e.Target = fromMS(at), target.String
		if filter.Valid {
			e.Filter = json.RawMessage(filter.String)
		}
		out = append(out, e)
	}
	return out, mapErr(rows.Err())
}

func newToken() string {
	b := make([]byte, 16)
	rand.Read(b)
	return hex.EncodeToString(b)
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

// OnceAcquire implements app.Store.
func (s *Store) OnceAcquire(ctx context.Context, key string, holdFor time.Duration) (*app.OnceRecord, error) {
	var rec *app.OnceRecord
	err := s.write(ctx, func(w *wtx) error {
		r, err := scanOnce(w.queryRow(`SELECT `+onceCols+` FROM once_records WHERE key = ?`, key))
		switch {
		case err == nil && r.Done:
			r.Token = ""
			rec = r
			return nil
		case err == nil && r.HeldUntil != nil && r.HeldUntil.After(w.now):
			return fmt.Errorf("once %q: %w", key, app.ErrOnceHeld)
		case err != nil && !errors.Is(err, sql.ErrNoRows):
			return err
		}
		rec, err = scanOnce(w.queryRow(`INSERT INTO once_records (key, token, done, held_until, created_at) VALUES (?, ?, 0, ?, ?)
			ON CONFLICT (key) DO UPDATE SET token = excluded.token, held_until = excluded.held_until
			RETURNING `+onceCols, key, newToken(), ms(w.now.Add(holdFor)), ms(w.now)))
		if err == nil {
			rec.Acquired = true
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("acquire once %q: %w", key, mapErr(err))
	}
	return rec, nil
}

// OnceDone implements app.Store.
func (s *Store) OnceDone(ctx context.Context, key, token string, result json.RawMessage) (*app.OnceRecord, error) {
	var rec *app.OnceRecord
	err := s.write(ctx, func(w *wtx) error {
		r, err := scanOnce(w.queryRow(`SELECT `+onceCols+` FROM once_records WHERE key = ?`, key))
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("once %q: %w", key, app.ErrNotFound)
		}
		if err != nil {
			return err
		}
		if r.Token != token {
			return fmt.Errorf("once %q is held by another run: %w", key, app.ErrLeaseLost)
		}
		if r.Done {
			rec = r
			return nil
		}
		rec, err = scanOnce(w.queryRow(`UPDATE once_records SET done = 1, result = ?, done_at = ?, held_until = NULL
			WHERE key = ? RETURNING `+onceCols, rawOrNull(result), ms(w.now), key))
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("finish once %q: %w", key, mapErr(err))
	}
	return rec, nil
}
