package sqlite

import (
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/queuehq/queue/app"
)

// jobCols is the column list every job query selects, in scanJob's order.
const jobCols = `id, queue, kind, payload, status, priority, run_at, attempts, max_attempts,
	timeout_ms, expires_at, tags, idempotency_key, lease, lease_expires_at, worker_id,
	cancel_requested, cancel_reason, errors, result, replayed_from, created_at, updated_at,
	started_at, finished_at, workflow_id, step, flow_key, held, dedupe,
	progress, progress_message, progress_at, progress_attempt,
	callback_url, traceparent, tracestate`

// claimCols is jobCols without the columns a claim sets to values its
// caller knows (status, lease_expires_at, worker_id, updated_at,
// started_at): a claim returns fewer columns, in scanClaimed's order.
const claimCols = `id, queue, kind, payload, priority, run_at, attempts, max_attempts,
	timeout_ms, expires_at, tags, idempotency_key, lease,
	cancel_requested, cancel_reason, errors, result, replayed_from, created_at,
	finished_at, workflow_id, step, flow_key, callback_url, traceparent, tracestate`

type scanner interface{ Scan(dest ...any) error }

// collect reads every row of a query with scan and closes the rows; err is
// the query's own error, passed through.
func collect[T any](rows *sql.Rows, err error, scan func(scanner) (T, error)) ([]T, error) {
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []T
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}

// jobRow holds the columns of a job as scanned.
type jobRow struct {
	j                                                app.Job
	payload, tags, errs                              string
	status                                           string
	runAt, createdAt, updatedAt, timeoutMS           int64
	expiresAt, leaseExpiresAt, startedAt, finishedAt sql.NullInt64
	idem, workerID, cancelReason, result             sql.NullString
	replayedFrom, workflowID                         sql.NullInt64
	step, flowKey, dedupe                            sql.NullString
	cancelRequested, held                            int64
	progress, progressAt                             sql.NullInt64
	progressMsg                                      sql.NullString
	progressAttempt                                  int
	callbackURL, traceparent, tracestate             sql.NullString
}

func scanJob(sc scanner) (*app.Job, error) {
	var r jobRow
	if err := sc.Scan(&r.j.ID, &r.j.Queue, &r.j.Kind, &r.payload, &r.status, &r.j.Priority, &r.runAt, &r.j.Attempts,
		&r.j.MaxAttempts, &r.timeoutMS, &r.expiresAt, &r.tags, &r.idem, &r.j.Lease, &r.leaseExpiresAt, &r.workerID,
		&r.cancelRequested, &r.cancelReason, &r.errs, &r.result, &r.replayedFrom, &r.createdAt, &r.updatedAt,
		&r.startedAt, &r.finishedAt, &r.workflowID, &r.step, &r.flowKey, &r.held, &r.dedupe,
		&r.progress, &r.progressMsg, &r.progressAt, &r.progressAttempt,
		&r.callbackURL, &r.traceparent, &r.tracestate); err != nil {
		return nil, err
	}
	j, err := r.job()
	if err == nil && r.progress.Valid {
		pct := int(r.progress.Int64)
		j.ShowProgress(r.progressAttempt, &pct, r.progressMsg.String, fromNullMS(r.progressAt))
	}
	return j, err
}

// scanClaimed scans a row of claimCols that a claim at now by worker took,
// with its lease running timeoutMS (if negative, the job's own timeout).
func scanClaimed(sc scanner, now int64, worker string, timeoutMS int64) (*app.Job, error) {
	var r jobRow
	if err := sc.Scan(&r.j.ID, &r.j.Queue, &r.j.Kind, &r.payload, &r.j.Priority, &r.runAt, &r.j.Attempts,
		&r.j.MaxAttempts, &r.timeoutMS, &r.expiresAt, &r.tags, &r.idem, &r.j.Lease,
		&r.cancelRequested, &r.cancelReason, &r.errs, &r.result, &r.replayedFrom, &r.createdAt,
		&r.finishedAt, &r.workflowID, &r.step, &r.flowKey, &r.callbackURL, &r.traceparent, &r.tracestate); err != nil {
		return nil, err
	}
	if timeoutMS < 0 {
		timeoutMS = r.timeoutMS
	}
	r.status = string(app.StatusProcessing)
	r.leaseExpiresAt = sql.NullInt64{Int64: now + timeoutMS, Valid: true}
	r.workerID = sql.NullString{String: worker, Valid: true}
	r.updatedAt = now
	r.startedAt = sql.NullInt64{Int64: now, Valid: true}
	return r.job()
}

func (r *jobRow) job() (*app.Job, error) {
	j := &r.j
	j.Payload, j.Status, j.Timeout = json.RawMessage(r.payload), app.Status(r.status), app.Duration(time.Duration(r.timeoutMS)*time.Millisecond)
	j.RunAt, j.CreatedAt, j.UpdatedAt = fromMS(r.runAt), fromMS(r.createdAt), fromMS(r.updatedAt)
	j.ExpiresAt, j.LeaseExpiresAt = fromNullMS(r.expiresAt), fromNullMS(r.leaseExpiresAt)
	j.StartedAt, j.FinishedAt = fromNullMS(r.startedAt), fromNullMS(r.finishedAt)
	j.IdempotencyKey, j.WorkerID, j.CancelReason = r.idem.String, r.workerID.String, r.cancelReason.String
	j.CancelRequested, j.Result, j.ReplayedFrom = r.cancelRequested != 0, nullJSON(r.result), nullInt64(r.replayedFrom)
	j.WorkflowID, j.Step = r.workflowID.Int64, r.step.String
	j.Key, j.Held, j.Dedupe = r.flowKey.String, r.held != 0, r.dedupe.String
	j.CallbackURL, j.Traceparent, j.Tracestate = r.callbackURL.String, r.traceparent.String, r.tracestate.String
	if err := app.DecodeList(r.tags, &j.Tags); err != nil {
		return nil, fmt.Errorf("job %d tags: %w", j.ID, err)
	}
	if err := app.DecodeList(r.errs, &j.Errors); err != nil {
		return nil, fmt.Errorf("job %d errors: %w", j.ID, err)
	}
	return j, nil
}

// deadCols is the column list every dead-letter query selects, in scanDead's order.
const deadCols = `id, queue, kind, payload, priority, tags, attempts, max_attempts, timeout_ms,
	errors, idempotency_key, original_created_at, replayed_from, dead_letter_reason, last_error,
	moved_to_dead_letter_at, original_lease, resurrection_count, last_resurrection_at,
	started_at, run_at, worker_id, note, replayed_job_id, workflow_id, step, flow_key,
	callback_url, traceparent, tracestate`

func scanDead(sc scanner) (*app.DeadJob, error) {
	var (
		d                              app.DeadJob
		payload, tags, errs            string
		timeoutMS, createdAt, movedAt  int64
		idem, workerID                 sql.NullString
		replayedFrom, lastResurrection sql.NullInt64
		startedAt, runAt, replayedJob  sql.NullInt64
		workflowID                     sql.NullInt64
		step, flowKey                  sql.NullString
		callbackURL, tp, ts            sql.NullString
	)
	if err := sc.Scan(&d.ID, &d.Queue, &d.Kind, &payload, &d.Priority, &tags, &d.Attempts, &d.MaxAttempts,
		&timeoutMS, &errs, &idem, &createdAt, &replayedFrom, &d.Reason, &d.LastError, &movedAt,
		&d.OriginalLease, &d.ResurrectionCount, &lastResurrection, &startedAt, &runAt, &workerID, &d.Note, &replayedJob, &workflowID, &step, &flowKey,
		&callbackURL, &tp, &ts); err != nil {
		return nil, err
	}
	d.StartedAt, d.RunAt, d.WorkerID, d.ReplayedJobID = fromNullMS(startedAt), fromNullMS(runAt), workerID.String, nullInt64(replayedJob)
	d.Payload, d.Timeout = json.RawMessage(payload), app.Duration(time.Duration(timeoutMS)*time.Millisecond)
	d.IdempotencyKey, d.ReplayedFrom = idem.String, nullInt64(replayedFrom)
	d.WorkflowID, d.Step, d.Key = workflowID.Int64, step.String, flowKey.String
	d.CallbackURL, d.Traceparent, d.Tracestate = callbackURL.String, tp.String, ts.String
	d.OriginalCreatedAt, d.MovedAt, d.LastResurrectionAt = fromMS(createdAt), fromMS(movedAt), fromNullMS(lastResurrection)
	if err := app.DecodeList(tags, &d.Tags); err != nil {
		return nil, fmt.Errorf("dead-letter row %d tags: %w", d.ID, err)
	}
	if err := app.DecodeList(errs, &d.Errors); err != nil {
		return nil, fmt.Errorf("dead-letter row %d errors: %w", d.ID, err)
	}
	return &d, nil
}

func nullString(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// nullID is id as a nullable column (NULL for 0, no such row).
func nullID(id int64) any {
	if id == 0 {
		return nil
	}
	return id
}

// nullInt64 is a nullable integer column's value (nil for NULL).
func nullInt64(v sql.NullInt64) *int64 {
	if !v.Valid {
		return nil
	}
	return &v.Int64
}

// nullJSON is a nullable JSON column's value (nil for NULL).
func nullJSON(v sql.NullString) json.RawMessage {
	if !v.Valid {
		return nil
	}
	return json.RawMessage(v.String)
}

// nullRaw is r as text, or NULL if r is empty.
func nullRaw(r json.RawMessage) any {
	if len(r) == 0 {
		return nil
	}
	return string(r)
}

func rawOrNull(r json.RawMessage) string {
	if len(r) == 0 {
		return "null"
	}
	return string(r)
}

// where builds a WHERE clause from conditions joined by AND.
type where struct {
	conds []string
	args  []any
}

func (w *where) add(cond string, args ...any) {
	w.conds = append(w.conds, cond)
	w.args = append(w.args, args...)
}

func (w *where) String() string {
	if len(w.conds) == 0 {
		return ""
	}
	return " WHERE " + strings.Join(w.conds, " AND ")
}

// jobWhere is f as SQL conditions on jobs.
func jobWhere(f app.JobFilter, now time.Time) *where { return conds("jobs", f.Conds(now)) }

// deadWhere is f as SQL conditions on dead-letter rows.
func deadWhere(f app.DeadFilter) *where { return conds("dead_letter_jobs", f.Conds()) }

// conds renders the conditions cs on table: values travel as arguments,
// never as text, and times as the stored milliseconds.
func conds(table string, cs []app.Cond) *where {
	w := &where{}
	for _, c := range cs {
		switch c.Op {
		case app.OpIn:
			var args []any
			switch in := c.Value.(type) {
			case []int64:
				for _, v := range in {
					args = append(args, v)
				}
			case []string:
				for _, v := range in {
					args = append(args, v)
				}
			}
			w.add(c.Field+" IN ("+strings.TrimSuffix(strings.Repeat("?,", len(args)), ",")+")", args...)
		case app.OpHas:
			w.add("EXISTS (SELECT 1 FROM json_each("+table+"."+c.Field+") WHERE json_each.value = ?)", c.Value)
		case app.OpPrefix: // a range an index on the field serves; no LIKE, so % and _ are plain
			w.add(c.Field+" >= ? AND "+c.Field+" < ?", c.Value, app.PrefixEnd(c.Value.(string)))
		case app.OpPayload:
			payloadCond(w, table, c.Value.(app.PayloadMatch))
		case app.OpContains:
			errorCond(w, table, c.Value.(string))
		case app.OpKeyLt, app.OpKeyLe, app.OpKeyGt:
			k := c.Value.(*app.DeadKey)
			w.add("("+c.Field+", id) "+strings.TrimPrefix(string(c.Op), "key")+" (?, ?)", ms(k.MovedAt), k.ID)
		default:
			v := c.Value
			if t, ok := v.(time.Time); ok {
				v = ms(t)
			}
			w.add(c.Field+" "+string(c.Op)+" ?", v)
		}
	}
	return w
}

// ignore is err, unless it is target.
func ignore(err, target error) error {
	if errors.Is(err, target) {
		return nil
	}
	return err
}
