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
		if err := p.Start(ctx); err != nil {
			stopWorkers(pools, 0, log)
			return nil, fmt.Errorf("workers[%d]: %w", i, err)
		}
		pools = append(pools, p)
	}
	return pools, nil
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
