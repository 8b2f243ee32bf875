package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/queuehq/queue/app"
	"github.com/queuehq/queue/internal/sqlq"
)

// InsertJobs implements app.JobStore: a batch of plain jobs is gathered
// with the submissions beside it into one transaction (see combine); a
// batch too large to gather has its own.
func (s *Store) InsertJobs(ctx context.Context, jobs []app.NewJob) ([]app.Submitted, error) {
	if len(jobs) > 0 && len(jobs) <= maxCombined && !keyed(jobs) {
		return s.combine(jobs)
	}
	return s.insertAlone(ctx, jobs)
}

// keyed reports whether one of jobs has a flow-control key: its insert
// follows the key's rules (app.InsertAll), which a gathered write, whose
// statements are all known before any runs, cannot.
func keyed(jobs []app.NewJob) bool {
	for i := range jobs {
		if jobs[i].Key != "" {
			return true
		}
	}
	return false
}

// insertAlone inserts jobs in a transaction of their own.
func (s *Store) insertAlone(ctx context.Context, jobs []app.NewJob) ([]app.Submitted, error) {
	out, err := app.InsertAll(ctx, s, jobs)
	return out, mapErr(err)
}

// insertJobs queues into p one statement that inserts njs, rows built
// from arrays in order, and returns the jobs as a read would give them;
// their IDs are set when p runs. One statement instead of one per job:
// PostgreSQL's cost per statement (bind, executor start and end, the
// protocol messages) is paid once for a gathered transaction's jobs, and
// once per run of a batch's jobs between key lookups (a batch of 10,000 was
// 10,000 statements: 3-4x slower).
func (w *wtx) insertJobs(p *pipe, njs []*app.NewJob) []*app.Job {
	n := len(njs)
	queues, kinds, payloads, tagDocs := make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	priorities, maxAttempts := make([]int, n), make([]int, n)
	timeouts := make([]int64, n)
	runAts := make([]time.Time, n)
	expires := make([]*time.Time, n)
	keys, steps := make([]*string, n), make([]*string, n)
	flowKeys, dedupes := make([]*string, n), make([]*string, n)
	callbacks, tps, tss := make([]*string, n), make([]*string, n), make([]*string, n)
	held := make([]bool, n)
	replayed, workflows := make([]*int64, n), make([]*int64, n)
	jobs := make([]*app.Job, n)
	now := w.now
	for i, nj := range njs {
		w.ensureQueue(p, nj.Queue)
		job := nj.Row(now)
		jobs[i] = job
		queues[i], kinds[i], payloads[i] = nj.Queue, nj.Kind, string(job.Payload)
		doc, err := json.Marshal(tags(nj.Tags))
		if err != nil { // a []string always encodes
			panic(err)
		}
		tagDocs[i] = string(doc)
		priorities[i], maxAttempts[i], timeouts[i] = nj.Priority, nj.MaxAttempts, nj.Timeout.Milliseconds()
		runAts[i], expires[i], keys[i], replayed[i] = job.RunAt, job.ExpiresAt, nullString(nj.IdempotencyKey), nj.ReplayedFrom
		workflows[i], steps[i] = nullID(nj.WorkflowID), nullString(nj.Step)
		flowKeys[i], held[i], dedupes[i] = nullString(nj.Key), nj.Held, nullString(nj.Dedupe)
		callbacks[i], tps[i], tss[i] = nullString(nj.CallbackURL), nullString(nj.Traceparent), nullString(nj.Tracestate)
	}
	p.query(func(rows pgx.Rows) error {
		ids := make([]int64, 0, n)
		for rows.Next() {
			var id int64
			if err := rows.Scan(&id); err != nil {
				return err
			}
			ids = append(ids, id)
		}
		if err := rows.Err(); err != nil {
			return err
		}
		if len(ids) != n {
			return fmt.Errorf("insert of %d jobs returned %d ids", n, len(ids))
		}
		// The identity takes its values as the rows are inserted, in the
		// order of ord: the ids in ascending order are the jobs' in order.
		slices.Sort(ids)
		for i, job := range jobs {
			job.ID = ids[i]
			if err := w.Fault(app.FaultJobInsert, job.ID); err != nil {
				return err
			}
			w.Publish(app.EventSubmitted, job.ID, job.Queue, job.Kind, nil)
			w.Wake(job.Queue)
		}
		return nil
	}, `INSERT INTO jobs (queue, kind, payload, priority, run_at, max_attempts, timeout_ms,
			expires_at, tags, idempotency_key, replayed_from, workflow_id, step, flow_key, held, dedupe, created_at, updated_at,
			callback_url, traceparent, tracestate)
		SELECT q, k, pl::json, pr, ra, ma, tm, ex,
			CASE WHEN tg = '[]' THEN '{}'::text[] ELSE ARRAY(SELECT json_array_elements_text(tg::json)) END,
			ik, rf, wf, st, fk, hd, dd, $17, $17, cb, tp, ts
		FROM unnest($1::text[], $2::text[], $3::text[], $4::int[], $5::timestamptz[], $6::int[], $7::bigint[],
			$8::timestamptz[], $9::text[], $10::text[], $11::bigint[], $12::bigint[], $13::text[], $14::text[], $15::bool[], $16::text[],
			$18::text[], $19::text[], $20::text[])
			WITH ORDINALITY AS u(q, k, pl, pr, ra, ma, tm, ex, tg, ik, rf, wf, st, fk, hd, dd, cb, tp, ts, ord)
		ORDER BY ord
		RETURNING id`,
		queues, kinds, payloads, priorities, runAts, maxAttempts, timeouts, expires, tagDocs, keys, replayed, workflows, steps,
		flowKeys, held, dedupes, now, callbacks, tps, tss)
	return jobs
}

// ByKey implements app.Tx.
func (w *wtx) ByKey(queue, key string) (*app.Job, error) {
	job, err := scanJob(w.queryRow(`SELECT `+jobCols+` FROM jobs WHERE queue = $1 AND idempotency_key = $2`, queue, key))
	if err == nil {
		return job, nil
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return nil, err
	}
	dead, err := scanDead(w.queryRow(`SELECT `+deadCols+` FROM dead_letter_jobs WHERE queue = $1 AND idempotency_key = $2`, queue, key))
	if err == nil {
		return dead.AsJob(), nil
	}
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	return nil, err
}

// read runs fn in a read-only REPEATABLE READ transaction: every query of
// fn sees one snapshot, so a dead-letter move is seen entirely or not at all.
func (s *Store) read(ctx context.Context, fn func(tx pgx.Tx) error) error {
	if err := s.enter(); err != nil {
		return err
	}
	defer s.leave()
	tx, err := s.pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return mapErr(err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	if err := fn(tx); err != nil {
		return mapConnErr(err, tx.Conn()) // before the deferred rollback gives the connection back
	}
	return nil
}

// Lookup implements app.Store: both reads share one snapshot.
func (s *Store) Lookup(ctx context.Context, id int64) (job *app.Job, dead *app.DeadJob, err error) {
	err = s.read(ctx, func(tx pgx.Tx) (err error) {
		if job, err = scanJob(tx.QueryRow(ctx, `SELECT `+jobCols+` FROM jobs WHERE id = $1`, id)); err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return err
		}
		if dead, err = scanDead(tx.QueryRow(ctx, `SELECT `+deadCols+` FROM dead_letter_jobs WHERE id = $1`, id)); errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		return err
	})
	return app.Found(id, job, dead, mapErr(err))
}

// List implements app.Store.
func (s *Store) List(ctx context.Context, f app.JobFilter) ([]*app.Job, error) {
	w := jobWhere(f, s.now())
	out, err := readRows(ctx, s, scanJob, `SELECT `+jobCols+` FROM jobs`+w.String()+listOrder(f), w.args...)
	if err != nil {
		return nil, fmt.Errorf("list jobs: %w", err)
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
func (s *Store) CountJobs(ctx context.Context, f app.JobFilter) (n int, err error) {
	f.AfterID = 0
	w := jobWhere(f, s.now())
	q := `SELECT count(*) FROM jobs` + w.String()
	if f.CountCap > 0 { // stop at the cap's next row
		q = `SELECT count(*) FROM (SELECT 1 FROM jobs` + w.String() + ` LIMIT ` + w.add(f.CountCap+1) + `) AS capped`
	}
	if err := s.readRow(ctx, q, w.args, &n); err != nil {
		return 0, fmt.Errorf("count jobs: %w", err)
	}
	return n, nil
}

// JobEvents implements app.Store.
func (s *Store) JobEvents(ctx context.Context, id int64) ([]app.Event, error) {
	out, err := readRows(ctx, s, func(row pgx.Row) (e app.Event, err error) {
		var data *string
		err = row.Scan(&e.ID, &e.JobID, &e.Queue, &e.Kind, &e.Type, &e.At, &data)
		e.At, e.Data = e.At.UTC(), rawPtr(data)
		return e, err
	}, `SELECT id, coalesce(job_id, 0), queue, kind, type, at, data::text FROM events WHERE job_id = $1 ORDER BY id LIMIT 10000`, id)
	if err != nil {
		return nil, fmt.Errorf("events of job %d: %w", id, err)
	}
	return out, nil
}

// Claim implements app.Store: one statement takes the first claimable jobs
// in claim order through jobs_claim, skipping rows other claimers hold (FOR
// UPDATE SKIP LOCKED), so claimers on every node proceed side by side. With
// a concurrency or rate limit the queue's advisory lock serializes the
// check, so the limit holds across nodes; without one nothing is serialized.
// Held jobs are out of the claim index, so key_concurrency alone needs
// nothing more of a claim; round robin and key_rate release jobs as they
// claim (app.Claim), which takes a transaction of app's.
func (s *Store) Claim(ctx context.Context, req app.ClaimRequest) ([]*app.Job, error) {
	var out []*app.Job
	var err error
	if lim := s.keyLimits(req.Queue); req.Concurrency <= 0 && req.Rate <= 0 && !lim.RoundRobin && lim.Rate.N <= 0 {
		// One statement (the paused flag is one of its conditions): sent
		// with its BEGIN and COMMIT in one round trip.
		err = s.writePiped(ctx, func(w *wtx, p *pipe) {
			out = nil
			w.pipeClaim(p, req, max(req.Limit, 1), &out)
		})
	} else {
		return app.Claim(ctx, s, req)
	}
	if err != nil {
		return nil, fmt.Errorf("claim from %s: %w", req.Queue, mapErr(err))
	}
	return out, nil
}

// ClaimQueue implements app.Tx: under the queue's claim lock, held to the
// commit, so a limited claim's check and take are one at a time across nodes.
func (w *wtx) ClaimQueue(queue string, busy bool) (app.QueueLimits, error) {
	var l app.QueueLimits
	if err := w.lock("claim", queue); err != nil {
		return l, err
	}
	var tokens *float64
	var rateAt *time.Time
	err := w.queryRow(`SELECT paused, rate_tokens, rate_at FROM queues WHERE name = $1`, queue).Scan(&l.Paused, &tokens, &rateAt)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return l, err
	}
	if tokens != nil && rateAt != nil {
		l.Tokens, l.RateAt = *tokens, *rateAt
	}
	if busy {
		return l, w.queryRow(`SELECT count(*) FROM jobs WHERE status = 'processing' AND queue = $1`, queue).Scan(&l.Busy)
	}
	return l, nil
}

// Take implements app.Tx.
func (w *wtx) Take(req app.ClaimRequest, n int) ([]*app.Job, error) {
	var out []*app.Job
	p := &pipe{}
	q, a := w.claimStatement(req, n, true)
	p.exec(customPlans)
	p.query(func(rows pgx.Rows) (err error) {
		out, err = scanJobs(rows, nil)
		return err
	}, q, a...)
	return out, w.run(p)
}

// SetRate implements app.Tx.
func (w *wtx) SetRate(queue string, tokens float64) error {
	return w.setQueue(queue, []string{"rate_tokens", "rate_at"}, tokens, w.now)
}

// pipeClaim adds to p the claim of up to n jobs for req, planned for its
// own arguments (see customPlans), counting them for the charts (see
// countPicked), and sets *out to the jobs it took, in claim order.
func (w *wtx) pipeClaim(p *pipe, req app.ClaimRequest, n int, out *[]*app.Job) {
	q, a := w.countPicked(w.claimStatement(req, n, false))
	p.exec(customPlans)
	p.query(func(rows pgx.Rows) error {
		jobs, err := scanJobs(rows, nil)
		if err != nil {
			return err
		}
		*out, err = w.started(jobs)
		return err
	}, q, a...)
}

// claimStatement is the claim of up to n jobs for req and its arguments.
// Unless locked (a limited claim read the paused flag under the queue's
// lock), a paused queue is one of its conditions.
func (w *wtx) claimStatement(req app.ClaimRequest, n int, locked bool) (string, args) {
	a := args{}
	now := a.add(w.now) + "::timestamptz"
	due := now
	if req.Ahead > 0 {
		due = a.add(w.now.Add(req.Ahead)) + "::timestamptz"
	}
	leaseExp := now + ` + j.timeout_ms * interval '1 millisecond'`
	if req.Timeout > 0 {
		leaseExp = now + ` + ` + a.add(req.Timeout.Milliseconds()) + `::bigint * interval '1 millisecond'`
	}
	worker := a.add(nullString(clean(req.WorkerID)))
	queue := a.add(req.Queue)
	cond := ""
	if !locked {
		cond += ` AND NOT EXISTS (SELECT 1 FROM queues WHERE name = ` + queue + ` AND paused)`
	}
	lim := a.add(n)
	var kind string
	switch len(req.Kinds) {
	case 0:
	case 1:
		kind = a.add(req.Kinds[0])
	default:
		kind = a.add(req.Kinds) + "::text[]"
	}
	return claimSQL(now, due, leaseExp, worker, queue, cond, kind, len(req.Kinds), lim), a
}

// started puts claimed jobs in claim order and publishes (after commit)
// their job.started.
func (w *wtx) started(jobs []*app.Job) ([]*app.Job, error) {
	return jobs, app.Claimed(w, jobs)
}

// customPlans makes the claim that follows it in its transaction planned
// for its own arguments every time. A plan cached for every claim would be
// made when the table was small (a fresh database), could read the whole
// table to find the picked rows, and would be kept until the next ANALYZE.
const customPlans = `SET LOCAL plan_cache_mode = force_custom_plan`

// claimSQL is the claim statement: the first n claimable rows of a queue
// (queued, not held, due by due) in claim order, locked (skipping rows
// other transactions hold), moved to processing with a new lease. Without
// kinds it walks jobs_claim (queue, priority, run_at, id) from the front.
// With one kind (kind is its parameter) it walks that kind's range of
// jobs_claim_kind (queue, kind, priority, run_at, id), and with several
// (kind is a text[] parameter) the front of the range of each, locking in
// each only its share of the first n: a claim for one kind never walks
// another kind's backlog, nor holds rows it does not take. Both
// indexes leave held jobs out, and the claim says AND NOT held to use them.
// The picked rows are then found by their primary key.
func claimSQL(now, due, leaseExp, worker, queue, cond, kind string, kinds int, n string) string {
	claimable := `status = 'queued' AND NOT held AND run_at <= ` + due + `
				AND (expires_at IS NULL OR expires_at > ` + now + `)` + cond
	if kinds == 1 {
		claimable = `kind = ` + kind + ` AND ` + claimable
	}
	picked := `SELECT id FROM jobs
			WHERE queue = ` + queue + ` AND ` + claimable + `
			ORDER BY priority, run_at, id
			LIMIT ` + n + `
			FOR UPDATE SKIP LOCKED`
	if kinds > 1 {
		// The first n claimable rows across the kinds are found without
		// locking (the first n of each kind's range, merged); then each
		// kind locks as many as it has among them, skipping rows others
		// hold. Locking n in each range and keeping the first n overall
		// held up to n per kind until the commit, rows concurrent claimers
		// skipped although this claim did not take them.
		picked = `WITH first AS (SELECT k.kind FROM unnest(` + kind + `) AS k(kind)
				CROSS JOIN LATERAL (SELECT priority, run_at, id FROM jobs
					WHERE queue = ` + queue + ` AND kind = k.kind AND ` + claimable + `
					ORDER BY priority, run_at, id
					LIMIT ` + n + `) p
				ORDER BY p.priority, p.run_at, p.id
				LIMIT ` + n + `),
			shares AS (SELECT kind, count(*) AS n FROM first GROUP BY kind)
			SELECT p.id FROM shares s
			CROSS JOIN LATERAL (SELECT id FROM jobs
				WHERE queue = ` + queue + ` AND kind = s.kind AND ` + claimable + `
				ORDER BY priority, run_at, id
				LIMIT s.n
				FOR UPDATE SKIP LOCKED) p`
	}
	return `WITH picked AS (` + picked + `)
		UPDATE jobs j SET status = 'processing', attempts = j.attempts + 1, lease = j.lease + 1,
			lease_expires_at = ` + leaseExp + `, worker_id = ` + worker + `, started_at = ` + now + `, updated_at = ` + now + `
		WHERE j.id = ANY(ARRAY(SELECT id FROM picked))
		RETURNING ` + qualified("j", jobCols)
}

// fenceErr explains why a fenced update of job id matched no row (see
// app.FenceError).
func (w *wtx) fenceErr(id int64) error {
	return fenceErr(w.queryRow(fenceSQL, id), id)
}

// fenceSQL counts the rows of job id in either table.
const fenceSQL = `SELECT count(*) FROM (SELECT 1 FROM jobs WHERE id = $1 UNION ALL SELECT 1 FROM dead_letter_jobs WHERE id = $1) f`

// fenceErr is the explanation of w.fenceErr from row, the result of fenceSQL.
func fenceErr(row pgx.Row, id int64) error {
	var n int
	if err := row.Scan(&n); err != nil {
		return err
	}
	return app.FenceError(id, n > 0)
}

// Complete implements app.Store: one statement completes the plain jobs
// of the batch; only the items it did not match are looked at one by one.
// A workflow step's completion releases its dependants, a keyed job's the
// next held job of its key, and a job with a callback_url is called back
// (a delivery job, app.Settle), which take the rules of app: those items
// are completed in a transaction of their own (completeRest), after the
// plain ones committed (each item is fenced on its own, so the two need
// not commit together). While a webhook subscription wants job.succeeded,
// every item goes there: the piped statement settles nothing.
func (s *Store) Complete(ctx context.Context, items []app.Completion) ([]error, error) {
	first := app.FirstCompletions(items)
	if s.opts.Webhooks != nil && s.opts.Webhooks().Wants(app.EventSucceeded) {
		done := map[int64]int64{}
		if err := s.completeRest(ctx, first, done, true); err != nil {
			return nil, app.WithOperation("complete", mapErr(err))
		}
		return s.settleCompletions(ctx, items, done)
	}
	ids, leases, results := make([]int64, len(first)), make([]int64, len(first)), make([]string, len(first))
	for i, it := range first {
		ids[i], leases[i], results[i] = it.ID, it.Lease, rawOrNull(it.Result)
	}
	var done map[int64]int64 // job id -> its lease
	err := s.writePiped(ctx, func(w *wtx, p *pipe) {
		// The counts of the last minute are upserted by the same statement
		// (a piped write has nothing to flush after its statements).
		p.query(func(rows pgx.Rows) error {
			done = make(map[int64]int64, len(ids))
			for rows.Next() {
				var id, lease int64
				var queue, kind string
				var started *time.Time
				if err := rows.Scan(&id, &lease, &queue, &kind, &started); err != nil {
					return err
				}
				if err := w.Fault(app.FaultComplete, id); err != nil {
					return err
				}
				done[id] = lease
				app.Succeeded(w, queue, kind, id, msPtr(started)) // the statement counts in SQL
			}
			return rows.Err()
		}, `WITH done AS (
				UPDATE jobs j SET status = 'done', result = v.result::json, finished_at = $1, updated_at = $1,
					lease_expires_at = NULL
				FROM unnest($2::bigint[], $3::bigint[], $4::text[]) AS v(id, lease, result)
				WHERE j.id = v.id AND j.lease = v.lease AND j.status = 'processing' AND j.workflow_id IS NULL
					AND j.flow_key IS NULL AND j.callback_url IS NULL
				RETURNING j.id, j.lease, j.queue, j.kind, j.started_at),
			counted AS (
				INSERT INTO throughput (queue, second, shard, completed, failed)
				SELECT queue, $5, `+throughputShard+`, count(*), 0
				FROM done GROUP BY queue ORDER BY queue
				ON CONFLICT (queue, second, shard) DO UPDATE SET completed = throughput.completed + excluded.completed)
			SELECT id, lease, queue, kind, started_at FROM done`,
			w.now, ids, leases, results, time.Unix(w.now.Unix(), 0).UTC())
	})
	if err != nil {
		return nil, app.WithOperation("complete", mapErr(err))
	}
	var rest []app.Completion
	for _, it := range first {
		if _, ok := done[it.ID]; !ok { // an item of a job done here lost its lease
			rest = append(rest, it)
		}
	}
	if len(rest) > 0 {
		// The batch has begun to commit: its caller giving up now must not
		// leave half of it unanswered.
		if err := s.completeRest(context.WithoutCancel(ctx), rest, done, false); err != nil {
			return nil, app.WithOperation("complete", mapErr(err))
		}
	}
	return s.settleCompletions(ctx, items, done)
}

// settleCompletions answers each of items: nil for those done holds,
// else why not. Why an item was not completed is read after the commit:
// the answer (lease lost, or no such job) does not change what was
// written, and the call answers for what was written even if its caller
// gave up.
func (s *Store) settleCompletions(ctx context.Context, items []app.Completion, done map[int64]int64) ([]error, error) {
	errs, err := app.SettleCompletions(items, done, func(id int64) error {
		return fenceErr(s.pool.QueryRow(context.WithoutCancel(ctx), fenceSQL, id), id)
	})
	if err != nil {
		return nil, app.WithOperation("complete", mapErr(err))
	}
	return errs, nil
}

// completeRest completes the workflow steps, keyed jobs and jobs with a
// callback_url among items (those the piped statement leaves alone; with
// all, every job of items) in one transaction: one statement for the jobs,
// then what follows a completion, app.KeyEnded for each keyed job (the
// write's app.Settle releases the next held job of its key, and inserts
// the webhook deliveries of job.succeeded) and app.StepsEnded, which
// releases their dependants by app's rules. It records each job it
// completed in done.
func (s *Store) completeRest(ctx context.Context, items []app.Completion, done map[int64]int64, all bool) error {
	which := `AND (j.workflow_id IS NOT NULL OR j.flow_key IS NOT NULL OR j.callback_url IS NOT NULL)`
	if all {
		which = ``
	}
	ids, leases, results := make([]int64, len(items)), make([]int64, len(items)), make([]string, len(items))
	byID := make(map[int64]json.RawMessage, len(items))
	for i, it := range items {
		ids[i], leases[i], results[i] = it.ID, it.Lease, rawOrNull(it.Result)
		byID[it.ID] = it.Result
	}
	var completed map[int64]int64
	err := s.write(ctx, func(w *wtx) error {
		completed = map[int64]int64{}
		rows, err := w.query(`UPDATE jobs j SET status = 'done', result = v.result::json, finished_at = $1, updated_at = $1,
				lease_expires_at = NULL
			FROM unnest($2::bigint[], $3::bigint[], $4::text[]) AS v(id, lease, result)
			WHERE j.id = v.id AND j.lease = v.lease AND j.status = 'processing'
				`+which+`
			RETURNING j.id, j.lease, j.queue, j.kind, j.started_at, coalesce(j.workflow_id, 0), coalesce(j.step, ''),
				coalesce(j.flow_key, '')`, w.now, ids, leases, results)
		type row struct {
			id, lease, wf int64
			queue, kind   string
			started       *time.Time
			step, key     string
		}
		got, err := collect(rows, err, func(r pgx.Row) (x row, err error) {
			return x, r.Scan(&x.id, &x.lease, &x.queue, &x.kind, &x.started, &x.wf, &x.step, &x.key)
		})
		if err != nil {
			return err
		}
		ends := make([]app.StepEnd, 0, len(got))
		for _, x := range got {
			if err := w.Fault(app.FaultComplete, x.id); err != nil {
				return err
			}
			app.Completed(w, x.queue, x.kind, x.id, msPtr(x.started))
			app.KeyEnded(w, x.queue, x.key)
			completed[x.id] = x.lease
			if x.wf != 0 {
				ends = append(ends, app.StepEnd{Workflow: x.wf, Step: x.step, JobID: x.id, To: app.StepDone, Result: byID[x.id]})
			}
		}
		return app.StepsEnded(w, ends)
	})
	if err != nil {
		return err
	}
	for id, lease := range completed {
		done[id] = lease
	}
	return nil
}

// Processing implements app.Tx: it reads and locks job id if it is
// processing under lease, else explains. The lock makes a racing call
// wait, then see the job's new state.
func (w *wtx) Processing(id, lease int64) (*app.Job, error) {
	j, err := scanJob(w.queryRow(`SELECT `+jobCols+` FROM jobs WHERE id = $1 AND lease = $2 AND status = 'processing' FOR UPDATE`, id, lease))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, w.fenceErr(id)
	}
	return j, err
}

// Job implements app.Tx: it reads and locks job id. A job in the
// dead-letter queue is ErrIllegalTransition, none at all ErrNotFound.
func (w *wtx) Job(id int64) (*app.Job, error) {
	j, err := scanJob(w.queryRow(`SELECT `+jobCols+` FROM jobs WHERE id = $1 FOR UPDATE`, id))
	if !errors.Is(err, pgx.ErrNoRows) {
		return j, err
	}
	var dead int
	if err := w.queryRow(`SELECT count(*) FROM dead_letter_jobs WHERE id = $1`, id).Scan(&dead); err != nil {
		return nil, err
	}
	return nil, app.MissingError(id, dead > 0)
}

// Stale implements app.Tx. Rows another transaction holds (a worker
// completing the job right now) are skipped, not waited for.
func (w *wtx) Stale(limit int) ([]*app.Job, error) {
	return scanJobs(w.query(`SELECT `+jobCols+` FROM jobs WHERE status = 'processing' AND lease_expires_at <= $1
		ORDER BY lease_expires_at LIMIT $2 FOR UPDATE SKIP LOCKED`, w.now, limit))
}

// Extend implements app.Tx.
func (w *wtx) Extend(j *app.Job, until time.Time) (*app.Job, error) {
	return scanJob(w.queryRow(`UPDATE jobs SET lease_expires_at = $1, updated_at = $2 WHERE id = $3 RETURNING `+jobCols, until, w.now, j.ID))
}

// Finish implements app.Tx.
func (w *wtx) Finish(j *app.Job, result json.RawMessage) (*app.Job, error) {
	return scanJob(w.queryRow(`UPDATE jobs SET status = 'done', result = $1, finished_at = $2, updated_at = $2,
		lease_expires_at = NULL WHERE id = $3 RETURNING `+jobCols, rawOrNull(result), w.now, j.ID))
}

// Requeue implements app.Tx.
func (w *wtx) Requeue(j *app.Job, runAt time.Time, giveBack bool) (*app.Job, error) {
	back := 0
	if giveBack {
		back = 1
	}
	return scanJob(w.queryRow(`UPDATE jobs SET status = 'queued', run_at = $1, attempts = attempts - $2, errors = $3,
			updated_at = $4, lease_expires_at = NULL, worker_id = NULL WHERE id = $5 RETURNING `+jobCols,
		ms(runAt), back, app.EncodeList(j.Errors), w.now, j.ID))
}

// Cancel implements app.Tx.
func (w *wtx) Cancel(j *app.Job, reason string) (*app.Job, error) {
	return scanJob(w.queryRow(`UPDATE jobs SET status = 'cancelled', held = false, cancel_reason = $1, errors = $2,
			finished_at = $3, updated_at = $3, lease_expires_at = NULL WHERE id = $4 RETURNING `+jobCols,
		clean(reason), app.EncodeList(j.Errors), w.now, j.ID))
}

// RequestCancel implements app.Tx.
func (w *wtx) RequestCancel(j *app.Job, reason string) (*app.Job, error) {
	return scanJob(w.queryRow(`UPDATE jobs SET cancel_requested = true,
			cancel_reason = coalesce(cancel_reason, $1), updated_at = $2 WHERE id = $3 RETURNING `+jobCols,
		clean(reason), w.now, j.ID))
}

// InsertDead implements app.Tx. The last error is stored cleaned (see
// clean), and d keeps it so.
func (w *wtx) InsertDead(d *app.DeadJob) error {
	d.LastError = clean(d.LastError)
	_, err := w.exec(insertDeadSQL, deadRow(d)...)
	return err
}

// deadColumns are the columns of dead_letter_jobs, in deadRow's order.
var deadColumns = []string{"id", "queue", "kind", "payload", "priority", "tags", "attempts", "max_attempts", "timeout_ms",
	"errors", "idempotency_key", "original_created_at", "replayed_from", "dead_letter_reason", "last_error",
	"moved_to_dead_letter_at", "original_lease", "resurrection_count", "last_resurrection_at",
	"started_at", "run_at", "worker_id", "note", "replayed_job_id", "workflow_id", "step", "flow_key",
	"callback_url", "traceparent", "tracestate"}

// insertDeadSQL inserts one dead-letter row: deadRow's values.
var insertDeadSQL = func() string {
	ph := make([]string, len(deadColumns))
	for i := range ph {
		ph[i] = "$" + strconv.Itoa(i+1)
	}
	return `INSERT INTO dead_letter_jobs (` + strings.Join(deadColumns, ", ") + `) VALUES (` + strings.Join(ph, ", ") + `)`
}()

// deadRow is d as the values of deadColumns.
func deadRow(d *app.DeadJob) []any {
	return []any{d.ID, d.Queue, d.Kind, rawOrNull(d.Payload), d.Priority, tags(d.Tags), d.Attempts, d.MaxAttempts,
		d.Timeout.D().Milliseconds(), app.EncodeList(d.Errors), nullString(d.IdempotencyKey), ms(d.OriginalCreatedAt),
		d.ReplayedFrom, d.Reason, clean(d.LastError), ms(d.MovedAt), d.OriginalLease, d.ResurrectionCount, msPtr(d.LastResurrectionAt),
		msPtr(d.StartedAt), msPtr(d.RunAt), nullString(clean(d.WorkerID)), clean(d.Note), d.ReplayedJobID,
		nullID(d.WorkflowID), nullString(d.Step), nullString(d.Key),
		nullString(clean(d.CallbackURL)), nullString(clean(d.Traceparent)), nullString(clean(d.Tracestate))}
}

// DeleteJob implements app.Tx.
func (w *wtx) DeleteJob(id int64) error {
	tag, err := w.exec(`DELETE FROM jobs WHERE id = $1`, id)
	if err != nil {
		return fmt.Errorf("delete: %w", err)
	}
	if n := tag.RowsAffected(); n != 1 {
		return fmt.Errorf("delete removed %d rows", n)
	}
	return nil
}

// Audit implements app.Tx.
func (w *wtx) Audit(e app.AuditEntry) error {
	_, err := w.exec(`INSERT INTO audit (at, actor, action, target, filter, count) VALUES ($1, $2, $3, $4, $5, $6)`,
		ms(e.At), clean(e.Actor), clean(e.Action), nullString(clean(e.Target)), rawText(e.Filter), e.Count)
	return err
}
