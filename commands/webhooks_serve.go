package commands

import (
	"cmp"
	"context"
	"fmt"
	"os"

	"github.com/rs/zerolog"

	"github.com/queuehq/queue/app"
	"github.com/queuehq/queue/webhook"
	"github.com/queuehq/queue/worker"
)

// startWebhooks starts this node's delivery pool: a built-in worker of
// queue app.WebhookQueue (kind app.WebhookKind) whose handler is
// webhook.Deliverer, [webhooks] concurrency at once (default 4). Every
// node runs one, so deliveries go out while any node is up; it shows in
// the registry of workers as the others do, and stops with them: it is
// added to pools, the built-in workers started before it, which it stops
// if it cannot start.
func startWebhooks(ctx context.Context, svc *app.Service, cfg *config, version string, log zerolog.Logger, pools []workerPool) ([]workerPool, error) {
	wc := cfg.webhookConfig()
	d := &webhook.Deliverer{Service: svc, Targets: wc.Targets, Timeout: wc.Timeout, MaxBody: wc.MaxBody, Version: version,
		Log: log.With().Str("component", "webhooks").Logger()}
	timeout := wc.Timeout
	if timeout <= 0 {
		timeout = webhook.DefaultTimeout
	}
	host, _ := os.Hostname()
	p := &worker.Pool{
		Backend:     worker.LocalBackend(svc),
		Queue:       app.WebhookQueue,
		Kinds:       []string{app.WebhookKind},
		Concurrency: cmp.Or(wc.Concurrency, defaultWebhookConcurrency),
		Handler:     d.Handler(),
		// The request's own timeout ends a delivery; the run's is a margin
		// over it, whatever the queue's job timeout (the lease is kept by
		// heartbeats).
		Timeout:  timeout + timeout/2,
		WorkerID: fmt.Sprintf("%s:%d/webhooks", host, os.Getpid()),
		Log:      log.With().Str("component", "webhooks").Logger(),
	}
	bw, err := startBuiltin(ctx, svc, p)
	if err != nil {
		stopWorkers(pools, 0, log)
		return nil, fmt.Errorf("webhook deliveries: %w", err)
	}
	return append(pools, bw), nil
}
