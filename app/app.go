// Package app is the queue's domain: jobs, statuses, lifecycle rules, errors,
// the Store that the sqlite, postgres and memory packages implement, and the
// Service that the HTTP API, the CLI and the workers call. It imports no
// database driver, no echo and no cli: only main sees all of them.
package app

import (
	"errors"
	"fmt"
)

// Status is where a Job is in its life. The SQLite and PostgreSQL triggers
// enforce the same list (see package triggers); change them together.
type Status string

const (
	StatusQueued     Status = "queued"     // waiting for run_at and a worker
	StatusProcessing Status = "processing" // claimed; a lease is live
	StatusDone       Status = "done"       // finished; terminal
	StatusCancelled  Status = "cancelled"  // cancelled or expired; terminal

	// StatusDeadLetter is what the API shows for a job that lives in the
	// dead-letter table. It is never stored in jobs.status.
	StatusDeadLetter Status = "dead_letter"
)

// Terminal reports whether no transition leaves s.
func (s Status) Terminal() bool { return s == StatusDone || s == StatusCancelled }

// Valid reports whether s may be stored in jobs.status.
func (s Status) Valid() bool {
	switch s {
	case StatusQueued, StatusProcessing, StatusDone, StatusCancelled:
		return true
	}
	return false
}

// Dead-letter reasons, as stored in dead_letter_jobs.dead_letter_reason.
const (
	ReasonMaxAttempts      = "max_attempts"      // the last allowed attempt failed
	ReasonPermanentFailure = "permanent_failure" // a worker failed it with retry=false
	ReasonLeaseExpired     = "lease_expired"     // the lease of its last attempt expired
	ReasonAdminMove        = "admin_move"        // an operator moved a queued job
)

// Cancel reasons, as stored in jobs.cancel_reason.
const (
	CancelRequested = "requested" // an operator or client asked
	CancelExpired   = "expired"   // its TTL passed before it started
	CancelDrained   = "drained"   // its queue was drained
)

// Errors that stores and the Service return; callers test them with errors.Is.
// The HTTP API maps each to one status code and error code (package ui).
var (
	// ErrNotFound: no job, dead-letter row, queue or record with that id.
	ErrNotFound = errors.New("not found")
	// ErrLeaseLost: the caller's lease is not the job's current lease, or the
	// job is no longer processing; nothing was changed.
	ErrLeaseLost = errors.New("lease lost")
	// ErrIllegalTransition: the job's status does not allow the request
	// (cancelling a finished job, say); nothing was changed.
	ErrIllegalTransition = errors.New("illegal transition")
	// ErrInvalidStatus: a write would store a status outside the four, or
	// make a transition the status guard forbids. Raised by the stores' guards.
	ErrInvalidStatus = errors.New("invalid status")
	// ErrIdempotencyConflict: the idempotency key is taken in that queue by a
	// job of another kind or payload.
	ErrIdempotencyConflict = errors.New("idempotency key conflict")
	// ErrQueueFull: the queue holds max_queued jobs already.
	ErrQueueFull = errors.New("queue full")
	// ErrFilterRequired: a bulk action had no filter and no allow_all.
	ErrFilterRequired = errors.New("filter required")
	// ErrUnavailable: the store cannot be reached or is shutting down.
	ErrUnavailable = errors.New("unavailable")
	// ErrTooManyWaiters: a long poll (a claim or get with a wait) would
	// begin while the server holds server.max_waiters of them; try again
	// shortly. It matches ErrUnavailable too.
	ErrTooManyWaiters = fmt.Errorf("%w: too many requests waiting", ErrUnavailable)
	// ErrOnceHeld: another run holds the once-record and its claim is live.
	ErrOnceHeld = errors.New("once key held by another run")
)

// InvalidError says which input field is wrong and why. The API answers it
// with 400 and code invalid_field (or TooLarge: 413 too_large).
type InvalidError struct {
	Field    string
	Message  string
	TooLarge bool
}

func (e *InvalidError) Error() string {
	if e.Field == "" {
		return e.Message
	}
	return e.Field + ": " + e.Message
}

// Invalid returns an *InvalidError for field.
func Invalid(field, format string, args ...any) error {
	return &InvalidError{Field: field, Message: fmt.Sprintf(format, args...)}
}

// TooLarge returns an *InvalidError that the API answers with 413.
func TooLarge(field, format string, args ...any) error {
	return &InvalidError{Field: field, Message: fmt.Sprintf(format, args...), TooLarge: true}
}

// OperationError is an error met while doing Operation ("submit",
// "heartbeat", "replay"). Its Error keeps the operation, for the logs;
// UserMessage leaves it out, since what a client is told names the job or
// row and the problem, not the server's call path.
type OperationError struct {
	Operation string
	Err       error
}

func (e *OperationError) Error() string { return e.Operation + ": " + e.Err.Error() }

func (e *OperationError) Unwrap() error { return e.Err }

// WithOperation wraps err in an *OperationError; a nil err stays nil. It
// takes the place of fmt.Errorf("submit: %w", err) where the error may
// reach a client, as the last wrapping on the way up.
func WithOperation(operation string, err error) error {
	if err == nil {
		return nil
	}
	return &OperationError{Operation: operation, Err: err}
}

// UserMessage is the message of err as a client should read it: without
// the operations (OperationError) it was wrapped in last. One beneath
// another wrapping stays in the message, as that wrapping's text may
// depend on it.
func UserMessage(err error) string {
	for {
		oe, ok := err.(*OperationError)
		if !ok {
			return err.Error()
		}
		err = oe.Err
	}
}
