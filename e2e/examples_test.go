package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The workers in examples/ work against a real server, as the README and
// examples/README.md run them.
func TestExamples(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	p := start(t, t.TempDir(), "")

	t.Run("shell worker", func(t *testing.T) {
		_, good, err := call("POST", p.url+"/api/jobs", map[string]any{"queue": "email", "kind": "welcome", "payload": map[string]string{"to": "ada@example.com"}})
		if err != nil {
			t.Fatal(err)
		}
		_, bad, err := call("POST", p.url+"/api/jobs", map[string]any{"queue": "email", "kind": "welcome", "payload": map[string]string{"name": "no address"}})
		if err != nil {
			t.Fatal(err)
		}
		// As the README has it, with --server as HOST:PORT.
		cmd := exec.Command(bin, "work", "--server", p.addr, "--queue", "email", "--log-format", "json", "--", "./examples/send-welcome.sh")
		cmd.Dir = root
		log := &syncBuffer{}
		cmd.Stdout, cmd.Stderr = log, log
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		defer func() {
			cmd.Process.Signal(syscall.SIGTERM)
			cmd.Wait()
			if t.Failed() {
				t.Logf("queue work:\n%s", log.String())
			}
		}()
		job := waitJob(t, p.url, id(good), "done")
		if res, _ := job["result"].(map[string]any); res["sent_to"] != "ada@example.com" {
			t.Errorf("result %v, want sent_to ada@example.com", job["result"])
		}
		job = waitJob(t, p.url, id(bad), "dead_letter")
		if dl, _ := job["dead_letter"].(map[string]any); dl["dead_letter_reason"] != "permanent_failure" || !strings.Contains(fmt.Sprint(dl["last_error"]), "no \"to\" address") {
			t.Errorf("the bad payload's dead letter: %v", job["dead_letter"])
		}
	})

	t.Run("go worker", func(t *testing.T) {
		cmd := exec.Command("go", "run", "./examples/go-worker")
		cmd.Dir = root
		cmd.Env = append(os.Environ(), "QUEUE_SERVER="+p.url, "CGO_ENABLED=0")
		out, err := cmd.CombinedOutput()
		if err != nil || strings.Count(string(out), " done {") != 3 {
			t.Fatalf("go run ./examples/go-worker: %v\n%s", err, out)
		}
	})

	t.Run("curl script", func(t *testing.T) {
		if _, err := exec.LookPath("curl"); err != nil {
			if os.Getenv("CI") != "" {
				t.Fatal("curl is not installed (.ci/run installs it)")
			}
			t.Skip("curl is not installed")
		}
		cmd := exec.Command("sh", "examples/curl-worker.sh")
		cmd.Dir = root
		cmd.Env = append(os.Environ(), "QUEUE_SERVER="+p.addr)
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), "is done") || !strings.Contains(string(out), "hello, Ada") {
			t.Fatalf("sh examples/curl-worker.sh: %v\n%s", err, out)
		}
	})
}

// waitJob waits up to 20s for job id to reach status and returns it.
func waitJob(t *testing.T, url string, id int64, status string) map[string]any {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		_, job, err := call("GET", fmt.Sprintf("%s/api/jobs/%d?wait=5s", url, id), nil)
		if err != nil {
			t.Fatal(err)
		}
		if job["status"] == status {
			return job
		}
		if time.Now().After(deadline) {
			t.Fatalf("job %d is %v, want %s: %v", id, job["status"], status, job)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
