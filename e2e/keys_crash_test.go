package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"
)

// kill -9 of the server, again and again, while workers drain a queue
// with key_concurrency = 1: a key's next job is released in the
// transaction that ends its previous one, and an attempt cut short keeps
// its key's place until its lease expires and it runs again. So after the
// restarts every job is done, none was acknowledged twice, and each key's
// jobs ran one after another in submission order, never two at once.
func TestKill9UnderKeyedSequencesLosesNothing(t *testing.T) {
	dir := t.TempDir()
	addr := freeAddr(t)
	url := "http://" + addr
	cfg := filepath.Join(dir, "queue.toml")
	if err := os.WriteFile(cfg, []byte("[queues.seq]\nkey_concurrency = 1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	const keys, perKey = 20, 25
	p := start(t, dir, addr, "--config", cfg)
	var jobs []any
	for n := range perKey {
		for k := range keys {
			jobs = append(jobs, map[string]any{"queue": "seq", "kind": "k", "key": fmt.Sprint("acct-", k), "timeout": "1s",
				"max_attempts": 50, "payload": map[string]any{"k": k, "n": n}})
		}
	}
	if st, m, err := call("POST", url+"/api/jobs/batch", map[string]any{"jobs": jobs}); err != nil || st != 201 {
		t.Fatalf("submit: %d %v %v", st, m, err)
	}

	var mu sync.Mutex
	acked := map[int]map[int]int{} // key -> n -> completions acknowledged
	work := func() {
		st, m, err := call("POST", url+"/api/queues/seq/claim", map[string]any{"limit": 10, "wait": "200ms"})
		if err != nil || st != 200 {
			return
		}
		for _, j := range m["jobs"].([]any) {
			jm := j.(map[string]any)
			pl := jm["payload"].(map[string]any)
			k, n := int(pl["k"].(float64)), int(pl["n"].(float64))
			st, _, err := call("POST", fmt.Sprintf("%s/api/jobs/%d/complete", url, id(jm)), map[string]any{"lease": jm["lease"]})
			if err == nil && st == 200 {
				mu.Lock()
				if acked[k] == nil {
					acked[k] = map[int]int{}
				}
				acked[k][n]++
				mu.Unlock()
			}
		}
	}
	for round := range 5 {
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
						work()
					}
				}
			}()
		}
		time.Sleep(time.Duration(150+round*40) * time.Millisecond)
		p.cmd.Process.Signal(syscall.SIGKILL)
		<-p.done
		close(stop)
		wg.Wait()
		p = start(t, dir, addr, "--config", cfg)
	}
	deadline := time.Now().Add(90 * time.Second)
	for time.Now().Before(deadline) {
		work()
		_, m, _ := call("GET", url+"/api/stats", nil)
		if q, ok := m["queues"].(map[string]any)["seq"].(map[string]any); ok && int(q["done"].(float64)) == keys*perKey {
			break
		}
	}
	mu.Lock()
	defer mu.Unlock()
	for k := range keys {
		for n := range perKey {
			if acked[k][n] > 1 { // none is fine: the server may die between its commit and its answer
				t.Errorf("key %d job %d: acknowledged done %d times", k, n, acked[k][n])
			}
		}
		// As the server saw it: each job of the key started (its last,
		// completing attempt) no earlier than the one before it finished.
		_, m, err := call("GET", fmt.Sprintf("%s/api/jobs?queue=seq&key=acct-%d&limit=100", url, k), nil)
		if err != nil {
			t.Fatal(err)
		}
		byN := map[int]map[string]any{}
		for _, j := range m["jobs"].([]any) {
			jm := j.(map[string]any)
			byN[int(jm["payload"].(map[string]any)["n"].(float64))] = jm
		}
		for n := 1; n < perKey; n++ {
			prev, cur := byN[n-1], byN[n]
			if prev == nil || cur == nil || prev["status"] != "done" || cur["status"] != "done" {
				t.Fatalf("key %d: jobs %d and %d are %v and %v", k, n-1, n, prev["status"], cur["status"])
			}
			fin, _ := time.Parse(time.RFC3339Nano, prev["finished_at"].(string))
			started, _ := time.Parse(time.RFC3339Nano, cur["started_at"].(string))
			if started.Before(fin) {
				t.Errorf("key %d: job %d started at %s, before job %d finished at %s", k, n, started, n-1, fin)
			}
		}
	}
}
