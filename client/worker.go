package client

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/queuehq/queue/app"
	"github.com/queuehq/queue/worker"
)

// A Client is a Backend for a Worker: it claims and reports over the HTTP
// API, from one queue or several (WithQueues).
var _ worker.QueuesBackend = (*Client)(nil)

// QueueChoice names the queues a Worker works with WithQueues: weighted
// or in a strict order. app.ParseQueueChoice reads the command line's form.
type QueueChoice = app.QueueChoice

// Job is a job as the server shows it and as a handler gets it.
type Job = app.Job

// SubmitInput is one job to submit (see Client.Submit).
type SubmitInput = app.SubmitInput

// Backend is where a Worker gets jobs: a *Client over HTTP, or Local(svc)
// in the same process as the server.
type Backend = worker.Backend

// Local returns a Backend that calls svc directly, for a Worker embedded in
// the process that runs the queue (tests, or a Go program serving the API
// itself). It behaves as the HTTP API does, without the network.
func Local(svc *app.Service) Backend { return worker.LocalBackend(svc) }

// Permanent wraps err so the job is not retried: the worker fails it with
// retry=false and it moves to the dead-letter queue with reason
// permanent_failure. Permanent(nil) is nil.
func Permanent(err error) error { return worker.Permanent(err) }

// PermanentError is the error Permanent returns; test for it with errors.As.
type PermanentError = worker.PermanentError

// HandlerFunc runs one job and returns its result (any value encoding/json
// can marshal; a json.RawMessage is sent as is; 1 MiB of JSON at most) or an
// error. Return an error wrapped in Permanent to skip the retries. ctx ends
// when the job's timeout passes, an operator cancels the job, its lease is
// lost, or the worker's grace period on shutdown is over: return soon after.
// A panic is a failure like any other error. Jobs run at least once, so a
// handler must be safe to run again (see Once).
type HandlerFunc func(ctx context.Context, job *Job) (result any, err error)

// Worker runs registered handlers for the jobs of one queue (or several:
// WithQueues), each kind with its own concurrency. It long-polls, heartbeats, batches acknowledgements,
// and stops gracefully: see worker.Pool, which it runs once per kind.
type Worker struct {
	backend  Backend
	queue    string
	queues   *app.QueueChoice
	named    bool // NewWorker was given a queue
	log      zerolog.Logger
	workerID string
	grace    time.Duration
	pollWait time.Duration

	mu       sync.Mutex
	regs     []registration
	err      error
	pools    []*worker.Pool
	started  bool
	presence *worker.Presence // its place in the server's registry (registry.go of package worker)
	told     chan struct{}    // closed when the registry said stop
}

type registration struct {
	kind        string
	fn          HandlerFunc
	concurrency int
	timeout     time.Duration
}

// WorkerOption configures NewWorker.
type WorkerOption func(*Worker)

// WithLogger sends the worker's logs to log. By default they are dropped.
func WithLogger(log zerolog.Logger) WorkerOption { return func(w *Worker) { w.log = log } }

// WithWorkerID names the worker in the jobs it holds and in the server's
// registry of workers. By default host:pid and a short random suffix.
func WithWorkerID(id string) WorkerOption { return func(w *Worker) { w.workerID = id } }

// WithGrace is how long Run lets running jobs finish once its ctx ends; by
// default 30s.
func WithGrace(d time.Duration) WorkerOption { return func(w *Worker) { w.grace = d } }

// WithPollWait is how long one claim waits for work (a long poll that
// answers at once when a job lands); by default 30s, at most 60s.
func WithPollWait(d time.Duration) WorkerOption { return func(w *Worker) { w.pollWait = d } }

// WithQueues works several queues instead of the one given to NewWorker
// (give NewWorker ""): with weights, each claim draws them in proportion
// (asynq's and Sidekiq's weighted queues); without, in a strict order, a
// queue asked only when those before it have nothing. A long poll wakes
// on any of them. Make qs with app.ParseQueueChoice("critical=6,default=3").
func WithQueues(qs *QueueChoice) WorkerOption { return func(w *Worker) { w.queues = qs } }

// NewWorker returns a Worker for queue (if empty, "default"; or the queues
// of WithQueues) that gets its jobs from b: a *Client, or Local(svc).
// Register handlers with Handle, then call Run or Start.
func NewWorker(b Backend, queue string, opts ...WorkerOption) *Worker {
	named := queue != ""
	if queue == "" {
		queue = app.DefaultQueue
	}
	w := &Worker{backend: b, queue: queue, named: named, log: zerolog.Nop(), grace: worker.DefaultGrace}
	for _, o := range opts {
		o(w)
	}
	return w
}

// HandleOption configures one registered handler.
type HandleOption func(*registration)

// Concurrency is how many jobs of the kind run at once; by default 1.
func Concurrency(n int) HandleOption { return func(r *registration) { r.concurrency = n } }

// Timeout ends a run's context after d instead of the job's own timeout.
func Timeout(d time.Duration) HandleOption { return func(r *registration) { r.timeout = d } }

// Handle registers fn for jobs of kind. A kind registered twice, an invalid
// kind or a registration after Start makes Start (or Run) return an error.
func (w *Worker) Handle(kind string, fn HandlerFunc, opts ...HandleOption) {
	w.mu.Lock()
	defer w.mu.Unlock()
	r := registration{kind: kind, fn: fn, concurrency: 1}
	for _, o := range opts {
		o(&r)
	}
	switch {
	case w.started:
		w.err = errors.Join(w.err, fmt.Errorf("worker: Handle(%q) after Start", kind))
	case fn == nil:
		w.err = errors.Join(w.err, fmt.Errorf("worker: Handle(%q) with a nil handler", kind))
	case app.ValidateKind(kind) != nil:
		w.err = errors.Join(w.err, fmt.Errorf("worker: Handle: kind %w", app.ValidateKind(kind)))
	case r.concurrency < 1 || r.concurrency > app.MaxClaim:
		w.err = errors.Join(w.err, fmt.Errorf("worker: Handle(%q): concurrency %d is not between 1 and %d", kind, r.concurrency, app.MaxClaim))
	}
	for _, o := range w.regs {
		if o.kind == kind {
			w.err = errors.Join(w.err, fmt.Errorf("worker: kind %q registered twice", kind))
		}
	}
	w.regs = append(w.regs, r)
}

// Start starts claiming for every registered kind. ctx only carries values
// (handlers' contexts derive from it); the worker runs until Stop.
func (w *Worker) Start(ctx context.Context) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	switch {
	case w.err != nil:
		return w.err
	case w.started:
		return errors.New("worker: already started")
	case w.backend == nil:
		return errors.New("worker: no backend (give NewWorker a *Client or Local(svc))")
	case len(w.regs) == 0:
		return errors.New("worker: no handlers; register one with Handle")
	case w.queues != nil && w.named:
		return fmt.Errorf("worker: NewWorker's queue %q and WithQueues both name the queues: give NewWorker \"\" with WithQueues", w.queue)
	}
	w.started = true
	w.told = make(chan struct{})
	if reg, ok := w.backend.(worker.Registry); ok { // register (GET /api/workers lists it) and obey quiet and stop
		if err := w.startPresence(ctx, reg); err != nil {
			return err
		}
	}
	ob, _ := w.backend.(onceBackend)
	for _, r := range w.regs {
		fn := r.fn
		queue := w.queue
		if w.queues != nil {
			queue = ""
		}
		p := &worker.Pool{
			Backend: w.backend, Queue: queue, Queues: w.queues, Kinds: []string{r.kind}, Concurrency: r.concurrency,
			Timeout: r.timeout, PollWait: w.pollWait, Log: w.log.With().Str("kind", r.kind).Logger(), Presence: w.presence,
			Handler: func(ctx context.Context, job *app.Job) (any, error) {
				if ob != nil {
					ctx = context.WithValue(ctx, onceCtxKey{}, ob)
				}
				return fn(ctx, job)
			},
		}
		if w.workerID != "" && w.presence == nil {
			p.WorkerID = w.workerID + "/" + r.kind
		}
		if err := p.Start(ctx); err != nil {
			stopAll(w.pools, 0)
			w.pools = nil
			if w.presence != nil {
				w.presence.Stop()
			}
			return err
		}
		w.pools = append(w.pools, p)
	}
	return nil
}

// Stop stops claiming, lets running jobs finish within grace, then cancels
// the rest and gives their leases back so they run again at once elsewhere
// without counting the attempt. It returns when every job is reported.
func (w *Worker) Stop(grace time.Duration) {
	w.mu.Lock()
	pools, pres := w.pools, w.presence
	w.mu.Unlock()
	stopAll(pools, grace)
	if pres != nil {
		pres.Stop()
	}
}

// Run starts the worker, works until ctx ends, then stops it with the
// grace period (WithGrace; 30s by default).
func (w *Worker) Run(ctx context.Context) error {
	if err := w.Start(ctx); err != nil {
		return err
	}
	select {
	case <-ctx.Done():
	case <-w.told: // an operator stopped this worker (its jobs were given back)
	}
	w.Stop(w.grace)
	return nil
}

// startPresence registers the worker in the server's registry as one
// process: its queues, the kinds it handles and their concurrency in all.
// Told to quiet, its pools claim nothing; told to stop, they stop at once
// and give their running jobs back, and Run returns.
func (w *Worker) startPresence(ctx context.Context, reg worker.Registry) error {
	qs := w.queues
	if qs == nil {
		qs = &app.QueueChoice{Names: []string{w.queue}}
	}
	info := app.WorkerInput{ID: w.workerID, Queues: qs, Type: app.WorkerGo}
	for _, r := range w.regs {
		info.Kinds = append(info.Kinds, r.kind)
		info.Concurrency += r.concurrency
	}
	told := w.told
	w.presence = &worker.Presence{Registry: reg, Info: info, Log: w.log, OnStop: func() {
		w.mu.Lock()
		pools := w.pools
		w.mu.Unlock()
		stopAll(pools, 0)
		close(told)
	}}
	if err := w.presence.Start(ctx); err != nil {
		w.presence = nil
		return fmt.Errorf("worker: %w", err)
	}
	return nil
}

func stopAll(pools []*worker.Pool, grace time.Duration) {
	var wg sync.WaitGroup
	for _, p := range pools {
		wg.Add(1)
		go func() { defer wg.Done(); p.Stop(grace) }()
	}
	wg.Wait()
}
