package commands

import (
	"context"
	"time"

	"github.com/rs/zerolog"

	"github.com/queuehq/queue/app"
)

type workerPool interface {
	Stop(grace time.Duration)
}

// startWorkers starts the built-in command workers of the config.
func startWorkers(ctx context.Context, svc *app.Service, cfg *app.Config, log zerolog.Logger) ([]workerPool, error) {
	return nil, nil
}

func stopWorkers(pools []workerPool, grace time.Duration, log zerolog.Logger) {
	for _, p := range pools {
		p.Stop(grace)
	}
}
