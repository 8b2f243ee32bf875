package sqlite_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/queuehq/queue/app"
	"github.com/queuehq/queue/sqlite"
)

func benchJob() app.NewJob {
	return app.NewJob{Queue: "bench", Kind: "k", Payload: json.RawMessage(`{"n":1}`), MaxAttempts: 5, Timeout: 30 * time.Second}
}

// BenchmarkSubmit is one job per call from many goroutines, synchronous=FULL:
// concurrent calls share commits.
func BenchmarkSubmit(b *testing.B) {
	for _, sync := range []string{"full", "normal"} {
		b.Run(sync, func(b *testing.B) {
			s := MustOpen(b, sqlite.Options{Sync: sync})
			b.SetParallelism(16)
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if _, err := app.Submit(b.Context(), s, app.SubmitRequest{Jobs: []app.NewJob{benchJob()}}); err != nil {
						b.Error(err)
						return
					}
				}
			})
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "jobs/s")
		})
	}
}

// BenchmarkSubmitBatch100 is 100 jobs per call, one caller.
func BenchmarkSubmitBatch100(b *testing.B) {
	s := MustOpen(b, sqlite.Options{})
	batch := make([]app.NewJob, 100)
	for i := range batch {
		batch[i] = benchJob()
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := app.Submit(b.Context(), s, app.SubmitRequest{Jobs: batch}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N*100)/b.Elapsed().Seconds(), "jobs/s")
}

// BenchmarkClaimComplete claims one job and completes it, from many
// goroutines, over a queue filled beforehand (synchronous=FULL).
func BenchmarkClaimComplete(b *testing.B) {
	for _, limit := range []int{1, 100} {
		name := map[int]string{1: "one", 100: "batch100"}[limit]
		b.Run(name, func(b *testing.B) {
			s := MustOpen(b, sqlite.Options{})
			fill(b, s, b.N+limit*64)
			b.SetParallelism(16)
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					jobs, err := s.Claim(b.Context(), app.ClaimRequest{Queue: "bench", WorkerID: "w", Limit: limit})
					if err != nil || len(jobs) == 0 {
						b.Errorf("claim: %d jobs, %v", len(jobs), err)
						return
					}
					items := make([]app.Completion, len(jobs))
					for i, j := range jobs {
						items[i] = app.Completion{ID: j.ID, Lease: j.Lease}
					}
					if _, err := s.Complete(b.Context(), items); err != nil {
						b.Error(err)
						return
					}
					for range len(jobs) - 1 { // count every job handled
						if !pb.Next() {
							break
						}
					}
				}
			})
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "jobs/s")
		})
	}
}

func fill(b *testing.B, s *sqlite.Store, n int) {
	b.Helper()
	batch := make([]app.NewJob, 0, 1000)
	for n > 0 {
		batch = batch[:0]
		for i := 0; i < min(n, 1000); i++ {
			batch = append(batch, benchJob())
		}
		if _, err := app.Submit(b.Context(), s, app.SubmitRequest{Jobs: batch}); err != nil {
			b.Fatal(err)
		}
		n -= len(batch)
	}
}
