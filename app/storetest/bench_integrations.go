package storetest

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/queuehq/queue/app"
	"github.com/queuehq/queue/webhook"
	"github.com/queuehq/queue/worker"
)

// benchTraceparent is a caller's W3C traceparent, as a web app sends it.
const benchTraceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

// BenchIntegrations measures what issue 27's integrations cost the store
// (docs/benchmarks.md, "Integrations (issue 27)"):
//
//   - claim+complete of one job a claim from 1 and 16 workers (and of 100 a
//     claim from 4 workers, as `queue work` does), with no subscription (the
//     baseline: app.Settle finds no rules), with a subscription to
//     job.succeeded on the queue (every completion inserts a delivery job in
//     its transaction), and with jobs submitted with a callback_url (the
//     same, from the job's own column);
//   - submission of one job a call from 1 and 16 producers, with and
//     without a traceparent (and tracestate): two more columns written.
//
// The metric is jobs/s.
func BenchIntegrations(b *testing.B, open func(b testing.TB, opts app.StoreOptions) app.Store) {
	for _, run := range []struct{ workers, limit int }{{1, 1}, {16, 1}, {4, 100}} {
		for _, mode := range []string{"none", "subscription", "callback"} {
			name := fmt.Sprintf("claim-complete/workers=%d/limit=%d/%s", run.workers, run.limit, mode)
			b.Run(name, func(b *testing.B) {
				cfg := app.DefaultConfig()
				if mode == "subscription" {
					cfg.Webhooks.Subscriptions = []app.WebhookSubscription{{Name: "done", URL: "https://hooks.example/done",
						Secret: "0123456789abcdef", Events: []string{app.EventSucceeded}, Queues: []string{"integ"}}}
				}
				st := open(b, app.StoreOptions{Webhooks: cfg.WebhookRules})
				fillIntegrations(b, st, b.N+run.workers*run.limit, mode == "callback")
				claimComplete(b, st, "integ", run.workers, run.limit)
				if mode != "none" {
					b.StopTimer()
					if n, err := st.List(b.Context(), app.JobFilter{Queue: app.WebhookQueue, Limit: 1}); err != nil || len(n) == 0 {
						b.Fatalf("no delivery made (%v): the variant measures nothing", err)
					}
				}
			})
		}
	}
	for _, producers := range []int{1, 16} {
		for _, traced := range []bool{false, true} {
			name := fmt.Sprintf("submit/producers=%d/plain", producers)
			if traced {
				name = fmt.Sprintf("submit/producers=%d/traceparent", producers)
			}
			b.Run(name, func(b *testing.B) {
				st := open(b, app.StoreOptions{})
				var submitted atomic.Int64
				var wg sync.WaitGroup
				b.ResetTimer()
				for range producers {
					wg.Add(1)
					go func() {
						defer wg.Done()
						for submitted.Add(1) <= int64(b.N) {
							nj := integrationsJob(false)
							if traced {
								nj.Traceparent, nj.Tracestate = benchTraceparent, "vendor=abc123"
							}
							if _, err := app.Submit(b.Context(), st, app.SubmitRequest{Jobs: []app.NewJob{nj}}); err != nil {
								b.Error(err)
								return
							}
						}
					}()
				}
				wg.Wait()
				b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "jobs/s")
			})
		}
	}
}

// BenchWebhookDelivery measures deliveries per second over real HTTP: the
// delivery jobs of b.N completions (a subscription to job.succeeded) are
// made first, then the delivery pool as `queue serve` runs it (a
// worker.Pool on app.WebhookQueue with the real webhook.Deliverer: the
// job read for the body, the signature, the SSRF-guarded client) drains
// them against a local receiver that answers 204, at the default
// concurrency 4 and at 16.
func BenchWebhookDelivery(b *testing.B, open func(b testing.TB, opts app.StoreOptions) app.Store) {
	var received atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		received.Add(1)
		w.WriteHeader(http.StatusNoContent)
	}))
	b.Cleanup(srv.Close)
	for _, conc := range []int{4, 16} {
		b.Run(fmt.Sprintf("concurrency=%d", conc), func(b *testing.B) {
			cfg := app.DefaultConfig()
			cfg.Webhooks.Targets = app.WebhookTargets{AllowPrivate: true}
			cfg.Webhooks.Subscriptions = []app.WebhookSubscription{{Name: "done", URL: srv.URL + "/hook",
				Secret: "0123456789abcdef", Events: []string{app.EventSucceeded}, Queues: []string{"integ"}}}
			st := open(b, app.StoreOptions{Webhooks: cfg.WebhookRules})
			svc := app.NewService(st, cfg, nil, nil, zerolog.Nop())
			fillIntegrations(b, st, b.N, false)
			for made := 0; made < b.N; { // each completion makes its delivery job
				jobs, err := st.Claim(b.Context(), app.ClaimRequest{Queue: "integ", WorkerID: "src", Limit: 100})
				if err != nil || len(jobs) == 0 {
					b.Fatalf("claim: %d jobs, %v", len(jobs), err)
				}
				items := make([]app.Completion, len(jobs))
				for i, j := range jobs {
					items[i] = app.Completion{ID: j.ID, Lease: j.Lease}
				}
				if _, err := st.Complete(b.Context(), items); err != nil {
					b.Fatal(err)
				}
				made += len(jobs)
			}
			d := &webhook.Deliverer{Service: svc, Targets: cfg.Webhooks.Targets, Version: "bench", Log: zerolog.Nop()}
			h := d.Handler()
			var delivered, failed atomic.Int64
			pool := &worker.Pool{Backend: worker.LocalBackend(svc), Queue: app.WebhookQueue, Kinds: []string{app.WebhookKind},
				Concurrency: conc, Timeout: 15 * time.Second, WorkerID: "bench/webhooks", Log: zerolog.Nop(),
				Handler: func(ctx context.Context, j *app.Job) (any, error) {
					res, err := h(ctx, j)
					if err != nil {
						failed.Add(1)
					} else {
						delivered.Add(1)
					}
					return res, err
				}}
			before := received.Load()
			ctx, cancel := context.WithCancel(b.Context())
			var wg sync.WaitGroup
			b.ResetTimer()
			start := time.Now()
			wg.Add(1)
			go func() { defer wg.Done(); _ = pool.Run(ctx) }()
			for delivered.Load() < int64(b.N) && failed.Load() == 0 {
				time.Sleep(time.Millisecond)
			}
			el := time.Since(start)
			b.StopTimer()
			cancel()
			wg.Wait()
			if failed.Load() > 0 {
				b.Fatalf("%d deliveries failed", failed.Load())
			}
			if got := received.Load() - before; got < int64(b.N) {
				b.Fatalf("the receiver got %d requests for %d deliveries", got, b.N)
			}
			b.ReportMetric(float64(b.N)/el.Seconds(), "deliveries/s")
		})
	}
}

// integrationsJob is a job of queue "integ"; with callback, one that asks
// for a callback when it ends.
func integrationsJob(callback bool) app.NewJob {
	nj := app.NewJob{Queue: "integ", Kind: "k", Payload: json.RawMessage(`{"n":1}`), MaxAttempts: 5, Timeout: time.Minute}
	if callback {
		nj.CallbackURL = "https://hooks.example/cb"
	}
	return nj
}

// fillIntegrations submits n jobs to queue "integ", 1,000 a batch.
func fillIntegrations(b *testing.B, st app.Store, n int, callback bool) {
	b.Helper()
	batch := make([]app.NewJob, 0, 1000)
	for i := 0; i < n; {
		batch = batch[:0]
		for ; len(batch) < 1000 && i < n; i++ {
			batch = append(batch, integrationsJob(callback))
		}
		if _, err := app.Submit(b.Context(), st, app.SubmitRequest{Jobs: batch}); err != nil {
			b.Fatal(err)
		}
	}
}
