package storetest

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/queuehq/queue/app"
)

// A cancel racing the completions of parents whose children they would
// release: after it, nothing is claimable and no step waits or is queued.
func testWorkflowCancelRacesCompletions(e *env) {
	for round := range 20 {
		in := app.WorkflowInput{Name: "race"}
		for i := range 20 {
			in.Steps = append(in.Steps, step(fmt.Sprintf("p%02d", i)), step(fmt.Sprintf("c%02d", i), fmt.Sprintf("p%02d", i)))
		}
		v := e.submitWorkflow(in)
		jobs := e.claimSteps(100)
		var wg sync.WaitGroup
		for _, j := range jobs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, err := e.s.Complete(e.ctx, []app.Completion{{ID: j.ID, Lease: j.Lease, Result: []byte(`1`)}})
				if err != nil {
					e.t.Errorf("complete: %v", err)
				}
			}()
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := e.service(nil).CancelWorkflow(e.ctx, v.ID, "t"); err != nil {
				e.t.Errorf("cancel: %v", err)
			}
		}()
		wg.Wait()
		if got := e.claimSteps(100); len(got) != 0 {
			e.t.Fatalf("round %d: claimable after cancel: %v", round, names(got))
		}
		w := e.workflow(v.ID)
		for _, s := range w.Steps {
			if s.Status == "waiting" || s.Status == "queued" {
				e.t.Fatalf("round %d: step %s is %s after cancel", round, s.Name, s.Status)
			}
		}
	}
}

// Steps released together get their jobs in the order they were given, so
// they are claimed in it.
func testWorkflowReleaseOrderIsAsGiven(e *env) {
	in := app.WorkflowInput{Name: "order", Steps: []app.StepInput{step("A"), step("z", "A"), step("a", "A"), step("m", "A")}}
	e.submitWorkflow(in)
	a := e.claimSteps(1)["A"]
	e.complete(a, "1")
	var order []string
	for range 3 {
		for n := range e.claimSteps(1) {
			order = append(order, n)
		}
	}
	if fmt.Sprint(order) != "[z a m]" {
		e.t.Errorf("claim order %v, want the order given [z a m]", order)
	}
}

// A cancel under sustained completions from 16 workers succeeds (on
// PostgreSQL: no deadlock between the cancel's locks and the completions')
// and leaves nothing claimable.
func testWorkflowCancelUnderLoad(e *env) {
	in := app.WorkflowInput{Name: "load"}
	for i := range 1000 {
		in.Steps = append(in.Steps, step(fmt.Sprintf("p%04d", i)), step(fmt.Sprintf("c%04d", i), fmt.Sprintf("p%04d", i)))
	}
	v := e.submitWorkflow(in)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var completed atomic.Int64
	for w := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				jobs, err := e.service(nil).Claim(e.ctx, "wf", app.ClaimInput{WorkerID: fmt.Sprint("w", w), Limit: 4})
				if err != nil {
					e.t.Errorf("claim: %v", err)
					return
				}
				cs := []app.Completion{}
				for _, j := range jobs {
					if j.Step == "p0999" {
						continue // held: the workflow cannot finish before the cancel, however fast the store
					}
					cs = append(cs, app.Completion{ID: j.ID, Lease: j.Lease, Result: []byte(`1`)})
				}
				if len(cs) > 0 {
					if _, err := e.s.Complete(e.ctx, cs); err != nil {
						e.t.Errorf("complete: %v", err)
					}
					completed.Add(int64(len(cs)))
				}
			}
		}()
	}
	for deadline := time.Now().Add(10 * time.Second); completed.Load() < 200 && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond) // cancel in the middle of the load
	}
	_, err := e.service(nil).CancelWorkflow(e.ctx, v.ID, "t")
	close(stop)
	wg.Wait()
	if err != nil {
		e.t.Fatalf("cancel under load: %v", err)
	}
	if got := e.claimSteps(100); len(got) != 0 {
		e.t.Fatalf("claimable after the cancel: %v", names(got))
	}
}
