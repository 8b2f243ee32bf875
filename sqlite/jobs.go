package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/queuehq/queue/app"
	"github.com/queuehq/queue/internal/sqlq"
)

// InsertJobs implements app.JobStore. Plain jobs need no lookup, so their
// rows can wait for the writer, which inserts them together with those of
// the requests around it (see insertJob).
func (s *Store) InsertJobs(ctx context.Context, jobs []app.NewJob) ([]app.Submitted, error) {
	var out []app.Submitted
	err := s.writeInserts(ctx, func(w *wtx) error {
		out = make([]app.Submitted, len(jobs))
		for i := range jobs {
			job, err := w.insertJob(&jobs[i])
			if err != nil {
				return err
			}
			out[i] = app.Submitted{Job: job}
		}
		return nil
	})
	if err != nil {
		return nil, mapErr(err)
	}
	return out, nil
}

// insertJob inserts nj as a queued job. In a request that only submits
// plain jobs (see Store.writeInserts), the row waits for the writer, which
// inserts it together with those of the requests around it; its ID is set
// before the caller gets its answer.
func (w *wtx) insertJob(nj *app.NewJob) (*app.Job, error) {
	if err := w.ensureQueue(nj.Queue); err != nil {
		return nil, err
	}
	now := w.now
	job := nj.Row(fromMS(ms(now)))
	row := pendingJob{job: job, at: now, args: [insertCols]any{
		nj.Queue, nj.Kind, string(job.Payload), nj.Priority, ms(job.RunAt), nj.MaxAttempts, nj.Timeout.Milliseconds(),
		nullMS(job.ExpiresAt), app.EncodeList(nj.Tags), nullString(nj.IdempotencyKey), nj.ReplayedFrom,
		ms(now), ms(now), nullID(nj.WorkflowID), nullString(nj.Step),
		nullString(nj.CallbackURL), nullString(nj.Traceparent), nullString(nj.Tracestate),
	}}
	w.Moved(nj.Queue, "", app.StatusQueued, 1)
	w.Wake(nj.Queue)
	if nj.CallbackURL != "" {
		w.sawCallback() // its end is looked up (see Callbacks)
	}
	keyed := nj.Key != "" || nj.Held || nj.Dedupe != ""
	if w.deferInserts && !keyed {
		w.pending = append(w.pending, row)
		return job, nil
	}
	var res sql.Result
	var err error
	if keyed { // the flow-control columns; a plain job leaves them to their defaults
		res, err = w.exec(insertKeyedSQL, append(row.args[:], nullString(nj.Key), nj.Held, nullString(nj.Dedupe))...)
	} else {
		res, err = w.exec(insertSQL[1], row.args[:]...)
	}
	var id int64
	if err == nil {
		id, err = res.LastInsertId() // cheaper than RETURNING: no result row to build and read
	}
	if err != nil {
		return nil, err
	}
	job.ID = id
	if err := w.Fault(app.FaultJobInsert, id); err != nil {
		return nil, err
	}
	w.Publish(app.EventSubmitted, id, nj.Queue, nj.Kind, nil)
	return job, nil
}

// pendingJob is a job row waiting for the writer to insert it.
type pendingJob struct {
	job  *app.Job
	at   time.Time // of its submission
	args [insertCols]any
}

// insertCols is the number of columns insertSQL binds per row.
const insertCols = 18

// insertChunk is the most rows one INSERT statement takes.
const insertChunk = 64

// insertSQL[n] inserts n job rows.
var insertSQL = func() (qs [insertChunk + 1]string) {
	row := "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
	for n := 1; n <= insertChunk; n++ {
		qs[n] = `INSERT INTO jobs (queue, kind, payload, priority, run_at, max_attempts, timeout_ms,
			expires_at, tags, idempotency_key, replayed_from, created_at, updated_at, workflow_id, step,
			callback_url, traceparent, tracestate)
		VALUES ` + row + strings.Repeat(", "+row, n-1)
	}
	return qs
}()

// insertKeyedSQL inserts one job row with its flow-control columns.
const insertKeyedSQL = `INSERT INTO jobs (queue, kind, payload, priority, run_at, max_attempts, timeout_ms,
		expires_at, tags, idempotency_key, replayed_from, created_at, updated_at, workflow_id, step,
		callback_url, traceparent, tracestate, flow_key, held, dedupe)
	VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`

// insertPending inserts the rows of pending jobs, up to insertChunk in one
// statement: one statement for the jobs of many requests costs much less
// than one each (every INSERT also opens a statement journal, for the
// status guard's RAISE, and updates sqlite_sequence). It sets each job's
// ID and appends its job.submitted event to events. Rows of one INSERT get
// consecutive ids in order (AUTOINCREMENT, and this connection is the only
// writer), so the statement's last id tells them all.
func (s *Store) insertPending(ctx context.Context, pend []pendingJob, events *[]app.Event) error {
	for len(pend) > 0 {
		n := min(len(pend), insertChunk)
		args := s.scratch.args[:0]
		for i := range pend[:n] {
			args = append(args, pend[i].args[:]...)
		}
		st, err := s.stmt(ctx, insertSQL[n])
		if err != nil {
			return err
		}
		res, err := st.ExecContext(ctx, args...)
		clear(args) // kept for the next INSERT, without what it held
		s.scratch.args = args[:0]
		if err != nil {
			return err
		}
		last, err := res.LastInsertId()
		if err != nil {
			return err
		}
		if got, err := res.RowsAffected(); err != nil || got != int64(n) {
			return fmt.Errorf("insert of %d jobs stored %d (%v)", n, got, err)
		}
		for i, p := range pend[:n] {
			p.job.ID = last - int64(n-1-i)
			if err := s.fault(ctx, app.FaultJobInsert, p.job.ID); err != nil {
				return err
			}
			*events = append(*events, app.Event{Type: app.EventSubmitted, JobID: p.job.ID, Queue: p.job.Queue, Kind: p.job.Kind, At: p.at})
		}
		pend = pend[n:]
	}
	return nil
}

// ByKey implements app.Tx.
func (w *wtx) ByKey(queue, key string) (*app.Job, error) {
	job, err := scanJob(w.queryRow(`SELECT `+jobCols+` FROM jobs WHERE queue = ? AND idempotency_key = ?`, queue, key))
	if err == nil {
		return job, nil
	}
	if !errors.Is(err, sql.ErrNoRows) {
		return nil, err
	}
	dead, err := scanDead(w.queryRow(`SELECT `+deadCols+` FROM dead_letter_jobs WHERE queue = ? AND idempotency_key = ?`, queue, key))
	if err == nil {
		return dead.AsJob(), nil
	}
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	return nil, err
}

// Lookup implements app.Store: both reads share one read transaction, so a
// dead-letter move is seen entirely or not at all.
func (s *Store) Lookup(ctx context.Context, id int64) (job *app.Job, dead *app.DeadJob, err error) {
	tx, err := s.rdb.BeginTx(ctx, nil)
	if err == nil {
		defer tx.Rollback()
		job, err = scanJob(tx.QueryRowContext(ctx, `SELECT `+jobCols+` FROM jobs WHERE id = ?`, id))
	}
	if err == nil || errors.Is(err, sql.ErrNoRows) {
		dead, err = scanDead(tx.QueryRowContext(ctx, `SELECT `+deadCols+` FROM dead_letter_jobs WHERE id = ?`, id))
	}
	return app.Found(id, job, dead, mapErr(ignore(err, sql.ErrNoRows)))
}

// List implements app.Store.
func (s *Store) List(ctx context.Context, f app.JobFilter) ([]*app.Job, error) {
	w := jobWhere(f, s.clock.Now())
	rows, err := s.rdb.QueryContext(ctx, `SELECT `+jobCols+` FROM jobs`+w.String()+listOrder(f), w.args...)
	out, err := collect(rows, err, scanJob)
	if err != nil {
		return nil, fmt.Errorf("list jobs: %w", mapErr(err))
	}
	return out, nil
}

// listOrder is the ORDER BY and LIMIT of a listing of f.
func listOrder(f app.JobFilter) string {
	if f.Order == app.OrderRunAt {
		return sqlq.Page(f.Asc, f.Limit, 50, "run_at", "id")
	}
	return sqlq.Page(f.Asc, f.Limit, 50, "id")
}

// CountJobs implements app.Store.
func (s *Store) CountJobs(ctx context.Context, f app.JobFilter) (int, error) {
	f.AfterID = 0
	w := jobWhere(f, s.clock.Now())
	q, args := `SELECT count(*) FROM jobs`+w.String(), w.args
	if f.CountCap > 0 { // stop at the cap's next row
		q, args = `SELECT count(*) FROM (SELECT 1 FROM jobs`+w.String()+` LIMIT ?)`, append(args, f.CountCap+1)
	}
	var n int
	err := s.rdb.QueryRowContext(ctx, q, args...).Scan(&n)
	return n, mapErr(err)
}

// JobEvents implements app.Store.
func (s *Store) JobEvents(ctx context.Context, id int64) ([]app.Event, error) {
	rows, err := s.rdb.QueryContext(ctx, `SELECT id, job_id, queue, kind, type, at, data FROM events WHERE job_id = ? ORDER BY id LIMIT 10000`, id)
	out, err := collect(rows, err, scanEvent)
	if err != nil {
		return nil, fmt.Errorf("events of job %d: %w", id, mapErr(err))
	}
	return out, nil
}

func scanEvent(sc scanner) (e app.Event, err error) {
	var jobID sql.NullInt64
	var at int64
	var data sql.NullString
	err = sc.Scan(&e.ID, &jobID, &e.Queue, &e.Kind, &e.Type, &at, &data)
	e.JobID, e.At, e.Data = jobID.Int64, fromMS(at), nullJSON(data)
	return e, err
}

// Claim implements app.Store.
func (s *Store) Claim(ctx context.Context, req app.ClaimRequest) ([]*app.Job, error) {
	return app.Claim(ctx, s, req)
}

// ClaimQueue implements app.Tx.
func (w *wtx) ClaimQueue(queue string, busy bool) (app.QueueLimits, error) {
	var l app.QueueLimits
	var paused int
	var tokens sql.NullFloat64
	var rateAt sql.NullInt64
	err := w.queryRow(`SELECT paused, rate_tokens, rate_at FROM queues WHERE name = ?`, queue).Scan(&paused, &tokens, &rateAt)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return l, err
	}
	l.Paused, l.Tokens = paused != 0, tokens.Float64
	if rateAt.Valid {
		l.RateAt = fromMS(rateAt.Int64)
	}
	err = nil // a queue without a row has no limits stored
	if busy {
		err = w.queryRow(`SELECT count(*) FROM jobs WHERE status = 'processing' AND queue = ?`, queue).Scan(&l.Busy)
	}
	return l, err
}

// Take implements app.Tx: one statement (see claimSQL). The writer
// remembers the claims, for the completions that follow (see claimedJob).
func (w *wtx) Take(req app.ClaimRequest, n int) ([]*app.Job, error) {
	leaseExp, leaseMS := `:now + timeout_ms`, int64(-1)
	args := []any{sql.Named("now", ms(w.now)), sql.Named("due", ms(w.now.Add(req.Ahead))), sql.Named("worker", req.WorkerID),
		sql.Named("queue", req.Queue), sql.Named("n", n)}
	if req.Timeout > 0 {
		leaseExp, leaseMS = `:now + :timeout`, req.Timeout.Milliseconds()
		args = append(args, sql.Named("timeout", leaseMS))
	}
	for i, k := range req.Kinds {
		args = append(args, sql.Named("kind"+strconv.Itoa(i), k))
	}
	rows, err := w.query(claimSQL(leaseExp, len(req.Kinds)), args...)
	out, err := collect(rows, err, func(sc scanner) (*app.Job, error) { return scanClaimed(sc, ms(w.now), req.WorkerID, leaseMS) })
	for _, j := range out {
		w.claimed = append(w.claimed, claimedJob{id: j.ID, lease: j.Lease, queue: j.Queue, kind: j.Kind, started: *j.StartedAt,
			workflow: j.WorkflowID, step: j.Step, key: j.Key})
	}
	return out, err
}

// SetRate implements app.Tx.
func (w *wtx) SetRate(queue string, tokens float64) error {
	return w.setQueue(queue, []string{"rate_tokens", "rate_at"}, tokens, ms(w.now))
}

// claimSQL claims in claim order through jobs_claim (queue, kind,
// priority, run_at, id). It takes the first rows of each kind (the kinds
// asked for, :kind0, :kind1, ..., or every kind of the queue, found by a
// skip-scan of the index) and keeps the first of those, so a claim's cost
// depends on neither the depth of the queue nor a backlog of other kinds. A
// claim of one kind (every Go worker's with one handler) takes its range
// as it is, without the merge and its temporary tables.
// The index is forced with INDEXED BY (another could need a sort); LIMIT
// (SELECT :n) keeps SQLite from planning the statement again for every new
// limit.
func claimSQL(leaseExp string, kinds int) string {
	first := func(kind string) string {
		return `SELECT id FROM jobs INDEXED BY jobs_claim WHERE queue = :queue AND kind = ` + kind + ` AND status = 'queued' AND held = 0
			AND run_at <= :due AND (expires_at IS NULL OR expires_at > :now) ORDER BY priority, run_at, id LIMIT (SELECT :n)`
	}
	var pick string
	switch kinds {
	case 1: // the range of one kind is already in claim order
		pick = first(":kind0")
	case 0:
		// k holds each kind of the queue once; for each, its first rows.
		pick = `WITH RECURSIVE k(kind) AS (
				SELECT (SELECT kind FROM jobs INDEXED BY jobs_claim WHERE queue = :queue AND status = 'queued' AND held = 0 ORDER BY kind LIMIT 1)
				UNION ALL
				SELECT (SELECT kind FROM jobs INDEXED BY jobs_claim WHERE queue = :queue AND status = 'queued' AND held = 0 AND kind > k.kind ORDER BY kind LIMIT 1)
				FROM k WHERE k.kind IS NOT NULL)
			SELECT j.id FROM k JOIN jobs j ON j.id IN (` + first("k.kind") + `)
			WHERE k.kind IS NOT NULL ORDER BY j.priority, j.run_at, j.id LIMIT (SELECT :n)`
	default:
		parts := make([]string, kinds)
		for i := range parts {
			parts[i] = `SELECT j.id, j.priority, j.run_at FROM jobs j WHERE j.id IN (` + first(":kind"+strconv.Itoa(i)) + `)`
		}
		pick = `SELECT id FROM (` + strings.Join(parts, " UNION ALL ") + `) ORDER BY priority, run_at, id LIMIT (SELECT :n)`
	}
	return `UPDATE jobs SET status = 'processing', attempts = attempts + 1, lease = lease + 1,
			lease_expires_at = ` + leaseExp + `, worker_id = :worker, started_at = :now, updated_at = :now
		WHERE id IN (` + pick + `)
		RETURNING ` + claimCols
}

// fenceErr explains why a fenced update of job id matched no row (see
// app.FenceError).
func (w *wtx) fenceErr(id int64) error {
	var n int
	err := w.queryRow(`SELECT count(*) FROM (SELECT 1 FROM jobs WHERE id = ? UNION ALL SELECT 1 FROM dead_letter_jobs WHERE id = ?)`, id, id).Scan(&n)
	if err != nil {
		return err
	}
	return app.FenceError(id, n > 0)
}

// Complete implements app.Store. One statement completes up to
// completeChunk items (their ids, leases and results bound as VALUES),
// and only the items it did not match are looked at one by one to tell a
// lost lease from an unknown job. When the writer remembers the claim of
// every item of a chunk (see claimedJob), the statement returns nothing,
// and if it did not complete every item it is undone and run again
// returning the jobs it completed.
func (s *Store) Complete(ctx context.Context, items []app.Completion) ([]error, error) {
	first := app.FirstCompletions(items)
	var errs []error
	err := s.write(ctx, func(w *wtx) error {
		done := make(map[int64]int64, len(first)) // job id -> its lease
		for rest := first; len(rest) > 0; {
			chunk := rest[:min(len(rest), completeChunk)]
			rest = rest[len(chunk):]
			n := completeSize(len(chunk))
			args := make([]any, 1, 1+3*n)
			args[0] = ms(w.now)
			for _, it := range chunk {
				args = append(args, it.ID, it.Lease, rawOrNull(it.Result))
			}
			for range n - len(chunk) {
				args = append(args, nil, nil, nil)
			}
			known, err := w.completeKnown(chunk, n, args, done)
			if err == nil && !known {
				err = w.completeRows(completeSQL[true][n], args, done)
			}
			if err != nil {
				return err
			}
		}
		for id := range done {
			if err := w.Fault(app.FaultComplete, id); err != nil {
				return err
			}
			w.finished = append(w.finished, id)
		}
		// Workflow steps among them release their dependants, by app's
		// rules, in this transaction.
		if len(w.stepEnds) > 0 {
			results := make(map[int64]json.RawMessage, len(w.stepEnds))
			for _, it := range first {
				results[it.ID] = it.Result
			}
			for i := range w.stepEnds {
				w.stepEnds[i].Result = results[w.stepEnds[i].JobID]
			}
			if err := app.StepsEnded(w, w.stepEnds); err != nil {
				return err
			}
		}
		var err error
		errs, err = app.SettleCompletions(items, done, w.fenceErr)
		return err
	})
	if err != nil {
		return nil, app.WithOperation("complete", mapErr(err))
	}
	return errs, nil
}

// claimedJob is what the writer remembers of a claim it committed: a
// completion under that lease needs the job's queue, kind and start, and
// reading them back costs it a third of its time (RETURNING makes SQLite
// load every column of each row and keep the rows in a temporary table).
// A job's queue and kind never change, and its start changes only with a
// new claim, that is with a new lease; so a remembered claim is right for
// as long as its lease is the job's.
type claimedJob struct {
	id, lease   int64
	queue, kind string
	started     time.Time
	workflow    int64 // and step: the workflow step the job runs, if any
	step        string
	key         string // the job's flow-control key, if any
}

// maxClaims bounds the claims the writer remembers. Jobs that leave
// processing other than by a completion (a failure, a cancel, a lease
// expiry) are not forgotten one by one; past the bound, the writer forgets
// everything, and completions read their jobs back until it knows them again.
const maxClaims = 1 << 16

// remember records the claims of a committed transaction and forgets the
// jobs it completed.
func (s *Store) remember(claimed []claimedJob, finished []int64) {
	for _, id := range finished {
		delete(s.claims, id)
	}
	if len(s.claims)+len(claimed) > maxClaims {
		clear(s.claims)
	}
	for _, c := range claimed {
		s.claims[c.id] = c
	}
}

// completeKnown completes chunk with a statement that returns nothing,
// when the writer remembers the claim of each item. It reports false,
// having changed nothing, when it does not, or when the statement did not
// complete every item (a lease was lost or the job is gone): then the
// caller runs the statement that returns what it completed.
func (w *wtx) completeKnown(chunk []app.Completion, n int, args []any, done map[int64]int64) (bool, error) {
	for _, it := range chunk {
		if c, ok := w.s.claims[it.ID]; !ok || c.lease != it.Lease {
			return false, nil
		}
	}
	if _, err := w.s.control(w.ctx, "SAVEPOINT complete"); err != nil {
		return false, err
	}
	res, err := w.exec(completeSQL[false][n], args...)
	var matched int64
	if err == nil {
		matched, err = res.RowsAffected()
	}
	if err == nil && matched != int64(len(chunk)) {
		_, err = w.s.control(w.ctx, "ROLLBACK TO complete")
	}
	if _, rerr := w.s.control(w.ctx, "RELEASE complete"); err == nil {
		err = rerr
	}
	if err != nil || matched != int64(len(chunk)) {
		return false, err
	}
	for _, it := range chunk {
		c := w.s.claims[it.ID]
		w.completed(it.ID, it.Lease, c.queue, c.kind, &c.started, done)
		app.KeyEnded(w, c.queue, c.key)
		if c.workflow != 0 {
			w.stepEnds = append(w.stepEnds, app.StepEnd{Workflow: c.workflow, Step: c.step, JobID: it.ID, To: app.StepDone})
		}
	}
	return true, nil
}

// completeRows runs one completion statement and records each job it
// completed in done.
func (w *wtx) completeRows(q string, args []any, done map[int64]int64) error {
	rows, err := w.query(q, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var id, lease int64
		var queue, kind string
		var started, workflow sql.NullInt64
		var step, key sql.NullString
		if err := rows.Scan(&id, &lease, &queue, &kind, &started, &workflow, &step, &key); err != nil {
			return err
		}
		w.completed(id, lease, queue, kind, fromNullMS(started), done)
		app.KeyEnded(w, queue, key.String)
		if workflow.Valid {
			w.stepEnds = append(w.stepEnds, app.StepEnd{Workflow: workflow.Int64, Step: step.String, JobID: id, To: app.StepDone})
		}
	}
	return rows.Err()
}

// completed records that job id was completed under lease.
func (w *wtx) completed(id, lease int64, queue, kind string, started *time.Time, done map[int64]int64) {
	done[id] = lease
	app.Completed(w, queue, kind, id, started)
}

// completeChunk is the most items one completion statement takes.
const completeChunk = 256

// completeSize is the number of items the statement for n items binds: the
// next power of two, so that at most nine statements are ever prepared. The
// items it does not use are NULL and match no job.
func completeSize(n int) int {
	size := 1
	for size < n {
		size *= 2
	}
	return size
}

// completeSQL[returning][n] marks done every job of the n (id, lease,
// result) triples bound after ?1 (the time) that is processing under that
// lease, n a power of two up to completeChunk; with returning, it returns
// the jobs it completed. Items are distinct (id, lease) pairs, so at most
// one matches a job. The triples are VALUES rows rather than a JSON array:
// json_each and ->> took about a quarter of the statement's time.
var completeSQL = func() (qs map[bool]map[int]string) {
	qs = map[bool]map[int]string{false: {}, true: {}}
	for n := 1; n <= completeChunk; n *= 2 {
		q := `UPDATE jobs SET status = 'done', result = v.column3, finished_at = ?1, updated_at = ?1,
		lease_expires_at = NULL
	FROM (VALUES (?,?,?)` + strings.Repeat(",(?,?,?)", n-1) + `) AS v
	WHERE jobs.id = v.column1 AND jobs.lease = v.column2 AND jobs.status = 'processing'`
		qs[false][n] = q
		qs[true][n] = q + `
	RETURNING jobs.id, jobs.lease, jobs.queue, jobs.kind, jobs.started_at, jobs.workflow_id, jobs.step, jobs.flow_key`
	}
	return qs
}()
