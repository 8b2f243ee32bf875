package storetest

import (
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/queuehq/queue/app"
)

// BenchKeys measures claims under flow control by key against plain claims
// (issue 25: within 20% at 1,000,000 queued with 10,000 keys at
// key_concurrency 1). Each variant fills a fresh store from open with
// queued jobs once, then measures the claims alone ("claim") and whole
// cycles of workers claiming up to 100 jobs and completing them in one
// call, as `queue work` does ("cycle": the completions release each key's
// next job). Keyed jobs are spread over keys
// in turn, so a key holds queued/keys jobs and each claim finds every key
// with one job released.
func BenchKeys(b *testing.B, open func(b testing.TB, opts app.StoreOptions) app.Store, queued, keys, workers int) {
	variants := []struct {
		name string
		lim  app.KeyLimits
		keys int
	}{
		{"plain", app.KeyLimits{}, 0},
		{fmt.Sprintf("key_concurrency=1/keys=%d", keys), app.KeyLimits{Concurrency: 1}, keys},
		{fmt.Sprintf("round_robin/keys=%d", keys), app.KeyLimits{RoundRobin: true}, keys},
	}
	parent := b // the stores outlive each run of a variant (a run's cleanup closes what it opened)
	for _, v := range variants {
		var st app.Store
		ready := func(b *testing.B) {
			if st == nil {
				st = open(parent, app.StoreOptions{KeyLimits: func(string) app.KeyLimits { return v.lim }})
				fillKeyed(b, st, queued, v.keys)
			}
		}
		// claim: the claims alone, one worker, 100 jobs a claim; every 50
		// claims, outside the timer, the jobs are completed (which releases
		// each key's next job).
		b.Run(fmt.Sprintf("claim/%s/queued=%d", v.name, queued), func(b *testing.B) {
			ready(b)
			var held []app.Completion
			done := 0
			b.ResetTimer()
			for done < b.N {
				jobs, err := st.Claim(b.Context(), app.ClaimRequest{Queue: "keys", WorkerID: "w", Limit: 100})
				if err != nil || len(jobs) == 0 {
					b.Fatalf("claim: %d jobs, %v", len(jobs), err)
				}
				done += len(jobs)
				for _, j := range jobs {
					held = append(held, app.Completion{ID: j.ID, Lease: j.Lease})
				}
				if len(held) >= 5000 || done >= b.N {
					b.StopTimer()
					if _, err := st.Complete(b.Context(), held); err != nil {
						b.Fatal(err)
					}
					held = held[:0]
					b.StartTimer()
				}
			}
			b.ReportMetric(float64(done)/b.Elapsed().Seconds(), "jobs/s")
		})
		// cycle: workers claim up to 100 jobs and complete them in one call.
		b.Run(fmt.Sprintf("cycle/%s/queued=%d", v.name, queued), func(b *testing.B) {
			ready(b)
			claimComplete(b, st, "keys", workers, 100)
		})
	}
}

// fillKeyed submits n jobs to queue "keys", spread over keys in turn (none
// if keys is 0), 1,000 a batch.
func fillKeyed(b *testing.B, st app.Store, n, keys int) {
	b.Helper()
	start := time.Now()
	batch := make([]app.NewJob, 0, 1000)
	for i := 0; i < n; {
		batch = batch[:0]
		for ; len(batch) < 1000 && i < n; i++ {
			nj := app.NewJob{Queue: "keys", Kind: "k", Payload: json.RawMessage(`{"n":1}`), MaxAttempts: 5, Timeout: time.Minute}
			if keys > 0 {
				nj.Key = fmt.Sprintf("tenant-%05d", i%keys)
			}
			batch = append(batch, nj)
		}
		if _, err := app.Submit(b.Context(), st, app.SubmitRequest{Jobs: batch}); err != nil {
			b.Fatal(err)
		}
	}
	b.Logf("filled %d jobs over %d keys in %s", n, keys, time.Since(start).Round(time.Millisecond))
}

// BenchFairness measures the pickup of a small key's jobs beside one key
// with a backlog 100 times its size (a 100:1 skew): the big key's jobs are
// queued first, then small keys submit one job each every few
// milliseconds while workers drain the queue; the small jobs' pickup
// (started - created) is reported as p50 and p99, FIFO against
// fairness = "round_robin".
func BenchFairness(b *testing.B, open func(b testing.TB, opts app.StoreOptions) app.Store, big, workers int) {
	for _, v := range []struct {
		name string
		lim  app.KeyLimits
	}{{"fifo", app.KeyLimits{}}, {"round_robin", app.KeyLimits{RoundRobin: true}}} {
		b.Run(fmt.Sprintf("%s/big=%d", v.name, big), func(b *testing.B) {
			for range b.N {
				b.StopTimer()
				st := open(b, app.StoreOptions{KeyLimits: func(string) app.KeyLimits { return v.lim }})
				fillFair(b, st, big)
				b.StartTimer()
				p50, p99 := fairRun(b, st, big/100, workers)
				b.ReportMetric(float64(p50.Microseconds())/1000, "small-p50-ms")
				b.ReportMetric(float64(p99.Microseconds())/1000, "small-p99-ms")
			}
		})
	}
}

func fillFair(b *testing.B, st app.Store, n int) {
	b.Helper()
	for i := 0; i < n; i += 1000 {
		batch := make([]app.NewJob, min(1000, n-i))
		for k := range batch {
			batch[k] = app.NewJob{Queue: "fair", Kind: "k", Payload: json.RawMessage(`{}`), MaxAttempts: 5, Timeout: time.Minute, Key: "big"}
		}
		if _, err := app.Submit(b.Context(), st, app.SubmitRequest{Jobs: batch}); err != nil {
			b.Fatal(err)
		}
	}
}

// fairRun drains queue "fair" with workers while small jobs (each of its
// own key) arrive every 2 ms, and returns their pickup's p50 and p99.
func fairRun(b *testing.B, st app.Store, small, workers int) (time.Duration, time.Duration) {
	var mu sync.Mutex
	var pickups []time.Duration
	smallIDs := map[int64]bool{}
	var stop atomic.Bool
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
				jobs, err := st.Claim(b.Context(), app.ClaimRequest{Queue: "fair", WorkerID: fmt.Sprint("w", w), Limit: 10})
				if err != nil {
					b.Error(err)
					return
				}
				items := make([]app.Completion, len(jobs))
				now := time.Now()
				for i, j := range jobs {
					items[i] = app.Completion{ID: j.ID, Lease: j.Lease}
					if j.Key != "big" {
						mu.Lock()
						pickups = append(pickups, now.Sub(j.CreatedAt))
						smallIDs[j.ID] = true
						mu.Unlock()
					}
				}
				if len(jobs) == 0 {
					time.Sleep(time.Millisecond)
					continue
				}
				if _, err := st.Complete(b.Context(), items); err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	for i := range small {
		nj := app.NewJob{Queue: "fair", Kind: "k", Payload: json.RawMessage(`{}`), MaxAttempts: 5, Timeout: time.Minute, Key: fmt.Sprint("small-", i)}
		if _, err := app.Submit(b.Context(), st, app.SubmitRequest{Jobs: []app.NewJob{nj}}); err != nil {
			b.Fatal(err)
		}
		time.Sleep(2 * time.Millisecond)
	}
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(5 * time.Millisecond) {
		mu.Lock()
		n := len(pickups)
		mu.Unlock()
		if n >= small || time.Now().After(deadline) {
			break
		}
	}
	stop.Store(true)
	wg.Wait()
	if len(pickups) < small {
		b.Fatalf("%d of %d small jobs picked up within a minute", len(pickups), small)
	}
	slices.Sort(pickups)
	return pickups[len(pickups)/2], pickups[len(pickups)*99/100]
}

// BenchSubmitKeyed is one job per call, from one
// producer and from 16, plain against keyed (10,000 keys in turn, on a
// queue with key_concurrency 1): a keyed submission has its own
// transaction (its key's room is looked up and its job released in it),
// where plain ones are gathered (SQLite's shared INSERT,
// PostgreSQL's combined transaction).
func BenchSubmitKeyed(b *testing.B, open func(b testing.TB, opts app.StoreOptions) app.Store) {
	for _, producers := range []int{1, 16} {
		for _, keyed := range []bool{false, true} {
			b.Run(fmt.Sprintf("producers=%d/keyed=%v", producers, keyed), func(b *testing.B) {
				s := open(b, app.StoreOptions{KeyLimits: func(string) app.KeyLimits { return app.KeyLimits{Concurrency: 1} }})
				var n atomic.Int64
				submit := func() error {
					nj := app.NewJob{Queue: "submit", Kind: "k", Payload: json.RawMessage(`{"n":1}`), MaxAttempts: 5, Timeout: time.Minute}
					if keyed {
						nj.Key = fmt.Sprintf("k%05d", n.Add(1)%10_000)
					}
					_, err := app.Submit(b.Context(), s, app.SubmitRequest{Jobs: []app.NewJob{nj}})
					return err
				}
				b.ResetTimer()
				var wg sync.WaitGroup
				var next atomic.Int64
				for range producers {
					wg.Add(1)
					go func() {
						defer wg.Done()
						for next.Add(1) <= int64(b.N) {
							if err := submit(); err != nil {
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

// claimComplete has workers claim up to limit jobs of queue at a time and
// complete them in one call until b.N jobs are done, and reports jobs/s:
// the cycle of `queue work`, shared by the benchmarks that fill a queue
// their own way first.
func claimComplete(b *testing.B, st app.Store, queue string, workers, limit int) {
	var done atomic.Int64
	var wg sync.WaitGroup
	b.ResetTimer()
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for done.Load() < int64(b.N) {
				jobs, err := st.Claim(b.Context(), app.ClaimRequest{Queue: queue, WorkerID: fmt.Sprint("w", w), Limit: limit})
				if err != nil || len(jobs) == 0 {
					b.Errorf("claim: %d jobs, %v", len(jobs), err)
					return
				}
				items := make([]app.Completion, len(jobs))
				for i, j := range jobs {
					items[i] = app.Completion{ID: j.ID, Lease: j.Lease}
				}
				if _, err := st.Complete(b.Context(), items); err != nil {
					b.Error(err)
					return
				}
				done.Add(int64(len(jobs)))
			}
		}()
	}
	wg.Wait()
	b.ReportMetric(float64(done.Load())/b.Elapsed().Seconds(), "jobs/s")
}
