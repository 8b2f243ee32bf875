package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// Acting on live jobs in bulk (issue 26): cancel, retry now, reschedule and
// re-prioritise the jobs a filter finds, with the dead-letter queue's
// guard (a real filter or allow_all), dry run, bound and audit. The rules
// are here once; the stores add two steps (Tx.Reschedule, Tx.Reprioritize).

// The live bulk actions (POST /api/jobs/{action}).
const (
	LiveCancel     = "cancel"     // queued jobs cancelled, processing ones asked to stop
	LiveRetry      = "retry"      // queued jobs waiting for a retry or their run_at run now
	LiveReschedule = "reschedule" // queued jobs get a new run_at
	LivePrioritize = "prioritize" // queued jobs get a new priority
	LiveDelete     = "delete"     // finished jobs (done, cancelled) are removed
)

// LiveActions lists the live bulk actions.
var LiveActions = []string{LiveCancel, LiveRetry, LiveReschedule, LivePrioritize, LiveDelete}

// Events of the live actions (recorded with the job's other events).
const (
	EventRescheduled   = "job.rescheduled"   // data: run_at, was
	EventReprioritized = "job.reprioritized" // data: priority, was
	// EventDeleted is published (not recorded: the job is gone) when an
	// operator deletes a finished job, so live pages drop it.
	EventDeleted = "job.deleted"
)

// Fault points of the live actions' steps.
const (
	// FaultReschedule fires after a queued job's run_at changed (retry now,
	// reschedule).
	FaultReschedule FaultPoint = "reschedule.after_update"
	// FaultReprioritize fires after a queued job's priority changed.
	FaultReprioritize FaultPoint = "reprioritize.after_update"
)

// ErrLiveFilterRequired is the live bulk actions' ErrFilterRequired (it
// matches that too): they need ids, a queue, kind, tag, key, workflow,
// replayed_from, a payload field or an error text, or allow_all; status and
// the time ranges only narrow.
var ErrLiveFilterRequired = fmt.Errorf("live jobs: %w", ErrFilterRequired)

// The rates a bulk retry, reschedule or replay spreads its jobs at, in
// jobs per second: at slowest one per 1000 s, so the spacing is at most
// 1000 s and a spread of any length is computed without overflow.
const (
	MinRate = 0.001
	MaxRate = 1e6
)

// checkRate refuses a rate outside MinRate..MaxRate (zero: none given).
func checkRate(rate float64) error {
	if rate != 0 && !(rate >= MinRate && rate <= MaxRate) {
		return Invalid("rate", "rate must be between %g and %g jobs per second", MinRate, MaxRate)
	}
	return nil
}

// rateSpacing is the time between two jobs spread at rate jobs per second
// (one checkRate let through); zero for no rate.
func rateSpacing(rate float64) time.Duration {
	if rate <= 0 {
		return 0
	}
	return time.Duration(float64(time.Second) / rate)
}

// spreadAt is when the nth job (from 0) of a spread spacing apart from
// start runs: start + n×spacing, but never later than MaxDelay after now
// (the spread saturates there, with no overflow however long it is).
func spreadAt(start, now time.Time, spacing time.Duration, n int) time.Time {
	if spacing <= 0 || n <= 0 {
		return start
	}
	last := now.Add(MaxDelay)
	room := last.Sub(start)
	if room <= 0 || int64(n) > int64(room/spacing) {
		return last
	}
	return start.Add(spacing * time.Duration(n))
}

// spreadBatch is, for a batch of a spread that has placed done jobs, when
// its first job runs, the spacing to give it and how many of its jobs fit
// before the MaxDelay cap (at most BulkBatch): a batch given no more
// than that many jobs ends at or before the cap, and once the spread
// reached the cap the rest all run there.
func spreadBatch(start, now time.Time, spacing time.Duration, done int) (time.Time, time.Duration, int) {
	at := spreadAt(start, now, spacing, done)
	room := now.Add(MaxDelay).Sub(at)
	if spacing <= 0 || room <= 0 {
		return at, 0, BulkBatch
	}
	return at, spacing, int(min(int64(room/spacing)+1, BulkBatch))
}

// LiveBulkInput is the body of POST /api/jobs/cancel, /retry, /reschedule,
// /prioritize and /delete: the filters of GET /api/jobs (at least ids, a queue,
// kind, tag, key, workflow, replayed_from, payload field or error text, or
// allow_all: status and the time ranges only narrow), and the action's own.
type LiveBulkInput struct {
	IDs          []int64 `json:"ids,omitempty"`
	Queue        string  `json:"queue,omitempty"`
	Kind         string  `json:"kind,omitempty"`
	Tag          string  `json:"tag,omitempty"`
	Status       string  `json:"status,omitempty"`
	Key          string  `json:"key,omitempty"`
	Workflow     int64   `json:"workflow,omitempty"`
	ReplayedFrom int64   `json:"replayed_from,omitempty"`
	JobQuery
	AllowAll bool `json:"allow_all,omitempty"`
	// DryRun counts and shows a sample, changing nothing; its Bound, given
	// back, makes the action take no job submitted after the count.
	DryRun bool   `json:"dry_run,omitempty"`
	Bound  string `json:"bound,omitempty"`
	// Rate (retry, reschedule) spreads the new run_at: this many jobs per
	// second from the first.
	Rate float64 `json:"rate,omitempty"`
	// RunAt or Delay: when rescheduled jobs run.
	RunAt *time.Time `json:"run_at,omitempty"`
	Delay *Duration  `json:"delay,omitempty"`
	// Priority: what prioritize sets (lower runs first).
	Priority *int `json:"priority,omitempty"`
}

// LiveBulkResult answers a live bulk action: how many jobs the filter
// matched when it started, how many it changed (or, dry, would change),
// how many it left alone (finished ones; processing ones for retry,
// reschedule and prioritize; due ones for retry; all but the finished ones
// for delete), and for a dry run a
// sample of up to 10 it would change and the bound to confirm with.
type LiveBulkResult struct {
	Matched int    `json:"matched"`
	Changed int    `json:"changed"`
	Skipped int    `json:"skipped"`
	Count   int    `json:"count"` // Changed, as the dead-letter queue's bulk answers
	DryRun  bool   `json:"dry_run,omitempty"`
	Bound   string `json:"bound,omitempty"`
	Sample  []*Job `json:"sample,omitempty"`
}

// real reports whether in picks jobs by something of their own, which a
// bulk action needs unless AllowAll: ids, queue, kind, tag, key, workflow,
// replayed_from, a payload field or an error text.
func (in *LiveBulkInput) real() bool {
	return len(in.IDs) > 0 || in.Queue != "" || in.Kind != "" || in.Tag != "" || in.Key != "" ||
		in.Workflow != 0 || in.ReplayedFrom != 0 || len(in.Payload) > 0 || in.Error != ""
}

// check validates in for action and resolves its filter at now.
func (in *LiveBulkInput) check(action string, now time.Time) (JobFilter, error) {
	switch action {
	case LiveCancel, LiveRetry, LiveReschedule, LivePrioritize, LiveDelete:
	default:
		return JobFilter{}, Invalid("action", "unknown action %q; one of cancel, retry, reschedule, prioritize, delete", clip(action))
	}
	if in.Status == string(StatusDeadLetter) {
		return JobFilter{}, Invalid("status", "dead-letter rows are not live jobs: see POST /api/dlq/replay and /api/dlq/purge")
	}
	f, err := ListInput{Queue: in.Queue, Kind: in.Kind, Tag: in.Tag, Status: in.Status, Key: in.Key, Workflow: in.Workflow,
		ReplayedFrom: in.ReplayedFrom, JobQuery: in.JobQuery}.filter(now)
	if err != nil {
		return f, err
	}
	if len(in.IDs) > 1000 {
		return f, Invalid("ids", "at most 1000 ids at once")
	}
	for _, id := range in.IDs {
		if id <= 0 {
			return f, Invalid("ids", "%d is not a job id", id)
		}
	}
	f.IDs, f.Limit = in.IDs, 0
	if in.Rate != 0 && action != LiveRetry && action != LiveReschedule {
		return f, Invalid("rate", "rate is for retry and reschedule: jobs per second, positive")
	}
	if err := checkRate(in.Rate); err != nil {
		return f, err
	}
	if (in.RunAt != nil || in.Delay != nil) && action != LiveReschedule {
		return f, Invalid("run_at", "run_at and delay are for reschedule")
	}
	if action == LiveReschedule && in.RunAt == nil && in.Delay == nil {
		return f, Invalid("run_at", "reschedule needs run_at (a time) or delay (\"10m\")")
	}
	switch {
	case in.Priority != nil && action != LivePrioritize:
		return f, Invalid("priority", "priority is for prioritize")
	case action == LivePrioritize && in.Priority == nil:
		return f, Invalid("priority", "prioritize needs priority (lower runs first)")
	case in.Priority != nil && (*in.Priority < -MaxPriority || *in.Priority > MaxPriority):
		return f, Invalid("priority", "priority must be between %d and %d", -MaxPriority, MaxPriority)
	}
	if !in.real() && !in.AllowAll {
		return f, ErrLiveFilterRequired
	}
	if in.Bound != "" {
		id, _, err := DecodeCursor(in.Bound)
		if err != nil {
			return f, Invalid("bound", "bound is not one this server made; run the dry run again")
		}
		f.MaxID = id
	}
	return f, nil
}

// eligible narrows f to the jobs action changes; false if none can be.
func eligible(action string, f JobFilter) (JobFilter, bool) {
	switch action {
	case LiveCancel:
		f.StatusIn = []Status{StatusQueued, StatusProcessing}
	case LiveRetry: // queued, waiting for its run_at (a retry's backoff, a schedule)
		if f.Status == StatusRetrying { // those of them still backing off
			f.Retried = true
		} else if f.Status != "" && f.Status != "scheduled" {
			return f, false
		}
		f.Status = "scheduled"
	case LiveDelete:
		f.StatusIn = []Status{StatusDone, StatusCancelled}
	default:
		f.StatusIn = []Status{StatusQueued}
	}
	return f, true
}

// auditFilter is the body as the audit keeps it: every filter and the
// action's own fields, without the dry-run flag (an audited run is real).
func (in *LiveBulkInput) auditFilter() json.RawMessage {
	real := *in
	real.DryRun = false
	b, _ := json.Marshal(real)
	return b
}

// BulkLive runs a live bulk action (LiveCancel, LiveRetry, LiveReschedule,
// LivePrioritize, LiveDelete) for actor. It needs a real filter or AllowAll (else
// ErrFilterRequired); acts only on jobs that existed when it started (or
// when the dry run whose bound it carries counted), in transactions of at
// most BulkBatch jobs so other writers never wait long; and records one
// audit entry (jobs.cancel, ...) with the filter and the count, in the
// transaction of its last batch, or, if it stops part-way, in a write of
// its own for what the committed batches changed (auditStopped). Like the DLQ's bulk actions it runs to the
// end even if ctx is cancelled. A dry run changes nothing and is not audited.
func (s *Service) BulkLive(ctx context.Context, action string, in LiveBulkInput, actor string) (*LiveBulkResult, error) {
	now := s.Clock.Now()
	f, err := in.check(action, now)
	if err != nil {
		return nil, err
	}
	start := now
	if action == LiveReschedule {
		if start, err = (ReplayInput{RunAt: in.RunAt, Delay: in.Delay}).runAt(now); err != nil {
			return nil, err
		}
	}
	ctx = context.WithoutCancel(ctx)
	top, err := s.Store.List(ctx, JobFilter{IDs: f.IDs, Queue: f.Queue, Kind: f.Kind, Tag: f.Tag, Status: f.Status, Key: f.Key,
		Workflow: f.Workflow, ReplayedFrom: f.ReplayedFrom, JobMatch: f.JobMatch, MaxID: f.MaxID, Limit: 1})
	if err != nil {
		return nil, err
	}
	res := &LiveBulkResult{DryRun: in.DryRun}
	if len(top) == 0 {
		return res, s.auditLive(ctx, action, &in, actor, 0, in.DryRun)
	}
	f.MaxID = top[0].ID
	if res.Matched, err = s.Store.CountJobs(ctx, f); err != nil {
		return nil, err
	}
	fe, ok := eligible(action, f)
	if in.DryRun {
		res.Bound = EncodeCursor(f.MaxID, false)
		if ok {
			if res.Changed, err = s.Store.CountJobs(ctx, fe); err != nil {
				return nil, err
			}
			fe.Limit = 10
			if res.Sample, err = s.Store.List(ctx, fe); err != nil {
				return nil, err
			}
		}
		res.Count, res.Skipped = res.Changed, max(res.Matched-res.Changed, 0)
		return res, nil
	}
	spacing := rateSpacing(in.Rate)
	audit := &AuditEntry{Actor: actor, Action: "jobs." + action, Filter: in.auditFilter()}
	fe.Asc, fe.Limit = true, BulkBatch
	for ok {
		var ids []int64
		err := s.Store.Write(ctx, func(tx Tx) error {
			ids = ids[:0]
			jobs, err := tx.Jobs(fe)
			if err != nil {
				return err
			}
			err = batchEnds(tx, func(tx Tx) error {
				for _, j := range jobs {
					at := spreadAt(start, now, spacing, res.Changed+len(ids))
					if err := liveStep(tx, action, j, at, in.Priority); err != nil {
						return err
					}
					ids = append(ids, j.ID)
				}
				return nil
			})
			if err != nil || len(jobs) == BulkBatch {
				return err
			}
			return recordAudit(tx, audit, res.Changed+len(ids)) // the last batch: the count is whole
		})
		if err != nil {
			res.Count = res.Changed
			return res, auditStopped(ctx, s.Store, *audit, res.Changed, fmt.Errorf("%s jobs after %d: %w", action, res.Changed, err))
		}
		res.Changed += len(ids)
		if len(ids) < BulkBatch {
			break
		}
		fe.AfterID = ids[len(ids)-1]
	}
	if !ok { // nothing could change: the action is still on record
		if err := s.auditLive(ctx, action, &in, actor, 0, false); err != nil {
			return nil, err
		}
	}
	res.Count, res.Skipped = res.Changed, max(res.Matched-res.Changed, 0)
	return res, nil
}

// auditStopped records audit for the n rows a bulk action changed before
// it stopped with err (its own write: the batches that did commit are on
// record even though the action is not whole), and returns err, joined
// with the audit's own error if that write fails too. With n zero nothing
// changed and nothing is recorded. The live bulk actions and the
// dead-letter queue's follow this one rule.
func auditStopped(ctx context.Context, w Writer, audit AuditEntry, n int, err error) error {
	if n == 0 {
		return err
	}
	audit.Count = n
	return errors.Join(err, RecordAudit(ctx, w, audit))
}

// auditLive records a live action that changed nothing (none matched).
func (s *Service) auditLive(ctx context.Context, action string, in *LiveBulkInput, actor string, n int, dry bool) error {
	if dry {
		return nil
	}
	return RecordAudit(ctx, s.Store, AuditEntry{Actor: actor, Action: "jobs." + action, Filter: in.auditFilter(), Count: n})
}

// liveStep applies action to job j (one the action's filter took, locked
// on PostgreSQL) in tx: cancel as POST /api/jobs/{id}/cancel does; retry
// and reschedule move run_at to at (a retry never later than it was);
// prioritize sets the priority. A keyed job held for its key stays held.
func liveStep(tx Tx, action string, j *Job, at time.Time, priority *int) error {
	switch action {
	case LiveCancel:
		_, err := cancelLive(tx, j, CancelRequested)
		return err
	case LiveRetry:
		if j.RunAt.Before(at) {
			at = j.RunAt
		}
		_, err := Reschedule(tx, j, at)
		return err
	case LiveReschedule:
		_, err := Reschedule(tx, j, at)
		return err
	case LivePrioritize:
		_, err := Reprioritize(tx, j, *priority)
		return err
	case LiveDelete:
		return DeleteFinished(tx, j)
	}
	return Invalid("action", "unknown action %q", clip(action))
}

// Reschedule moves queued job j's run_at to runAt in tx, with its event;
// the queue's claimers are woken when the job may run sooner.
func Reschedule(tx Tx, j *Job, runAt time.Time) (*Job, error) {
	nj, err := tx.Reschedule(j, runAt)
	if err != nil {
		return nil, err
	}
	if err := tx.Fault(FaultReschedule, j.ID); err != nil {
		return nil, err
	}
	tx.Event(EventRescheduled, j.ID, j.Queue, j.Kind, eventData(map[string]any{"run_at": FormatTime(nj.RunAt), "was": FormatTime(j.RunAt)}))
	if nj.RunAt.Before(j.RunAt) {
		tx.Wake(j.Queue)
	}
	return nj, nil
}

// DeleteFinished deletes finished job j (done or cancelled, read in tx) as
// retention does: its row, and with it its log and progress (the SQL
// stores' triggers; the memory store's log sweep); its recorded events
// stay until their own retention. A workflow's step keeps its own state,
// so the workflow's page and API show the step without its job, as after
// a dead-letter move.
func DeleteFinished(tx Tx, j *Job) error {
	if j.Status != StatusDone && j.Status != StatusCancelled {
		return fmt.Errorf("delete job %d: it is %s, not finished: %w", j.ID, j.Status, ErrIllegalTransition)
	}
	if err := tx.DeleteJob(j.ID); err != nil {
		return fmt.Errorf("delete job %d: %w", j.ID, err)
	}
	if err := tx.Fault(FaultDelete, j.ID); err != nil {
		return err
	}
	tx.Moved(j.Queue, j.Status, "", 1)
	tx.Publish(EventDeleted, j.ID, j.Queue, j.Kind, nil)
	return nil
}

// Reprioritize sets queued job j's priority in tx, with its event.
func Reprioritize(tx Tx, j *Job, priority int) (*Job, error) {
	nj, err := tx.Reprioritize(j, priority)
	if err != nil {
		return nil, err
	}
	if err := tx.Fault(FaultReprioritize, j.ID); err != nil {
		return nil, err
	}
	tx.Event(EventReprioritized, j.ID, j.Queue, j.Kind, eventData(map[string]any{"priority": priority, "was": j.Priority}))
	return nj, nil
}
