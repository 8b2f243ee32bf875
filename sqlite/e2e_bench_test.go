package sqlite_test

import (
	"context"
	"encoding/json"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/queuehq/queue/app"
	"github.com/queuehq/queue/sqlite"
	"github.com/queuehq/queue/worker"
)

// BenchmarkE2E is the headline of issue 9 in process: 16 producers submit
// one job per call while a worker (worker.Pool, concurrency 1000) claims many
// and acknowledges many; it reports completed jobs per second. `make bench`
// compares the same with River and goqite (bench/). full-8p is the same with
// 8 producers (issue 29: fewer submissions share each commit, and the
// writer's CPU a job bounds the rate). Each also reports the write
// transactions per job (tx/job) and their mean duration (µs/tx).
func BenchmarkE2E(b *testing.B) {
	for _, tc := range []struct {
		name, sync string
		producers  int
		kinds      []string // as a Go worker claims: naming its kinds
	}{
		{"full", "full", 16, nil},
		{"full-8p", "full", 8, nil},
		{"normal", "normal", 16, nil},
		{"full-kinds", "full", 16, []string{"k"}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			bus := app.NewBus()
			var txs, txNanos atomic.Int64
			opts := sqlite.Options{Sync: tc.sync, StoreOptions: app.StoreOptions{Bus: bus}}
			opts.ObserveWrite = func(_ int, took time.Duration) { txs.Add(1); txNanos.Add(int64(took)) }
			s := MustOpen(b, opts)
			svc := app.NewService(s, nil, nil, bus, zerolog.Nop())
			var done atomic.Int64
			pool := &worker.Pool{Backend: worker.LocalBackend(svc), Queue: "e2e", Kinds: tc.kinds, Concurrency: 1000, Log: zerolog.Nop(),
				Handler: func(ctx context.Context, job *app.Job) (any, error) { done.Add(1); return nil, nil }}
			ctx, cancel := context.WithCancel(b.Context())
			var wg sync.WaitGroup
			wg.Add(1)
			go func() { defer wg.Done(); pool.Run(ctx) }()
			payload := json.RawMessage(`{"n":1}`)
			var submitted atomic.Int64
			b.ResetTimer()
			txs0, txNanos0 := txs.Load(), txNanos.Load()
			start := time.Now()
			for p := 0; p < tc.producers; p++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for submitted.Add(1) <= int64(b.N) {
						if _, err := svc.Submit(ctx, []app.SubmitInput{{Queue: "e2e", Kind: "k", Payload: payload}}); err != nil {
							// The job is counted but will never complete: stop the wait below.
							b.Errorf("submit: %v", err)
							cancel()
							return
						}
					}
				}()
			}
			for done.Load() < int64(b.N) && ctx.Err() == nil {
				time.Sleep(time.Millisecond)
			}
			el := time.Since(start)
			n, took := txs.Load()-txs0, txNanos.Load()-txNanos0
			b.StopTimer()
			cancel()
			wg.Wait()
			b.ReportMetric(float64(b.N)/el.Seconds(), "jobs/s")
			b.ReportMetric(float64(n)/float64(b.N), "tx/job")
			if n > 0 {
				b.ReportMetric(float64(took)/float64(n)/1e3, "µs/tx")
			}
		})
	}
}
