package e2e

import (
	"bufio"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// kill -9 of the server twenty times under concurrent submissions, claims
// and completions: every acknowledged submission survives, every job ends
// terminal, and no job is acknowledged done twice.
func TestKill9LoopLosesNothing(t *testing.T) {
	dir := t.TempDir()
	addr := freeAddr(t)
	var mu sync.Mutex
	acked := map[int64]bool{}
	doneAcks := map[int64]int{}
	url := "http://" + addr
	for round := 0; round < 20; round++ {
		p := start(t, dir, addr)
		stop := make(chan struct{})
		var wg sync.WaitGroup
		for w := 0; w < 3; w++ {
			wg.Add(2)
			go func() { // submitter
				defer wg.Done()
				for {
					select {
					case <-stop:
						return
					default:
					}
					st, m, err := call("POST", url+"/api/jobs", map[string]any{"kind": "k", "timeout": "1s", "max_attempts": 50})
					if err != nil {
						return
					}
					if st == 201 {
						mu.Lock()
						acked[id(m)] = true
						mu.Unlock()
					}
				}
			}()
			go func() { // worker
				defer wg.Done()
				for {
					select {
					case <-stop:
						return
					default:
					}
					st, m, err := call("POST", url+"/api/queues/default/claim", map[string]any{"limit": 4})
					if err != nil {
						return
					}
					if st != 200 {
						continue
					}
					for _, j := range m["jobs"].([]any) {
						jm := j.(map[string]any)
						st, _, err := call("POST", fmt.Sprintf("%s/api/jobs/%d/complete", url, id(jm)), map[string]any{"lease": jm["lease"]})
						if err == nil && st == 200 {
							mu.Lock()
							doneAcks[id(jm)]++
							mu.Unlock()
						}
					}
				}
			}()
		}
		time.Sleep(time.Duration(150+round*10) * time.Millisecond)
		p.cmd.Process.Signal(syscall.SIGKILL)
		<-p.done
		close(stop)
		wg.Wait()
	}
	// Restart once more and let everything finish: leases of the killed
	// attempts expire after 1s and the jobs run again.
	p := start(t, dir, addr)
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		st, m, err := call("POST", p.url+"/api/queues/default/claim", map[string]any{"limit": 100, "wait": "1s"})
		if err != nil || st != 200 {
			t.Fatalf("claim: %d %v", st, err)
		}
		for _, j := range m["jobs"].([]any) {
			jm := j.(map[string]any)
			if st, _, _ := call("POST", fmt.Sprintf("%s/api/jobs/%d/complete", p.url, id(jm)), map[string]any{"lease": jm["lease"]}); st == 200 {
				doneAcks[id(jm)]++
			}
		}
		_, stats, _ := call("GET", p.url+"/api/stats", nil)
		tot := stats["total"].(map[string]any)
		if tot["queued"].(float64)+tot["scheduled"].(float64)+tot["processing"].(float64) == 0 {
			break
		}
	}
	lost, notTerminal, twice := 0, 0, 0
	for jid := range acked {
		st, job, err := call("GET", fmt.Sprintf("%s/api/jobs/%d", p.url, jid), nil)
		switch {
		case err != nil || st != 200:
			lost++
		case job["status"] != "done" && job["status"] != "dead_letter":
			notTerminal++
		}
	}
	for _, n := range doneAcks {
		if n > 1 {
			twice++
		}
	}
	t.Logf("20 kill -9 restarts: %d submissions acknowledged, %d completions acknowledged; lost %d, not terminal %d, done twice %d",
		len(acked), len(doneAcks), lost, notTerminal, twice)
	if len(acked) < 100 || lost > 0 || notTerminal > 0 || twice > 0 {
		t.Fatal("the kill -9 loop lost or doubled work")
	}
}

// A thousand connections sending their headers a byte a second do not stop
// a normal client: each holds a goroutine only until ReadHeaderTimeout.
func TestSlowClientsDoNotStarveOthers(t *testing.T) {
	p := start(t, t.TempDir(), "")
	var open atomic.Int32
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for i := 0; i < 1000; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := net.Dial("tcp", p.addr)
			if err != nil {
				return
			}
			defer c.Close()
			open.Add(1)
			w := bufio.NewWriter(c)
			for _, b := range []byte("GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: ") {
				select {
				case <-stop:
					return
				case <-time.After(time.Second):
				}
				w.WriteByte(b)
				if w.Flush() != nil {
					return // the server hung up: good
				}
			}
		}()
	}
	time.Sleep(1500 * time.Millisecond)
	var worst time.Duration
	for i := 0; i < 20; i++ {
		t0 := time.Now()
		st, _, err := call("POST", p.url+"/api/jobs", map[string]any{"kind": "k"})
		if err != nil || st != 201 {
			t.Fatalf("normal client during slow clients: %d %v", st, err)
		}
		worst = max(worst, time.Since(t0))
		time.Sleep(100 * time.Millisecond)
	}
	close(stop)
	wg.Wait()
	t.Logf("%d slow connections; a normal client's slowest answer: %v", open.Load(), worst)
	if open.Load() < 900 {
		t.Fatalf("only %d slow connections opened", open.Load())
	}
	if worst > time.Second {
		t.Fatalf("a normal request took %v among slow clients", worst)
	}
}
