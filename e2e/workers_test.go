package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// findWorker reads GET /api/workers and returns the worker id, or nil.
func findWorker(t *testing.T, url, workerID string) map[string]any {
	t.Helper()
	st, m, err := call("GET", url+"/api/workers", nil)
	if err != nil || st != 200 {
		t.Fatalf("GET /api/workers: %d %v %v", st, m, err)
	}
	for _, w := range m["workers"].([]any) {
		if wm := w.(map[string]any); wm["id"] == workerID {
			return wm
		}
	}
	return nil
}

// waitWorker polls GET /api/workers until worker id satisfies ok.
func waitWorker(t *testing.T, url, workerID, what string, ok func(map[string]any) bool) map[string]any {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		w := findWorker(t, url, workerID)
		if w != nil && ok(w) {
			return w
		}
		if time.Now().After(deadline) {
			t.Fatalf("worker %s not %s within 20s: %v", workerID, what, w)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Done-when 2 of issue 26, with the real binaries: GET /api/workers lists
// a running `queue work` with its queues; quiet makes it stop claiming
// while its running job finishes; stop ends it (exit 0), and a job it was
// running goes back to the queue with its attempt given back.
func TestWorkerRegistryQuietAndStop(t *testing.T) {
	dir := t.TempDir()
	p := start(t, dir, "")
	pids := t.TempDir()
	// Each job waits for a file named after it, so the test decides when it ends.
	script := `echo $$ > "$PIDS/$QUEUE_JOB_ID.pid"; while [ ! -f "$PIDS/release-$QUEUE_JOB_ID" ]; do sleep 0.05; done; echo '"done"'`

	w1 := startWork(t, p.url, pids, script, "--queues", "mail=3,reports=1", "--worker-id", "e2e-one")
	w := waitWorker(t, p.url, "e2e-one", "registered", func(w map[string]any) bool { return w["state"] == "running" })
	if qs := jsonOf(w["queues"]); qs != `{"mail":3,"reports":1}` || w["type"] != "http" || w["concurrency"] != 1.0 || w["pid"] != float64(w1.cmd.Process.Pid) {
		t.Fatalf("registered as %v", w)
	}

	// A job runs; quiet; the next job is not claimed while the first finishes.
	first := submitJob(t, p.url, map[string]any{"queue": "mail", "kind": "k"})
	waitJobWhere(t, p.url, first, 10*time.Second, "processing", func(m map[string]any) bool { return m["status"] == "processing" })
	waitWorker(t, p.url, "e2e-one", "reporting its job in flight", func(w map[string]any) bool { return w["in_flight"] == 1.0 })
	if st, m, err := call("POST", p.url+"/api/workers/e2e-one/quiet", nil); err != nil || st != 200 || m["state"] != "quiet" {
		t.Fatalf("quiet: %d %v %v", st, m, err)
	}
	second := submitJob(t, p.url, map[string]any{"queue": "mail", "kind": "k"})
	if err := os.WriteFile(filepath.Join(pids, fmt.Sprintf("release-%d", first)), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	waitJobWhere(t, p.url, first, 10*time.Second, "done", func(m map[string]any) bool { return m["status"] == "done" })
	waitWorker(t, p.url, "e2e-one", "reporting the job done", func(w map[string]any) bool {
		return w["done"] == 1.0 && w["in_flight"] == 0.0 && w["state"] == "quiet"
	})
	time.Sleep(2 * time.Second) // a worker that ignored quiet would have claimed it by now
	if m := getJob(t, p.url, second, ""); m["status"] != "queued" {
		t.Fatalf("a quiet worker took job %d: %v", second, m)
	}
	select {
	case <-w1.done:
		t.Fatalf("a quiet worker exited: %v", w1.err)
	default:
	}

	// A second worker takes the job; stop ends it and gives the job back.
	w2 := startWork(t, p.url, pids, script, "--queue", "mail", "--worker-id", "e2e-two")
	waitJobWhere(t, p.url, second, 20*time.Second, "processing", func(m map[string]any) bool {
		return m["status"] == "processing" && m["worker_id"] == "e2e-two"
	})
	if st, m, err := call("POST", p.url+"/api/workers/e2e-two/stop", nil); err != nil || st != 200 || m["state"] != "stopping" {
		t.Fatalf("stop: %d %v %v", st, m, err)
	}
	if code := w2.waitExit(t, 30*time.Second); code != 0 {
		t.Fatalf("a stopped worker exited %d, want 0", code)
	}
	m := waitJobWhere(t, p.url, second, 10*time.Second, "given back", func(m map[string]any) bool { return m["status"] == "queued" })
	if m["attempts"] != 0.0 {
		t.Fatalf("the job a stopped worker ran has attempts %v, want 0 (given back)", m["attempts"])
	}

	// Stop ends the quiet one too.
	if st, _, err := call("POST", p.url+"/api/workers/e2e-one/stop", nil); err != nil || st != 200 {
		t.Fatalf("stop e2e-one: %d %v", st, err)
	}
	if code := w1.waitExit(t, 30*time.Second); code != 0 {
		t.Fatalf("a stopped quiet worker exited %d, want 0", code)
	}
	st, audit, err := call("GET", p.url+"/api/audit?action=worker.stop", nil)
	if err != nil || st != 200 || len(audit["entries"].([]any)) != 2 {
		t.Fatalf("audit of the stops: %d %v %v", st, audit, err)
	}
}
