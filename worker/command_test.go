package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/queuehq/queue/app"
)

func testJob(payload string) *app.Job {
	return &app.Job{ID: 42, Queue: "q", Kind: "k.v", Payload: json.RawMessage(payload), Attempts: 2, MaxAttempts: 5, Timeout: app.Duration(time.Second)}
}

func runCommand(t *testing.T, ctx context.Context, script string, cfg CommandConfig) (any, error) {
	t.Helper()
	cfg.Command = []string{"sh", "-c", script}
	return CommandHandler(cfg)(ctx, testJob(`{"n":1}`))
}

func TestCommandResultShapes(t *testing.T) {
	for _, tc := range []struct {
		name, script, want string
	}{
		{"json", `cat >/dev/null; echo '{"ok":true}'`, `{"ok":true}`},
		{"number", `echo 12`, `12`},
		{"text", `printf 'hello "world"\n'`, `"hello \"world\""`},
		{"empty", `true`, ``},
		{"stdin", `cat`, `{"n":1}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := runCommand(t, t.Context(), tc.script, CommandConfig{})
			if err != nil {
				t.Fatal(err)
			}
			raw, _ := res.(json.RawMessage)
			if string(raw) != tc.want {
				t.Fatalf("result = %s, want %s", raw, tc.want)
			}
		})
	}
}

func TestCommandEnvironment(t *testing.T) {
	res, err := CommandHandler(CommandConfig{
		Command: []string{"sh", "-c", `printf '%s %s %s %s %s %s %s' "$QUEUE_JOB_ID" "$QUEUE_JOB_KIND" "$QUEUE_QUEUE" "$QUEUE_ATTEMPT" "$QUEUE_MAX_ATTEMPTS" "$EXTRA" "$(pwd)"`},
		Env:     map[string]string{"EXTRA": "x=1"},
		Dir:     "/",
	})(t.Context(), testJob("null"))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(res.(json.RawMessage)), `"42 k.v q 2 5 x=1 /"`; got != want {
		t.Fatalf("environment = %s, want %s", got, want)
	}
}

// The command gets an allowlisted environment, never the worker's secrets
// (QUEUE_TOKEN, QUEUE_DB, anything else not asked for).
func TestCommandEnvironmentIsAllowlisted(t *testing.T) {
	t.Setenv("QUEUE_TOKEN", "secret-token-0123456789")
	t.Setenv("QUEUE_DB", "postgres://queue:hunter2@db/queue")
	t.Setenv("SOME_SECRET", "s3cr3t")
	t.Setenv("AWS_REGION", "eu-west-1")
	t.Setenv("LC_TIME", "C")
	t.Setenv("QUEUE_JOB_ID", "999") // the worker's own value never shadows the job's
	res, err := CommandHandler(CommandConfig{
		Command: []string{"env"},
		Env:     map[string]string{"EXTRA": "x=1", "QUEUE_JOB_ID": "7", "QUEUE_ATTEMPT": "9"},
		PassEnv: []string{"AWS_REGION", "NOT_SET_ANYWHERE"},
	})(t.Context(), testJob("null"))
	if err != nil {
		t.Fatal(err)
	}
	var out string
	if err := json.Unmarshal(res.(json.RawMessage), &out); err != nil {
		t.Fatalf("env printed %s: %v", res, err)
	}
	got := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		k, v, _ := strings.Cut(line, "=")
		if _, dup := got[k]; dup {
			t.Errorf("%s set twice", k)
		}
		got[k] = v
	}
	for _, k := range []string{"QUEUE_TOKEN", "QUEUE_DB", "SOME_SECRET", "NOT_SET_ANYWHERE"} {
		if v, ok := got[k]; ok {
			t.Errorf("the command sees %s=%s, want it unset", k, v)
		}
	}
	for _, v := range []string{"secret-token-0123456789", "hunter2", "s3cr3t"} {
		if strings.Contains(out, v) {
			t.Errorf("a secret of the worker reached the command: %q", v)
		}
	}
	want := map[string]string{
		"PATH": os.Getenv("PATH"), "LC_TIME": "C", "AWS_REGION": "eu-west-1", "EXTRA": "x=1",
		"QUEUE_JOB_ID": "42", "QUEUE_JOB_KIND": "k.v", "QUEUE_QUEUE": "q", "QUEUE_ATTEMPT": "2", "QUEUE_MAX_ATTEMPTS": "5",
	}
	if home, ok := os.LookupEnv("HOME"); ok {
		want["HOME"] = home
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("the command sees %s=%q, want %q", k, got[k], v)
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok && !inheritable(k) {
			t.Errorf("the command sees %s, which is neither allowlisted nor configured", k)
		}
	}
}

func TestCommandEnvironmentDefaultPath(t *testing.T) {
	t.Setenv("PATH", "")
	os.Unsetenv("PATH") // t.Setenv restores it
	res, err := CommandHandler(CommandConfig{Command: []string{"/bin/sh", "-c", `printf %s "$PATH"`}})(t.Context(), testJob("null"))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(res.(json.RawMessage)), `"/usr/local/bin:/usr/bin:/bin"`; got != want {
		t.Fatalf("PATH = %s, want %s", got, want)
	}
}

func TestCommandPassEnvRefusesQueueVariables(t *testing.T) {
	t.Setenv("QUEUE_TOKEN", "secret-token-0123456789")
	for _, name := range []string{"QUEUE_TOKEN", "QUEUE_", "1X", "A-B", ""} {
		if ValidatePassEnv(name) == nil {
			t.Errorf("ValidatePassEnv(%q) = nil, want an error", name)
		}
	}
	for _, name := range []string{"AWS_REGION", "_x", "queue_token", "QUEUEX"} {
		if err := ValidatePassEnv(name); err != nil {
			t.Errorf("ValidatePassEnv(%q) = %v, want nil", name, err)
		}
	}
	res, err := CommandHandler(CommandConfig{
		Command: []string{"env"}, PassEnv: []string{"QUEUE_TOKEN"},
	})(t.Context(), testJob("null"))
	var pe *PermanentError
	if !errors.As(err, &pe) || !strings.Contains(err.Error(), "QUEUE_TOKEN") {
		t.Fatalf("PassEnv QUEUE_TOKEN: result %s, err = %v; want a PermanentError naming it", res, err)
	}
}

func TestCommandExitStatuses(t *testing.T) {
	_, err := runCommand(t, t.Context(), `echo bad input >&2; exit 65`, CommandConfig{})
	var pe *PermanentError
	if !errors.As(err, &pe) || !strings.Contains(err.Error(), "exit status 65") || !strings.Contains(err.Error(), "bad input") {
		t.Fatalf("exit 65: err = %v, want a PermanentError naming the status and stderr", err)
	}
	_, err = runCommand(t, t.Context(), `echo boom >&2; exit 1`, CommandConfig{})
	if err == nil || errors.As(err, &pe) || !strings.Contains(err.Error(), "exit status 1; stderr: boom") {
		t.Fatalf("exit 1: err = %v, want a retryable error with the stderr tail", err)
	}
	_, err = runCommand(t, t.Context(), `kill -USR1 $$`, CommandConfig{})
	if err == nil || !strings.Contains(err.Error(), "killed by signal SIGUSR1") {
		t.Fatalf("signal: err = %v, want it to name SIGUSR1", err)
	}
	_, err = CommandHandler(CommandConfig{Command: []string{"/nonexistent/cmd"}})(t.Context(), testJob("null"))
	if err == nil || !strings.Contains(err.Error(), "start /nonexistent/cmd") {
		t.Fatalf("missing command: err = %v", err)
	}
}

func TestCommandStderrTail(t *testing.T) {
	_, err := runCommand(t, t.Context(), `head -c 100000 /dev/zero | tr '\0' a >&2; echo END >&2; exit 3`, CommandConfig{})
	if err == nil {
		t.Fatal("want an error")
	}
	msg := err.Error()
	if !strings.Contains(msg, "exit status 3") || !strings.HasSuffix(msg, "aaaEND") || !strings.Contains(msg, "last 4096 of 100004 bytes") {
		t.Fatalf("error = %.200q...%q, want the status and the last 4 KiB of stderr", msg, msg[max(0, len(msg)-40):])
	}
	if len(msg) > StderrTailBytes+200 {
		t.Fatalf("error is %d bytes; want about 4 KiB", len(msg))
	}
}

// alive reports whether pid runs (a zombie waiting for its reaper does not).
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || (s[i+2] != 'Z' && s[i+2] != 'X')
}

func readPID(t *testing.T, path string) int {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if b, err := os.ReadFile(path); err == nil {
			if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
				return pid
			}
		}
	}
	t.Fatalf("no pid in %s", path)
	return 0
}

func waitDead(t *testing.T, pid int, within time.Duration) {
	t.Helper()
	for deadline := time.Now().Add(within); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if !alive(pid) {
			return
		}
	}
	t.Fatalf("process %d still runs %s later", pid, within)
}

func TestCommandCancelKillsProcessGroup(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "child")
	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := runCommand(t, ctx, `sleep 30 & echo $! > `+pidFile+`; wait`, CommandConfig{KillGrace: 5 * time.Second})
	if err == nil || !strings.Contains(err.Error(), "SIGTERM") {
		t.Fatalf("err = %v, want killed by SIGTERM", err)
	}
	if took := time.Since(start); took > 3*time.Second {
		t.Fatalf("the handler returned %v after its context ended", took)
	}
	waitDead(t, readPID(t, pidFile), 2*time.Second)
}

func TestCommandKillGraceEndsInSIGKILL(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "child")
	ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := runCommand(t, ctx, `trap '' TERM; sh -c 'trap "" TERM; echo $$ > `+pidFile+`; while :; do sleep 0.05; done' & wait; wait`, CommandConfig{KillGrace: 300 * time.Millisecond})
	took := time.Since(start)
	if err == nil || !strings.Contains(err.Error(), "SIGKILL") {
		t.Fatalf("err = %v, want killed by SIGKILL", err)
	}
	if took < 450*time.Millisecond || took > 3*time.Second {
		t.Fatalf("took %v; want the 200ms timeout plus the 300ms kill grace", took)
	}
	waitDead(t, readPID(t, pidFile), 2*time.Second)
}

func TestCommandResultTruncated(t *testing.T) {
	res, err := runCommand(t, t.Context(), `head -c 3000000 /dev/zero | tr '\0' x`, CommandConfig{})
	if err != nil {
		t.Fatal(err)
	}
	raw := res.(json.RawMessage)
	if len(raw) > app.MaxResultBytes {
		t.Fatalf("result is %d bytes, over the 1 MiB limit", len(raw))
	}
	var got struct {
		Truncated   bool   `json:"truncated"`
		OutputBytes int64  `json:"output_bytes"`
		Output      string `json:"output"`
	}
	if err := json.Unmarshal(raw, &got); err != nil {
		t.Fatalf("result is not JSON: %v", err)
	}
	if !got.Truncated || got.OutputBytes != 3000000 || len(got.Output) < app.MaxResultBytes-100 || strings.Trim(got.Output, "x") != "" {
		t.Fatalf("truncated=%v output_bytes=%d len(output)=%d", got.Truncated, got.OutputBytes, len(got.Output))
	}
}

func TestJSONStringBudget(t *testing.T) {
	in := []byte("a\"\\\n\x01\xffé")
	s, n := jsonString(in, 1000)
	var back string
	if err := json.Unmarshal(s, &back); err != nil || n != len(in) || back != "a\"\\\n\x01\uFFFDé" {
		t.Fatalf("jsonString = %s (%d), back %q, %v", s, n, back, err)
	}
	for budget := 2; budget < 30; budget++ {
		s, _ := jsonString(in, budget)
		if len(s) > budget || !json.Valid(s) {
			t.Fatalf("budget %d: %s (%d bytes)", budget, s, len(s))
		}
	}
}

// A command printing 100 MiB (to stdout, then to stderr) must not grow the
// worker's heap by more than a few MiB: the first 1 MiB of stdout and the
// last 4 KiB of stderr are kept, the rest is read and dropped.
func TestCommandOutputBoundedMemory(t *testing.T) {
	for _, stream := range []string{"stdout", "stderr"} {
		t.Run(stream, func(t *testing.T) {
			redirect := ""
			if stream == "stderr" {
				redirect = " >&2; exit 1"
			}
			runtime.GC()
			var before runtime.MemStats
			runtime.ReadMemStats(&before)
			var peak uint64
			stop := make(chan struct{})
			var wg sync.WaitGroup
			wg.Add(1)
			go func() {
				defer wg.Done()
				var ms runtime.MemStats
				for {
					runtime.ReadMemStats(&ms)
					peak = max(peak, ms.HeapAlloc)
					select {
					case <-stop:
						return
					case <-time.After(5 * time.Millisecond):
					}
				}
			}()
			res, err := runCommand(t, t.Context(), `head -c 104857600 /dev/zero`+redirect, CommandConfig{})
			close(stop)
			wg.Wait()
			var after runtime.MemStats
			runtime.ReadMemStats(&after)
			growth := int64(peak) - int64(before.HeapAlloc)
			allocated := after.TotalAlloc - before.TotalAlloc
			t.Logf("100 MiB on %s: peak heap growth %.1f MiB, allocated in total %.1f MiB", stream, float64(growth)/(1<<20), float64(allocated)/(1<<20))
			if stream == "stdout" {
				if err != nil {
					t.Fatal(err)
				}
				if raw := res.(json.RawMessage); len(raw) > app.MaxResultBytes || !strings.Contains(string(raw), `"output_bytes":104857600`) {
					t.Fatalf("result: %d bytes, %.100s", len(raw), raw)
				}
			} else if err == nil || !strings.Contains(err.Error(), "of 104857600 bytes") {
				t.Fatalf("err = %.200v", err)
			}
			if growth > 50<<20 || allocated > 50<<20 {
				t.Fatalf("heap grew %d MiB (allocated %d MiB) for 100 MiB of output; want under 50 MiB", growth>>20, allocated>>20)
			}
		})
	}
}

// CheckCommand finds what exec would run, before any job does: a name on
// PATH, or a path (relative to the command's dir) to an executable file.
func TestCheckCommand(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "run.sh"), []byte("#!/bin/sh\n"), 0o755)
	os.WriteFile(filepath.Join(dir, "plain.txt"), []byte("x"), 0o644)
	os.Mkdir(filepath.Join(dir, "sub"), 0o755)
	for _, tc := range []struct {
		argv []string
		dir  string
		want string // "" for no error
	}{
		{[]string{"sh", "-c", "true"}, "", ""},
		{[]string{filepath.Join(dir, "run.sh")}, "", ""},
		{[]string{"./run.sh"}, dir, ""},
		{[]string{"../run.sh"}, filepath.Join(dir, "sub"), ""},
		{[]string{"./run.sh"}, filepath.Join(dir, "sub"), "does not exist (looked for " + filepath.Join(dir, "sub", "run.sh") + ")"},
		{[]string{"./plain.txt"}, dir, "is not executable"},
		{[]string{"./sub"}, dir, "is a directory"},
		{[]string{"no-such-program-anywhere"}, "", "is not found on PATH"},
		{[]string{""}, "", "no command"},
		{nil, "", "no command"},
	} {
		err := CheckCommand(tc.argv, tc.dir)
		if (tc.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("CheckCommand(%q, %q) = %v, want %q", tc.argv, tc.dir, err, tc.want)
		}
	}
	if err := CheckDir(filepath.Join(dir, "run.sh")); err == nil || !strings.Contains(err.Error(), "not a directory") {
		t.Errorf("CheckDir(a file) = %v", err)
	}
	if err := CheckDir(filepath.Join(dir, "none")); err == nil || !strings.Contains(err.Error(), "create it") {
		t.Errorf("CheckDir(missing) = %v", err)
	}
}

// A workflow step gets QUEUE_WORKFLOW_ID and QUEUE_STEP; one with parents
// gets them as a JSON object in the file QUEUE_PARENTS_FILE names, removed
// after the run; the payload stays on stdin. Another job gets none of the
// three, even when the configured environment sets them.
func TestCommandWorkflowStep(t *testing.T) {
	job := testJob(`{"n":1}`)
	job.WorkflowID, job.Step = 7, "load"
	job.Parents = []app.Parent{
		{Step: "B", Status: app.StepDone, JobID: 11, Result: json.RawMessage(`{"rows":3}`)},
		{Step: "C \"odd\"", Status: app.StepDead, JobID: 12, Result: json.RawMessage("null"), Error: "exit status 1"},
		{Step: "D", Status: app.StepCancelled},
	}
	script := `printf '{"wf":"%s","step":"%s","file":"%s","mode":"%s","stdin":%s,"parents":%s}' "$QUEUE_WORKFLOW_ID" "$QUEUE_STEP" "$QUEUE_PARENTS_FILE" "$(stat -c %a "$QUEUE_PARENTS_FILE")" "$(cat)" "$(cat "$QUEUE_PARENTS_FILE")"`
	cfg := CommandConfig{Command: []string{"sh", "-c", script}, Env: map[string]string{"QUEUE_STEP": "forged"}}
	res, err := CommandHandler(cfg)(t.Context(), job)
	if err != nil {
		t.Fatal(err)
	}
	var out struct {
		WF, Step, File, Mode string
		Stdin                json.RawMessage
		Parents              map[string]map[string]any
	}
	if err := json.Unmarshal(res.(json.RawMessage), &out); err != nil {
		t.Fatalf("the command printed %s: %v", res, err)
	}
	if out.WF != "7" || out.Step != "load" || string(out.Stdin) != `{"n":1}` {
		t.Fatalf("QUEUE_WORKFLOW_ID %q, QUEUE_STEP %q, stdin %s; want 7, load and the payload", out.WF, out.Step, out.Stdin)
	}
	want := `{"B":{"job_id":11,"result":{"rows":3},"status":"done"},` +
		`"C \"odd\"":{"error":"exit status 1","job_id":12,"result":null,"status":"dead_letter"},` +
		`"D":{"result":null,"status":"cancelled"}}`
	if got, _ := json.Marshal(out.Parents); string(got) != want {
		t.Fatalf("parents file = %s, want %s", got, want)
	}
	if _, err := os.Stat(out.File); !os.IsNotExist(err) {
		t.Fatalf("the parents file %s is still there after the run: %v", out.File, err)
	}
	if out.Mode != "600" {
		t.Fatalf("the parents file had mode %s, want 600 (results are the worker's user's only)", out.Mode)
	}

	// A step without parents has no file; a plain job no workflow variables.
	job.Parents = nil
	for _, j := range []*app.Job{job, testJob("null")} {
		res, err := CommandHandler(CommandConfig{Command: []string{"sh", "-c", `printf '%s|%s|%s' "${QUEUE_WORKFLOW_ID-unset}" "${QUEUE_STEP-unset}" "${QUEUE_PARENTS_FILE-unset}"`},
			Env: map[string]string{"QUEUE_PARENTS_FILE": "/etc/passwd", "QUEUE_WORKFLOW_ID": "1"}})(t.Context(), j)
		if err != nil {
			t.Fatal(err)
		}
		want := `"unset|unset|unset"`
		if j.WorkflowID != 0 {
			want = `"7|load|unset"`
		}
		if string(res.(json.RawMessage)) != want {
			t.Fatalf("job %d (workflow %d): %s, want %s", j.ID, j.WorkflowID, res, want)
		}
	}
}

// The parents file is removed when the run fails or is stopped too.
func TestCommandParentsFileRemovedOnFailure(t *testing.T) {
	job := testJob("null")
	job.WorkflowID, job.Step = 1, "s"
	job.Parents = []app.Parent{{Step: "p", Status: app.StepDone, JobID: 1, Result: json.RawMessage(`1`)}}
	path := filepath.Join(t.TempDir(), "path")
	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	_, err := CommandHandler(CommandConfig{Command: []string{"sh", "-c", `echo "$QUEUE_PARENTS_FILE" > ` + path + `; sleep 30`}, KillGrace: 100 * time.Millisecond})(ctx, job)
	if err == nil {
		t.Fatal("a run stopped by its context succeeded")
	}
	b, _ := os.ReadFile(path)
	name := strings.TrimSpace(string(b))
	if name == "" {
		t.Fatal("the command saw no QUEUE_PARENTS_FILE")
	}
	if _, err := os.Stat(name); !os.IsNotExist(err) {
		t.Fatalf("the parents file %s outlived a stopped run: %v", name, err)
	}
}
