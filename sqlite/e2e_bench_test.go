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
// compares the same with River and goqite (bench/).
func BenchmarkE2E(b *testing.B) {
	for _, mode := range []string{"full", "normal", "full-kinds"} {
		b.Run(mode, func(b *testing.B) {
			var kinds []string
			if mode == "full-kinds" { // as a Go worker claims: naming its kinds
				mode, kinds = "full", []string{"k"}
			}
			bus := app.NewBus()
			s := MustOpen(b, sqlite.Options{Sync: mode, StoreOptions: app.StoreOptions{Bus: bus}})
			svc := app.NewService(s, nil, nil, bus, zerolog.Nop())
			var done atomic.Int64
			pool := &worker.Pool{Backend: worker.LocalBackend(svc), Queue: "e2e", Kinds: kinds, Concurrency: 1000, Log: zerolog.Nop(),
				Handler: func(ctx context.Context, job *app.Job) (any, error) { done.Add(1); return nil, nil }}
			ctx, cancel := context.WithCancel(b.Context())
			var wg sync.WaitGroup
			wg.Add(1)
			go func() { defer wg.Done(); pool.Run(ctx) }()
			payload := json.RawMessage(`{"n":1}`)
			var submitted atomic.Int64
			b.ResetTimer()
			start := time.Now()
			for p := 0; p < 16; p++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for submitted.Add(1) <= int64(b.N) {
						if _, err := svc.Submit(ctx, []app.SubmitInput{{Queue: "e2e", Kind: "k", Payload: payload}}); err != nil {
							return
						}
					}
				}()
			}
			for done.Load() < int64(b.N) {
				time.Sleep(time.Millisecond)
			}
			el := time.Since(start)
			b.StopTimer()
			cancel()
			wg.Wait()
			b.ReportMetric(float64(b.N)/el.Seconds(), "jobs/s")
		})
	}
}
