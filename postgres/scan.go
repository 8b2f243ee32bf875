package postgres

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/queuehq/queue/app"
)

// jobCols is the column list every job query selects, in scanJob's order.
// JSON columns are read as text: pgx would read a JSON null as a nil pointer.
const jobCols = `id, queue, kind, payload::text, status, priority, run_at, attempts, max_attempts,
	timeout_ms, expires_at, tags, idempotency_key, lease, lease_expires_at, worker_id,
	cancel_requested, cancel_reason, errors::text, result::text, replayed_from, created_at, updated_at,
	started_at, finished_at, workflow_id, step, flow_key, held, dedupe,
	progress, progress_message, progress_at, progress_attempt,
	callback_url, traceparent, tracestate`

// qualified prefixes every column of cols with alias.
func qualified(alias, cols string) string {
	parts := strings.Split(cols, ",")
	for i, p := range parts {
		parts[i] = alias + "." + strings.TrimSpace(p)
	}
	return strings.Join(parts, ", ")
}

func scanJob(row pgx.Row) (*app.Job, error) {
	var (
		j                                                app.Job
		payload, errs, status                            string
		timeoutMS                                        int64
		idem, workerID, cancelReason, result, step       *string
		key, dedupe                                      *string
		expiresAt, leaseExpiresAt, startedAt, finishedAt *time.Time
		workflowID                                       *int64
		progress                                         *int
		progressMsg                                      *string
		progressAt                                       *time.Time
		progressAttempt                                  int
		callbackURL, traceparent, tracestate             *string
	)
	if err := row.Scan(&j.ID, &j.Queue, &j.Kind, &payload, &status, &j.Priority, &j.RunAt, &j.Attempts,
		&j.MaxAttempts, &timeoutMS, &expiresAt, &j.Tags, &idem, &j.Lease, &leaseExpiresAt, &workerID,
		&j.CancelRequested, &cancelReason, &errs, &result, &j.ReplayedFrom, &j.CreatedAt, &j.UpdatedAt,
		&startedAt, &finishedAt, &workflowID, &step, &key, &j.Held, &dedupe,
		&progress, &progressMsg, &progressAt, &progressAttempt,
		&callbackURL, &traceparent, &tracestate); err != nil {
		return nil, err
	}
	j.ShowProgress(progressAttempt, progress, deref(progressMsg), msPtr(progressAt))
	j.WorkflowID, j.Step, j.Key, j.Dedupe = derefID(workflowID), deref(step), deref(key), deref(dedupe)
	j.CallbackURL, j.Traceparent, j.Tracestate = deref(callbackURL), deref(traceparent), deref(tracestate)
	j.Payload, j.Status, j.Timeout = json.RawMessage(payload), app.Status(status), app.Duration(time.Duration(timeoutMS)*time.Millisecond)
	j.RunAt, j.CreatedAt, j.UpdatedAt = j.RunAt.UTC(), j.CreatedAt.UTC(), j.UpdatedAt.UTC()
	j.ExpiresAt, j.LeaseExpiresAt = msPtr(expiresAt), msPtr(leaseExpiresAt)
	j.StartedAt, j.FinishedAt = msPtr(startedAt), msPtr(finishedAt)
	j.IdempotencyKey, j.WorkerID, j.CancelReason, j.Result = deref(idem), deref(workerID), deref(cancelReason), rawPtr(result)
	if len(j.Tags) == 0 {
		j.Tags = nil
	}
	if err := app.DecodeList(errs, &j.Errors); err != nil {
		return nil, fmt.Errorf("job %d errors: %w", j.ID, err)
	}
	return &j, nil
}

// scanJobs reads every row of rows and closes them.
func scanJobs(rows pgx.Rows, err error) ([]*app.Job, error) { return collect(rows, err, scanJob) }

// collect reads every row of a query with scan, and closes the rows. No
// rows is nil, as the other stores answer.
func collect[T any](rows pgx.Rows, err error, scan func(pgx.Row) (T, error)) ([]T, error) {
	if err != nil {
		return nil, err
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (T, error) { return scan(row) })
	if len(out) == 0 {
		out = nil
	}
	return out, err
}

// readRows runs a read on the pool, while the store is open, and collects
// its rows with scan; errors are mapped.
func readRows[T any](ctx context.Context, s *Store, scan func(pgx.Row) (T, error), q string, args ...any) ([]T, error) {
	if err := s.enter(); err != nil {
		return nil, err
	}
	defer s.leave()
	rows, err := s.pool.Query(ctx, q, args...)
	out, err := collect(rows, err, scan)
	return out, mapErr(err)
}

// readRow runs a read of one row on the pool into dest.
func (s *Store) readRow(ctx context.Context, q string, args []any, dest ...any) error {
	if err := s.enter(); err != nil {
		return err
	}
	defer s.leave()
	return mapErr(s.pool.QueryRow(ctx, q, args...).Scan(dest...))
}

// rawText is r as a nullable JSON argument (nil for none).
func rawText(r json.RawMessage) *string {
	if len(r) == 0 {
		return nil
	}
	v := string(r)
	return &v
}

// rawPtr is a nullable JSON column's value (nil for NULL).
func rawPtr(p *string) json.RawMessage {
	if p == nil {
		return nil
	}
	return json.RawMessage(*p)
}

// deadCols is the column list every dead-letter query selects, in scanDead's order.
const deadCols = `id, queue, kind, payload::text, priority, tags, attempts, max_attempts, timeout_ms,
	errors::text, idempotency_key, original_created_at, replayed_from, dead_letter_reason, last_error,
	moved_to_dead_letter_at, original_lease, resurrection_count, last_resurrection_at,
	started_at, run_at, worker_id, note, replayed_job_id, workflow_id, step, flow_key,
	callback_url, traceparent, tracestate`

func scanDead(row pgx.Row) (*app.DeadJob, error) {
	var (
		d              app.DeadJob
		payload, errs  string
		timeoutMS      int64
		idem, workerID *string
		lastResurrects *time.Time
		workflowID     *int64
		step, key      *string
		callbackURL    *string
		tp, ts         *string
	)
	if err := row.Scan(&d.ID, &d.Queue, &d.Kind, &payload, &d.Priority, &d.Tags, &d.Attempts, &d.MaxAttempts,
		&timeoutMS, &errs, &idem, &d.OriginalCreatedAt, &d.ReplayedFrom, &d.Reason, &d.LastError, &d.MovedAt,
		&d.OriginalLease, &d.ResurrectionCount, &lastResurrects, &d.StartedAt, &d.RunAt, &workerID, &d.Note, &d.ReplayedJobID,
		&workflowID, &step, &key, &callbackURL, &tp, &ts); err != nil {
		return nil, err
	}
	d.WorkflowID, d.Step, d.Key = derefID(workflowID), deref(step), deref(key)
	d.CallbackURL, d.Traceparent, d.Tracestate = deref(callbackURL), deref(tp), deref(ts)
	d.StartedAt, d.RunAt, d.WorkerID = msPtr(d.StartedAt), msPtr(d.RunAt), deref(workerID)
	d.Payload, d.Timeout = json.RawMessage(payload), app.Duration(time.Duration(timeoutMS)*time.Millisecond)
	d.IdempotencyKey, d.LastResurrectionAt = deref(idem), msPtr(lastResurrects)
	d.OriginalCreatedAt, d.MovedAt = d.OriginalCreatedAt.UTC(), d.MovedAt.UTC()
	if len(d.Tags) == 0 {
		d.Tags = nil
	}
	if err := app.DecodeList(errs, &d.Errors); err != nil {
		return nil, fmt.Errorf("dead-letter row %d errors: %w", d.ID, err)
	}
	return &d, nil
}

func scanDeads(rows pgx.Rows, err error) ([]*app.DeadJob, error) { return collect(rows, err, scanDead) }

func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

func derefID(p *int64) int64 {
	if p == nil {
		return 0
	}
	return *p
}

// nullID is id as a nullable bigint argument (0 is NULL).
func nullID(id int64) *int64 {
	if id == 0 {
		return nil
	}
	return &id
}

// tags is v as a text[] argument (never NULL).
func tags(v []string) []string {
	if v == nil {
		return []string{}
	}
	return v
}

func nullString(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// rawOrNull is a JSON document as a json argument; empty is JSON null.
func rawOrNull(r json.RawMessage) string {
	if len(r) == 0 {
		return "null"
	}
	return string(r)
}

// jobWhere is f as SQL conditions on jobs.
func jobWhere(f app.JobFilter, now time.Time) *where { return conds(f.Conds(now)) }

// deadWhere is f as SQL conditions on dead-letter rows.
func deadWhere(f app.DeadFilter) *where { return conds(f.Conds()) }

// conds renders the conditions cs: values travel as arguments, never as text.
func conds(cs []app.Cond) *where {
	w := &where{}
	for _, c := range cs {
		v := c.Value
		if t, ok := v.(time.Time); ok {
			v = ms(t)
		}
		switch c.Op {
		case app.OpIn:
			w.cond(c.Field + " = ANY(" + w.add(v) + ")")
		case app.OpHas:
			w.cond(w.add(v) + " = ANY(" + c.Field + ")")
		case app.OpPrefix: // byte order whatever the database's collation, as jobs_kind is built; no LIKE, so % and _ are plain
			w.cond(c.Field + ` COLLATE "C" >= ` + w.add(v) + " AND " + c.Field + ` COLLATE "C" < ` + w.add(app.PrefixEnd(v.(string))))
		case app.OpPayload:
			payloadCond(w, c.Value.(app.PayloadMatch))
		case app.OpContains:
			errorCond(w, c.Value.(string))
		case app.OpKeyLt, app.OpKeyLe, app.OpKeyGt:
			k := c.Value.(*app.DeadKey)
			w.cond("(" + c.Field + ", id) " + strings.TrimPrefix(string(c.Op), "key") + " (" + w.add(ms(k.MovedAt)) + ", " + w.add(k.ID) + ")")
		default:
			w.cond(c.Field + " " + string(c.Op) + " " + w.add(v))
		}
	}
	return w
}
