package app

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"strings"
	"sync"
	"time"
)

// Tracing (docs/integrations.md): a job submitted with a W3C traceparent
// carries it; its spans are queue.submit (a child of the caller's span),
// queue.wait (from due to claim, a child of submit) and one queue.attempt
// per attempt (from claim to outcome, a child of submit). This file holds
// what app decides about them: when each moment happens, what it says, and
// the attempt span's id, which every worker derives from the claimed job
// (AttemptTraceparent), so nothing about an attempt's span is stored.
// Package tracing turns the moments into OpenTelemetry spans; app imports
// no tracing library, and without a Tracer (Service.Tracer nil, no
// collector configured) none of this runs.

// Tracer receives the moments of a job's life that make its spans. Package
// tracing implements it over the OpenTelemetry SDK. Its methods are called
// after the write they tell of committed, never inside a transaction, and
// must not block: spans are sent in the background.
type Tracer interface {
	// Submit starts the queue.submit span of each job, a child of the
	// job's Traceparent (a new trace without one), and sets the job's
	// Traceparent and Tracestate to that span's, before the jobs are
	// stored. The end it returns ends the spans once the submission
	// committed (out, one per job) or failed (err).
	Submit(jobs []NewJob) (end func(out []Submitted, err error))
	// Claimed records the queue.wait span of each job just claimed that
	// has a Traceparent (see WaitBegan).
	Claimed(jobs []*Job)
	// AttemptEnded records the queue.attempt span of an attempt that
	// ended, with the id AttemptTraceparent gives it.
	AttemptEnded(a AttemptEnd)
}

// AttemptEnd is an ended attempt, as its queue.attempt span tells it.
type AttemptEnd struct {
	// Job is the job as its claim left it: ID, Queue, Kind, Attempts,
	// Lease, WorkerID, StartedAt (the span's start), Traceparent and
	// Tracestate.
	Job *Job
	// Outcome is one of the Ended* constants.
	Outcome string
	// Error is the failure's text (EndedError) or why the attempt ended
	// without one (EndedLeaseLost).
	Error string
	// At is when the attempt ended (the span's end).
	At time.Time
}

// How an attempt ended, as a queue.attempt span's outcome says it.
const (
	EndedOK        = "ok"         // completed
	EndedError     = "error"      // failed (retried, dead-lettered, or cancelled on request)
	EndedLeaseLost = "lease_lost" // its lease expired before any outcome
	EndedCancelled = "cancelled"  // the worker acknowledged a cancel
	EndedSnoozed   = "snoozed"    // put back for later, the attempt given back
)

// AttemptTraceparent is the W3C traceparent of attempt lease of job jobID
// in the trace of traceparent (the job's): the same trace id and flags,
// and as parent id the attempt span's id, the first 8 bytes of a SHA-256
// of the trace id, the job id and the lease (never all zero). A worker
// computes it from the claimed job and hands it to the code it runs
// (TRACEPARENT, a handler's context); the server gives the queue.attempt
// span the same id, so the two meet without anything stored. It returns ""
// when traceparent is not a version 00 traceparent.
func AttemptTraceparent(traceparent string, jobID, lease int64) string {
	trace, _, flags, ok := splitTraceparent(traceparent)
	if !ok {
		return ""
	}
	id := attemptSpanID(trace, jobID, lease)
	return "00-" + hex.EncodeToString(trace[:]) + "-" + hex.EncodeToString(id[:]) + "-" + flags
}

// attemptSpanID is the id of the queue.attempt span of jobID under lease
// in the trace trace (see AttemptTraceparent).
func attemptSpanID(trace [16]byte, jobID, lease int64) [8]byte {
	var b [32]byte
	copy(b[:16], trace[:])
	binary.BigEndian.PutUint64(b[16:24], uint64(jobID))
	binary.BigEndian.PutUint64(b[24:], uint64(lease))
	sum := sha256.Sum256(b[:])
	var id [8]byte
	copy(id[:], sum[:8])
	if id == [8]byte{} { // all zero is an invalid span id
		id[7] = 1
	}
	return id
}

// splitTraceparent reads a version 00 traceparent (as ValidateTraceparent
// accepts it) into its trace id, parent id and flags (two hex digits).
func splitTraceparent(tp string) (trace [16]byte, parent [8]byte, flags string, ok bool) {
	if ValidateTraceparent(tp) != nil {
		return trace, parent, "", false
	}
	if _, err := hex.Decode(trace[:], []byte(tp[3:35])); err != nil {
		return trace, parent, "", false
	}
	if _, err := hex.Decode(parent[:], []byte(tp[36:52])); err != nil {
		return trace, parent, "", false
	}
	return trace, parent, tp[53:55], true
}

// WaitBegan is when j's queue.wait span begins: after a failed attempt
// (the previous one failed), at that failure, with retry true; else when
// j came due, its run_at or, if later, its created_at (as PickupWait).
func (j *Job) WaitBegan() (at time.Time, retry bool) {
	if n := len(j.Errors); n > 0 && j.Errors[n-1].Attempt == j.Attempts-1 && j.Attempts > 1 {
		return j.Errors[n-1].At, true
	}
	at = j.RunAt
	if j.CreatedAt.After(at) {
		at = j.CreatedAt
	}
	return at, false
}

// traceSubmit starts the submit spans of jobs (see Tracer.Submit); the end
// it returns does nothing without a Tracer.
func (s *Service) traceSubmit(jobs []NewJob) func([]Submitted, error) {
	if s.Tracer == nil {
		return func([]Submitted, error) {}
	}
	return s.Tracer.Submit(jobs)
}

// traceClaimed records the wait spans of jobs just claimed and remembers
// their attempts, so that an outcome reported to this node needs no read.
func (s *Service) traceClaimed(jobs []*Job) {
	if s.Tracer == nil || len(jobs) == 0 {
		return
	}
	s.attempts.put(jobs, s.Clock.Now())
	s.Tracer.Claimed(jobs)
}

// traceAttempt takes the attempt of job id under lease, as claimed, for
// its span once its outcome commits: remembered from this node's claim, or
// else read (the claim was another node's, or the outcome is tried again);
// nil without a Tracer, or if the job is not processing under lease or has
// no trace.
func (s *Service) traceAttempt(ctx context.Context, id, lease int64) *Job {
	if s.Tracer == nil {
		return nil
	}
	if j, ok := s.attempts.take(id, lease); ok {
		return j
	}
	j, _, err := s.Store.Lookup(ctx, id)
	if err != nil || j == nil || j.Status != StatusProcessing || j.Lease != lease || j.Traceparent == "" {
		return nil
	}
	return trimAttempt(j)
}

// traceEnded records the span of attempt j (from traceAttempt; nil: none)
// once its outcome committed.
func (s *Service) traceEnded(j *Job, outcome, msg string) {
	if j == nil || s.Tracer == nil || j.StartedAt == nil {
		return
	}
	s.Tracer.AttemptEnded(AttemptEnd{Job: j, Outcome: outcome, Error: msg, At: s.Clock.Now()})
}

// maxTracedAttempts bounds the attempts a node remembers (see
// attemptCache); past it an outcome reads its job instead.
const maxTracedAttempts = 1 << 16

// attemptCache remembers the attempts this node handed out while tracing,
// trimmed to what their spans need, until their outcome takes them. An
// attempt whose outcome another node saw (a lease recovered on the leader,
// a worker reporting elsewhere) is let go once its lease has expired and
// room is needed.
type attemptCache struct {
	mu sync.Mutex
	m  map[int64]*Job
}

func (c *attemptCache) put(jobs []*Job, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[int64]*Job{}
	}
	if len(c.m)+len(jobs) > maxTracedAttempts {
		for id, j := range c.m {
			if j.LeaseExpiresAt == nil || j.LeaseExpiresAt.Before(now) {
				delete(c.m, id)
			}
		}
	}
	for _, j := range jobs {
		if len(c.m) >= maxTracedAttempts {
			return // the rest are read at their outcome
		}
		c.m[j.ID] = trimAttempt(j)
	}
}

// take removes and returns the remembered attempt of id under lease. A
// remembered job without a trace answers too (nil, true): it needs neither
// a span nor a read.
func (c *attemptCache) take(id, lease int64) (*Job, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	j, ok := c.m[id]
	if !ok || j.Lease != lease {
		return nil, false
	}
	delete(c.m, id)
	if j.Traceparent == "" {
		return nil, true
	}
	return j, true
}

// trimAttempt is j with only what an attempt's span needs, so remembering
// it does not hold its payload, result or errors.
func trimAttempt(j *Job) *Job {
	return &Job{ID: j.ID, Queue: j.Queue, Kind: j.Kind, Status: j.Status, Attempts: j.Attempts, Lease: j.Lease,
		WorkerID: j.WorkerID, StartedAt: j.StartedAt, LeaseExpiresAt: j.LeaseExpiresAt,
		Traceparent: j.Traceparent, Tracestate: j.Tracestate}
}

// traceSteps starts the submit span of each step of plan (see
// Tracer.Submit), whose job stores it when released.
func (s *Service) traceSteps(plan *WorkflowPlan, now time.Time) func([]Submitted, error) {
	if s.Tracer == nil {
		return func([]Submitted, error) {}
	}
	jobs := make([]NewJob, len(plan.Steps))
	for i, st := range plan.Steps {
		jobs[i] = st.Job.NewJob(0, st.Name, now)
	}
	end := s.Tracer.Submit(jobs)
	for i, st := range plan.Steps {
		st.Job.Traceparent, st.Job.Tracestate = jobs[i].Traceparent, jobs[i].Tracestate
	}
	return end
}

// traceLeaseLost records the spans of attempts whose lease expired
// (recovered by the Maintainer, on whichever node leads).
func (s *Service) traceLeaseLost(ended []*Job) {
	for _, j := range ended {
		if j.Traceparent != "" {
			s.attempts.take(j.ID, j.Lease)
			s.traceEnded(j, EndedLeaseLost, LeaseExpiredError)
		}
	}
}

// FitTracestate cuts a tracestate that a job could not store (over
// MaxTracestate characters) the way W3C trace context asks a propagator
// to: whole list members are dropped from the right (the oldest vendors'
// first) until it fits. Members with characters a header cannot carry
// are dropped too. What is left may be "".
func FitTracestate(ts string) string {
	var kept []string
	n := 0
	for _, m := range strings.Split(ts, ",") {
		m = strings.TrimSpace(m)
		if m == "" || strings.IndexFunc(m, func(r rune) bool { return r < 0x20 || r > 0x7e }) >= 0 {
			continue
		}
		add := len(m)
		if len(kept) > 0 {
			add++ // the comma
		}
		if n+add > MaxTracestate {
			break
		}
		kept = append(kept, m)
		n += add
	}
	return strings.Join(kept, ",")
}
