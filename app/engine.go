package app

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// The lifecycle of a job after its claim, written once over a Tx: what a
// failure, a snooze, a cancel, a lost lease, a drain, an admin move, a TTL,
// a replay, a purge and a periodic fire do,
// and in which order (row, fault point, event, counters, wake-up). The
// stores only carry out the steps. Submit's rules are in submit.go, the
// claim's in claim.go; the batched claim and completion statements of the
// SQL stores call Claimed and Completed for what follows them.

// Complete marks each item's job done with its result (JSON null if none),
// each fenced on its own under its lease, so the answers match items one to
// one; the error is for the call as a whole. The SQLite and PostgreSQL
// stores complete a batch in fewer statements (see their Complete); this is
// the same done step by step.
func Complete(ctx context.Context, w Writer, items []Completion) ([]error, error) {
	var errs []error
	err := w.Write(ctx, func(tx Tx) (err error) {
		errs, err = CompleteTx(tx, items)
		return err
	})
	if err != nil {
		return nil, WithOperation("complete", err)
	}
	return errs, nil
}

// CompleteTx is Complete inside tx; the batched completions of the SQL
// stores leave it the jobs their statements do not take (workflow steps,
// whose completion releases their dependants).
func CompleteTx(tx Tx, items []Completion) ([]error, error) {
	errs := make([]error, len(items))
	var ends []StepEnd
	for i, it := range items {
		j, err := tx.Processing(it.ID, it.Lease)
		if errors.Is(err, ErrLeaseLost) || errors.Is(err, ErrNotFound) {
			errs[i] = err
			continue
		}
		if err != nil {
			return nil, err
		}
		if _, err := tx.Finish(j, it.Result); err != nil {
			return nil, err
		}
		if err := tx.Fault(FaultComplete, j.ID); err != nil {
			return nil, err
		}
		Completed(tx, j.Queue, j.Kind, j.ID, j.StartedAt)
		KeyEnded(tx, j.Queue, j.Key)
		if j.WorkflowID != 0 {
			ends = append(ends, StepEnd{Workflow: j.WorkflowID, Step: j.Step, JobID: j.ID, To: StepDone, Result: it.Result})
		}
	}
	if err := StepsEnded(tx, ends); err != nil {
		return nil, err
	}
	return errs, nil
}

// keyFree checks that the idempotency key a replay of dead-letter row id
// carries to nj is not held in nj's queue by another job or row.
func keyFree(tx Tx, nj *NewJob, id int64) error {
	if nj.IdempotencyKey == "" {
		return nil
	}
	holder, err := tx.ByKey(nj.Queue, nj.IdempotencyKey)
	if err != nil || holder == nil || holder.ID == id {
		return err
	}
	return fmt.Errorf("%w: key %q in queue %q belongs to job %d; the replay of dead-letter row %d cannot take it",
		ErrIdempotencyConflict, nj.IdempotencyKey, nj.Queue, holder.ID, id)
}

// Completed is what follows a job's completion in its transaction, also
// in the SQLite store's batched statement: Succeeded, the counts moved and
// the throughput.
func Completed(tx Tx, queue, kind string, id int64, started *time.Time) {
	Succeeded(tx, queue, kind, id, started)
	tx.Moved(queue, StatusProcessing, StatusDone, 1)
	tx.Count(queue, 1, 0)
}

// Succeeded is what every completion does besides counting: job.succeeded,
// and the wake-up of a queue with a concurrency limit (a slot is free).
// PostgreSQL's one-statement completion, which counts in SQL, calls it
// alone. A queue without a limit is not woken: nothing a claimer waits for
// came, and the wake-up cost a claim that found nothing (on PostgreSQL a
// statement planned and run) and counted as a job in the Notifier's
// coalescing window.
func Succeeded(tx Tx, queue, kind string, id int64, started *time.Time) {
	tx.Publish(EventSucceeded, id, queue, kind, FinishedData(started, tx.Now()))
	if tx.Capped(queue) {
		tx.Wake(queue)
	}
}

// RecordAudit stores an admin action of its own (one that moved no job:
// those record theirs in their own transaction).
func RecordAudit(ctx context.Context, w Writer, e AuditEntry) error {
	if err := w.Write(ctx, func(tx Tx) error { return recordAudit(tx, &e, e.Count) }); err != nil {
		return fmt.Errorf("record audit: %w", err)
	}
	return nil
}

// FenceError explains why a job held under a lease could not be changed:
// the job exists (in the jobs or the dead-letter table), so its lease is
// stale, or there is no such job.
func FenceError(id int64, exists bool) error {
	if exists {
		return fmt.Errorf("job %d: %w", id, ErrLeaseLost)
	}
	return fmt.Errorf("job %d: %w", id, ErrNotFound)
}

// MissingError explains why job id is not in the jobs table: it moved to
// the dead-letter queue (a change a dead-letter row cannot take), or there
// is no such job.
func MissingError(id int64, dead bool) error {
	if dead {
		return fmt.Errorf("job %d is in the dead-letter queue: %w", id, ErrIllegalTransition)
	}
	return fmt.Errorf("job %d: %w", id, ErrNotFound)
}

// recordAudit records e (if not nil) for count rows, at now unless e says when.
func recordAudit(tx Tx, e *AuditEntry, count int) error {
	if e == nil {
		return nil
	}
	a := *e
	if a.At.IsZero() {
		a.At = tx.Now()
	}
	a.Count = count
	return tx.Audit(a)
}

// Found is a Lookup's answer: ErrNotFound when id is in neither table.
func Found(id int64, job *Job, dead *DeadJob, err error) (*Job, *DeadJob, error) {
	switch {
	case err != nil:
		return nil, nil, fmt.Errorf("look up job %d: %w", id, err)
	case job == nil && dead == nil:
		return nil, nil, fmt.Errorf("job %d: %w", id, ErrNotFound)
	}
	return job, dead, nil
}

// ClaimOrder orders claimable jobs as a claim takes them: priority, then
// run_at, then id.
func ClaimOrder(a, b *Job) int {
	if a.Priority != b.Priority {
		return cmp.Compare(a.Priority, b.Priority)
	}
	if c := a.RunAt.Compare(b.RunAt); c != 0 {
		return c
	}
	return cmp.Compare(a.ID, b.ID)
}

// Heartbeat extends the lease of job id, held under lease, to extend from
// now (if not positive, the job's timeout).
func Heartbeat(ctx context.Context, w Writer, id, lease int64, extend time.Duration) (*Job, error) {
	return heartbeat(ctx, w, id, lease, extend, nil)
}

// heartbeat extends the lease and, if r is not nil, stores r as the
// progress of the attempt, in one transaction (HeartbeatProgress).
func heartbeat(ctx context.Context, w Writer, id, lease int64, extend time.Duration, r *ProgressReport) (*Job, error) {
	var job *Job
	err := w.Write(ctx, func(tx Tx) error {
		j, err := tx.Processing(id, lease)
		if err != nil {
			return err
		}
		d := extend
		if d <= 0 {
			d = j.Timeout.D()
		}
		if job, err = tx.Extend(j, tx.Now().Add(d).Truncate(time.Millisecond)); err != nil || r == nil {
			return err
		}
		return progressTx(tx, job, *r)
	})
	if err != nil {
		return nil, WithOperation("heartbeat", err)
	}
	return job, nil
}

// Fail records a failed attempt of job req.ID held under req.Lease: a
// retry with backoff, or the dead-letter queue (see DecideFail).
func Fail(ctx context.Context, w Writer, req FailRequest) (*FailResult, error) {
	var res *FailResult
	err := w.Write(ctx, func(tx Tx) error {
		j, err := tx.Processing(req.ID, req.Lease)
		if err != nil {
			return err
		}
		res, err = failAttempt(tx, j, req.Error, req.Retry, false, req.RetryIn, req.Backoff)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("fail job %d: %w", req.ID, err)
	}
	return res, nil
}

// failAttempt ends j's attempt with error msg and applies DecideFail.
func failAttempt(tx Tx, j *Job, msg string, retry, leaseExpired bool, retryIn time.Duration, backoff BackoffFunc) (*FailResult, error) {
	now := tx.Now()
	tx.AttemptEnded(j)
	j.Errors = AppendError(j.Errors, j.Attempts, msg, now)
	d := DecideFail(j, retry, leaseExpired, retryIn, backoff, now)
	switch d.Outcome {
	case OutcomeDeadLettered:
		dead, err := MoveToDeadTx(tx, j, d.Reason)
		if err != nil {
			return nil, err
		}
		tx.Count(j.Queue, 0, 1)
		return &FailResult{Outcome: d.Outcome, Dead: dead}, nil
	case OutcomeCancelled:
		nj, err := cancelled(tx, j) // the attempt has ended above
		if err != nil {
			return nil, err
		}
		return &FailResult{Outcome: d.Outcome, Job: nj}, nil
	}
	nj, err := tx.Requeue(j, d.RunAt, false)
	if err != nil {
		return nil, err
	}
	if err := tx.Fault(FaultRequeue, j.ID); err != nil {
		return nil, err
	}
	tx.Event(EventRetryScheduled, j.ID, j.Queue, j.Kind, eventData(map[string]any{
		"attempt": j.Attempts, "run_at": FormatTime(d.RunAt), "error": TruncateString(msg, 1024)}))
	tx.Moved(j.Queue, StatusProcessing, StatusQueued, 1)
	tx.Count(j.Queue, 0, 1)
	tx.Wake(j.Queue)
	return &FailResult{Outcome: d.Outcome, Job: nj}, nil
}

// MoveToDeadTx moves job j (read in tx) to the dead-letter queue with
// reason: the dead-letter row first, then the job's deletion, both in tx,
// so a reader finds the job in exactly one of the two.
func MoveToDeadTx(tx Tx, j *Job, reason string) (*DeadJob, error) {
	return moveToDead(tx, j, reason, "")
}

// moveToDead is MoveToDeadTx with an operator's note kept on the row.
func moveToDead(tx Tx, j *Job, reason, note string) (*DeadJob, error) {
	d := DeadFromJob(j, reason, tx.Now())
	d.Note = note
	if err := tx.InsertDead(d); err != nil {
		return nil, fmt.Errorf("dead-letter job %d: %w", j.ID, err)
	}
	if err := tx.Fault(FaultDeadLetterInsert, j.ID); err != nil {
		return nil, fmt.Errorf("dead-letter job %d: %w", j.ID, err)
	}
	if err := tx.DeleteJob(j.ID); err != nil {
		return nil, fmt.Errorf("dead-letter job %d: %w", j.ID, err)
	}
	tx.Event(EventDeadLettered, j.ID, j.Queue, j.Kind, eventData(map[string]any{"reason": reason, "attempts": j.Attempts}))
	tx.Moved(j.Queue, j.Status, StatusDeadLetter, 1)
	KeyEnded(tx, j.Queue, j.Key)
	if j.WorkflowID != 0 {
		if err := stepEnded(tx, j.WorkflowID, j.Step, j.ID, StepDead, nil, d.LastError); err != nil {
			return nil, err
		}
	}
	return d, nil
}

// finishCancel cancels j (queued, or processing with a cancel requested or
// acknowledged) with j.CancelReason, or CancelRequested without one.
func finishCancel(tx Tx, j *Job) (*Job, error) {
	tx.AttemptEnded(j)
	return cancelled(tx, j)
}

// cancelled is finishCancel once j's attempt (if any) has ended.
func cancelled(tx Tx, j *Job) (*Job, error) {
	reason := j.CancelReason
	if reason == "" {
		reason = CancelRequested
	}
	nj, err := tx.Cancel(j, reason)
	if err != nil {
		return nil, err
	}
	if err := tx.Fault(FaultCancel, j.ID); err != nil {
		return nil, err
	}
	tx.Event(EventCancelled, j.ID, j.Queue, j.Kind, nil)
	tx.Moved(j.Queue, j.Status, StatusCancelled, 1)
	tx.Wake(j.Queue)
	KeyEnded(tx, j.Queue, j.Key)
	if j.WorkflowID != 0 {
		if err := stepEnded(tx, j.WorkflowID, j.Step, j.ID, StepCancelled, nil, "cancelled: "+reason); err != nil {
			return nil, err
		}
	}
	return nj, nil
}

// Snooze puts processing job id back to queued with run_at = now+delay and
// gives back the attempt; a job whose cancel was requested is cancelled.
func Snooze(ctx context.Context, w Writer, id, lease int64, delay time.Duration) (*Job, error) {
	var job *Job
	err := w.Write(ctx, func(tx Tx) error {
		j, err := tx.Processing(id, lease)
		if err != nil {
			return err
		}
		if j.CancelRequested { // nobody wants it run again
			job, err = finishCancel(tx, j)
			return err
		}
		runAt := tx.Now().Add(max(delay, 0))
		tx.AttemptEnded(j)
		if job, err = tx.Requeue(j, runAt, true); err != nil {
			return err
		}
		if err := tx.Fault(FaultRequeue, id); err != nil {
			return err
		}
		tx.Event(EventSnoozed, id, j.Queue, j.Kind, eventData(map[string]any{"run_at": FormatTime(runAt)}))
		tx.Moved(j.Queue, StatusProcessing, StatusQueued, 1)
		tx.Wake(j.Queue)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("snooze job %d: %w", id, err)
	}
	return job, nil
}

// Cancel cancels a queued job, requests the cancel of a processing one, or,
// with a lease, finishes the cancel the worker holding it acknowledges.
func Cancel(ctx context.Context, w Writer, req CancelRequest) (*Job, error) {
	reason := req.Reason
	if reason == "" {
		reason = CancelRequested
	}
	var job *Job
	err := w.Write(ctx, func(tx Tx) error {
		j, err := tx.Job(req.ID)
		if err != nil {
			return err
		}
		switch {
		case req.Lease != nil:
			if j.Status != StatusProcessing || j.Lease != *req.Lease {
				return fmt.Errorf("job %d: %w", req.ID, ErrLeaseLost)
			}
			if !j.CancelRequested {
				j.CancelReason = reason
			}
			job, err = finishCancel(tx, j)
		case j.Status == StatusQueued || j.Status == StatusProcessing:
			job, err = cancelLive(tx, j, reason)
		default:
			return fmt.Errorf("job %d is %s: %w", req.ID, j.Status, ErrIllegalTransition)
		}
		if err != nil {
			return err
		}
		return recordAudit(tx, req.Audit, 1)
	})
	if err != nil {
		return nil, fmt.Errorf("cancel job %d: %w", req.ID, err)
	}
	return job, nil
}

// cancelLive cancels queued job j with reason, or asks the worker of
// processing job j to stop (its cancel is finished when the worker
// acknowledges, or its lease expires): POST /api/jobs/{id}/cancel's rule,
// and the bulk cancel's (jobs_live_bulk.go).
func cancelLive(tx Tx, j *Job, reason string) (*Job, error) {
	if j.Status == StatusQueued {
		j.CancelReason = reason
		return finishCancel(tx, j)
	}
	job, err := tx.RequestCancel(j, reason)
	if err == nil {
		err = tx.Fault(FaultCancel, j.ID)
	}
	if err != nil {
		return nil, err
	}
	if !j.CancelRequested {
		tx.Event(EventCancelRequest, j.ID, j.Queue, j.Kind, nil)
	}
	return job, nil
}

// RecoverStale finishes up to limit processing jobs whose lease expired:
// cancelled if a cancel was requested, else a failed attempt ("lease
// expired": retried with backoff, or dead-lettered with reason
// lease_expired on the last attempt). It returns how many it finished.
func RecoverStale(ctx context.Context, w Writer, limit int, backoff BackoffFunc) (int, error) {
	ended, err := recoverStale(ctx, w, limit, backoff)
	return len(ended), err
}

// recoverStale is RecoverStale answering the attempts it ended, as they
// were (for their spans: trace.go).
func recoverStale(ctx context.Context, w Writer, limit int, backoff BackoffFunc) ([]*Job, error) {
	var ended []*Job
	err := w.Write(ctx, func(tx Tx) error {
		ended = ended[:0]
		stale, err := tx.Stale(max(limit, 1))
		if err != nil {
			return err
		}
		for _, j := range stale {
			tx.Event(EventLeaseLost, j.ID, j.Queue, j.Kind, eventData(map[string]any{"lease": j.Lease, "worker_id": j.WorkerID, "attempt": j.Attempts}))
			ended = append(ended, trimAttempt(j))
			if j.CancelRequested {
				_, err = finishCancel(tx, j)
			} else {
				_, err = failAttempt(tx, j, LeaseExpiredError, true, true, 0, backoff)
			}
			if err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("recover stale leases: %w", err)
	}
	return ended, nil
}

// MoveToDead moves the queued jobs of f (at most f.Limit) to the
// dead-letter queue with reason admin_move, in one transaction, audited.
func MoveToDead(ctx context.Context, w Writer, f JobFilter, note string, audit *AuditEntry) ([]int64, error) {
	ids, err := eachQueued(ctx, w, f, audit, func(tx Tx, j *Job) error {
		_, err := moveToDead(tx, j, ReasonAdminMove, note)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("move to dead-letter queue: %w", err)
	}
	return ids, nil
}

// Drain cancels the queued jobs of f (at most f.Limit) with reason drained,
// in one transaction, audited.
func Drain(ctx context.Context, w Writer, f JobFilter, audit *AuditEntry) ([]int64, error) {
	ids, err := eachQueued(ctx, w, f, audit, func(tx Tx, j *Job) error {
		j.CancelReason = CancelDrained
		_, err := finishCancel(tx, j)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("drain: %w", err)
	}
	return ids, nil
}

// eachQueued applies fn to each queued job of f in one transaction and
// audits the count.
func eachQueued(ctx context.Context, w Writer, f JobFilter, audit *AuditEntry, fn func(Tx, *Job) error) ([]int64, error) {
	var ids []int64
	err := w.Write(ctx, func(tx Tx) error {
		ids = nil
		if f.Status = ""; len(f.StatusIn) == 0 {
			f.StatusIn = []Status{StatusQueued}
		}
		jobs, err := tx.Jobs(f)
		if err != nil {
			return err
		}
		err = batchEnds(tx, func(tx Tx) error {
			for _, j := range jobs {
				if err := fn(tx, j); err != nil {
					return err
				}
				ids = append(ids, j.ID)
			}
			return nil
		})
		if err != nil {
			return err
		}
		return recordAudit(tx, audit, len(ids))
	})
	return ids, err
}

// ExpireTTL cancels up to limit queued jobs whose expires_at passed, with
// reason expired, and returns how many.
func ExpireTTL(ctx context.Context, w Writer, limit int) (int, error) {
	n := 0
	err := w.Write(ctx, func(tx Tx) error {
		due, err := tx.ExpireDue(max(limit, 1))
		if err != nil {
			return err
		}
		var ends []StepEnd
		for _, r := range due {
			if err := tx.Fault(FaultCancel, r.ID); err != nil {
				return err
			}
			tx.Event(EventExpired, r.ID, r.Queue, r.Kind, nil)
			tx.Moved(r.Queue, StatusQueued, StatusCancelled, 1)
			KeyEnded(tx, r.Queue, r.Key)
			if r.WorkflowID != 0 {
				ends = append(ends, StepEnd{Workflow: r.WorkflowID, Step: r.Step, JobID: r.ID, To: StepCancelled, Error: "cancelled: " + CancelExpired})
			}
		}
		if err := StepsEnded(tx, ends); err != nil {
			return err
		}
		n = len(due)
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("expire jobs: %w", err)
	}
	return n, nil
}

// Purge deletes the dead-letter rows of f (at most f.Limit) in one
// transaction, audited, and returns their ids. Purging one row by id that
// does not exist is ErrNotFound.
func Purge(ctx context.Context, w Writer, f DeadFilter, audit *AuditEntry) ([]int64, error) {
	var ids []int64
	err := w.Write(ctx, func(tx Tx) error {
		ids = nil
		gone, err := tx.DeleteDead(f)
		if err != nil {
			return err
		}
		if err := tx.Fault(FaultDelete, 0); err != nil {
			return err
		}
		for _, r := range gone {
			ids = append(ids, r.ID)
			tx.Event(EventDLQPurged, r.ID, r.Queue, r.Kind, nil)
			tx.Moved(r.Queue, StatusDeadLetter, "", 1)
		}
		if len(ids) == 0 && len(f.IDs) == 1 {
			return fmt.Errorf("dead-letter row %d: %w", f.IDs[0], ErrNotFound)
		}
		return recordAudit(tx, audit, len(ids))
	})
	if err != nil {
		return nil, WithOperation("purge", err)
	}
	return ids, nil
}

// SetPaused pauses or resumes queue, audited; the state survives restarts.
// Resuming wakes the queue's waiting claimers.
func SetPaused(ctx context.Context, w Writer, queue string, paused bool, audit *AuditEntry) error {
	err := w.Write(ctx, func(tx Tx) error {
		if err := tx.SetQueuePaused(queue, paused); err != nil {
			return err
		}
		if paused {
			tx.Event(EventQueuePaused, 0, queue, "", nil)
		} else {
			tx.Event(EventQueueResumed, 0, queue, "", nil)
			tx.Wake(queue)
		}
		return recordAudit(tx, audit, 1)
	})
	if err != nil {
		return fmt.Errorf("pause queue %s: %w", queue, err)
	}
	return nil
}

// Replay inserts a fresh queued job from each dead-letter row of
// req.Filter (at most Filter.Limit), spaced req.Spacing apart from
// req.RunAt (or now), keeping the rows and counting the resurrection, in
// one transaction, audited. Replaying one row by id that does not exist is
// ErrNotFound.
func Replay(ctx context.Context, w Writer, req ReplayRequest) ([]*Job, error) {
	var out []*Job
	err := w.Write(ctx, func(tx Tx) error {
		out = nil
		var once *OnceRecord
		if req.OnceKey != "" { // a repeat of this request answers with the job the first made
			var err error
			if once, err = tx.Once(req.OnceKey); err != nil {
				return err
			}
			var done struct{ JobID int64 }
			if once.Done && json.Unmarshal(once.Result, &done) == nil {
				j, err := tx.Job(done.JobID)
				out = []*Job{j}
				return err
			}
		}
		rows, err := tx.Dead(req.Filter)
		if err != nil {
			return err
		}
		if len(rows) == 0 && len(req.Filter.IDs) == 1 {
			return fmt.Errorf("dead-letter row %d: %w", req.Filter.IDs[0], ErrNotFound)
		}
		start := req.RunAt
		if start.IsZero() || start.Before(tx.Now()) {
			start = tx.Now()
		}
		jobs := make([]*NewJob, len(rows))
		for i, d := range rows {
			nj := ReplayJob(d, start.Add(req.Spacing*time.Duration(i)))
			if err := req.Override.apply(&nj); err != nil {
				return fmt.Errorf("dead-letter row %d: %w", d.ID, err)
			}
			if err := keyFree(tx, &nj, d.ID); err != nil {
				return err
			}
			if err := stepGone(tx, &nj); err != nil {
				return err
			}
			jobs[i] = &nj
		}
		if out, err = insert(tx, jobs...); err != nil {
			return err
		}
		if err := tx.Resurrected(rows, out); err != nil {
			return err
		}
		for i, d := range rows {
			tx.Event(EventDLQReplayed, d.ID, d.Queue, d.Kind, eventData(map[string]any{"dead_letter_id": d.ID, "job_id": out[i].ID}))
			if d.WorkflowID != 0 {
				if err := stepReplayed(tx, d, out[i]); err != nil {
					return err
				}
			}
		}
		if once != nil && len(out) > 0 {
			now := tx.Now().Truncate(time.Millisecond)
			once.Done, once.DoneAt, once.Token = true, &now, "replay"
			once.Result, _ = json.Marshal(struct{ JobID int64 }{out[0].ID})
			if err := tx.SaveOnce(once); err != nil {
				return err
			}
		}
		return recordAudit(tx, req.Audit, len(out))
	})
	if err != nil {
		return nil, WithOperation("replay", err)
	}
	return out, nil
}

// FirePeriodic enqueues fire.Job for the periodic entry's fire time unless
// that fire was recorded before (by any node: the fire's key decides), and
// returns the job it made. With SkipIfPending, a fire whose entry still has
// a queued or processing job is recorded but enqueues nothing.
func FirePeriodic(ctx context.Context, w Writer, fire PeriodicFire) (*Job, bool, error) {
	var job *Job
	err := w.Write(ctx, func(tx Tx) error {
		job = nil
		if paused, err := firePaused(tx, fire); err != nil || paused {
			return err // paused or deleted on some node since this one looked
		}
		first, err := tx.RecordFire(fire.Entry, fire.FireAt)
		if err != nil || !first {
			return err
		}
		if fire.SkipIfPending {
			pending, err := tx.FirePending(fire.Entry)
			if err != nil || pending {
				return err
			}
		}
		nj := fire.Job
		var jobs []*Job
		if jobs, err = insert(tx, &nj); err != nil {
			return err
		}
		job = jobs[0]
		return tx.SetFireJob(fire.Entry, fire.FireAt, job.ID)
	})
	if err != nil {
		return nil, false, fmt.Errorf("periodic %s: %w", fire.Entry, err)
	}
	return job, job != nil, nil
}
