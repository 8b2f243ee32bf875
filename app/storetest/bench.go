package storetest

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/queuehq/queue/app"
)

// BenchWorkflows measures workflows against plain jobs, each run on a
// fresh empty store from open (which the benchmark closes): the time from submitting n jobs to the
// last one done, for n plain jobs (one batch submission), for a fan-out/
// fan-in workflow (n parallel steps and a callback after all of them), and
// for n/2 pairs (each parent with one dependant: the cost of an edge on
// the completion path). Workers claim up to 100 jobs and complete them in
// one call, as `queue work` and the Go package do.
func BenchWorkflows(b *testing.B, open func(b *testing.B) app.Store, n, workers int) {
	shapes := []struct {
		name   string
		submit func(ctx context.Context, svc *app.Service) error
	}{
		{"plain", func(ctx context.Context, svc *app.Service) error {
			for start := 0; start < n; start += app.MaxBatch {
				ins := make([]app.SubmitInput, min(app.MaxBatch, n-start))
				for i := range ins {
					ins[i] = app.SubmitInput{Queue: "wf", Kind: "k", Payload: json.RawMessage(`{"n":1}`)}
				}
				if _, err := svc.Submit(ctx, ins); err != nil {
					return err
				}
			}
			return nil
		}},
		{"fan-out-fan-in", func(ctx context.Context, svc *app.Service) error {
			in := app.WorkflowInput{Name: "batch", Steps: make([]app.StepInput, n-1)}
			for i := range in.Steps {
				in.Steps[i] = step(fmt.Sprintf("s%d", i))
			}
			cb := step("done")
			in.Callback = &cb
			_, err := svc.SubmitWorkflow(ctx, in)
			return err
		}},
		{"pairs", func(ctx context.Context, svc *app.Service) error {
			in := app.WorkflowInput{Name: "pairs", Steps: make([]app.StepInput, 0, n)}
			for i := range n / 2 {
				in.Steps = append(in.Steps, step(fmt.Sprintf("p%d", i)), step(fmt.Sprintf("c%d", i), fmt.Sprintf("p%d", i)))
			}
			_, err := svc.SubmitWorkflow(ctx, in)
			return err
		}},
	}
	for _, shape := range shapes {
		b.Run(fmt.Sprintf("%s/%d", shape.name, n), func(b *testing.B) {
			var total time.Duration
			for range b.N {
				b.StopTimer()
				s := open(b)
				svc := app.NewService(s, nil, nil, nil, zerolog.Nop())
				b.StartTimer()
				start := time.Now()
				if err := runAll(b.Context(), svc, n, workers, shape.submit); err != nil {
					b.Fatal(err)
				}
				total += time.Since(start)
				b.StopTimer()
				s.Close()
				b.StartTimer()
			}
			b.ReportMetric(float64(total.Milliseconds())/float64(b.N), "ms/run")
			b.ReportMetric(float64(n*b.N)/total.Seconds(), "jobs/s")
		})
	}
}

// runAll submits with submit while workers claim and complete, until n
// jobs are done.
func runAll(ctx context.Context, svc *app.Service, n, workers int, submit func(context.Context, *app.Service) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var mu sync.Mutex
	done := 0
	finished := make(chan struct{})
	errc := make(chan error, workers+1)
	var wg sync.WaitGroup
	wait := app.Duration(100 * time.Millisecond)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				jobs, err := svc.Claim(ctx, "wf", app.ClaimInput{WorkerID: fmt.Sprint("w", w), Limit: 100, Wait: &wait})
				if err != nil {
					if ctx.Err() == nil {
						errc <- err
					}
					return
				}
				if len(jobs) == 0 {
					continue
				}
				items := make([]app.Completion, len(jobs))
				for i, j := range jobs {
					items[i] = app.Completion{ID: j.ID, Lease: j.Lease, Result: json.RawMessage(`1`)}
				}
				if _, err := svc.CompleteBatch(ctx, items); err != nil {
					errc <- err
					return
				}
				mu.Lock()
				done += len(jobs)
				if done == n {
					close(finished)
				}
				mu.Unlock()
			}
		}()
	}
	if err := submit(ctx, svc); err != nil {
		return err
	}
	select {
	case <-finished:
	case err := <-errc:
		return err
	case <-time.After(5 * time.Minute):
		return fmt.Errorf("%d of %d jobs done after 5 minutes", done, n)
	}
	cancel()
	wg.Wait()
	return nil
}
