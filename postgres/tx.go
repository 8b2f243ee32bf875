package postgres

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/queuehq/queue/app"
	"github.com/queuehq/queue/internal/sqlq"
)

// wtx is one write transaction with what it collects on the way: its
// app.Effects (its Woken queues have new claimable work: woken here and on
// every node), queues with a free concurrency slot (woken here) and new
// queues. Events and counts are written just before the commit, in the same
// transaction, and take effect in this process (bus, local wake-ups) only
// after it committed.
type wtx struct {
	app.Effects
	s      *Store
	ctx    context.Context
	tx     pgx.Tx
	conn   *pgx.Conn // of a piped write, which has no tx
	now    time.Time
	queues []string
}

// throughputShard is the row of a queue's second a transaction counts
// into: each connection its own (by its backend pid, one of 16), so
// transactions on different connections do not queue up behind one
// counter row's lock until each commits. Every upsert of throughput uses it.
const throughputShard = `(pg_backend_pid() % 16)::smallint`

// pidKey is the context key under which the fault hook finds the backend PID.
type pidKey struct{}

// BackendPID returns the process id of the PostgreSQL backend that runs the
// transaction a fault hook (app.StoreOptions.Fault) was called from. Tests
// use it to drop that connection mid-transaction (pg_terminate_backend).
func BackendPID(ctx context.Context) (uint32, bool) {
	pid, ok := ctx.Value(pidKey{}).(uint32)
	return pid, ok
}

var _ app.Tx = (*wtx)(nil)

// Write implements app.Writer: fn runs in a transaction of write's, run
// again after a lost race.
func (s *Store) Write(ctx context.Context, fn func(app.Tx) error) error {
	return mapErr(s.write(ctx, func(w *wtx) error { return fn(w) }))
}

// Now implements app.Tx: the store's clock when the transaction began.
func (w *wtx) Now() time.Time { return w.now }

// Moved implements app.Tx: this store keeps no counts per status (Stats
// counts the rows).
func (w *wtx) Moved(string, app.Status, app.Status, int) {}

// write runs fn in a transaction of its own and commits it. fn must leave
// nothing behind when it returns an error (the transaction is rolled back)
// and must reset what it returns at its start: a transaction that lost a
// race (deadlock, serialization failure, an idempotency key submitted twice
// at once) runs again, up to a few times. Connection errors are not retried;
// they come back wrapping app.ErrUnavailable.
func (s *Store) write(ctx context.Context, fn func(*wtx) error) error {
	return s.retrying(ctx, func() error { return s.writeOnce(ctx, fn) })
}

// retrying runs once, again after a short random pause while it fails with
// an error worth retrying, at most five times.
func (s *Store) retrying(ctx context.Context, once func() error) error {
	if err := s.enter(); err != nil {
		return err
	}
	defer s.leave()
	for attempt := 1; ; attempt++ {
		err := once()
		if err == nil || attempt >= 5 || !retryable(err) || ctx.Err() != nil {
			return err
		}
		time.Sleep(time.Duration(rand.IntN(5*attempt)+1) * time.Millisecond)
	}
}

func (s *Store) writeOnce(ctx context.Context, fn func(*wtx) error) error {
	start := time.Now()
	// The write holds its connection itself, to the end: a pool's
	// transaction would hand it back on commit or rollback, and asking it
	// afterwards whether it was lost would race with its next user.
	c, err := s.pool.Acquire(ctx)
	if err != nil {
		return mapConnErr(err, nil)
	}
	defer c.Release()
	tx, err := c.Begin(ctx)
	if err != nil {
		return mapConnErr(err, c.Conn())
	}
	w := &wtx{s: s, ctx: ctx, tx: tx, now: s.now()}
	w.reset()
	err = w.call(fn)
	if err == nil {
		// Held jobs the write made room for are released, and the webhook
		// deliveries of its events inserted, before it commits.
		err = w.call(func(w *wtx) error { return app.Settle(w) })
	}
	if err == nil {
		err = w.flush()
	}
	if err != nil {
		tx.Rollback(context.WithoutCancel(ctx))
		return mapConnErr(err, c.Conn())
	}
	// The caller giving up now must not leave the outcome unknown.
	if err := tx.Commit(context.WithoutCancel(ctx)); err != nil {
		return mapConnErr(err, c.Conn())
	}
	w.committed(start)
	return nil
}

// reset empties what w collects, for a transaction that begins.
func (w *wtx) reset() {
	w.Effects.Reset(w.now)
	w.Effects.Use(&w.s.opts.StoreOptions)
}

// keyLimits is how queue limits its keys (StoreOptions.KeyLimits).
func (s *Store) keyLimits(queue string) app.KeyLimits {
	if s.opts.KeyLimits == nil {
		return app.KeyLimits{}
	}
	return s.opts.KeyLimits(queue)
}

// committed makes a committed transaction take effect in this process and
// on the other nodes: queues known, events published, claimers woken.
func (w *wtx) committed(start time.Time) {
	s := w.s
	for _, q := range w.queues {
		s.known.Store(q, true)
	}
	s.bus.Publish(w.Published...)
	// Other nodes are told only of jobs this node's waiting claimers do
	// not take: told of every job, each node woke a claimer for the same
	// jobs, and all but one claimed for nothing (two nodes did half of
	// one node's rate).
	s.broadcast(s.notify.Notify(w.Woken...))
	if d := time.Since(start); d > time.Second {
		s.log.Warn().Dur("took", d).Msg("slow write transaction")
	}
	if o := s.opts.ObserveWrite; o != nil {
		o(1, time.Since(start))
	}
}

// writePiped is write for a transaction whose statements are all known
// before any runs (fn queues them into p) and whose results leave nothing
// to flush (its callbacks must not record events or count, nor change a
// key's room: app.SettleKeys does not run): BEGIN, the
// statements and COMMIT reach the server in one round trip instead of
// three. Gathered submissions, claims without limits and batch completions
// write this way. A statement the server refuses undoes the whole write; a
// result that fails to be read here, after the server committed, gives
// errCommittedUnread.
func (s *Store) writePiped(ctx context.Context, fn func(*wtx, *pipe)) error {
	return s.retrying(ctx, func() error { return s.writePipedOnce(ctx, fn) })
}

func (s *Store) writePipedOnce(ctx context.Context, fn func(*wtx, *pipe)) error {
	start := time.Now()
	c, err := s.pool.Acquire(ctx)
	if err != nil {
		return mapConnErr(err, nil)
	}
	defer c.Release()
	w := &wtx{s: s, ctx: ctx, conn: c.Conn(), now: s.now()}
	w.reset()
	p := &pipe{}
	fn(w, p)
	// With a fault hook (tests), COMMIT waits until the results are read,
	// so that the hook, which runs as they are read, runs inside the open
	// transaction and its error undoes the write, as it would in any other.
	hooked := s.opts.Fault != nil
	var b pgx.Batch
	b.Queue("BEGIN")
	b.QueuedQueries = append(b.QueuedQueries, p.b.QueuedQueries...)
	if !hooked {
		b.Queue("COMMIT")
	}
	// Once sent, the outcome must be learned: the caller giving up must
	// not cut the round trip short.
	bctx := context.WithoutCancel(ctx)
	br := c.SendBatch(bctx, &b)
	_, err = br.Exec()
	var readErr error // reading a result failed here, not on the server
	for _, then := range p.then {
		if err != nil {
			break
		}
		if err = w.call(func(*wtx) error { return then(br) }); err != nil {
			var pe *pgconn.PgError
			if !errors.As(err, &pe) {
				readErr = err
			}
		}
	}
	if err == nil && !hooked {
		_, err = br.Exec() // COMMIT
	}
	cerr := br.Close() // reads what is left, COMMIT included
	if readErr != nil && cerr == nil && !c.Conn().IsClosed() && !hooked {
		// The server ran every statement and the COMMIT: the write stands,
		// and its caller must not write it again.
		return fmt.Errorf("%w (%v)", errCommittedUnread, readErr)
	}
	if err == nil {
		err = cerr
	}
	if err == nil && hooked {
		_, err = c.Exec(bctx, "COMMIT")
	}
	if err != nil {
		// A failed statement leaves the transaction open and aborted (the
		// statements after it, COMMIT too, were skipped): end it.
		c.Exec(bctx, "ROLLBACK")
		return mapConnErr(err, c.Conn())
	}
	w.committed(start)
	return nil
}

// errCommittedUnread says a piped write committed but reading one of its
// results failed: unlike other errors of a write, this one changed data.
var errCommittedUnread = fmt.Errorf("%w: the write was committed, but its results could not be read", app.ErrUnavailable)

// mapConnErr is mapErr, and also ErrUnavailable for any error after which
// the transaction's connection is gone.
func mapConnErr(err error, conn *pgx.Conn) error {
	if retryable(err) {
		return err // write runs it again
	}
	mapped := mapErr(err)
	if !errors.Is(mapped, app.ErrUnavailable) && conn != nil && conn.IsClosed() {
		return fmt.Errorf("%w: connection lost: %v", app.ErrUnavailable, err)
	}
	return mapped
}

// call runs fn, turning a panic into an error.
func (w *wtx) call(fn func(*wtx) error) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("write panicked: %v", p)
		}
	}()
	return fn(w)
}

// flush writes what the transaction collected, in one round trip: the
// events (one INSERT over arrays) and the throughput counts (one upsert per
// queue and second, in key order so concurrent transactions never
// deadlock). The NOTIFY for other nodes is sent after the commit (see
// notifier), not in the transaction.
func (w *wtx) flush() error {
	var b pgx.Batch
	if n := len(w.Recorded); n > 0 {
		jobIDs := make([]int64, n)
		queues, kinds, types, data := make([]string, n), make([]string, n), make([]string, n), make([]*string, n)
		ats := make([]time.Time, n)
		for i, e := range w.Recorded {
			jobIDs[i], queues[i], kinds[i], types[i], ats[i] = e.JobID, e.Queue, e.Kind, e.Type, e.At
			if len(e.Data) > 0 {
				d := string(e.Data)
				data[i] = &d
			}
		}
		b.Queue(`INSERT INTO events (job_id, queue, kind, type, at, data)
			SELECT nullif(j, 0), q, k, t, a, d::json
			FROM unnest($1::bigint[], $2::text[], $3::text[], $4::text[], $5::timestamptz[], $6::text[]) AS u(j, q, k, t, a, d)`,
			jobIDs, queues, kinds, types, ats, data)
	}
	keys := make([]app.CountKey, 0, len(w.Counts))
	for k := range w.Counts {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].Queue != keys[j].Queue {
			return keys[i].Queue < keys[j].Queue
		}
		return keys[i].Second < keys[j].Second
	})
	for _, k := range keys {
		v := w.Counts[k]
		b.Queue(`INSERT INTO throughput (queue, second, shard, completed, failed, claimed, wait_ms, wait_max_ms)
			VALUES ($1, $2, `+throughputShard+`, $3, $4, $5, $6, $7)
			ON CONFLICT (queue, second, shard) DO UPDATE SET completed = throughput.completed + excluded.completed,
				failed = throughput.failed + excluded.failed, claimed = throughput.claimed + excluded.claimed,
				wait_ms = throughput.wait_ms + excluded.wait_ms, wait_max_ms = greatest(throughput.wait_max_ms, excluded.wait_max_ms)`,
			k.Queue, time.Unix(k.Second, 0).UTC(), v.Completed, v.Failed, v.Claimed, v.WaitMS, v.WaitMaxMS)
	}
	if b.Len() == 0 {
		return nil
	}
	return w.tx.SendBatch(w.ctx, &b).Close()
}

func (w *wtx) exec(q string, args ...any) (pgconn.CommandTag, error) {
	return w.tx.Exec(w.ctx, q, args...)
}

func (w *wtx) query(q string, args ...any) (pgx.Rows, error) {
	return w.tx.Query(w.ctx, q, args...)
}

func (w *wtx) queryRow(q string, args ...any) pgx.Row {
	return w.tx.QueryRow(w.ctx, q, args...)
}

// lock takes the transaction advisory lock of what for queue: the limits
// of a queue are checked by one transaction at a time across all nodes.
func (w *wtx) lock(what, queue string) error {
	_, err := w.exec(`SELECT pg_advisory_xact_lock($1)`, lockKey(what, w.s.schema, queue))
	return err
}

// ensureQueue queues (into b) the statement that makes sure queue has a row
// in queues, so listing queues never scans jobs.
func (w *wtx) ensureQueue(b *pipe, queue string) {
	if _, ok := w.s.known.Load(queue); ok {
		return
	}
	for _, q := range w.queues {
		if q == queue {
			return
		}
	}
	b.exec(`INSERT INTO queues (name) VALUES ($1) ON CONFLICT (name) DO NOTHING`, queue)
	w.queues = append(w.queues, queue)
}

// Fault implements app.Tx.
func (w *wtx) Fault(point app.FaultPoint, jobID int64) error {
	f := w.s.opts.Fault
	if f == nil {
		return nil
	}
	ctx := w.ctx
	c := w.conn
	if w.tx != nil {
		c = w.tx.Conn()
	}
	if c != nil {
		ctx = context.WithValue(ctx, pidKey{}, c.PgConn().PID())
	}
	return f(ctx, point, jobID)
}

// pipe is statements sent to the server in one round trip (a pgx.Batch),
// each with what to do with its result, in order.
type pipe struct {
	b    pgx.Batch
	then []func(pgx.BatchResults) error
}

func (p *pipe) exec(q string, args ...any) {
	p.b.Queue(q, args...)
	p.then = append(p.then, func(br pgx.BatchResults) error {
		_, err := br.Exec()
		return err
	})
}

func (p *pipe) queryRow(scan func(pgx.Row) error, q string, args ...any) {
	p.b.Queue(q, args...)
	p.then = append(p.then, func(br pgx.BatchResults) error { return scan(br.QueryRow()) })
}

func (p *pipe) query(scan func(pgx.Rows) error, q string, args ...any) {
	p.b.Queue(q, args...)
	p.then = append(p.then, func(br pgx.BatchResults) error {
		rows, err := br.Query()
		if err != nil {
			return err
		}
		defer rows.Close()
		return scan(rows)
	})
}

// run sends p's statements and hands each result to its function.
func (w *wtx) run(p *pipe) error {
	if p.b.Len() == 0 {
		return nil
	}
	br := w.tx.SendBatch(w.ctx, &p.b)
	var err error
	for _, fn := range p.then {
		if err = fn(br); err != nil {
			break
		}
	}
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	*p = pipe{}
	return err
}

// args numbers query arguments as they are added: a.add(v) returns "$n".
type args []any

func (a *args) add(v any) string {
	*a = append(*a, v)
	return fmt.Sprintf("$%d", len(*a))
}

// where builds a WHERE clause from conditions joined by AND.
type where struct {
	conds []string
	args
}

func (w *where) cond(c string) { w.conds = append(w.conds, c) }

func (w *where) String() string {
	if len(w.conds) == 0 {
		return ""
	}
	return " WHERE " + strings.Join(w.conds, " AND ")
}

// ExpireDue implements app.Tx. Rows another transaction holds are skipped.
func (w *wtx) ExpireDue(limit int) ([]app.Ref, error) {
	return scanRefs(w.query(`WITH due AS (
			SELECT id FROM jobs WHERE status = 'queued' AND expires_at IS NOT NULL AND expires_at <= $1
			ORDER BY expires_at LIMIT $2 FOR UPDATE SKIP LOCKED)
		UPDATE jobs j SET status = 'cancelled', held = false, cancel_reason = 'expired', finished_at = $1, updated_at = $1
		FROM due WHERE j.id = due.id
		RETURNING j.id, j.queue, j.kind, j.workflow_id, j.step, j.flow_key`, w.now, limit))
}

// DeleteDead implements app.Tx. RETURNING gives no order: the rows are
// named in id order, as they are listed.
func (w *wtx) DeleteDead(f app.DeadFilter) ([]app.Ref, error) {
	f.Asc = true
	wh := deadWhere(f)
	refs, err := scanRefs(w.query(`DELETE FROM dead_letter_jobs WHERE id = ANY(ARRAY(SELECT id FROM dead_letter_jobs`+wh.String()+
		sqlq.Page(true, f.Limit, app.BulkBatch, "id")+`)) RETURNING id, queue, kind, workflow_id, step, flow_key`, wh.args...))
	sortBy(refs, func(r app.Ref) int64 { return r.ID })
	return refs, err
}

// scanRefs reads (id, queue, kind, workflow_id, step, flow_key) rows.
func scanRefs(rows pgx.Rows, err error) ([]app.Ref, error) {
	return collect(rows, err, func(row pgx.Row) (r app.Ref, err error) {
		var wf *int64
		var step, key *string
		err = row.Scan(&r.ID, &r.Queue, &r.Kind, &wf, &step, &key)
		r.WorkflowID, r.Step, r.Key = derefID(wf), deref(step), deref(key)
		return r, err
	})
}

// SetQueuePaused implements app.Tx.
func (w *wtx) SetQueuePaused(queue string, paused bool) error {
	var at *time.Time
	if paused {
		at = &w.now
	}
	return w.setQueue(queue, []string{"paused", "paused_at"}, paused, at)
}

// setQueue sets columns of queue's row, making it, and notes the queue known.
func (w *wtx) setQueue(queue string, cols []string, vals ...any) (err error) {
	if _, err = w.exec(sqlq.SetQueue(true, cols...), append([]any{queue}, vals...)...); err == nil {
		w.queues = append(w.queues, queue)
	}
	return err
}

// Dead implements app.Tx.
func (w *wtx) Dead(f app.DeadFilter) ([]*app.DeadJob, error) { return w.selectDead(f) }

// Resurrected implements app.Tx.
func (w *wtx) Resurrected(dead []*app.DeadJob, jobs []*app.Job) error {
	ids, to := make([]int64, len(dead)), make([]int64, len(dead))
	for i, d := range dead {
		ids[i], to[i] = d.ID, jobs[i].ID
	}
	_, err := w.exec(`UPDATE dead_letter_jobs d SET resurrection_count = resurrection_count + 1, last_resurrection_at = $1,
		replayed_job_id = u.job, idempotency_key = NULL FROM unnest($2::bigint[], $3::bigint[]) AS u(id, job) WHERE d.id = u.id`, w.now, ids, to)
	return err
}

// Insert implements app.Tx.
func (w *wtx) Insert(njs ...*app.NewJob) ([]*app.Job, error) {
	p := &pipe{}
	jobs := w.insertJobs(p, njs)
	if err := w.run(p); err != nil {
		return nil, err
	}
	return jobs, nil
}

// Queued implements app.Tx: under the queue's admission lock, held to the
// commit, so two submissions to a limited queue count one after the other.
func (w *wtx) Queued(queue string, limit int) (n int, err error) {
	if err := w.lock("admit", queue); err != nil {
		return 0, err
	}
	// Held jobs are queued too; each half walks its own index.
	err = w.queryRow(`SELECT count(*) FROM (
			SELECT 1 FROM jobs WHERE queue = $1 AND status = 'queued' AND NOT held
			UNION ALL SELECT 1 FROM jobs WHERE queue = $1 AND status = 'queued' AND held
			LIMIT $2) q`, queue, limit).Scan(&n)
	return n, err
}

// RecordFire implements app.Tx: the fire's primary key decides, across nodes.
func (w *wtx) RecordFire(entry string, at time.Time) (bool, error) {
	tag, err := w.exec(`INSERT INTO periodic_fires (entry, fire_at, created_at) VALUES ($1, $2, $3)
		ON CONFLICT (entry, fire_at) DO NOTHING`, entry, ms(at), w.now)
	return err == nil && tag.RowsAffected() == 1, err
}

// FirePending implements app.Tx.
func (w *wtx) FirePending(entry string) (bool, error) {
	var one int
	err := w.queryRow(`SELECT 1 FROM periodic_fires p JOIN jobs j ON j.id = p.job_id
		WHERE p.entry = $1 AND j.status IN ('queued', 'processing') LIMIT 1`, entry).Scan(&one)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, nil
	}
	return err == nil, err
}

// SetFireJob implements app.Tx.
func (w *wtx) SetFireJob(entry string, at time.Time, id int64) error {
	_, err := w.exec(`UPDATE periodic_fires SET job_id = $1 WHERE entry = $2 AND fire_at = $3`, id, entry, ms(at))
	return err
}
