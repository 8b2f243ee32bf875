package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"time"

	"github.com/queuehq/queue/app"
)

// The flow-control steps of app.Tx (see app/keys.go, app/dedupe.go). Keys
// go to SQLite as one JSON array, read with json_each; every lookup goes
// through an index of the key (jobs_held, jobs_key_live, key_buckets), so
// its cost is the keys asked for, not the jobs they hold.

// KeyLoads implements app.Tx: a seek per key (an IN over the keys made
// SQLite walk the queue's whole range of the index).
func (w *wtx) KeyLoads(queue string, keys []string) (map[string]app.KeyLoad, error) {
	rows, err := w.query(keyLoadsSQL, queue, app.EncodeList(keys), ms(w.now)+1)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]app.KeyLoad{}
	for rows.Next() {
		var k string
		var l app.KeyLoad
		if err := rows.Scan(&k, &l.Busy, &l.Ready, &l.Due); err != nil {
			return nil, err
		}
		if l != (app.KeyLoad{}) {
			out[k] = l
		}
	}
	return out, rows.Err()
}

// Release implements app.Tx: for one job a key, one statement with a seek
// per key; for more, a statement per key (SQLite's LIMIT cannot follow a
// row of the outer query).
func (w *wtx) Release(queue string, keys []string, n int, turn bool) (map[string]int, error) {
	var got []string
	if n == 1 {
		rows, err := w.query(releaseSQL, ms(w.now), turn, queue, app.EncodeList(keys))
		if got, err = collect(rows, err, func(sc scanner) (k string, err error) { return k, sc.Scan(&k) }); err != nil {
			return nil, err
		}
	} else {
		for _, k := range keys {
			rows, err := w.query(releaseManySQL, ms(w.now), turn, queue, k, n)
			some, err := collect(rows, err, func(sc scanner) (k string, err error) { return k, sc.Scan(&k) })
			if err != nil {
				return nil, err
			}
			got = append(got, some...)
		}
	}
	out := map[string]int{}
	for _, k := range got {
		out[k]++
	}
	return out, nil
}

// keyLoadsSQL counts the places of each key of ?2 (a JSON array) in queue
// ?1, and of them the released jobs due by ?3.
const keyLoadsSQL = `SELECT k.value, count(j.id) FILTER (WHERE j.status = 'processing'), count(j.id) FILTER (WHERE j.status = 'queued'),
			count(j.id) FILTER (WHERE j.status = 'queued' AND j.run_at <= ?3)
		FROM json_each(?2) k LEFT JOIN jobs j INDEXED BY jobs_key_live
			ON j.queue = ?1 AND j.flow_key = k.value AND j.flow_key IS NOT NULL AND j.held = 0 AND j.status IN ('queued', 'processing')
		GROUP BY k.value`

// releaseSQL releases the first held job of each key of ?4 in queue ?3 at
// ?1; with ?2 (a turn), one whose run_at passed takes ?1 plus 1 ms.
const releaseSQL = `UPDATE jobs SET held = 0, updated_at = ?1,
			run_at = CASE WHEN ?2 AND run_at < ?1 THEN ?1 + 1 ELSE run_at END
		WHERE id IN (SELECT (SELECT id FROM jobs INDEXED BY jobs_held
				WHERE queue = ?3 AND flow_key = k.value AND status = 'queued' AND held = 1
				ORDER BY priority, run_at, id LIMIT 1)
			FROM json_each(?4) k)
		RETURNING flow_key`

// releaseManySQL releases the first ?5 held jobs of key ?4 in queue ?3.
const releaseManySQL = `UPDATE jobs SET held = 0, updated_at = ?1,
		run_at = CASE WHEN ?2 AND run_at < ?1 THEN ?1 + 1 ELSE run_at END
	WHERE id IN (SELECT id FROM jobs INDEXED BY jobs_held
		WHERE queue = ?3 AND flow_key = ?4 AND status = 'queued' AND held = 1
		ORDER BY priority, run_at, id LIMIT ?5)
	RETURNING flow_key`

// HasHeld implements app.Tx.
func (w *wtx) HasHeld(queue string, keys []string) (map[string]bool, error) {
	rows, err := w.query(`SELECT k.value FROM json_each(?2) k
		WHERE EXISTS (SELECT 1 FROM jobs INDEXED BY jobs_held
			WHERE queue = ?1 AND flow_key = k.value AND status = 'queued' AND held = 1)`, queue, app.EncodeList(keys))
	got, err := collect(rows, err, func(sc scanner) (k string, err error) { return k, sc.Scan(&k) })
	out := make(map[string]bool, len(got))
	for _, k := range got {
		out[k] = true
	}
	return out, err
}

// KeyBuckets implements app.Tx.
func (w *wtx) KeyBuckets(queue string, keys []string) (map[string]app.KeyBucket, error) {
	rows, err := w.query(`SELECT flow_key, tokens, at, wake FROM key_buckets
		WHERE queue = ? AND flow_key IN (SELECT value FROM json_each(?))`, queue, app.EncodeList(keys))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]app.KeyBucket{}
	for rows.Next() {
		var k string
		var b app.KeyBucket
		var at int64
		var wake sql.NullInt64
		if err := rows.Scan(&k, &b.Tokens, &at, &wake); err != nil {
			return nil, err
		}
		b.At = fromMS(at)
		if wake.Valid {
			b.Wake = fromMS(wake.Int64)
		}
		out[k] = b
	}
	return out, rows.Err()
}

// SetKeyBuckets implements app.Tx.
func (w *wtx) SetKeyBuckets(queue string, buckets map[string]app.KeyBucket) error {
	for k, b := range buckets {
		var wake any
		if !b.Wake.IsZero() {
			wake = ms(b.Wake)
		}
		if _, err := w.exec(`INSERT INTO key_buckets (queue, flow_key, tokens, at, wake) VALUES (?, ?, ?, ?, ?)
			ON CONFLICT (queue, flow_key) DO UPDATE SET tokens = excluded.tokens, at = excluded.at, wake = excluded.wake`,
			queue, k, b.Tokens, ms(b.At), wake); err != nil {
			return err
		}
	}
	return nil
}

// WaitingKeys implements app.Tx.
func (w *wtx) WaitingKeys(queue string, limit int) ([]string, error) {
	rows, err := w.query(`SELECT flow_key FROM key_buckets INDEXED BY key_buckets_wake
		WHERE queue = ? AND wake IS NOT NULL AND wake <= ? ORDER BY wake, flow_key LIMIT ?`, queue, ms(w.now), limit)
	return collect(rows, err, func(sc scanner) (k string, err error) { return k, sc.Scan(&k) })
}

// BucketQueues implements app.Tx: a skip-scan of key_buckets' primary key.
func (w *wtx) BucketQueues() ([]string, error) {
	rows, err := w.query(`WITH RECURSIVE q(name) AS (
			SELECT (SELECT queue FROM key_buckets ORDER BY queue LIMIT 1)
			UNION ALL
			SELECT (SELECT queue FROM key_buckets WHERE queue > q.name ORDER BY queue LIMIT 1) FROM q WHERE q.name IS NOT NULL)
		SELECT name FROM q WHERE name IS NOT NULL`)
	return collect(rows, err, func(sc scanner) (q string, err error) { return q, sc.Scan(&q) })
}

// DeleteBuckets implements app.Tx.
func (w *wtx) DeleteBuckets(queue string, before time.Time, limit int) (int, error) {
	res, err := w.exec(`DELETE FROM key_buckets WHERE queue = ?1 AND flow_key IN (SELECT flow_key FROM key_buckets
		WHERE queue = ?1 AND wake IS NULL AND at < ?2 LIMIT ?3)`, queue, ms(before), limit)
	if err != nil {
		return 0, err
	}
	n, err := res.RowsAffected()
	return int(n), err
}

// HeldQueues implements app.Tx: a skip-scan of jobs_held, a seek per queue.
func (w *wtx) HeldQueues() ([]string, error) {
	rows, err := w.query(`WITH RECURSIVE q(name) AS (
			SELECT (SELECT queue FROM jobs INDEXED BY jobs_held WHERE status = 'queued' AND held = 1 ORDER BY queue LIMIT 1)
			UNION ALL
			SELECT (SELECT queue FROM jobs INDEXED BY jobs_held WHERE status = 'queued' AND held = 1 AND queue > q.name ORDER BY queue LIMIT 1)
			FROM q WHERE q.name IS NOT NULL)
		SELECT name FROM q WHERE name IS NOT NULL`)
	return collect(rows, err, func(sc scanner) (q string, err error) { return q, sc.Scan(&q) })
}

// HeldKeys implements app.Tx: a skip-scan of jobs_held, a seek per key.
func (w *wtx) HeldKeys(queue, after string, limit int) ([]string, error) {
	rows, err := w.query(`WITH RECURSIVE k(key, n) AS (
			SELECT (SELECT flow_key FROM jobs INDEXED BY jobs_held
				WHERE queue = ?1 AND status = 'queued' AND held = 1 AND flow_key > ?2 ORDER BY flow_key LIMIT 1), 1
			UNION ALL
			SELECT (SELECT flow_key FROM jobs INDEXED BY jobs_held
				WHERE queue = ?1 AND status = 'queued' AND held = 1 AND flow_key > k.key ORDER BY flow_key LIMIT 1), k.n + 1
			FROM k WHERE k.key IS NOT NULL AND k.n < ?3)
		SELECT key FROM k WHERE key IS NOT NULL`, queue, after, limit)
	return collect(rows, err, func(sc scanner) (k string, err error) { return k, sc.Scan(&k) })
}

// Dedupe implements app.Tx (the writer runs one write at a time, so the
// lookup and the insert that follows it cannot interleave with another).
func (w *wtx) Dedupe(queue, sig string, since time.Time, limit int) ([]*app.Job, error) {
	rows, err := w.query(`SELECT `+jobCols+` FROM jobs WHERE id IN (SELECT id FROM jobs INDEXED BY jobs_dedupe
			WHERE queue = ? AND dedupe = ? AND dedupe IS NOT NULL ORDER BY id DESC LIMIT ?)
		AND created_at >= ? ORDER BY id DESC`, queue, sig, limit, sinceMS(since))
	return collect(rows, err, scanJob)
}

// sinceMS is since in unix milliseconds, the beginning of time if zero.
func sinceMS(since time.Time) int64 {
	if since.IsZero() {
		return 0
	}
	return ms(since)
}

// Debounce implements app.Tx.
func (w *wtx) Debounce(j *app.Job, payload json.RawMessage, runAt time.Time) (*app.Job, error) {
	job, err := scanJob(w.queryRow(`UPDATE jobs SET payload = ?, run_at = ?, updated_at = ?
		WHERE id = ? AND status = 'queued' RETURNING `+jobCols, string(payload), ms(runAt), ms(w.now), j.ID))
	if err != nil {
		return nil, fmt.Errorf("debounce job %d: %w", j.ID, err)
	}
	return job, nil
}

// KeyStats implements app.QueueStore: two reads through the key indexes,
// each of at most app.MaxKeyScan rows, in one read transaction.
func (s *Store) KeyStats(ctx context.Context, queue string, limit int) (*app.KeyStats, error) {
	tx, err := s.rdb.BeginTx(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("key stats: %w", mapErr(err))
	}
	defer tx.Rollback()
	st := &app.KeyStats{Busiest: []app.KeyCount{}, AtLimit: []app.KeyCount{}}
	if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM jobs INDEXED BY jobs_held
		WHERE queue = ? AND status = 'queued' AND held = 1`, queue).Scan(&st.Held); err != nil {
		return nil, fmt.Errorf("key stats: %w", mapErr(err))
	}
	counts := map[string]*app.KeyCount{}
	for _, q := range []string{
		`SELECT flow_key, status, 0, count(*) FROM (SELECT flow_key, status FROM jobs INDEXED BY jobs_key_live
			WHERE queue = ?1 AND flow_key IS NOT NULL AND held = 0 AND status IN ('queued', 'processing') LIMIT ?2)
			GROUP BY flow_key, status`,
		`SELECT flow_key, 'queued', 1, count(*) FROM (SELECT flow_key FROM jobs INDEXED BY jobs_held
			WHERE queue = ?1 AND status = 'queued' AND held = 1 LIMIT ?2) GROUP BY flow_key`,
	} {
		rows, err := tx.QueryContext(ctx, q, queue, app.MaxKeyScan)
		if err != nil {
			return nil, fmt.Errorf("key stats: %w", mapErr(err))
		}
		for rows.Next() {
			var k, status string
			var held bool
			var n int
			if err := rows.Scan(&k, &status, &held, &n); err != nil {
				rows.Close()
				return nil, fmt.Errorf("key stats: %w", err)
			}
			c := counts[k]
			if c == nil {
				c = &app.KeyCount{Key: k}
				counts[k] = c
			}
			switch {
			case status == string(app.StatusProcessing):
				c.Processing += n
			case held:
				c.Held += n
				c.Queued += n
			default:
				c.Queued += n
			}
		}
		if err := rows.Close(); err != nil {
			return nil, fmt.Errorf("key stats: %w", mapErr(err))
		}
	}
	return app.RankKeys(st, counts, limit), nil
}

// HeldCounts implements app.QueueStore.
func (s *Store) HeldCounts(ctx context.Context) (map[string]int, error) {
	rows, err := s.rdb.QueryContext(ctx, `SELECT queue, count(*) FROM jobs INDEXED BY jobs_held
		WHERE status = 'queued' AND held = 1 GROUP BY queue`)
	if err != nil {
		return nil, fmt.Errorf("held counts: %w", mapErr(err))
	}
	defer rows.Close()
	out := map[string]int{}
	for rows.Next() {
		var q string
		var n int
		if err := rows.Scan(&q, &n); err != nil {
			return nil, fmt.Errorf("held counts: %w", err)
		}
		out[q] = n
	}
	return out, mapErr(rows.Err())
}
