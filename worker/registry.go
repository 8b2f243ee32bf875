package worker

import (
	"context"
	"errors"
	"os"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/queuehq/queue/app"
)

// Registry is a Backend that also keeps the server's registry of worker
// processes (POST /api/workers, app/workers.go). LocalBackend and
// *client.Client are Registries.
type Registry interface {
	// RegisterWorker registers a worker (a restart under the same id
	// starts over with command run).
	RegisterWorker(ctx context.Context, in app.WorkerInput) (*app.WorkerRegistered, error)
	// WorkerHeartbeat reports the worker's counts and returns the command
	// it is to obey; an unknown id is an error matching
	// app.ErrWorkerNotFound, and the worker registers again.
	WorkerHeartbeat(ctx context.Context, id string, b app.WorkerBeat) (string, error)
}

// Presence keeps a worker process in the server's registry: it registers,
// heartbeats every 5 seconds with the counts of its pools (jobs running,
// runs that succeeded, runs that failed), and hands the operator's
// command to them. Pools with this Presence claim nothing while it says
// quiet and stop claiming when it says stop; then OnStop ends the process's
// work. A server without a registry (an older one) or out of reach only
// costs a warning: the pools work on.
type Presence struct {
	// Registry is where the worker registers (a *client.Client, or
	// LocalBackend(svc)).
	Registry Registry
	// Info is what it registers. If Info.ID is empty, host:pid and a short
	// random suffix; empty Host and PID are this process's, an empty
	// Version the module's.
	Info app.WorkerInput
	// OnStop is called once, in a goroutine of its own, when the command
	// is stop: the owner stops its pools at once (Pool.Stop(0): running
	// jobs are cancelled and given back without using up their attempt)
	// and exits.
	OnStop func()
	// Log receives the registry's logs.
	Log zerolog.Logger

	mu       sync.Mutex
	started  bool
	command  string
	changed  chan struct{} // closed and replaced when command changes
	poke     chan struct{}
	cancel   context.CancelFunc
	done     chan struct{}
	stopOnce sync.Once

	inFlight, succeeded, failed atomic.Int64
	registered                  atomic.Bool // the server has the worker's row
}

// Timing of the presence.
const (
	pokeEvery        = time.Second      // at most one early heartbeat a second
	registerRetryMax = 30 * time.Second // between registrations the server refused
	finalBeatTimeout = time.Second      // the last heartbeat, on Stop
)

// NewWorkerID is the id of a worker process: host:pid and a short random
// suffix.
func NewWorkerID() string {
	host, _ := os.Hostname()
	return app.NewWorkerID(host, os.Getpid())
}

// ID is the id the worker registers under, set by Start (its pools claim
// under it).
func (p *Presence) ID() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.Info.ID
}

// Command is the last command the server gave: run, quiet or stop.
func (p *Presence) Command() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.command
}

// Start fills in Info, checks it, and starts registering and heartbeating
// in the background. ctx only carries values; the presence runs until Stop.
func (p *Presence) Start(ctx context.Context) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.started {
		return errors.New("worker: presence already started")
	}
	if p.Registry == nil {
		return errors.New("worker: presence without a registry")
	}
	if p.Info.Host == "" {
		p.Info.Host, _ = os.Hostname()
	}
	if p.Info.PID == 0 {
		p.Info.PID = os.Getpid()
	}
	if p.Info.ID == "" {
		p.Info.ID = app.NewWorkerID(p.Info.Host, p.Info.PID)
	}
	if p.Info.Version == "" {
		p.Info.Version = moduleVersion()
	}
	if err := app.ValidateWorkerID(p.Info.ID); err != nil {
		return err
	}
	p.started, p.command = true, app.WorkerRun
	p.changed, p.poke, p.done = make(chan struct{}), make(chan struct{}, 1), make(chan struct{})
	p.Log = p.Log.With().Str("worker_id", p.Info.ID).Logger()
	var run context.Context
	run, p.cancel = context.WithCancel(context.WithoutCancel(ctx))
	go p.loop(run)
	return nil
}

// Stop ends the heartbeats (the registry shows the worker gone after
// three missed ones) and waits for the last call to end; a last heartbeat
// (within a second) leaves the final counts on the server.
func (p *Presence) Stop() {
	p.mu.Lock()
	started := p.started
	p.mu.Unlock()
	if !started {
		return
	}
	p.cancel()
	<-p.done
	if p.registered.Load() {
		ctx, cancel := context.WithTimeout(context.Background(), finalBeatTimeout)
		defer cancel()
		_, _ = p.Registry.WorkerHeartbeat(ctx, p.Info.ID, p.beat())
	}
}

// Poke asks for a heartbeat now (at most one a second): a claim answered
// empty at once may mean the server holds the worker quiet.
func (p *Presence) Poke() {
	select {
	case p.poke <- struct{}{}:
	default:
	}
}

// await returns true when the pool may claim: at once while the command is
// run, after it changes back while quiet; false when it is stop or ctx ends.
func (p *Presence) await(ctx context.Context) bool {
	for {
		p.mu.Lock()
		cmd, changed := p.command, p.changed
		p.mu.Unlock()
		switch cmd {
		case app.WorkerStop:
			return false
		case app.WorkerQuiet:
			select {
			case <-changed:
				continue
			case <-ctx.Done():
				return false
			}
		}
		return ctx.Err() == nil
	}
}

// wrap counts the runs of h: in flight while it runs, then done or failed.
// A run cut short by the worker's own stop or a lost lease is neither: its
// job goes back to the queue or is someone else's.
func (p *Presence) wrap(h Handler) Handler {
	return func(ctx context.Context, job *app.Job) (any, error) {
		p.inFlight.Add(1)
		defer p.inFlight.Add(-1)
		res, err := h(ctx, job)
		switch cause := context.Cause(ctx); {
		case err == nil:
			p.succeeded.Add(1)
		case ctx.Err() != nil && (errors.Is(cause, errShutdown) || errors.Is(cause, errLeaseLost)):
		default:
			p.failed.Add(1)
		}
		return res, err
	}
}

// set stores the server's command and tells whoever waits on it.
func (p *Presence) set(cmd string) {
	p.mu.Lock()
	old := p.command
	if cmd != old {
		p.command = cmd
		close(p.changed)
		p.changed = make(chan struct{})
	}
	p.mu.Unlock()
	if cmd == old {
		return
	}
	switch cmd {
	case app.WorkerQuiet:
		p.Log.Info().Msg("told to quiet: no more claims; running jobs finish, then the worker idles")
	case app.WorkerStop:
		p.Log.Info().Msg("told to stop: no more claims; running jobs are stopped and given back")
		p.stopOnce.Do(func() {
			if p.OnStop != nil {
				go p.OnStop()
			}
		})
	default:
		p.Log.Info().Str("command", cmd).Msg("told to run again")
	}
}

// loop registers, then heartbeats every interval (and when poked) until
// ctx ends.
func (p *Presence) loop(ctx context.Context) {
	defer close(p.done)
	interval, registered := app.WorkerHeartbeatInterval, false
	bo := retryDelay{max: registerRetryMax}
	warned := false
	var last time.Time
	for ctx.Err() == nil {
		if !registered {
			c, cancel := context.WithTimeout(ctx, callTimeout)
			reg, err := p.Registry.RegisterWorker(c, p.Info)
			cancel()
			if err != nil {
				if ctx.Err() != nil {
					return
				}
				d := bo.next()
				if !warned {
					p.Log.Warn().Err(err).Dur("retry_in", d.Round(time.Millisecond)).Msg("worker registry: registration failed; working on without it and trying again")
					warned = true
				}
				if !p.sleepOrPoke(ctx, d, false) {
					return
				}
				continue
			}
			registered, warned = true, false
			p.registered.Store(true)
			bo.reset()
			if reg.HeartbeatInterval > 0 {
				interval = reg.HeartbeatInterval.D()
			}
			p.Log.Info().Dur("heartbeat", interval).Msg("worker registered")
			p.set(reg.Command)
		}
		if !p.sleepOrPoke(ctx, interval, true) {
			return
		}
		if early := pokeEvery - time.Since(last); early > 0 && !p.sleepOrPoke(ctx, early, false) {
			return // poked again within a second: wait the rest of it
		}
		last = time.Now()
		c, cancel := context.WithTimeout(ctx, callTimeout)
		cmd, err := p.Registry.WorkerHeartbeat(c, p.Info.ID, p.beat())
		cancel()
		switch {
		case err == nil:
			warned = false
			p.set(cmd)
		case errors.Is(err, app.ErrWorkerNotFound):
			p.Log.Info().Msg("worker registry: the server forgot this worker; registering again")
			registered = false
			p.registered.Store(false)
		case ctx.Err() != nil:
			return
		case !warned:
			p.Log.Warn().Err(err).Msg("worker registry: heartbeat failed; trying again at the next one")
			warned = true
		}
	}
}

// sleepOrPoke waits d, or less when poked (if pokes count), and reports
// whether ctx is still live.
func (p *Presence) sleepOrPoke(ctx context.Context, d time.Duration, pokes bool) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	var poke <-chan struct{}
	if pokes {
		poke = p.poke
	}
	select {
	case <-t.C:
	case <-poke:
	case <-ctx.Done():
		return false
	}
	return true
}

// beat is the counts a heartbeat reports.
func (p *Presence) beat() app.WorkerBeat {
	return app.WorkerBeat{InFlight: int(p.inFlight.Load()), Done: p.succeeded.Load(), Failed: p.failed.Load()}
}

// moduleVersion is the version of this module in the running binary.
func moduleVersion() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return ""
	}
	if bi.Main.Path == "github.com/queuehq/queue" {
		return bi.Main.Version
	}
	for _, d := range bi.Deps {
		if d.Path == "github.com/queuehq/queue" {
			return d.Version
		}
	}
	return ""
}

// RegisterWorker implements Registry in process.
func (b *localBackend) RegisterWorker(ctx context.Context, in app.WorkerInput) (*app.WorkerRegistered, error) {
	return b.svc.RegisterWorker(ctx, in)
}

// WorkerHeartbeat implements Registry in process.
func (b *localBackend) WorkerHeartbeat(ctx context.Context, id string, beat app.WorkerBeat) (string, error) {
	return b.svc.WorkerHeartbeat(ctx, id, beat)
}
