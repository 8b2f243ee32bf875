package sqlite_test

import (
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/queuehq/queue/app"
	"github.com/queuehq/queue/sqlite"
)

// BenchmarkSubmitDuringBulkPurge purges 10,000 dead-letter rows in bulk
// while a submitter keeps submitting one job at a time, and reports how long
// the slowest submission waited: bulk actions run in batches of 1,000 rows,
// so a writer waits at most one batch.
func BenchmarkSubmitDuringBulkPurge(b *testing.B) {
	const rows = 10000
	var worst, p99, purge time.Duration
	for i := 0; i < b.N; i++ {
		s := MustOpen(b, sqlite.Options{})
		svc := app.NewService(s, nil, nil, nil, zerolog.Nop())
		fill(b, s, rows)
		if res, err := svc.BulkDead(b.Context(), app.BulkMove, app.BulkInput{Queue: "bench"}, "bench"); err != nil || res.Count != rows {
			b.Fatalf("move: %+v %v", res, err)
		}
		var lat []time.Duration
		stop := make(chan struct{})
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				t0 := time.Now()
				if _, err := app.Submit(b.Context(), s, app.SubmitRequest{Jobs: []app.NewJob{benchJob()}}); err != nil {
					b.Error(err)
					return
				}
				lat = append(lat, time.Since(t0))
			}
		}()
		time.Sleep(20 * time.Millisecond)
		t0 := time.Now()
		res, err := svc.BulkDead(b.Context(), app.BulkPurge, app.BulkInput{Queue: "bench"}, "bench")
		purge = time.Since(t0)
		close(stop)
		wg.Wait()
		if err != nil || res.Count != rows {
			b.Fatalf("purge: %+v %v", res, err)
		}
		slices.Sort(lat)
		worst = lat[len(lat)-1]
		p99 = lat[len(lat)*99/100]
	}
	b.ReportMetric(float64(worst.Microseconds())/1000, "max-submit-ms")
	b.ReportMetric(float64(p99.Microseconds())/1000, "p99-submit-ms")
	b.ReportMetric(float64(purge.Microseconds())/1000, "purge-ms")
}
