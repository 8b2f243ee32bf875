package e2e

import (
	"fmt"
	"sync"
	"syscall"
	"testing"
	"time"
)

// kill -9 of the server, again and again, under a running 1,000-step
// workflow: a step is released in the transaction that completes its last
// dependency, so after the restarts every step ran, none was released
// before its parents were done, none is stuck waiting, and no job was
// acknowledged done twice.
func TestKill9UnderWorkflowLosesNothing(t *testing.T) {
	dir := t.TempDir()
	addr := freeAddr(t)
	url := "http://" + addr
	const layers, width = 10, 100
	var steps []map[string]any
	for l := range layers {
		for i := range width {
			s := map[string]any{"step": fmt.Sprintf("s%d_%d", l, i), "kind": "k", "timeout": "1s", "max_attempts": 50,
				"payload": map[string]any{"layer": l}}
			if l > 0 { // two parents in the layer before
				s["depends_on"] = []string{fmt.Sprintf("s%d_%d", l-1, i), fmt.Sprintf("s%d_%d", l-1, (i*7+3)%width)}
			}
			steps = append(steps, s)
		}
	}
	p := start(t, dir, addr)
	st, wf, err := call("POST", url+"/api/workflows", map[string]any{"name": "crash", "steps": steps})
	if err != nil || st != 201 {
		t.Fatalf("submit: %d %v %v", st, wf, err)
	}
	wfID := id(wf)

	var mu sync.Mutex
	doneAcks := map[int64]int{}
	var early []string
	work := func(limit int) int {
		st, m, err := call("POST", url+"/api/queues/default/claim", map[string]any{"limit": limit, "wait": "200ms"})
		if err != nil || st != 200 {
			return 0
		}
		jobs := m["jobs"].([]any)
		for _, j := range jobs {
			jm := j.(map[string]any)
			parents, _ := jm["parents"].([]any)
			for _, pa := range parents {
				pm := pa.(map[string]any)
				if pm["status"] != "done" || pm["result"] == nil {
					mu.Lock()
					early = append(early, fmt.Sprintf("%v before %v was done (%v)", jm["step"], pm["step"], pm["status"]))
					mu.Unlock()
				}
			}
			st, _, err := call("POST", fmt.Sprintf("%s/api/jobs/%d/complete", url, id(jm)),
				map[string]any{"lease": jm["lease"], "result": map[string]any{"step": jm["step"]}})
			if err == nil && st == 200 {
				mu.Lock()
				doneAcks[id(jm)]++
				mu.Unlock()
			}
		}
		return len(jobs)
	}
	for round := range 6 {
		stop := make(chan struct{})
		var wg sync.WaitGroup
		for range 3 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					select {
					case <-stop:
						return
					default:
						work(20)
					}
				}
			}()
		}
		time.Sleep(time.Duration(200+round*50) * time.Millisecond)
		p.cmd.Process.Signal(syscall.SIGKILL)
		<-p.done
		close(stop)
		wg.Wait()
		p = start(t, dir, addr)
	}
	// Let everything finish: leases of the killed attempts expire after 1s.
	deadline := time.Now().Add(90 * time.Second)
	var view map[string]any
	for time.Now().Before(deadline) {
		work(100)
		_, view, _ = call("GET", fmt.Sprintf("%s/api/workflows/%d", url, wfID), nil)
		if view["status"] == "done" {
			break
		}
	}
	if view["status"] != "done" || view["done_count"].(float64) != layers*width {
		counts := map[string]int{}
		for _, s := range view["steps"].([]any) {
			counts[s.(map[string]any)["status"].(string)]++
		}
		t.Fatalf("after the restarts the workflow is %v with %v of %d steps done; steps by status %v", view["status"], view["done_count"], layers*width, counts)
	}
	twice := 0
	for _, n := range doneAcks {
		if n > 1 {
			twice++
		}
	}
	for _, s := range view["steps"].([]any) {
		sm := s.(map[string]any)
		if sm["status"] != "done" || sm["job_id"] == nil {
			t.Errorf("step %v is %v (job %v)", sm["step"], sm["status"], sm["job_id"])
		}
	}
	t.Logf("6 kill -9 restarts under a %d-step workflow: %d completions acknowledged", layers*width, len(doneAcks))
	if twice > 0 || len(early) > 0 {
		t.Fatalf("%d jobs acknowledged done twice; steps released early: %v", twice, early)
	}
}
