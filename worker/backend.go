package worker

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/queuehq/queue/app"
)

// Backend is what a worker needs from a queue: claim jobs, keep their leases,
// and report how each attempt ended. Every call after Claim carries the lease
// the claim handed out; a stale lease changes nothing and returns an error
// matching ErrLeaseLost. LocalBackend serves it in process from a Service;
// *client.Client serves it over the HTTP API.
type Backend interface {
	// Claim hands out up to in.Limit jobs of queue, waiting up to in.Wait
	// for one to land (a long poll that answers at once when a job does).
	Claim(ctx context.Context, queue string, in app.ClaimInput) ([]*app.Job, error)
	// Heartbeat extends the lease of job id by extend (if zero, the job's
	// timeout) and tells whether an operator asked to cancel the job.
	Heartbeat(ctx context.Context, id, lease int64, extend time.Duration) (*Lease, error)
	// CompleteBatch marks jobs done with their results; each item is fenced
	// on its own and the errors match the items one to one. The error is
	// for the call as a whole.
	CompleteBatch(ctx context.Context, items []app.Completion) ([]error, error)
	// Fail records a failed attempt: retried with backoff (or after retryIn,
	// if positive) while retry is true and attempts are left, else moved to
	// the dead-letter queue.
	Fail(ctx context.Context, id, lease int64, msg string, retry bool, retryIn time.Duration) (*app.FailResult, error)
	// Snooze puts a processing job back to queued after delay without
	// counting the attempt; a zero delay gives the lease back (on shutdown).
	Snooze(ctx context.Context, id, lease int64, delay time.Duration) error
	// AckCancel ends a processing job whose cancel was requested.
	AckCancel(ctx context.Context, id, lease int64) error
}

// QueuesBackend is a Backend that also claims from several queues in one
// call, by weight or in a strict order (app.QueueChoice): a Pool with
// Queues needs one. LocalBackend and *client.Client are QueuesBackends.
type QueuesBackend interface {
	Backend
	// ClaimQueues hands out up to in.Limit jobs of the queues in.Queues
	// names, waiting up to in.Wait for one to land in any of them.
	ClaimQueues(ctx context.Context, in app.ClaimInput) ([]*app.Job, error)
}

// Lease is the state of a job's lease after a heartbeat.
type Lease struct {
	ExpiresAt       time.Time `json:"lease_expires_at"`
	CancelRequested bool      `json:"cancel_requested"`
}

// LocalBackend returns a Backend that calls svc in the same process: the
// built-in workers of `queue serve` and in-process Go workers use it. Once
// svc.Stop was called, Pools over it stop claiming (the server is shutting
// down) and finish or give back what they hold when they are stopped.
func LocalBackend(svc *app.Service) Backend { return &localBackend{svc: svc} }

type localBackend struct{ svc *app.Service }

var _ QueuesBackend = (*localBackend)(nil)

// localWorker is the actor recorded when a worker in the same process acknowledges a cancel.
const localWorker = "worker"

func (b *localBackend) Claim(ctx context.Context, queue string, in app.ClaimInput) ([]*app.Job, error) {
	return b.svc.ClaimLocal(ctx, queue, in) // the workers of the config are not clients to cap
}

// ClaimQueues claims from several queues (Service.ClaimQueues).
func (b *localBackend) ClaimQueues(ctx context.Context, in app.ClaimInput) ([]*app.Job, error) {
	return b.svc.ClaimQueuesLocal(ctx, in)
}

func (b *localBackend) Heartbeat(ctx context.Context, id, lease int64, extend time.Duration) (*Lease, error) {
	job, err := b.svc.Heartbeat(ctx, id, lease, extend)
	if err != nil {
		return nil, err
	}
	l := &Lease{CancelRequested: job.CancelRequested}
	if job.LeaseExpiresAt != nil {
		l.ExpiresAt = *job.LeaseExpiresAt
	}
	return l, nil
}

func (b *localBackend) CompleteBatch(ctx context.Context, items []app.Completion) ([]error, error) {
	return b.svc.CompleteBatch(ctx, items)
}

func (b *localBackend) Fail(ctx context.Context, id, lease int64, msg string, retry bool, retryIn time.Duration) (*app.FailResult, error) {
	in := app.FailInput{Lease: lease, Error: msg, Retry: &retry}
	if retryIn > 0 {
		d := app.Duration(retryIn)
		in.RetryIn = &d
	}
	return b.svc.Fail(ctx, id, in)
}

func (b *localBackend) Snooze(ctx context.Context, id, lease int64, delay time.Duration) error {
	_, err := b.svc.Snooze(ctx, id, lease, delay)
	return err
}

func (b *localBackend) AckCancel(ctx context.Context, id, lease int64) error {
	_, err := b.svc.Cancel(ctx, id, &lease, localWorker)
	return err
}

// OnceAcquire takes the once-record key for holdFor (see Service.Once).
func (b *localBackend) OnceAcquire(ctx context.Context, key string, holdFor time.Duration) (*app.OnceRecord, error) {
	return b.svc.Once(ctx, key, holdFor)
}

// OnceDone stores the result of the side effect held with token.
func (b *localBackend) OnceDone(ctx context.Context, key, token string, result json.RawMessage) (*app.OnceRecord, error) {
	return b.svc.OnceDone(ctx, key, token, result)
}

// stopping is closed when the Service stops: no more claims.
func (b *localBackend) stopping() <-chan struct{} { return b.svc.Stopping() }

// Retryable reports whether a failed Backend call is worth repeating later:
// the server was unreachable, unavailable or overloaded. A lost lease, an
// unknown job, an illegal transition and invalid input are final. Errors may
// decide for themselves with a method Retryable() bool (client.Error does).
func Retryable(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) {
		return false
	}
	var ie *app.InvalidError
	switch {
	case errors.Is(err, app.ErrLeaseLost), errors.Is(err, app.ErrNotFound), errors.Is(err, app.ErrIllegalTransition),
		errors.Is(err, app.ErrInvalidStatus), errors.As(err, &ie):
		return false
	}
	var r interface{ Retryable() bool }
	if errors.As(err, &r) {
		return r.Retryable()
	}
	return true
}
