package ui_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/queuehq/queue/app"
	"github.com/queuehq/queue/sqlite"
	"github.com/queuehq/queue/ui"
)

// dashboardBudget is the server time the dashboard may take over a store of
// a million jobs (issue 7).
const dashboardBudget = 300 * time.Millisecond

// BenchmarkDashboard1M fills a SQLite store with 1,000,000 jobs (batches
// of 10,000; queued, scheduled, processing, done, cancelled and dead
// letters over four queues), then times the dashboard handler and the
// reads behind it. It fails when the dashboard's median passes
// dashboardBudget. The fill takes a minute or two:
//
//	go test ./ui -run '^$' -bench Dashboard1M -benchtime 20x
//
// With QUEUE_BENCH_DB=/path/file.db the filled store is kept there and
// reused by the next run.
func BenchmarkDashboard1M(b *testing.B) {
	svc := fillMillion(b, 1_000_000, os.Getenv("QUEUE_BENCH_DB"))
	h := ui.New(ui.Options{Service: svc, Log: zerolog.Nop()})
	get := func(b *testing.B, path string) time.Duration {
		start := time.Now()
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		took := time.Since(start)
		if rec.Code != http.StatusOK {
			b.Fatalf("GET %s: %d %.300s", path, rec.Code, rec.Body)
		}
		return took
	}
	get(b, "/") // warm the page cache once
	for _, tc := range []struct {
		name, path string
		budget     time.Duration
	}{
		{"Dashboard", "/", dashboardBudget},
		{"Queues", "/queues", 0},
		{"Jobs", "/jobs", 0},
		{"JobsFiltered", "/jobs?queue=q2&status=done", 0},
		{"DLQ", "/dlq", 0},
	} {
		b.Run(tc.name, func(b *testing.B) {
			var times []time.Duration
			for b.Loop() {
				times = append(times, get(b, tc.path))
			}
			med := median(times)
			b.ReportMetric(float64(med.Microseconds())/1000, "ms/median")
			b.ReportMetric(float64(percentile(times, 90).Microseconds())/1000, "ms/p90")
			if tc.budget > 0 && med > tc.budget {
				b.Errorf("GET %s over 1M jobs: median %s, budget %s", tc.path, med, tc.budget)
			}
		})
	}
	b.Run("Stats", func(b *testing.B) {
		var times []time.Duration
		for b.Loop() {
			start := time.Now()
			if _, err := svc.Stats(b.Context()); err != nil {
				b.Fatal(err)
			}
			times = append(times, time.Since(start))
		}
		b.ReportMetric(float64(median(times).Microseconds())/1000, "ms/median")
	})
	b.Run("Throughput", func(b *testing.B) {
		for b.Loop() {
			if _, err := svc.Store.Throughput(b.Context(), time.Now().Add(-time.Hour)); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func median(ds []time.Duration) time.Duration { return percentile(ds, 50) }

func percentile(ds []time.Duration, p int) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[min(len(s)-1, len(s)*p/100)]
}

// fillMillion opens a SQLite store at path (if empty, under tb.TempDir())
// and, unless it holds jobs already, fills it with n jobs through the service: every fifth one scheduled for later; then 10%
// completed, 1,000 left processing, one kind of q1 moved to the dead-letter
// queue and the rest of q0 drained (cancelled).
func fillMillion(tb testing.TB, n int, path string) *app.Service {
	tb.Helper()
	start := time.Now()
	if path == "" {
		path = filepath.Join(tb.TempDir(), "million.db")
	}
	store, err := sqlite.Open(tb.Context(), path, sqlite.Options{Sync: "normal"})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { store.Close() })
	svc := app.NewService(store, nil, nil, nil, zerolog.Nop())
	ctx := tb.Context()
	if st, err := svc.Stats(ctx); err == nil && st.Total.Total > 0 {
		tb.Logf("reusing %s: %d jobs", path, st.Total.Total)
		return svc
	}
	queues := []string{"q0", "q1", "q2", "q3"}
	later := app.Duration(6 * time.Hour)
	batch := make([]app.SubmitInput, 0, app.MaxBatch)
	for i := 0; i < n; i++ {
		in := app.SubmitInput{Queue: queues[i%len(queues)], Kind: fmt.Sprintf("kind.%d", i%7),
			Payload: json.RawMessage(fmt.Sprintf(`{"n":%d,"user":"user-%d"}`, i, i%5000)), Tags: []string{"bench"}}
		if i%5 == 0 {
			in.Delay = &later
		}
		batch = append(batch, in)
		if len(batch) == cap(batch) || i == n-1 {
			if _, err := svc.Submit(ctx, batch); err != nil {
				tb.Fatalf("submit: %v", err)
			}
			batch = batch[:0]
		}
	}
	submitted := time.Since(start)
	for done := 0; done < n/10; {
		q := queues[(done/app.MaxClaim)%len(queues)]
		jobs, err := svc.Claim(ctx, q, app.ClaimInput{WorkerID: "bench", Limit: app.MaxClaim})
		if err != nil || len(jobs) == 0 {
			tb.Fatalf("claim: %d, %v", len(jobs), err)
		}
		items := make([]app.Completion, len(jobs))
		for i, j := range jobs {
			items[i] = app.Completion{ID: j.ID, Lease: j.Lease}
		}
		if _, err := svc.CompleteBatch(ctx, items); err != nil {
			tb.Fatal(err)
		}
		done += len(jobs)
	}
	if _, err := svc.Claim(ctx, "q3", app.ClaimInput{WorkerID: "bench", Limit: 1000}); err != nil {
		tb.Fatal(err)
	}
	// Dead letters: one kind of one queue moved to the DLQ (about 3.5%).
	if _, err := svc.BulkDead(ctx, app.BulkMove, app.BulkInput{Queue: "q1", Kind: "kind.3"}, "bench"); err != nil {
		tb.Fatal(err)
	}
	// Cancelled: queue q0 drained (its queued and scheduled jobs, about 22%).
	if _, err := svc.Drain(ctx, "q0", false, "bench"); err != nil {
		tb.Fatal(err)
	}
	st, err := svc.Stats(ctx)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Logf("filled %d jobs in %s (submit %s): %+v", st.Total.Total, time.Since(start).Round(time.Second), submitted.Round(time.Second), st.Total)
	return svc
}
