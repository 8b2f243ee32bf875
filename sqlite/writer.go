package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"time"

	"github.com/queuehq/queue/app"
)

// request is one caller's write, waiting for the writer goroutine.
type request struct {
	ctx  context.Context
	fn   func(*wtx) error
	done chan error
	// inserts is set for a request that only inserts jobs that need no key
	// lookup or count: the writer may insert its rows later in the
	// transaction, with those of other such requests (see insertPending).
	inserts bool
}

// wtx is one request's share of the writer's transaction. What it collects
// (its app.Effects, new queues, status counts) takes effect only if the
// request succeeds, and is published only after the shared commit.
type wtx struct {
	app.Effects
	s      *Store
	ctx    context.Context
	now    time.Time
	queues []string
	deltas map[statusKey]int64
	// deferInserts lets insertJob leave its rows in pending for the writer.
	deferInserts bool
	pending      []pendingJob
	claimed      []claimedJob  // remembered after commit
	finished     []int64       // forgotten after commit
	stepEnds     []app.StepEnd // workflow steps a completion finished
}

// scratch is what the writer's transactions collect, kept from one
// transaction to the next so that a busy writer does not allocate it again
// for every transaction and request. Only the writer goroutine uses it.
type scratch struct {
	w    wtx     // the running request's share, reset for each
	b    batchTx // the running transaction
	args []any   // of a shared INSERT
}

// reset readies w for the next request, keeping what it allocated but not
// what the last request collected (payloads, events).
func (w *wtx) reset(s *Store, ctx context.Context, now time.Time, deferInserts bool) {
	w.s, w.ctx, w.now, w.deferInserts = s, ctx, now, deferInserts
	w.Effects.Reset(now)
	w.Effects.Use(&s.opts.StoreOptions)
	clear(w.pending)
	w.queues, w.pending, w.claimed, w.finished = w.queues[:0], w.pending[:0], w.claimed[:0], w.finished[:0]
	clear(w.stepEnds)
	w.stepEnds = w.stepEnds[:0]
	clear(w.deltas)
}

// statusKey counts jobs of a queue in a status; "dead_letter" counts the
// rows of the dead-letter table.
type statusKey struct {
	queue  string
	status app.Status
}

// write runs fn in the writer's next transaction and returns its error once
// that transaction committed (or failed). fn must not keep rows open when it
// returns, and must return an error when it changed something it wants undone.
func (s *Store) write(ctx context.Context, fn func(*wtx) error) error {
	return s.send(ctx, &request{ctx: ctx, fn: fn, done: make(chan error, 1)})
}

// writeInserts is write for a request that only inserts jobs and reads
// nothing they would change (no idempotency key, no max_queued count).
func (s *Store) writeInserts(ctx context.Context, fn func(*wtx) error) error {
	return s.send(ctx, &request{ctx: ctx, fn: fn, done: make(chan error, 1), inserts: true})
}

func (s *Store) send(ctx context.Context, r *request) error {
	if s.wconn == nil {
		return fmt.Errorf("%w: database opened read-only", app.ErrUnavailable)
	}
	select {
	case <-s.closing:
		return fmt.Errorf("%w: store closing", app.ErrUnavailable)
	default:
	}
	select {
	case s.reqs <- r:
	case <-ctx.Done():
		return ctx.Err()
	case <-s.stopped:
		return fmt.Errorf("%w: store closed", app.ErrUnavailable)
	}
	select {
	case err := <-r.done:
		return err
	case <-s.stopped:
		select { // the writer answers before it stops: prefer its answer
		case err := <-r.done:
			return err
		default:
			return fmt.Errorf("%w: store closed", app.ErrUnavailable)
		}
	}
}

// writer owns the write connection. It takes every request that is waiting
// (up to MaxBatch) and runs them in one transaction: group commit.
func (s *Store) writer() {
	defer close(s.stopped)
	batch := make([]*request, 0, s.opts.MaxBatch)
	for {
		var first *request
		select {
		case first = <-s.reqs:
		case <-s.closing:
			for { // finish what was queued before Close
				if batch = s.takeWaiting(batch[:0]); len(batch) == 0 {
					return
				}
				s.run(batch)
			}
		}
		batch = s.takeWaiting(append(batch[:0], first))
		s.run(batch)
	}
}

// takeWaiting appends to batch the requests waiting for the writer, without
// waiting for more, up to MaxBatch in all.
func (s *Store) takeWaiting(batch []*request) []*request {
	for len(batch) < s.opts.MaxBatch {
		select {
		case r := <-s.reqs:
			batch = append(batch, r)
		default:
			return batch
		}
	}
	return batch
}

// run executes batch in one transaction. It first runs the requests one
// after the other with nothing in between (the common case: they all
// succeed); if one fails on its own (a lost lease, a conflict), the whole
// transaction is rolled back and the batch runs again with a savepoint per
// request, so the failing request is undone alone. An error of the database
// itself (I/O, disk full, ...) abandons the transaction and fails every request.
func (s *Store) run(batch []*request) {
	start := time.Now()
	if !s.runBatch(&batch, false) {
		s.runBatch(&batch, true)
	}
	if d := time.Since(start); d > time.Second {
		s.log.Warn().Dur("took", d).Int("batch", len(batch)).Msg("slow write transaction")
	}
	if o := s.opts.ObserveWrite; o != nil {
		o(len(batch), time.Since(start))
	}
}

// runBatch runs batch in one transaction, with a savepoint per request when
// safe is set (a batch of one needs none: its failure rolls back all). Not
// safe, it also takes in requests that arrive while it runs (see joinFor),
// appending them to *pb, and inserts the rows of inserts-only requests
// together, before the next request that is not one and before COMMIT. It
// answers every request and returns true, except when, not safe, a request
// or a shared insert failed on its own: then it rolls back, answers nobody
// and returns false, and *pb holds every request to run again (safe, each
// inserting its own rows).
func (s *Store) runBatch(pb *[]*request, safe bool) bool {
	b := &s.scratch.b
	b.reset(s, *pb)
	defer func() { *pb = b.batch; b.release() }()
	if _, err := s.control(b.ctx, "BEGIN IMMEDIATE"); err != nil {
		return b.failAll(err)
	}
	savepoints := safe && len(b.batch) > 1
	began := time.Now()
	for i := 0; ; i++ {
		if i == len(b.batch) && !safe && time.Since(began) < s.joinFor {
			// Requests that came while this transaction ran join it before
			// it commits: callers the last commit answered are back by now,
			// and would otherwise wait for this commit and then their own.
			// Those callers were woken onto this goroutine's processor, so
			// it first lets them run up to their next request.
			runtime.Gosched()
			b.batch = s.takeWaiting(b.batch)
			b.errs = append(b.errs, make([]error, len(b.batch)-len(b.errs))...)
		}
		if i == len(b.batch) {
			break
		}
		if len(b.pending) > 0 && !b.batch[i].inserts { // the request may read the rows
			if err := b.insertPending(); err != nil {
				return b.retry(err)
			}
		}
		if end, ok := b.runRequest(i, safe, savepoints); end {
			return ok
		}
	}
	if len(b.pending) > 0 {
		if err := b.insertPending(); err != nil {
			return b.retry(err)
		}
	}
	return b.commit()
}

// batchTx is the writer's transaction over a batch of requests, with what
// the requests that succeeded collected.
type batchTx struct {
	s        *Store
	ctx      context.Context
	batch    []*request
	errs     []error
	fx       app.Effects
	queues   []string
	claimed  []claimedJob
	finished []int64
	pending  []pendingJob // rows of inserts-only requests, not inserted yet
	deltas   map[statusKey]int64
}

// reset readies b for batch, keeping what it allocated.
func (b *batchTx) reset(s *Store, batch []*request) {
	b.s, b.batch = s, batch
	b.ctx = context.Background() // a caller giving up must not interrupt a shared transaction
	b.errs = append(b.errs[:0], make([]error, len(batch))...)
	b.fx.Reset(time.Time{})
	b.queues, b.claimed, b.finished, b.pending = b.queues[:0], b.claimed[:0], b.finished[:0], b.pending[:0]
	if b.deltas == nil {
		b.deltas = map[statusKey]int64{}
	}
	clear(b.deltas)
}

// release lets go of what the transaction held (payloads, events).
func (b *batchTx) release() {
	b.fx.Reset(time.Time{})
	clear(b.pending)
	clear(b.errs)
	b.batch = nil
}

// runRequest runs request i of the batch. end reports that the batch ends
// here, and ok what runBatch then returns.
func (b *batchTx) runRequest(i int, safe, savepoints bool) (end, ok bool) {
	s, r := b.s, b.batch[i]
	single := len(b.batch) == 1 && !savepoints
	if err := r.ctx.Err(); err != nil {
		b.errs[i] = err
		return false, false
	}
	if savepoints {
		if _, err := s.control(b.ctx, "SAVEPOINT req"); err != nil {
			return true, b.failAll(err)
		}
	}
	w := &s.scratch.w
	w.reset(s, b.ctx, s.clock.Now(), r.inserts && !safe)
	err := w.call(r.fn)
	if err != nil {
		if isFatal(err) {
			return true, b.failAll(err)
		}
		if !savepoints && !single {
			s.wconn.ExecContext(b.ctx, "ROLLBACK") // again, with savepoints
			return true, false
		}
		b.errs[i] = err
		if single {
			s.wconn.ExecContext(b.ctx, "ROLLBACK")
			r.done <- err
			return true, true
		}
		if _, rerr := s.wconn.ExecContext(b.ctx, "ROLLBACK TO req"); rerr != nil {
			return true, b.failAll(rerr)
		}
	}
	if savepoints {
		if _, err := s.control(b.ctx, "RELEASE req"); err != nil {
			return true, b.failAll(err)
		}
	}
	if err == nil {
		b.add(w)
	}
	return false, false
}

// add keeps what a request that succeeded collected.
func (b *batchTx) add(w *wtx) {
	b.pending = append(b.pending, w.pending...)
	b.fx.Merge(&w.Effects)
	b.queues = append(b.queues, w.queues...)
	b.claimed = append(b.claimed, w.claimed...)
	b.finished = append(b.finished, w.finished...)
	for k, v := range w.deltas {
		b.deltas[k] += v
	}
}

// insertPending inserts the rows the inserts-only requests left.
func (b *batchTx) insertPending() error {
	err := b.s.insertPending(b.ctx, b.pending, &b.fx.Published)
	clear(b.pending) // the rows' payloads are in the database now
	b.pending = b.pending[:0]
	return err
}

// retry gives up on the transaction after a shared insert failed: for
// good if the database failed, else to run it again with savepoints, each
// request inserting its own rows.
func (b *batchTx) retry(err error) bool {
	if isFatal(err) {
		return b.failAll(err)
	}
	b.s.wconn.ExecContext(b.ctx, "ROLLBACK")
	return false
}

// failAll abandons the transaction and fails every request of the batch
// with ErrUnavailable.
func (b *batchTx) failAll(err error) bool {
	s := b.s
	s.failing.Store(true)
	s.wconn.ExecContext(b.ctx, "ROLLBACK")
	err = mapErr(err)
	if !errors.Is(err, app.ErrUnavailable) {
		err = fmt.Errorf("%w: %v", app.ErrUnavailable, err)
	}
	for _, r := range b.batch {
		r.done <- err
	}
	s.log.Error().Err(err).Int("batch", len(b.batch)).Msg("write transaction failed")
	return true
}

// commit writes the batch's events and counts, commits, and then lets what
// the requests collected take effect and answers them.
func (b *batchTx) commit() bool {
	s := b.s
	if err := s.flush(b.ctx, b.fx.Recorded, b.fx.Counts); err != nil {
		return b.failAll(err)
	}
	if err := s.saveCounts(b.ctx, b.deltas); err != nil {
		return b.failAll(err)
	}
	if _, err := s.control(b.ctx, "COMMIT"); err != nil {
		return b.failAll(err)
	}
	s.failing.Store(false)
	for _, q := range b.queues {
		s.queues[q] = true
	}
	s.remember(b.claimed, b.finished)
	s.applyDeltas(b.deltas)
	s.bus.Publish(b.fx.Published...)
	s.notify.Notify(b.fx.Woken...)
	for i, r := range b.batch {
		r.done <- b.errs[i]
	}
	return true
}

// joinFor is how long after its BEGIN a transaction still takes in
// requests that arrive while it runs: enough for the callers of the last
// commit to come back (a round trip through their own code, which on a busy
// 2-core machine often takes longer than 300 µs: then a quarter of them
// missed the transaction and waited for two commits), short enough that a
// steady stream of requests cannot hold a commit back for long.
const joinFor = time.Millisecond

// flush writes what the batch's requests collected: events (multi-row
// inserts) and throughput counts (one upsert per queue and second: the
// attempts ended and, for the charts, the jobs claimed and their waits).
func (s *Store) flush(ctx context.Context, events []app.Event, counts map[app.CountKey]*app.CountVal) error {
	const perInsert = 400
	for len(events) > 0 {
		n := min(len(events), perInsert)
		var b strings.Builder
		b.WriteString(`INSERT INTO events (job_id, queue, kind, type, at, data) VALUES `)
		args := make([]any, 0, n*6)
		for i, e := range events[:n] {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString("(?,?,?,?,?,?)")
			var jobID, data any
			if e.JobID != 0 {
				jobID = e.JobID
			}
			if len(e.Data) > 0 {
				data = string(e.Data)
			}
			args = append(args, jobID, e.Queue, e.Kind, e.Type, ms(e.At), data)
		}
		st, err := s.stmt(ctx, b.String())
		if err != nil {
			return err
		}
		if _, err := st.ExecContext(ctx, args...); err != nil {
			return err
		}
		events = events[n:]
	}
	for k, v := range counts {
		st, err := s.stmt(ctx, `INSERT INTO throughput (queue, second, completed, failed, claimed, wait_ms, wait_max_ms) VALUES (?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT (queue, second) DO UPDATE SET completed = completed + excluded.completed, failed = failed + excluded.failed,
				claimed = claimed + excluded.claimed, wait_ms = wait_ms + excluded.wait_ms, wait_max_ms = max(wait_max_ms, excluded.wait_max_ms)`)
		if err != nil {
			return err
		}
		if _, err := st.ExecContext(ctx, k.Queue, k.Second, v.Completed, v.Failed, v.Claimed, v.WaitMS, v.WaitMaxMS); err != nil {
			return err
		}
	}
	return nil
}

// control runs a transaction control statement (BEGIN, COMMIT, ...)
// prepared once: parsing them again for every transaction cost about 2% of
// the writer's time.
func (s *Store) control(ctx context.Context, q string) (sql.Result, error) {
	st, err := s.stmt(ctx, q)
	if err != nil {
		return nil, err
	}
	return st.ExecContext(ctx)
}

// call runs fn, turning a panic into an error so one bad request cannot
// take the writer (and every other caller) down.
func (w *wtx) call(fn func(*wtx) error) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("write panicked: %v", p)
		}
	}()
	if err := fn(w); err != nil {
		return err
	}
	return app.Settle(w) // held jobs the write made room for, webhook deliveries: in the same write
}

func isFatal(err error) bool {
	return errors.Is(mapErr(err), app.ErrUnavailable)
}

// stmt returns a statement prepared on the write connection, cached by text.
func (s *Store) stmt(ctx context.Context, q string) (*sql.Stmt, error) {
	if st, ok := s.stmts[q]; ok {
		return st, nil
	}
	st, err := s.wconn.PrepareContext(ctx, q)
	if err != nil {
		return nil, err
	}
	if len(s.stmts) >= 1024 { // queries with long IN lists vary; keep the cache bounded
		for k, old := range s.stmts {
			old.Close()
			delete(s.stmts, k)
			break
		}
	}
	s.stmts[q] = st
	return st, nil
}

func (w *wtx) exec(q string, args ...any) (sql.Result, error) {
	st, err := w.s.stmt(w.ctx, q)
	if err != nil {
		return nil, err
	}
	return st.ExecContext(w.ctx, args...)
}

func (w *wtx) query(q string, args ...any) (*sql.Rows, error) {
	st, err := w.s.stmt(w.ctx, q)
	if err != nil {
		return nil, err
	}
	return st.QueryContext(w.ctx, args...)
}

func (w *wtx) queryRow(q string, args ...any) *sql.Row {
	st, err := w.s.stmt(w.ctx, q)
	if err != nil {
		return w.s.wconn.QueryRowContext(w.ctx, q, args...) // reports the same error on Scan
	}
	return st.QueryRowContext(w.ctx, args...)
}

// Now implements app.Tx: the time of this request's share of the transaction.
func (w *wtx) Now() time.Time { return w.now }

// ensureQueue makes sure queue has a row in queues, so listing queues never
// scans jobs.
func (w *wtx) ensureQueue(queue string) error {
	if w.s.queues[queue] {
		return nil
	}
	if _, err := w.exec(`INSERT INTO queues (name) VALUES (?) ON CONFLICT (name) DO NOTHING`, queue); err != nil {
		return err
	}
	w.queues = append(w.queues, queue)
	return nil
}

// Moved implements app.Tx: it records that n jobs of queue went from one
// status to another ("" from: inserted; "" to: deleted), for the counters
// Stats reads.
func (w *wtx) Moved(queue string, from, to app.Status, n int) {
	if w.deltas == nil {
		w.deltas = map[statusKey]int64{}
	}
	if from != "" {
		w.deltas[statusKey{queue, from}] -= int64(n)
	}
	if to != "" {
		w.deltas[statusKey{queue, to}] += int64(n)
	}
}

// Fault implements app.Tx.
func (w *wtx) Fault(point app.FaultPoint, jobID int64) error {
	return w.s.fault(w.ctx, point, jobID)
}

// fault calls the test hook at point (see app.FaultPoint).
func (s *Store) fault(ctx context.Context, point app.FaultPoint, jobID int64) error {
	if f := s.opts.Fault; f != nil {
		return f(ctx, point, jobID)
	}
	return nil
}
