package app

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"time"
	"unicode/utf8"
)

// Transition reports whether a job may go from one stored status to another:
// nil, or an error wrapping ErrInvalidStatus. It is the Go twin of the SQLite
// and PostgreSQL guards in package triggers; the memory store calls it on
// every write. Keeping the same status (a heartbeat) is allowed.
func Transition(from, to Status) error {
	if to == StatusDeadLetter {
		return fmt.Errorf("%w: dead_letter is not a job status; dead-lettered jobs live in dead_letter_jobs", ErrInvalidStatus)
	}
	if !to.Valid() {
		return fmt.Errorf("%w: %q is not one of queued, processing, done, cancelled", ErrInvalidStatus, to)
	}
	if from == to {
		return nil
	}
	switch {
	case from == StatusQueued && (to == StatusProcessing || to == StatusCancelled),
		from == StatusProcessing && (to == StatusDone || to == StatusQueued || to == StatusCancelled):
		return nil
	}
	return fmt.Errorf("%w: illegal transition %s -> %s", ErrInvalidStatus, from, to)
}

// InsertStatus reports whether a job may be inserted with status s (only queued).
func InsertStatus(s Status) error {
	switch {
	case s == StatusQueued:
		return nil
	case s == StatusDeadLetter || !s.Valid():
		return Transition(StatusQueued, s) // the same messages as an update
	}
	return fmt.Errorf("%w: a job is inserted as queued, not %s", ErrInvalidStatus, s)
}

// Backoff is the delay after failed attempt n (n >= 1): min(base*2^(n-1), max)
// with ±20% jitter. Zero base or max take the defaults (1s, 1h).
func Backoff(n int, base, max time.Duration) time.Duration {
	if base <= 0 {
		base = DefaultBackoffBase
	}
	if max <= 0 {
		max = DefaultBackoffMax
	}
	if n < 1 {
		n = 1
	}
	d := float64(base) * math.Pow(2, float64(n-1))
	if d > float64(max) || math.IsInf(d, 0) {
		d = float64(max)
	}
	jitter := 0.8 + 0.4*rand.Float64()
	return time.Duration(d * jitter)
}

// Defaults of the contract (SPEC sections 1 and 6); per-queue config may change some.
const (
	DefaultQueue          = "default"
	DefaultMaxAttempts    = 5
	DefaultTimeout        = 30 * time.Second
	DefaultBackoffBase    = time.Second
	DefaultBackoffMax     = time.Hour
	DefaultRetention      = 24 * time.Hour
	DefaultDLQRetention   = 30 * 24 * time.Hour
	DefaultEventRetention = 7 * 24 * time.Hour
	MaxPayloadBytes       = 1 << 20
	MaxResultBytes        = 1 << 20
	MaxErrorBytes         = 64 << 10
	MaxBatch              = 10000
	MaxClaim              = 1000
	MaxCompleteBatch      = 1000
	// BulkBatch is the most rows one bulk or retention transaction touches.
	BulkBatch = 1000
)

// FailDecision is what DecideFail chose for a failed attempt.
type FailDecision struct {
	Outcome string    // OutcomeRetryScheduled, OutcomeDeadLettered or OutcomeCancelled
	RunAt   time.Time // for a retry
	Reason  string    // for a dead-letter move
}

// DecideFail applies the retry rules to job after its current attempt failed:
// a pending cancel request wins; retry=false or no attempts left dead-letter
// it (with reason, or lease_expired when the lease ran out); otherwise it
// runs again after retryIn, or after backoff when retryIn is not positive.
func DecideFail(job *Job, retry bool, leaseExpired bool, retryIn time.Duration, backoff BackoffFunc, now time.Time) FailDecision {
	switch {
	case job.CancelRequested:
		return FailDecision{Outcome: OutcomeCancelled}
	case !retry:
		return FailDecision{Outcome: OutcomeDeadLettered, Reason: ReasonPermanentFailure}
	case job.Attempts >= job.MaxAttempts:
		reason := ReasonMaxAttempts
		if leaseExpired {
			reason = ReasonLeaseExpired
		}
		return FailDecision{Outcome: OutcomeDeadLettered, Reason: reason}
	}
	delay := retryIn
	if delay <= 0 {
		if backoff != nil {
			delay = backoff(job.Queue, job.Attempts)
		} else {
			delay = Backoff(job.Attempts, 0, 0)
		}
	}
	return FailDecision{Outcome: OutcomeRetryScheduled, RunAt: now.Add(delay)}
}

// LeaseExpiredError is the error recorded for an attempt whose lease ran out.
const LeaseExpiredError = "lease expired"

// AppendError adds the error of attempt to errs, cut to MaxErrorBytes.
func AppendError(errs []AttemptError, attempt int, msg string, now time.Time) []AttemptError {
	return append(errs, AttemptError{Attempt: attempt, At: now, Error: TruncateString(msg, MaxErrorBytes)})
}

// TruncateString cuts s to at most n bytes without splitting a UTF-8 character.
func TruncateString(s string, n int) string {
	if len(s) <= n {
		return s
	}
	s = s[:n]
	for len(s) > 0 && !utf8.ValidString(s[len(s)-utf8.UTFMax:]) {
		r, size := utf8.DecodeLastRuneInString(s)
		if r != utf8.RuneError || size != 1 {
			break
		}
		s = s[:len(s)-1]
	}
	return s
}

// DeadFromJob builds the dead-letter row for job, moved now for reason.
func DeadFromJob(job *Job, reason string, now time.Time) *DeadJob {
	runAt := job.RunAt
	last := ""
	if n := len(job.Errors); n > 0 {
		last = job.Errors[n-1].Error
	}
	return &DeadJob{
		ID: job.ID, Queue: job.Queue, Kind: job.Kind, Payload: job.Payload,
		Priority: job.Priority, Tags: job.Tags, Attempts: job.Attempts,
		MaxAttempts: job.MaxAttempts, Timeout: job.Timeout, Errors: job.Errors,
		IdempotencyKey: job.IdempotencyKey, OriginalCreatedAt: job.CreatedAt,
		ReplayedFrom: job.ReplayedFrom, Reason: reason, LastError: last,
		MovedAt: now, OriginalLease: job.Lease,
		StartedAt: job.StartedAt, RunAt: &runAt, WorkerID: job.WorkerID,
		WorkflowID: job.WorkflowID, Step: job.Step, Key: job.Key,
		CallbackURL: job.CallbackURL, Traceparent: job.Traceparent, Tracestate: job.Tracestate,
	}
}

// ReplayJob is the fresh job a replay of d inserts: attempts 0, same queue,
// kind, payload, priority, tags, max_attempts, timeout and idempotency key
// (a client retrying with its key finds the live job), replayed_from d. It
// keeps d's callback_url (the replay's end is called back too) and trace
// context (the replay's spans join the trace the job was submitted in).
func ReplayJob(d *DeadJob, runAt time.Time) NewJob {
	from := d.ID
	return NewJob{
		Queue: d.Queue, Kind: d.Kind, Payload: d.Payload, Priority: d.Priority,
		RunAt: runAt, MaxAttempts: d.MaxAttempts, Timeout: d.Timeout.D(),
		Tags: d.Tags, IdempotencyKey: d.IdempotencyKey, ReplayedFrom: &from,
		WorkflowID: d.WorkflowID, Step: d.Step, Key: d.Key,
		CallbackURL: d.CallbackURL, Traceparent: d.Traceparent, Tracestate: d.Tracestate,
	}
}

// SameSubmission reports whether an existing job matches a repeated
// submission under the same idempotency key (same kind and payload).
func SameSubmission(kind string, payload json.RawMessage, nj *NewJob) bool {
	return kind == nj.Kind && JSONEqual(payload, nj.Payload)
}

// KeyConflict is the error for a submission whose idempotency key holds
// another job, owner. earlier is what the same batch answered before it:
// when owner is one of those jobs, the batch gave the key twice, and the
// message says so instead of naming an id its rollback leaves to no job.
func KeyConflict(key, queue string, owner int64, earlier []Submitted) error {
	for i, s := range earlier {
		if s.Job != nil && s.Job.ID == owner && !s.Existing {
			return fmt.Errorf("%w: key %q in queue %q is given twice in this batch with a different kind or payload (items %d and %d, counting from 0)",
				ErrIdempotencyConflict, key, queue, i, len(earlier))
		}
	}
	return fmt.Errorf("%w: key %q in queue %q belongs to job %d", ErrIdempotencyConflict, key, queue, owner)
}

// JSONEqual compares two JSON texts by value.
func JSONEqual(a, b json.RawMessage) bool {
	if string(a) == string(b) {
		return true
	}
	if len(a) == 0 {
		a = json.RawMessage("null")
	}
	if len(b) == 0 {
		b = json.RawMessage("null")
	}
	var va, vb any
	if json.Unmarshal(a, &va) != nil || json.Unmarshal(b, &vb) != nil {
		return false
	}
	ja, _ := json.Marshal(va) // maps marshal with sorted keys
	jb, _ := json.Marshal(vb)
	return string(ja) == string(jb)
}

// RateTake refills a token bucket of burst tokens at rate per second from
// its state at then, and takes up to want whole tokens. It returns how many
// it granted and the bucket's new level; stores keep the level per queue so
// every node shares one bucket.
func RateTake(tokens float64, then, now time.Time, rate float64, burst, want int) (int, float64) {
	if burst <= 0 {
		burst = int(math.Max(1, math.Ceil(rate)))
	}
	if then.IsZero() {
		tokens = float64(burst)
	} else if el := now.Sub(then).Seconds(); el > 0 {
		tokens = math.Min(float64(burst), tokens+el*rate)
	}
	grant := int(math.Floor(tokens))
	if grant > want {
		grant = want
	}
	if grant < 0 {
		grant = 0
	}
	return grant, tokens - float64(grant)
}
