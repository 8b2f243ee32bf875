package storetest

import (
	"encoding/json"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/queuehq/queue/app"
)

// BenchLive measures what a running job's reports cost the store, from 1
// and from 16 jobs reporting at once: a progress report, and an append of
// a worker's batch of log lines (10 lines, as a command worker sends in
// its 250 ms window under light output, and 100, its cap). Each op is one
// write transaction; the metrics are reports and lines per second.
func BenchLive(b *testing.B, open func(b testing.TB, opts app.StoreOptions) app.Store) {
	for _, jobs := range []int{1, 16} {
		for _, lines := range []int{0, 10, 100} {
			name := fmt.Sprintf("jobs=%d/progress", jobs)
			if lines > 0 {
				name = fmt.Sprintf("jobs=%d/log%d", jobs, lines)
			}
			b.Run(name, func(b *testing.B) {
				st := open(b, app.StoreOptions{})
				claimed := make([]*app.Job, jobs)
				for i := range claimed {
					nj := app.NewJob{Queue: "live", Kind: "k", Payload: json.RawMessage(`{}`), RunAt: time.Now(), MaxAttempts: 3, Timeout: time.Hour}
					if _, err := app.Submit(b.Context(), st, app.SubmitRequest{Jobs: []app.NewJob{nj}}); err != nil {
						b.Fatal(err)
					}
					js, err := st.Claim(b.Context(), app.ClaimRequest{Queue: "live", WorkerID: "bench", Limit: 1})
					if err != nil || len(js) != 1 {
						b.Fatalf("claim: %v %d", err, len(js))
					}
					claimed[i] = js[0]
				}
				batch := make([]app.LogLine, lines)
				for i := range batch {
					batch[i] = app.LogLine{Stream: "stdout", Line: "imported row " + strconv.Itoa(i) + " of the nightly file, 80 bytes or so of output"}
				}
				var wg sync.WaitGroup
				per := (b.N + jobs - 1) / jobs
				b.ResetTimer()
				for _, j := range claimed {
					wg.Add(1)
					go func() {
						defer wg.Done()
						for i := range per {
							var err error
							if lines == 0 {
								_, err = app.SetProgress(b.Context(), st, j.ID, j.Lease, app.ProgressReport{Progress: i % 101, Message: "working"})
							} else {
								_, err = app.AppendLog(b.Context(), st, app.LogRequest{ID: j.ID, Lease: j.Lease, Lines: batch})
							}
							if err != nil {
								b.Error(err)
								return
							}
						}
					}()
				}
				wg.Wait()
				ops := float64(per*jobs) / b.Elapsed().Seconds()
				b.ReportMetric(ops, "reports/s")
				if lines > 0 {
					b.ReportMetric(ops*float64(lines), "lines/s")
				}
			})
		}
	}
}
