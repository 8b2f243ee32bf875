package commands

import (
	"context"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/queuehq/queue/app"
	"github.com/queuehq/queue/worker"
)

// workerPool is one running set of built-in workers.
type workerPool interface {
	Stop(grace time.Duration)
}

// startWorkers starts the built-in command workers of the config: an
// worker.Pool over the Service in this process for each [[workers]] entry.
// They stop claiming when the Service stops and finish in stopWorkers.
func startWorkers(ctx context.Context, svc *app.Service, cfg *config, log zerolog.Logger) ([]workerPool, error) {
	host, _ := os.Hostname()
	var pools []workerPool
	for i, w := range cfg.Workers { // their commands and dirs were checked with the config (validateWorkers)
		killGrace := w.KillGrace.D()
		if killGrace <= 0 {
			killGrace = worker.DefaultKillGrace
		}
		p := &worker.Pool{
			Backend:     worker.LocalBackend(svc),
			Queue:       w.Queue,
			Kinds:       w.Kinds,
			Concurrency: w.Concurrency,
			Timeout:     w.Timeout.D(),
			Handler: worker.CommandHandler(worker.CommandConfig{
				Command: w.Command, Dir: w.Dir, Env: w.Env, PassEnv: w.PassEnv, KillGrace: killGrace,
			}),
			AbandonAfter: killGrace + 5*time.Second,
			WorkerID:     fmt.Sprintf("%s:%d/builtin-%d", host, os.Getpid(), i),
			Log:          log.With().Str("component", "worker").Int("worker", i).Logger(),
		}
		bw, err := startBuiltin(ctx, svc, p)
		if err != nil {
			stopWorkers(pools, 0, log)
			return nil, fmt.Errorf("workers[%d]: %w", i, err)
		}
		pools = append(pools, bw)
	}
	return pools, nil
}

// builtinWorker is a built-in worker's pool with its place in the
// registry of workers.
type builtinWorker struct {
	pool *worker.Pool
	pres *worker.Presence
}

// Stop stops the pool, then its heartbeats.
func (b *builtinWorker) Stop(grace time.Duration) {
	b.pool.Stop(grace)
	b.pres.Stop()
}

// startBuiltin registers pool p (type builtin, under its WorkerID) and
// starts it. Told to quiet, it claims nothing; told to stop, it stops at
// once, giving its running jobs back, and its heartbeats end; the server
// runs on.
func startBuiltin(ctx context.Context, svc *app.Service, p *worker.Pool) (*builtinWorker, error) {
	pres := &worker.Presence{
		Registry: worker.LocalBackend(svc).(worker.Registry),
		Info: app.WorkerInput{ID: p.WorkerID, Queues: &app.QueueChoice{Names: []string{p.Queue}},
			Kinds: p.Kinds, Concurrency: max(p.Concurrency, 1), Type: app.WorkerBuiltin},
		Log: p.Log,
	}
	pres.OnStop = func() { p.Stop(0); pres.Stop() } // stopped for good: it shows gone, then ages out
	if err := pres.Start(ctx); err != nil {
		return nil, err
	}
	p.Presence = pres
	if err := p.Start(ctx); err != nil {
		pres.Stop()
		return nil, err
	}
	return &builtinWorker{pool: p, pres: pres}, nil
}

// stopWorkers stops every pool at once: they stop claiming, running jobs
// get grace to finish, then are cancelled and their leases given back.
func stopWorkers(pools []workerPool, grace time.Duration, log zerolog.Logger) {
	if len(pools) == 0 {
		return
	}
	log.Info().Int("pools", len(pools)).Dur("grace", grace).Msg("stopping built-in workers")
	var wg sync.WaitGroup
	for _, p := range pools {
		wg.Add(1)
		go func() { defer wg.Done(); p.Stop(grace) }()
	}
	wg.Wait()
}
