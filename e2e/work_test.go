package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// workProc is a running `queue work`.
type workProc struct {
	cmd  *exec.Cmd
	log  *syncBuffer
	done chan struct{}
	err  error
}

// startWork runs `queue work --server url FLAGS -- sh -c script`, with
// $PIDS set to pids for the script's pid files. The worker has PIDS in its
// environment and passes it on by name (--pass-env): a command sees only
// what it is given.
func startWork(t *testing.T, url, pids, script string, flags ...string) *workProc {
	t.Helper()
	args := append([]string{"work", "--server", url, "--log-format", "json", "--poll-wait", "10s", "--pass-env", "PIDS"}, flags...)
	args = append(args, "--", "sh", "-c", script)
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "PIDS="+pids)
	w := &workProc{cmd: cmd, log: &syncBuffer{}, done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = w.log, w.log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { w.err = cmd.Wait(); close(w.done) }()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-w.done
		if t.Failed() {
			t.Logf("worker %d log:\n%s", cmd.Process.Pid, w.log.String())
		}
	})
	return w
}

// waitExit waits for the worker to exit and returns its exit code.
func (w *workProc) waitExit(t *testing.T, within time.Duration) int {
	t.Helper()
	select {
	case <-w.done:
	case <-time.After(within):
		t.Fatalf("queue work did not exit within %v", within)
	}
	if ee, ok := w.err.(*exec.ExitError); ok {
		return ee.ExitCode()
	}
	if w.err != nil {
		t.Fatalf("queue work: %v", w.err)
	}
	return 0
}

func submitJob(t *testing.T, url string, body map[string]any) int64 {
	t.Helper()
	st, m, err := call("POST", url+"/api/jobs", body)
	if err != nil || st != 201 {
		t.Fatalf("submit: %d %v %v", st, m, err)
	}
	return id(m)
}

func getJob(t *testing.T, url string, jobID int64, wait string) map[string]any {
	t.Helper()
	q := ""
	if wait != "" {
		q = "?wait=" + wait
	}
	st, m, err := call("GET", fmt.Sprintf("%s/api/jobs/%d%s", url, jobID, q), nil)
	if err != nil || st != 200 {
		t.Fatalf("get job %d: %d %v %v", jobID, st, m, err)
	}
	return m
}

// waitJobWhere polls a job until ok holds.
func waitJobWhere(t *testing.T, url string, jobID int64, within time.Duration, what string, ok func(map[string]any) bool) map[string]any {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		m := getJob(t, url, jobID, "")
		if ok(m) {
			return m
		}
		if time.Now().After(deadline) {
			t.Fatalf("job %d not %s within %v: %v", jobID, what, within, m)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func jsonOf(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func firstError(m map[string]any) string {
	errs, _ := m["errors"].([]any)
	if len(errs) == 0 {
		return ""
	}
	e, _ := errs[0].(map[string]any)
	s, _ := e["error"].(string)
	return s
}

func readPIDFile(t *testing.T, path string) int {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if b, err := os.ReadFile(path); err == nil && strings.HasSuffix(string(b), "\n") {
			if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
				return pid
			}
		}
	}
	t.Fatalf("no pid in %s", path)
	return 0
}

// procAlive reports whether pid runs (a zombie does not).
func procAlive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || (s[i+2] != 'Z' && s[i+2] != 'X')
}

// The command contract through `queue work`: results, exit 65, exit 1, and
// a timeout that kills the process group.
func TestWorkCommandContract(t *testing.T) {
	p := start(t, t.TempDir(), "")
	pids := t.TempDir()
	startWork(t, p.url, pids, `cat >/dev/null; echo "{\"ok\":true}"`, "--queue", "ok", "--concurrency", "2")
	startWork(t, p.url, pids, `p=$(cat)
case "$p" in
  *perm*) echo "bad data: no such customer" >&2; exit 65;;
  *fail*) echo "boom: disk full" >&2; exit 1;;
  *slow*) sleep 30 & echo $! > "$PIDS/$QUEUE_JOB_ID"; wait;;
esac`, "--queue", "mixed", "--concurrency", "3", "--kill-grace", "1s")

	var oks []int64
	for i := 0; i < 3; i++ {
		oks = append(oks, submitJob(t, p.url, map[string]any{"queue": "ok", "kind": "k", "payload": map[string]int{"i": i}}))
	}
	perm := submitJob(t, p.url, map[string]any{"queue": "mixed", "kind": "k", "payload": "perm"})
	fail := submitJob(t, p.url, map[string]any{"queue": "mixed", "kind": "k", "payload": "fail"})
	slow := submitJob(t, p.url, map[string]any{"queue": "mixed", "kind": "k", "payload": "slow", "timeout": "1s"})

	for _, jid := range oks {
		m := getJob(t, p.url, jid, "10s")
		if m["status"] != "done" || jsonOf(m["result"]) != `{"ok":true}` {
			t.Fatalf("job %d: status %v result %s; want done with {\"ok\":true}", jid, m["status"], jsonOf(m["result"]))
		}
	}
	m := getJob(t, p.url, perm, "10s")
	dl, _ := m["dead_letter"].(map[string]any)
	if m["status"] != "dead_letter" || dl["dead_letter_reason"] != "permanent_failure" || !strings.Contains(fmt.Sprint(dl["last_error"]), "no such customer") {
		t.Fatalf("exit 65: %v", m)
	}
	m = waitJobWhere(t, p.url, fail, 10*time.Second, "failed once", func(m map[string]any) bool { return firstError(m) != "" })
	if e := firstError(m); !strings.Contains(e, "exit status 1") || !strings.Contains(e, "boom: disk full") || m["status"] == "dead_letter" {
		t.Fatalf("exit 1: status %v error %q; want a retry with the stderr tail", m["status"], e)
	}
	child := readPIDFile(t, filepath.Join(pids, strconv.FormatInt(slow, 10)))
	m = waitJobWhere(t, p.url, slow, 10*time.Second, "timed out", func(m map[string]any) bool { return firstError(m) != "" })
	if e := firstError(m); !strings.Contains(e, "timed out after 1s") || m["status"] == "dead_letter" {
		t.Fatalf("timeout: status %v error %q; want a retry naming the timeout", m["status"], e)
	}
	for deadline := time.Now().Add(3 * time.Second); procAlive(child); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the timed-out command's child %d still runs", child)
		}
	}
}

// kill -9 of a worker mid-job: the job runs again on another worker once
// its lease expires, and the lost run counts as a failed attempt.
func TestWorkKill9RerunsAfterLeaseExpiry(t *testing.T) {
	p := start(t, t.TempDir(), "")
	pids := t.TempDir()
	script := `if [ -e "$PIDS/started" ]; then echo "{\"run\":$QUEUE_ATTEMPT}"; else echo $$ > "$PIDS/started"; exec sleep 30; fi`
	a := startWork(t, p.url, pids, script, "--queue", "k9")
	jid := submitJob(t, p.url, map[string]any{"queue": "k9", "kind": "k", "timeout": "1s"})
	orphan := readPIDFile(t, filepath.Join(pids, "started"))
	t.Cleanup(func() { syscall.Kill(-orphan, syscall.SIGKILL) }) // its group outlives the killed worker
	startWork(t, p.url, pids, script, "--queue", "k9")
	killed := time.Now()
	a.cmd.Process.Signal(syscall.SIGKILL)
	a.waitExit(t, 5*time.Second)
	m := getJob(t, p.url, jid, "15s")
	t.Logf("kill -9 to done elsewhere: %v", time.Since(killed))
	if m["status"] != "done" || jsonOf(m["result"]) != `{"run":2}` || m["attempts"] != 2.0 || firstError(m) != "lease expired" {
		t.Fatalf("after kill -9: status %v result %s attempts %v error %q; want done by attempt 2 after a lease expiry",
			m["status"], jsonOf(m["result"]), m["attempts"], firstError(m))
	}
}

// SIGTERM with a job that finishes within the grace period: it completes,
// and the worker exits 0.
func TestWorkSIGTERMFinishesWithinGrace(t *testing.T) {
	p := start(t, t.TempDir(), "")
	pids := t.TempDir()
	w := startWork(t, p.url, pids, `echo $$ > "$PIDS/$QUEUE_JOB_ID"; sleep 1; echo '{"graceful":true}'`, "--queue", "g", "--grace", "5s")
	jid := submitJob(t, p.url, map[string]any{"queue": "g", "kind": "k"})
	readPIDFile(t, filepath.Join(pids, strconv.FormatInt(jid, 10)))
	w.cmd.Process.Signal(syscall.SIGTERM)
	if code := w.waitExit(t, 10*time.Second); code != 0 {
		t.Fatalf("queue work exited %d after SIGTERM, want 0", code)
	}
	m := getJob(t, p.url, jid, "")
	if m["status"] != "done" || jsonOf(m["result"]) != `{"graceful":true}` || m["attempts"] != 1.0 {
		t.Fatalf("status %v result %s attempts %v; want done within the grace period", m["status"], jsonOf(m["result"]), m["attempts"])
	}
}

// SIGTERM with a job that outlasts the grace period: its process group is
// stopped, its lease given back, and another worker runs it at once (long
// before its 30s lease would expire) without counting the first attempt.
func TestWorkSIGTERMGivesLeaseBack(t *testing.T) {
	p := start(t, t.TempDir(), "")
	pids := t.TempDir()
	script := `if [ -e "$PIDS/started" ]; then echo "{\"attempt\":$QUEUE_ATTEMPT}"; else sleep 30 & echo $! > "$PIDS/started"; wait; fi`
	a := startWork(t, p.url, pids, script, "--queue", "gb", "--grace", "300ms", "--kill-grace", "1s")
	jid := submitJob(t, p.url, map[string]any{"queue": "gb", "kind": "k", "timeout": "30s"})
	child := readPIDFile(t, filepath.Join(pids, "started"))
	startWork(t, p.url, pids, script, "--queue", "gb")
	time.Sleep(200 * time.Millisecond) // the second worker is waiting
	sent := time.Now()
	a.cmd.Process.Signal(syscall.SIGTERM)
	if code := a.waitExit(t, 10*time.Second); code != 0 {
		t.Fatalf("queue work exited %d after SIGTERM, want 0", code)
	}
	if procAlive(child) {
		t.Fatalf("the job's process %d outlived its worker", child)
	}
	m := getJob(t, p.url, jid, "10s")
	took := time.Since(sent)
	t.Logf("SIGTERM to done elsewhere: %v", took)
	if m["status"] != "done" || jsonOf(m["result"]) != `{"attempt":1}` || m["attempts"] != 1.0 || firstError(m) != "" {
		t.Fatalf("status %v result %s attempts %v error %q; want done by a rerun that counts as attempt 1",
			m["status"], jsonOf(m["result"]), m["attempts"], firstError(m))
	}
	if took > 5*time.Second {
		t.Fatalf("the rerun finished %v after SIGTERM; want it at once, not after the 30s lease", took)
	}
}

func TestWorkWithoutCommandIsAUsageError(t *testing.T) {
	out, err := exec.Command(bin, "work", "--queue", "q").CombinedOutput()
	ee, ok := err.(*exec.ExitError)
	if !ok || ee.ExitCode() != 2 || !strings.Contains(string(out), "after --") {
		t.Fatalf("queue work without a command: %v\n%s; want exit 2 naming the fix", err, out)
	}
}

// The built-in workers of `queue serve` ([[workers]] in the config) keep the
// same contract: results, and on SIGTERM a job past the grace period is
// stopped and given back (queued at once, the attempt not counted).
func TestWorkBuiltinWorkersOfServe(t *testing.T) {
	dir := t.TempDir()
	pids := t.TempDir()
	config := filepath.Join(dir, "queue.toml")
	if err := os.WriteFile(config, []byte(fmt.Sprintf(`
[server]
grace = "300ms"

[[workers]]
queue = "builtin"
command = ["sh", "-c", "cat >/dev/null; echo '{\"ok\":true}'"]
concurrency = 2

[[workers]]
queue = "slow"
command = ["sh", "-c", "sleep 30 & echo $! > %s/$QUEUE_JOB_ID; wait"]
kill_grace = "1s"
`, pids)), 0o644); err != nil {
		t.Fatal(err)
	}
	p := start(t, dir, "", "--config", config)
	jid := submitJob(t, p.url, map[string]any{"queue": "builtin", "kind": "k"})
	if m := getJob(t, p.url, jid, "10s"); m["status"] != "done" || jsonOf(m["result"]) != `{"ok":true}` {
		t.Fatalf("built-in worker: status %v result %s", m["status"], jsonOf(m["result"]))
	}
	slow := submitJob(t, p.url, map[string]any{"queue": "slow", "kind": "k", "timeout": "30s"})
	child := readPIDFile(t, filepath.Join(pids, strconv.FormatInt(slow, 10)))
	p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
		if p.err != nil {
			t.Fatalf("serve after SIGTERM: %v", p.err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("serve did not exit after SIGTERM")
	}
	if procAlive(child) {
		t.Fatalf("the built-in worker's command %d outlived serve", child)
	}
	p2 := start(t, dir, p.addr) // no workers now: the job stays as serve left it
	m := getJob(t, p2.url, slow, "")
	if m["status"] != "queued" || m["attempts"] != 0.0 || firstError(m) != "" {
		t.Fatalf("after SIGTERM: status %v attempts %v error %q; want queued again, the attempt not counted", m["status"], m["attempts"], firstError(m))
	}
}
