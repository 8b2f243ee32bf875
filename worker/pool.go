// Package worker runs jobs: a Pool claims from a Backend (the Service in
// process, or the HTTP API through package client), runs a Handler per job
// with heartbeats, timeouts and cancels, and reports the outcome; the
// command runner is the Handler of built-in and `queue work` workers. The
// rules of what an outcome does to a job stay in package app.
package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime/debug"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/queuehq/queue/app"
)

// Handler runs one job and returns its result (any value encoding/json can
// marshal; a json.RawMessage is sent as is) or an error. Its ctx ends when
// the job's timeout passes, an operator cancels the job, the lease is lost or
// the worker's grace period on shutdown is over; a handler must return soon
// after. Wrap an error in Permanent to send the job straight to the
// dead-letter queue; any other error retries it with backoff.
type Handler func(ctx context.Context, job *app.Job) (result any, err error)

// PermanentError marks a failure that no retry can fix: the worker fails the
// job with retry=false and it moves to the dead-letter queue with reason
// permanent_failure. Test for it with errors.As.
type PermanentError struct{ Err error }

func (e *PermanentError) Error() string { return "permanent failure: " + e.Err.Error() }

// Unwrap returns the wrapped error.
func (e *PermanentError) Unwrap() error { return e.Err }

// Permanent wraps err so the job is not retried. Permanent(nil) is nil.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return &PermanentError{Err: err}
}

// Why a handler's context ended; context.Cause tells them apart.
var (
	errJobTimeout      = errors.New("job timed out")
	errCancelRequested = errors.New("job cancel requested")
	errLeaseLost       = errors.New("job lease lost")
	errShutdown        = errors.New("worker shutting down")
)

// jobTimeout is the cause of a run that outlived its timeout: "job timed
// out after 30s", formatted only when someone reads it, since every job's
// context carries one.
type jobTimeout time.Duration

func (d jobTimeout) Error() string {
	return fmt.Sprintf("%v after %s", errJobTimeout, time.Duration(d))
}
func (jobTimeout) Is(target error) bool { return target == errJobTimeout }

// Pool is a worker: it claims jobs of one queue (optionally of some kinds)
// from a Backend and runs Handler for each, Concurrency at a time. It
// long-polls for work (a claim answers at once when a job lands), heartbeats
// each lease at a third of the job's timeout, acknowledges completions in
// batches (never holding one back more than a few milliseconds), and fails
// jobs with retry unless the handler returned a Permanent error or panicked
// (a panic is an ordinary, retried failure). A heartbeat answering
// cancel_requested cancels the handler's context and the worker then
// acknowledges the cancel; a lost lease (409 lease_lost) cancels it and the
// worker moves on without reporting. Backend errors are logged and retried
// with backoff, never fatal.
//
// Stop (or the end of Run's ctx) stops claiming, lets running jobs finish
// within a grace period, then cancels them and gives their leases back
// (snooze 0: they run again at once elsewhere, the attempt not counted).
type Pool struct {
	// Backend is where jobs come from: LocalBackend(svc) or a *client.Client.
	Backend Backend
	// Queue to claim from. If empty (and Queues is nil), "default".
	Queue string
	// Queues, if set, are several queues to claim from instead of Queue:
	// with weights, each claim draws them in proportion; without, in a
	// strict order (see app.QueueChoice). The Backend must be a
	// QueuesBackend (*client.Client and LocalBackend are).
	Queues *app.QueueChoice
	// Kinds, if not empty, restricts claims to these kinds.
	Kinds []string
	// Handler runs each job.
	Handler Handler
	// Concurrency is how many jobs run at once. If zero, 1.
	Concurrency int
	// Timeout is how long one run may take before its context ends. If
	// zero, each job's own timeout (its lease length) is used.
	Timeout time.Duration
	// Grace is how long Run lets running jobs finish once its ctx ends. If
	// zero, 30s.
	Grace time.Duration
	// AbandonAfter is how long a handler may keep running after its context
	// ended before the worker reports the job without it (the handler keeps
	// its slot until it returns). If zero, 30s.
	AbandonAfter time.Duration
	// PollWait is how long one claim waits for work. If zero, 30s (at most 60s).
	PollWait time.Duration
	// WorkerID names this worker in the jobs it holds. If empty, the
	// Presence's id, or host:pid.
	WorkerID string
	// Presence, if set, keeps the worker in the server's registry (a
	// started Presence; see registry.go): the pool claims under its id,
	// counts its runs, claims nothing while it says quiet and stops
	// claiming when it says stop. Several pools may share one.
	Presence *Presence
	// Log receives the worker's logs.
	Log zerolog.Logger

	mu       sync.Mutex
	started  bool
	stopped  bool
	stopDone chan struct{}
	hurry    chan struct{} // closed by Interrupt
	hurryOne sync.Once

	claimQueues func(ctx context.Context, in app.ClaimInput) ([]*app.Job, error) // with Queues

	claimCtx    context.Context
	claimCancel context.CancelFunc
	jobsCtx     context.Context
	jobsCancel  context.CancelCauseFunc
	ioCtx       context.Context
	ioCancel    context.CancelFunc

	slots       chan struct{}
	jobs        sync.WaitGroup
	claimDone   chan struct{}
	acks        chan ackRequest
	batcherDone chan struct{}
}

// DefaultGrace is how long running jobs may finish on shutdown by default.
const DefaultGrace = 30 * time.Second

// Tuning of the worker.
const (
	defaultPollWait     = 30 * time.Second
	defaultAbandonAfter = 30 * time.Second
	ackLinger           = 2 * time.Millisecond // how long a completion waits for company
	ackBatchBytes       = 8 << 20              // results per batch call, so it stays below body limits
	callTimeout         = 30 * time.Second     // one heartbeat or report call
	minRetryDelay       = 100 * time.Millisecond
	maxRetryDelay       = 5 * time.Second
	releaseWindow       = 5 * time.Second // how long a lease give-back is retried on shutdown
)

// Start checks the pool's fields and starts claiming. ctx only carries
// values; the pool runs until Stop.
func (p *Pool) Start(ctx context.Context) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.started {
		return errors.New("worker: already started")
	}
	if p.Backend == nil {
		return errors.New("worker: no backend")
	}
	if p.Handler == nil {
		return errors.New("worker: no handler")
	}
	if p.Queues != nil {
		if err := p.checkQueues(); err != nil {
			return err
		}
	} else {
		if p.Queue == "" {
			p.Queue = app.DefaultQueue
		}
		if err := app.ValidateQueue(p.Queue); err != nil {
			return fmt.Errorf("worker: %w", err)
		}
	}
	for _, k := range p.Kinds {
		if err := app.ValidateKind(k); err != nil {
			return fmt.Errorf("worker: kind %w", err)
		}
	}
	if p.Concurrency == 0 {
		p.Concurrency = 1
	}
	if p.Concurrency < 0 || p.Concurrency > app.MaxClaim {
		return fmt.Errorf("worker: concurrency %d is not between 1 and %d", p.Concurrency, app.MaxClaim)
	}
	if p.Timeout < 0 || p.Grace < 0 || p.AbandonAfter < 0 || p.PollWait < 0 {
		return errors.New("worker: durations must not be negative")
	}
	if p.PollWait == 0 {
		p.PollWait = defaultPollWait
	}
	p.PollWait = min(p.PollWait, app.MaxWait)
	if p.AbandonAfter == 0 {
		p.AbandonAfter = defaultAbandonAfter
	}
	if p.WorkerID == "" && p.Presence != nil {
		p.WorkerID = p.Presence.ID()
	}
	if p.WorkerID == "" {
		host, _ := os.Hostname()
		p.WorkerID = fmt.Sprintf("%s:%d", host, os.Getpid())
	}
	if p.Presence != nil {
		p.Handler = p.Presence.wrap(p.Handler)
	}
	p.started = true
	if p.Queues != nil {
		p.claimQueues = p.Backend.(QueuesBackend).ClaimQueues
		p.Log = p.Log.With().Str("queues", p.Queues.String()).Str("worker_id", p.WorkerID).Logger()
	} else {
		p.Log = p.Log.With().Str("queue", p.Queue).Str("worker_id", p.WorkerID).Logger()
	}
	base := context.WithoutCancel(ctx)
	p.claimCtx, p.claimCancel = context.WithCancel(base)
	p.jobsCtx, p.jobsCancel = context.WithCancelCause(base)
	p.ioCtx, p.ioCancel = context.WithCancel(base)
	p.slots = make(chan struct{}, p.Concurrency)
	p.claimDone = make(chan struct{})
	p.acks = make(chan ackRequest)
	p.batcherDone = make(chan struct{})
	p.stopDone = make(chan struct{})
	p.hurry = make(chan struct{})
	go p.claimLoop()
	go p.batcher()
	p.Log.Info().Int("concurrency", p.Concurrency).Strs("kinds", p.Kinds).Msg("worker started")
	return nil
}

// checkQueues checks p.Queues before Start: app's rules for a claim's
// queues, no Queue beside it, and a Backend that claims from several.
func (p *Pool) checkQueues() error {
	qs := p.Queues
	if p.Queue != "" {
		return fmt.Errorf("worker: Queue %q and Queues %q both set: give one", p.Queue, qs.String())
	}
	if len(qs.Names) == 0 {
		return errors.New("worker: Queues names no queue: name at least one")
	}
	if qs.Weights != nil && len(qs.Weights) != len(qs.Names) {
		return fmt.Errorf("worker: Queues has %d names and %d weights: give each queue a weight, or none", len(qs.Names), len(qs.Weights))
	}
	if _, err := app.ParseQueueChoice(qs.String()); err != nil { // app's rules, on the form the command line gives
		return fmt.Errorf("worker: %w", err)
	}
	if _, ok := p.Backend.(QueuesBackend); !ok {
		return fmt.Errorf("worker: Queues needs a Backend that claims from several queues (a *client.Client or LocalBackend); %T does not", p.Backend)
	}
	return nil
}

// Run starts the pool, works until ctx ends, then stops it with p.Grace.
func (p *Pool) Run(ctx context.Context) error {
	if err := p.Start(ctx); err != nil {
		return err
	}
	<-ctx.Done()
	grace := p.Grace
	if grace == 0 {
		grace = DefaultGrace
	}
	p.Stop(grace)
	return nil
}

// Stop stops claiming, waits up to grace for running jobs, then cancels the
// ones left and gives their leases back, and returns when every job was
// reported (or abandoned: see AbandonAfter). Calling it again waits for the
// first call.
func (p *Pool) Stop(grace time.Duration) {
	p.mu.Lock()
	if !p.started {
		p.mu.Unlock()
		return
	}
	if p.stopped {
		p.mu.Unlock()
		<-p.stopDone
		return
	}
	p.stopped = true
	p.mu.Unlock()
	defer close(p.stopDone)

	p.claimCancel()
	<-p.claimDone
	done := make(chan struct{})
	go func() { p.jobs.Wait(); close(done) }()
	running := len(p.slots)
	if running > 0 {
		p.Log.Info().Int("running", running).Dur("grace", grace).Msg("worker stopping: running jobs may finish")
	}
	t := time.NewTimer(max(grace, 0))
	over := true
	select {
	case <-done:
		over = false
	case <-t.C:
	case <-p.hurry:
	}
	t.Stop()
	if over {
		p.Log.Warn().Int("running", len(p.slots)).Msg("grace period over: cancelling running jobs and giving their leases back")
		p.jobsCancel(errShutdown)
		t2 := time.NewTimer(p.AbandonAfter + releaseWindow + time.Second)
		select {
		case <-done:
		case <-t2.C:
			p.Log.Error().Msg("jobs still not reported; leaving them to lease expiry")
		}
		t2.Stop()
	}
	p.ioCancel()
	<-done
	<-p.batcherDone
	p.jobsCancel(errShutdown)
	p.Log.Info().Msg("worker stopped")
}

// Interrupt ends the grace period of a Stop at once (a second SIGINT, say):
// running jobs are cancelled and their leases given back now.
func (p *Pool) Interrupt() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.started {
		p.hurryOne.Do(func() { close(p.hurry) })
	}
}

// claimLoop long-polls for as many jobs as there are free slots.
func (p *Pool) claimLoop() {
	defer close(p.claimDone)
	var stopping <-chan struct{}
	if s, ok := p.Backend.(interface{ stopping() <-chan struct{} }); ok {
		stopping = s.stopping()
	}
	bo := retryDelay{}
	for {
		if p.Presence != nil && !p.Presence.await(p.claimCtx) {
			return // told to stop (the Presence's OnStop stops the pool), or stopped
		}
		select { // one free slot, then any others free right now
		case p.slots <- struct{}{}:
		case <-p.claimCtx.Done():
			return
		case <-stopping:
			p.Log.Info().Msg("server stopping: no more claims")
			return
		}
		n := 1
	fill:
		for n < cap(p.slots) {
			select {
			case p.slots <- struct{}{}:
				n++
			default:
				break fill
			}
		}
		wait := app.Duration(p.PollWait)
		began := time.Now()
		in := app.ClaimInput{WorkerID: p.WorkerID, Limit: n, Wait: &wait, Kinds: p.Kinds}
		var jobs []*app.Job
		var err error
		if p.claimQueues != nil {
			in.Queues = p.Queues
			jobs, err = p.claimQueues(p.claimCtx, in)
		} else {
			jobs, err = p.Backend.Claim(p.claimCtx, p.Queue, in)
		}
		for i := len(jobs); i < n; i++ {
			<-p.slots
		}
		if len(jobs) > n { // a server handing out more than asked: give the rest back
			for _, j := range jobs[n:] {
				p.jobs.Add(1)
				go func() { defer p.jobs.Done(); p.release(j, "claimed beyond the limit") }()
			}
			jobs = jobs[:n]
		}
		stoppedNow := p.claimCtx.Err() != nil
		for _, j := range jobs {
			if stoppedNow { // claimed as we stopped: back at once
				p.jobs.Add(1)
				go func() {
					defer func() { <-p.slots; p.jobs.Done() }()
					p.release(j, "claimed while stopping")
				}()
				continue
			}
			p.jobs.Add(1)
			go p.work(j)
		}
		if stoppedNow {
			return
		}
		if err != nil {
			d := bo.next()
			lvl := zerolog.WarnLevel // the server is down or restarting
			if !Retryable(err) {
				d, lvl = max(d, maxRetryDelay), zerolog.ErrorLevel // a mistake: retrying will not fix it soon
			}
			p.Log.WithLevel(lvl).Err(err).Dur("retry_in", d.Round(time.Millisecond)).Msg("claim failed")
			if !p.sleep(p.claimCtx, d) {
				return
			}
			continue
		}
		bo.reset()
		if len(jobs) == 0 && time.Since(began) < wait.D()/2 {
			// An empty answer long before the wait: the server is shutting
			// down, ignores waits, or holds this worker quiet (ask the
			// registry now). Don't spin.
			if p.Presence != nil {
				p.Presence.Poke()
			}
			if !p.sleep(p.claimCtx, 250*time.Millisecond) {
				return
			}
		}
	}
}

// sleep waits d or until ctx ends; it reports whether d passed.
func (p *Pool) sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// jobLog is a job's logger, with its id, kind and attempt, made when it
// first logs: most jobs log nothing, and making it for every job was one
// of the larger allocations of a busy worker.
type jobLog struct {
	base    *zerolog.Logger
	job     *app.Job
	attempt bool // with the job's attempt
	once    sync.Once
	l       zerolog.Logger
}

func (jl *jobLog) get() *zerolog.Logger {
	jl.once.Do(func() {
		c := jl.base.With().Int64("job_id", jl.job.ID).Str("kind", jl.job.Kind)
		if jl.attempt {
			c = c.Int("attempt", jl.job.Attempts)
		}
		jl.l = c.Logger()
	})
	return &jl.l
}

// outcome is what a handler returned.
type outcome struct {
	result any
	err    error
}

// work runs one job from claim to its report, then frees its slot.
func (p *Pool) work(job *app.Job) {
	handlerDone := make(chan struct{})
	abandoned := false
	defer func() {
		if abandoned { // the handler still runs: it keeps its slot until it returns
			go func() { <-handlerDone; <-p.slots }()
		} else {
			<-p.slots
		}
		p.jobs.Done()
	}()
	log := &jobLog{base: &p.Log, job: job, attempt: true}
	rep := p.reporter(job, log) // job.Progress and job.Log (progress.go)
	leaseLen := job.Timeout.D()
	if leaseLen <= 0 {
		leaseLen = app.DefaultTimeout
	}
	timeout := p.Timeout
	if timeout <= 0 {
		timeout = leaseLen
	}
	hctx, cancel := context.WithCancelCause(traceContext(p.jobsCtx, job)) // the attempt's span (trace.go)
	defer cancel(nil)
	tctx, cancelT := context.WithTimeoutCause(hctx, timeout, jobTimeout(timeout))
	defer cancelT()

	// The heartbeat's goroutine starts with its first beat: a job done
	// sooner (most are) never has one.
	hbStop, hbDone := make(chan struct{}), make(chan struct{})
	interval := max(leaseLen/3, 10*time.Millisecond)
	hb := time.AfterFunc(interval, func() { p.heartbeat(log, job, leaseLen, interval, cancel, hbStop, hbDone) })
	defer func() {
		close(hbStop)
		if !hb.Stop() { // it fired: wait for its beats to end
			<-hbDone
		}
	}()

	out, abandonedNow := p.call(tctx, job, handlerDone, log)
	rep.finish() // the attempt's log lines and progress go before its outcome
	abandoned = abandonedNow
	cause := context.Cause(tctx)
	if tctx.Err() == nil {
		cause = nil
	}
	lease := job.Lease
	switch {
	case errors.Is(cause, errLeaseLost):
		log.get().Warn().Msg("lease lost: the job was recovered, finished or claimed elsewhere; its run was stopped")
	case out.err == nil:
		p.complete(log, job, leaseLen, out.result)
	case errors.Is(cause, errCancelRequested):
		p.report(log, "acknowledge cancel", p.deadline(leaseLen), func(ctx context.Context) error {
			return p.Backend.AckCancel(ctx, job.ID, lease)
		})
		log.get().Info().Msg("job cancelled")
	case errors.Is(cause, errShutdown):
		p.release(job, "worker stopped before the job finished")
	case errors.Is(cause, errJobTimeout):
		p.fail(log, job, leaseLen, fmt.Sprintf("%v: %v", cause, out.err), true)
	default:
		var pe *PermanentError
		p.fail(log, job, leaseLen, out.err.Error(), !errors.As(out.err, &pe))
	}
}

// call runs the handler, turning a panic into an error. After ctx ends it
// waits at most AbandonAfter for the handler to return.
func (p *Pool) call(ctx context.Context, job *app.Job, done chan struct{}, log *jobLog) (outcome, bool) {
	ch := make(chan outcome, 1)
	go func() {
		defer close(done)
		defer func() {
			if r := recover(); r != nil {
				log.get().Error().Interface("panic", r).Str("stack", string(debug.Stack())).Msg("handler panicked")
				ch <- outcome{err: fmt.Errorf("handler panicked: %v", r)}
			}
		}()
		res, err := p.Handler(ctx, job)
		ch <- outcome{result: res, err: err}
	}()
	select {
	case o := <-ch:
		return o, false
	case <-ctx.Done():
	}
	t := time.NewTimer(p.AbandonAfter)
	defer t.Stop()
	select {
	case o := <-ch:
		return o, false
	case <-t.C:
		log.get().Error().Dur("abandon_after", p.AbandonAfter).Msg("handler ignores its context; job reported without it")
		return outcome{err: fmt.Errorf("handler did not return within %s after its context ended", p.AbandonAfter)}, true
	}
}

// heartbeat extends the lease, now and then every interval (a third of the
// lease), until stop is closed; it cancels the run when the lease is lost
// or a cancel requested.
func (p *Pool) heartbeat(log *jobLog, job *app.Job, leaseLen, interval time.Duration, cancel context.CancelCauseFunc, stop, done chan struct{}) {
	defer close(done)
	bo := retryDelay{max: interval}
	var t *time.Timer
	defer func() {
		if t != nil {
			t.Stop()
		}
	}()
	for {
		select { // stopped as it fired: no beat
		case <-stop:
			return
		default:
		}
		ctx, c := context.WithTimeout(p.ioCtx, min(callTimeout, leaseLen))
		l, err := p.Backend.Heartbeat(ctx, job.ID, job.Lease, 0)
		c()
		next := interval
		switch {
		case err == nil:
			bo.reset()
			if l.CancelRequested {
				cancel(errCancelRequested)
			}
		case errors.Is(err, app.ErrLeaseLost), errors.Is(err, app.ErrNotFound):
			cancel(errLeaseLost)
			return
		case p.ioCtx.Err() != nil:
			return
		default:
			next = bo.next()
			log.get().Warn().Err(err).Dur("retry_in", next.Round(time.Millisecond)).Msg("heartbeat failed")
		}
		if t == nil {
			t = time.NewTimer(next)
		} else {
			t.Reset(next)
		}
		select {
		case <-stop:
			return
		case <-p.ioCtx.Done():
			return
		case <-t.C:
		}
	}
}

// deadline is how long reports of a job with lease length leaseLen are
// retried while the backend is unreachable: past it the lease has surely
// lapsed and stale recovery has the job.
func (p *Pool) deadline(leaseLen time.Duration) time.Time {
	return time.Now().Add(max(2*leaseLen, time.Minute))
}

// report calls fn until it succeeds, fails for good, or until is past.
func (p *Pool) report(log *jobLog, what string, until time.Time, fn func(context.Context) error) error {
	bo := retryDelay{}
	for {
		ctx, c := context.WithTimeout(p.ioCtx, callTimeout)
		err := fn(ctx)
		c()
		switch {
		case err == nil:
			return nil
		case errors.Is(err, app.ErrLeaseLost):
			log.get().Warn().Err(err).Msg(what + ": lease lost; the job was recovered or finished elsewhere")
			return err
		case !Retryable(err) && p.ioCtx.Err() == nil:
			log.get().Error().Err(err).Msg(what + " failed")
			return err
		case p.ioCtx.Err() != nil || time.Now().After(until):
			log.get().Error().Err(err).Msg(what + " failed; giving up (the lease will expire and the job run again)")
			return err
		}
		d := bo.next()
		log.get().Warn().Err(err).Dur("retry_in", d.Round(time.Millisecond)).Msg(what + " failed; retrying")
		if !p.sleep(p.ioCtx, d) {
			log.get().Error().Err(err).Msg(what + " failed; giving up (the lease will expire and the job run again)")
			return err
		}
	}
}

// complete acknowledges a job with its result, through the batcher.
func (p *Pool) complete(log *jobLog, job *app.Job, leaseLen time.Duration, result any) {
	raw, err := encodeResult(result)
	if err != nil {
		p.fail(log, job, leaseLen, err.Error(), false)
		return
	}
	item := app.Completion{ID: job.ID, Lease: job.Lease, Result: raw}
	if p.report(log, "complete", p.deadline(leaseLen), func(ctx context.Context) error { return p.ack(ctx, item) }) == nil {
		if log.base.GetLevel() <= zerolog.DebugLevel && zerolog.GlobalLevel() <= zerolog.DebugLevel {
			log.get().Debug().Msg("job done")
		}
	}
}

// encodeResult marshals what a handler returned, within MaxResultBytes.
// An empty json.RawMessage is no result, as nil is: a command that printed
// nothing completes with a null result.
func encodeResult(result any) (json.RawMessage, error) {
	var raw json.RawMessage
	switch r := result.(type) {
	case nil:
		return nil, nil
	case json.RawMessage:
		if len(r) == 0 {
			return nil, nil
		}
		raw = r
		if !json.Valid(raw) {
			return nil, errors.New("handler returned a json.RawMessage that is not valid JSON")
		}
	default:
		b, err := json.Marshal(result)
		if err != nil {
			return nil, fmt.Errorf("handler result cannot be JSON: %w", err)
		}
		raw = b
	}
	if len(raw) > app.MaxResultBytes {
		return nil, fmt.Errorf("handler result is %d bytes of JSON; the limit is %d", len(raw), app.MaxResultBytes)
	}
	return raw, nil
}

// fail reports a failed attempt.
func (p *Pool) fail(log *jobLog, job *app.Job, leaseLen time.Duration, msg string, retry bool) {
	var res *app.FailResult
	err := p.report(log, "fail", p.deadline(leaseLen), func(ctx context.Context) error {
		var err error
		res, err = p.Backend.Fail(ctx, job.ID, job.Lease, msg, retry, 0)
		return err
	})
	if err == nil {
		log.get().Warn().Str("outcome", res.Outcome).Bool("retry", retry).Str("error", app.TruncateString(msg, 1024)).Msg("job failed")
	}
}

// release gives a job's lease back at once without counting the attempt.
func (p *Pool) release(job *app.Job, why string) {
	log := &jobLog{base: &p.Log, job: job}
	if p.report(log, "give lease back", time.Now().Add(releaseWindow), func(ctx context.Context) error {
		return p.Backend.Snooze(ctx, job.ID, job.Lease, 0)
	}) == nil {
		log.get().Info().Str("why", why).Msg("lease given back; the job runs again at once")
	}
}

// ackRequest is one completion waiting for its batch.
type ackRequest struct {
	item app.Completion
	done chan error
}

// ack sends one completion through the batcher and waits for its answer.
func (p *Pool) ack(ctx context.Context, item app.Completion) error {
	req := ackRequest{item: item, done: make(chan error, 1)}
	select {
	case p.acks <- req:
	case <-ctx.Done():
		return ctx.Err()
	}
	return <-req.done // the batcher always answers
}

// batcher acknowledges completions in batches: what is waiting goes in one
// call, and a completion waits at most ackLinger for company while other
// jobs are running.
func (p *Pool) batcher() {
	defer close(p.batcherDone)
	for {
		var first ackRequest
		select {
		case first = <-p.acks:
		case <-p.ioCtx.Done():
			return
		}
		batch, size := []ackRequest{first}, len(first.item.Result)
		var linger <-chan time.Time
		var t *time.Timer
		if len(p.slots) > 1 {
			t = time.NewTimer(ackLinger)
			linger = t.C
		}
	collect:
		for len(batch) < app.MaxCompleteBatch && size < ackBatchBytes {
			select {
			case r := <-p.acks:
				batch = append(batch, r)
				size += len(r.item.Result)
				continue
			default:
			}
			if linger == nil {
				break
			}
			select {
			case r := <-p.acks:
				batch = append(batch, r)
				size += len(r.item.Result)
			case <-linger:
				break collect
			}
		}
		if t != nil {
			t.Stop()
		}
		items := make([]app.Completion, len(batch))
		for i, r := range batch {
			items[i] = r.item
		}
		errs, err := p.completeBatch(items)
		if err != nil && len(items) > 1 && !Retryable(err) && p.ioCtx.Err() == nil {
			// One item may spoil the batch (too large for the server's body
			// limit, say): acknowledge each on its own.
			errs, err = make([]error, len(items)), nil
			for i := range items {
				e, err1 := p.completeBatch(items[i : i+1])
				if err1 != nil {
					errs[i] = err1
				} else {
					errs[i] = e[0]
				}
			}
		}
		for i, r := range batch {
			if err != nil {
				r.done <- err
			} else {
				r.done <- errs[i]
			}
		}
	}
}

// completeBatch is one CompleteBatch call.
func (p *Pool) completeBatch(items []app.Completion) ([]error, error) {
	ctx, c := context.WithTimeout(p.ioCtx, callTimeout)
	defer c()
	errs, err := p.Backend.CompleteBatch(ctx, items)
	if err == nil && len(errs) != len(items) {
		err = fmt.Errorf("complete: %d answers for %d jobs", len(errs), len(items))
	}
	return errs, err
}

// retryDelay is exponential backoff with jitter, from 100ms to max (if zero, 5s).
type retryDelay struct {
	n   int
	max time.Duration
}

func (r *retryDelay) next() time.Duration {
	hi := r.max
	if hi <= 0 {
		hi = maxRetryDelay
	}
	d := minRetryDelay << min(r.n, 10)
	r.n++
	d = min(d, hi)
	return time.Duration(float64(d) * (0.75 + 0.5*rand.Float64()))
}

func (r *retryDelay) reset() { r.n = 0 }
