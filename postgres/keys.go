package postgres

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/queuehq/queue/app"
)

// The flow-control steps of app.Tx (see app/keys.go, app/dedupe.go), each
// one statement over its index (see 0006_flow_control.sql). Held jobs are
// out of the claim indexes; a key's held jobs are one range of jobs_held,
// its load one range of jobs_key_load. Keys compare byte by byte (the
// column's collation is "C"), as in Go and SQLite.
//
// Several nodes release the jobs of one key: each write that may give a key
// room (app.SettleKeys) takes the key's transaction advisory lock before it
// counts the key's load (KeyLoads) and holds it to its commit, so the next
// write to count that key sees what the first released, and a limit holds
// across nodes.

// KeyLoads implements app.Tx: it first takes the lock of each key, in the
// order of their lock keys, so two writes locking keys at once never wait
// on each other in a circle. (A write that locks more keys later, as a
// round-robin claim does, may; PostgreSQL then fails one of them as a
// deadlock, which runs again.)
func (w *wtx) KeyLoads(queue string, keys []string) (map[string]app.KeyLoad, error) {
	out := map[string]app.KeyLoad{}
	if len(keys) == 0 {
		return out, nil
	}
	keys = distinct(keys)
	locks := make([]int64, len(keys))
	for i, k := range keys {
		locks[i] = lockKey("key", w.s.schema, queue, k)
	}
	slices.Sort(locks)
	p := &pipe{}
	p.exec(`SELECT count(pg_advisory_xact_lock(k)) FROM unnest($1::bigint[]) AS u(k)`, slices.Compact(locks))
	p.query(func(rows pgx.Rows) error {
		for rows.Next() {
			var k string
			var l app.KeyLoad
			if err := rows.Scan(&k, &l.Busy, &l.Ready, &l.Due); err != nil {
				return err
			}
			out[k] = l
		}
		return rows.Err()
	}, keyLoadsSQL, queue, keys, w.now.Add(time.Millisecond))
	if err := w.run(p); err != nil {
		return nil, err
	}
	return out, nil
}

// distinct is keys sorted, each once (a copy).
func distinct(keys []string) []string {
	out := slices.Clone(keys)
	slices.Sort(out)
	return slices.Compact(out)
}

// Release implements app.Tx: one statement, the first n held jobs of each key
// found in its range of jobs_held. A turn due before now goes a
// millisecond behind it.
func (w *wtx) Release(queue string, keys []string, n int, turn bool) (map[string]int, error) {
	if len(keys) == 0 {
		return nil, nil
	}
	rows, err := w.query(releaseSQL, queue, distinct(keys), w.now, turn, n)
	got, err := collect(rows, err, func(row pgx.Row) (k string, err error) { return k, row.Scan(&k) })
	if err != nil {
		return nil, err
	}
	out := map[string]int{}
	for _, k := range got {
		out[k]++
	}
	return out, nil
}

// HasHeld implements app.Tx.
func (w *wtx) HasHeld(queue string, keys []string) (map[string]bool, error) {
	rows, err := w.query(hasHeldSQL, queue, distinct(keys))
	got, err := collect(rows, err, func(row pgx.Row) (k string, err error) { return k, row.Scan(&k) })
	if err != nil {
		return nil, err
	}
	out := make(map[string]bool, len(got))
	for _, k := range got {
		out[k] = true
	}
	return out, nil
}

// KeyBuckets implements app.Tx.
func (w *wtx) KeyBuckets(queue string, keys []string) (map[string]app.KeyBucket, error) {
	out := map[string]app.KeyBucket{}
	rows, err := w.query(`SELECT b.flow_key, b.tokens, b.at, b.wake FROM unnest($2::text[]) AS k(key)
		JOIN key_buckets b ON b.queue = $1 AND b.flow_key = k.key`, queue, distinct(keys))
	_, err = collect(rows, err, func(row pgx.Row) (struct{}, error) {
		var k string
		var b app.KeyBucket
		var wake *time.Time
		if err := row.Scan(&k, &b.Tokens, &b.At, &wake); err != nil {
			return struct{}{}, err
		}
		b.At = b.At.UTC()
		if wake != nil {
			b.Wake = wake.UTC()
		}
		out[k] = b
		return struct{}{}, nil
	})
	return out, err
}

// SetKeyBuckets implements app.Tx: one upsert, in key order (so two writes
// never wait on each other's rows in a circle).
func (w *wtx) SetKeyBuckets(queue string, buckets map[string]app.KeyBucket) error {
	if len(buckets) == 0 {
		return nil
	}
	keys := make([]string, 0, len(buckets))
	for k := range buckets {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	tokens, ats, wakes := make([]float64, len(keys)), make([]time.Time, len(keys)), make([]*time.Time, len(keys))
	for i, k := range keys {
		b := buckets[k]
		tokens[i], ats[i] = b.Tokens, ms(b.At)
		if !b.Wake.IsZero() {
			wakes[i] = msPtr(&b.Wake)
		}
	}
	_, err := w.exec(`INSERT INTO key_buckets (queue, flow_key, tokens, at, wake)
		SELECT $1, k, t, a, wk FROM unnest($2::text[], $3::float8[], $4::timestamptz[], $5::timestamptz[]) AS u(k, t, a, wk)
		ON CONFLICT (queue, flow_key) DO UPDATE SET tokens = excluded.tokens, at = excluded.at, wake = excluded.wake`,
		queue, keys, tokens, ats, wakes)
	return err
}

// WaitingKeys implements app.Tx.
func (w *wtx) WaitingKeys(queue string, limit int) ([]string, error) {
	rows, err := w.query(waitingKeysSQL, queue, w.now, limit)
	return collect(rows, err, func(row pgx.Row) (k string, err error) { return k, row.Scan(&k) })
}

// BucketQueues implements app.Tx: a skip scan of key_buckets' primary key.
func (w *wtx) BucketQueues() ([]string, error) {
	rows, err := w.query(`WITH RECURSIVE q AS (
			(SELECT queue FROM key_buckets ORDER BY queue LIMIT 1)
			UNION ALL
			SELECT (SELECT b.queue FROM key_buckets b WHERE b.queue > q.queue ORDER BY b.queue LIMIT 1) FROM q WHERE q.queue IS NOT NULL)
		SELECT queue FROM q WHERE queue IS NOT NULL`)
	return collect(rows, err, func(row pgx.Row) (q string, err error) { return q, row.Scan(&q) })
}

// DeleteBuckets implements app.Tx.
func (w *wtx) DeleteBuckets(queue string, before time.Time, limit int) (int, error) {
	tag, err := w.exec(`DELETE FROM key_buckets WHERE queue = $1 AND flow_key = ANY(ARRAY(SELECT flow_key FROM key_buckets
		WHERE queue = $1 AND wake IS NULL AND at < $2 LIMIT $3))`, queue, before, limit)
	if err != nil {
		return 0, err
	}
	return int(tag.RowsAffected()), nil
}

// HeldQueues implements app.Tx: a skip scan of jobs_held, one probe per
// queue, whatever the number of held jobs.
func (w *wtx) HeldQueues() ([]string, error) {
	rows, err := w.query(heldQueuesSQL)
	return collect(rows, err, func(row pgx.Row) (q string, err error) { return q, row.Scan(&q) })
}

// HeldKeys implements app.Tx: a skip scan of the queue's range of
// jobs_held, one probe per key.
func (w *wtx) HeldKeys(queue, after string, limit int) ([]string, error) {
	rows, err := w.query(heldKeysSQL, queue, after, limit)
	return collect(rows, err, func(row pgx.Row) (k string, err error) { return k, row.Scan(&k) })
}

// Dedupe implements app.Tx: the signature's transaction advisory lock
// first, so concurrent submissions of one signature, on any node, read
// one after the other's commit. The rows are locked too: a claim skips a
// job a debounce is about to change, and a job claimed meanwhile is read
// as it is now.
func (w *wtx) Dedupe(queue, sig string, since time.Time, limit int) ([]*app.Job, error) {
	var out []*app.Job
	p := &pipe{}
	p.exec(`SELECT pg_advisory_xact_lock($1)`, lockKey("dedupe", w.s.schema, queue, sig))
	if since.IsZero() {
		since = time.Unix(0, 0) // before every job
	}
	p.query(func(rows pgx.Rows) (err error) {
		out, err = scanJobs(rows, nil)
		return err
	}, dedupeSQL, queue, sig, ms(since), limit)
	if err := w.run(p); err != nil {
		return nil, err
	}
	return out, nil
}

// Debounce implements app.Tx.
func (w *wtx) Debounce(j *app.Job, payload json.RawMessage, runAt time.Time) (*app.Job, error) {
	job, err := scanJob(w.queryRow(`UPDATE jobs SET payload = $1::json, run_at = $2, updated_at = $3
		WHERE id = $4 AND status = 'queued' RETURNING `+jobCols, rawOrNull(payload), ms(runAt), w.now, j.ID))
	if err != nil {
		return nil, fmt.Errorf("debounce job %d: %w", j.ID, err)
	}
	return job, nil
}

// KeyStats implements app.QueueStore: from one snapshot, the held count,
// then the load of each key among the first app.MaxKeyScan rows of
// jobs_key_load and its held jobs among the first app.MaxKeyScan of
// jobs_held (index-only reads, however many keyed jobs the queue holds).
func (s *Store) KeyStats(ctx context.Context, queue string, limit int) (*app.KeyStats, error) {
	st := &app.KeyStats{Busiest: []app.KeyCount{}, AtLimit: []app.KeyCount{}}
	counts := map[string]*app.KeyCount{}
	err := s.read(ctx, func(tx pgx.Tx) error {
		if err := tx.QueryRow(ctx, `SELECT count(*) FROM jobs WHERE queue = $1 AND status = 'queued' AND held`, queue).Scan(&st.Held); err != nil {
			return err
		}
		rows, err := tx.Query(ctx, keyStatsSQL, queue, app.MaxKeyScan)
		if err != nil {
			return err
		}
		_, err = collect(rows, nil, func(row pgx.Row) (struct{}, error) {
			var k string
			var queued, processing, held int
			if err := row.Scan(&k, &queued, &processing, &held); err != nil {
				return struct{}{}, err
			}
			c := counts[k]
			if c == nil {
				c = &app.KeyCount{Key: k}
				counts[k] = c
			}
			c.Queued += queued + held
			c.Processing += processing
			c.Held += held
			return struct{}{}, nil
		})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("key stats of %s: %w", queue, mapErr(err))
	}
	return app.RankKeys(st, counts, limit), nil
}

// HeldCounts implements app.QueueStore: a count over jobs_held.
func (s *Store) HeldCounts(ctx context.Context) (map[string]int, error) {
	out := map[string]int{}
	_, err := readRows(ctx, s, func(row pgx.Row) (struct{}, error) {
		var q string
		var n int
		err := row.Scan(&q, &n)
		out[q] = n
		return struct{}{}, err
	}, `SELECT queue, count(*) FROM jobs WHERE status = 'queued' AND held GROUP BY queue`)
	if err != nil {
		return nil, fmt.Errorf("held jobs: %w", err)
	}
	return out, nil
}

// The statements of the steps above, each over its index (see
// TestKeyQueriesUseTheirIndexes).
const (
	// keyLoadsSQL counts, over jobs_key_load, the jobs of keys $2 of queue
	// $1 that hold a place: one range of the index per key. (Not flow_key
	// = ANY($2): once the statement's plan is cached, the array is a
	// parameter, and PostgreSQL may test each row of the queue's range
	// against every key, 100 ms for 1,000 keys over 10,000 rows.)
	keyLoadsSQL = `SELECT k.key, c.busy, c.ready, c.due FROM unnest($2::text[]) AS k(key)
		CROSS JOIN LATERAL (SELECT count(*) FILTER (WHERE status = 'processing') AS busy, count(*) FILTER (WHERE status = 'queued') AS ready,
				count(*) FILTER (WHERE status = 'queued' AND run_at <= $3) AS due
			FROM jobs
			WHERE queue = $1 AND flow_key = k.key AND flow_key IS NOT NULL AND status IN ('queued', 'processing') AND NOT held) c
		WHERE c.busy + c.ready > 0`
	// releaseSQL releases the first held job of each of keys $2 of queue
	// $1, at $3; with $4 (a turn), one due before $3 goes a millisecond
	// behind it. Each is locked as it is found (a job changed meanwhile is
	// read again and dropped if no longer held), so the UPDATE finds them
	// by id alone: a condition on held there would match the predicate of
	// jobs_held, which the planner may then read whole beside the ids.
	// A held job another transaction has locked is skipped: that one
	// (a cancel, a drain, a TTL, a move) locked the row before the key's
	// lock, the order opposite to this one's, and waiting would deadlock;
	// it ends the job, so the key's next is the right one to release.
	releaseSQL = `WITH first AS (
			SELECT f.id FROM unnest($2::text[]) AS k(key)
			CROSS JOIN LATERAL (SELECT id FROM jobs
				WHERE queue = $1 AND flow_key = k.key AND status = 'queued' AND held
				ORDER BY priority, run_at, id
				LIMIT $5
				FOR UPDATE SKIP LOCKED) f)
		UPDATE jobs j SET held = false, updated_at = $3,
			run_at = CASE WHEN $4::bool AND j.run_at < $3::timestamptz THEN $3::timestamptz + interval '1 millisecond' ELSE j.run_at END
		WHERE j.id = ANY(ARRAY(SELECT id FROM first))
		RETURNING j.flow_key`
	// hasHeldSQL names the keys of $2 that hold a job of queue $1 back.
	hasHeldSQL = `SELECT k.key FROM unnest($2::text[]) AS k(key)
		WHERE EXISTS (SELECT 1 FROM jobs WHERE queue = $1 AND flow_key = k.key AND status = 'queued' AND held)`
	// heldQueuesSQL names the queues holding jobs back: a skip scan of
	// jobs_held, one probe per queue.
	heldQueuesSQL = `WITH RECURSIVE q AS (
			(SELECT queue FROM jobs WHERE status = 'queued' AND held ORDER BY queue LIMIT 1)
			UNION ALL
			SELECT (SELECT j.queue FROM jobs j WHERE j.status = 'queued' AND j.held AND j.queue > q.queue ORDER BY j.queue LIMIT 1)
			FROM q WHERE q.queue IS NOT NULL)
		SELECT queue FROM q WHERE queue IS NOT NULL`
	// heldKeysSQL names up to $3 keys of queue $1 after $2 that hold jobs
	// back: a skip scan of the queue's range of jobs_held, one probe per key.
	heldKeysSQL = `WITH RECURSIVE k AS (
			(SELECT flow_key FROM jobs WHERE queue = $1 AND status = 'queued' AND held AND flow_key > $2 ORDER BY flow_key LIMIT 1)
			UNION ALL
			SELECT (SELECT j.flow_key FROM jobs j WHERE j.queue = $1 AND j.status = 'queued' AND j.held AND j.flow_key > k.flow_key
				ORDER BY j.flow_key LIMIT 1)
			FROM k WHERE k.flow_key IS NOT NULL)
		SELECT flow_key FROM k WHERE flow_key IS NOT NULL LIMIT $3`
	// waitingKeysSQL names up to $3 keys of queue $1 whose bucket's wake
	// is due by $2.
	waitingKeysSQL = `SELECT flow_key FROM key_buckets WHERE queue = $1 AND wake IS NOT NULL AND wake <= $2
		ORDER BY wake, flow_key LIMIT $3`
	// keyStatsSQL counts, per key of queue $1, its released jobs queued and
	// processing among the first $2 rows of jobs_key_load, and its held jobs
	// among the first $2 of jobs_held.
	keyStatsSQL = `SELECT flow_key, count(*) FILTER (WHERE status = 'queued'), count(*) FILTER (WHERE status = 'processing'), 0::bigint
			FROM (SELECT flow_key, status FROM jobs
				WHERE queue = $1 AND flow_key IS NOT NULL AND status IN ('queued', 'processing') AND NOT held LIMIT $2) l
			GROUP BY flow_key
		UNION ALL
		SELECT flow_key, 0, 0, count(*)
			FROM (SELECT flow_key FROM jobs WHERE queue = $1 AND status = 'queued' AND held LIMIT $2) h
			GROUP BY flow_key`
	// dedupeSQL reads and locks up to $4 jobs of queue $1 stored under
	// signature $2 since $3, newest first, over jobs_dedupe.
	dedupeSQL = `SELECT ` + jobCols + ` FROM jobs WHERE id = ANY(ARRAY(
			SELECT id FROM jobs WHERE queue = $1 AND dedupe = $2 AND dedupe IS NOT NULL ORDER BY id DESC LIMIT $4))
		AND created_at >= $3 ORDER BY id DESC FOR UPDATE`
)
