// Package e2e tests the real binary: it builds ./queue once, runs `queue
// serve` as a separate process on a free port, and talks to it over HTTP,
// including kill -9 and SIGTERM.
package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

var bin string // the queue binary under test

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "queue-e2e")
	if err != nil {
		panic(err)
	}
	bin = filepath.Join(dir, "queue")
	build := exec.Command("go", "build", "-o", bin, "..")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	build.Stderr = os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build queue:", err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// proc is a running `queue serve`.
type proc struct {
	t    *testing.T
	cmd  *exec.Cmd
	url  string
	addr string
	done chan struct{} // closed when the process exited
	err  error         // its exit error, once done is closed
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// syncBuffer is a log buffer a test may read while the process writes it.
// It holds the buffer in a field, not embedded, so os/exec cannot reach the
// buffer's unlocked ReadFrom.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// start runs `queue serve` in dir on addr (free one if empty) and waits for /readyz.
func start(t *testing.T, dir, addr string, args ...string) *proc {
	t.Helper()
	if addr == "" {
		addr = freeAddr(t)
	}
	cmd := exec.Command(bin, append([]string{"serve", "--addr", addr, "--log-format", "json"}, args...)...)
	cmd.Dir = dir
	log := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &proc{t: t, cmd: cmd, url: "http://" + addr, addr: addr, done: make(chan struct{})}
	go func() { p.err = cmd.Wait(); close(p.done) }()
	watchOpenAPI(t, addr) // its answers are checked against the OpenAPI document (openapi_test.go)
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-p.done
		if t.Failed() {
			t.Logf("server log:\n%s", log.String())
		}
	})
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-p.done:
			t.Fatalf("serve exited early: %v\n%s", p.err, log.String())
		default:
		}
		if resp, err := http.Get(p.url + "/readyz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return p
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("serve not ready in 10s:\n%s", log.String())
	return nil
}

var client = &http.Client{Timeout: 90 * time.Second}

func call(method, url string, body any) (int, map[string]any, error) {
	var r io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		r = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, url, r)
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	var m map[string]any
	raw, _ := io.ReadAll(resp.Body)
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &m); err != nil {
			return resp.StatusCode, nil, fmt.Errorf("answer is not JSON: %s", raw)
		}
	}
	return resp.StatusCode, m, nil
}

func id(m map[string]any) int64 {
	f, _ := m["id"].(float64)
	return int64(f)
}

// `kill -9` during a stream of concurrent submissions: every submission the
// server answered 2xx is there after a restart.
func TestKill9LosesNoAcknowledgedSubmission(t *testing.T) {
	dir := t.TempDir()
	p := start(t, dir, "")
	var mu sync.Mutex
	acked := []int64{}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				st, m, err := call("POST", p.url+"/api/jobs", map[string]any{"kind": "k", "payload": map[string]int{"i": i}})
				if err != nil {
					return // the server is gone
				}
				if st == 201 {
					mu.Lock()
					acked = append(acked, id(m))
					mu.Unlock()
				}
			}
		}()
	}
	time.Sleep(700 * time.Millisecond)
	p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.done
	close(stop)
	wg.Wait()
	if len(acked) < 50 {
		t.Fatalf("only %d submissions before the kill", len(acked))
	}
	p2 := start(t, dir, p.addr)
	missing := 0
	for _, jid := range acked {
		st, _, err := call("GET", fmt.Sprintf("%s/api/jobs/%d", p2.url, jid), nil)
		if err != nil || st != 200 {
			missing++
		}
	}
	t.Logf("%d submissions acknowledged before kill -9; %d missing after restart", len(acked), missing)
	if missing > 0 {
		t.Fatalf("%d acknowledged jobs lost", missing)
	}
}

// 16 claimers over 2,000 jobs: every job completed exactly once.
func TestConcurrentClaimersCompleteEveryJobOnce(t *testing.T) {
	p := start(t, t.TempDir(), "")
	const n = 2000
	jobs := make([]map[string]any, n)
	for i := range jobs {
		jobs[i] = map[string]any{"kind": "k", "payload": i}
	}
	if st, m, err := call("POST", p.url+"/api/jobs/batch", map[string]any{"jobs": jobs}); err != nil || st != 201 {
		t.Fatalf("batch: %d %v %v", st, m, err)
	}
	var mu sync.Mutex
	completed := map[int64]int{}
	var wg sync.WaitGroup
	for w := 0; w < 16; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				st, m, err := call("POST", p.url+"/api/queues/default/claim", map[string]any{"worker_id": "w", "limit": 5})
				if err != nil || st != 200 {
					t.Errorf("claim: %d %v", st, err)
					return
				}
				list := m["jobs"].([]any)
				if len(list) == 0 {
					return
				}
				for _, j := range list {
					jm := j.(map[string]any)
					st, _, err := call("POST", fmt.Sprintf("%s/api/jobs/%d/complete", p.url, id(jm)), map[string]any{"lease": jm["lease"]})
					if err != nil || st != 200 {
						t.Errorf("complete %d: %d %v", id(jm), st, err)
						continue
					}
					mu.Lock()
					completed[id(jm)]++
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	if len(completed) != n {
		t.Fatalf("%d jobs completed, want %d", len(completed), n)
	}
	for jid, c := range completed {
		if c != 1 {
			t.Fatalf("job %d completed %d times", jid, c)
		}
	}
	_, st, _ := call("GET", p.url+"/api/stats", nil)
	if done := st["total"].(map[string]any)["done"].(float64); done != n {
		t.Fatalf("stats say %v done", done)
	}
}

// A long-polling claimer gets a job as soon as it is submitted.
func TestLongPollWakesOnSubmission(t *testing.T) {
	p := start(t, t.TempDir(), "")
	var worst time.Duration
	for i := 0; i < 5; i++ {
		got := make(chan time.Time, 1)
		go func() {
			st, m, err := call("POST", p.url+"/api/queues/lp/claim", map[string]any{"wait": "10s"})
			if err != nil || st != 200 || len(m["jobs"].([]any)) != 1 {
				t.Errorf("long poll: %d %v %v", st, m, err)
			}
			got <- time.Now()
		}()
		time.Sleep(100 * time.Millisecond) // the claimer is waiting
		sent := time.Now()
		if st, _, err := call("POST", p.url+"/api/jobs", map[string]any{"queue": "lp", "kind": "k"}); err != nil || st != 201 {
			t.Fatalf("submit: %d %v", st, err)
		}
		select {
		case at := <-got:
			worst = max(worst, at.Sub(sent))
		case <-time.After(5 * time.Second):
			t.Fatal("the long poll did not answer")
		}
	}
	t.Logf("submission to claim answer, worst of 5: %v", worst)
	if worst > 500*time.Millisecond { // the safety recheck is at 1s: this proves the wake-up
		t.Fatalf("long poll answered %v after the submission", worst)
	}
}

func TestSecondServeRefusesNamingTheFirst(t *testing.T) {
	dir := t.TempDir()
	p := start(t, dir, "")
	cmd := exec.Command(bin, "serve", "--addr", freeAddr(t))
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	ee, ok := err.(*exec.ExitError)
	if !ok || ee.ExitCode() != 1 {
		t.Fatalf("second serve: %v, want exit 1\n%s", err, out)
	}
	if want := fmt.Sprintf("pid %d", p.cmd.Process.Pid); !strings.Contains(string(out), want) {
		t.Fatalf("second serve says %q, want it to name %q", out, want)
	}
}

func TestSIGTERMDrainsAndExitsZero(t *testing.T) {
	dir := t.TempDir()
	p := start(t, dir, "")
	waiting := make(chan int, 1)
	go func() { // a long poll in progress must not hold the shutdown for its whole wait
		st, _, _ := call("POST", p.url+"/api/queues/q/claim", map[string]any{"wait": "60s"})
		waiting <- st
	}()
	time.Sleep(100 * time.Millisecond)
	start := time.Now()
	p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
		if p.err != nil {
			t.Fatalf("serve after SIGTERM: %v", p.err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("serve did not exit within 15s of SIGTERM")
	}
	if st := <-waiting; st != 200 {
		t.Fatalf("the long poll got %d during shutdown", st)
	}
	t.Logf("shutdown took %v", time.Since(start))
	if _, err := os.Stat(filepath.Join(dir, "queue.db")); err != nil {
		t.Fatal(err)
	}
}
