package worker

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/queuehq/queue/app"
)

// CommandConfig is a command that runs once per job (SPEC section 5).
type CommandConfig struct {
	// Command is the program and its arguments, run without a shell (write
	// ["sh", "-c", "..."] for one).
	Command []string
	// Dir is the working directory. If empty, the worker's.
	Dir string
	// Env is set in the command's environment, over what PassEnv and the
	// allowlist copied; the job's QUEUE_* variables win over it.
	Env map[string]string
	// PassEnv names further variables copied from the worker's own
	// environment on purpose (e.g. AWS_REGION); unset ones are left out.
	// A name that ValidatePassEnv refuses (QUEUE_*) fails every job.
	PassEnv []string
	// KillGrace is how long the process group has between SIGTERM and
	// SIGKILL, and how long its output is read after it exits. If zero, 10s.
	KillGrace time.Duration
}

// CheckCommand reports whether argv can run as a job's command, before any
// job does: argv[0] without a slash must be found on PATH; with one it must
// be an executable file, a relative path taken from dir (the command's
// working directory) or, if dir is empty, from this one. The error names the
// command, where it looked, and the fix. `queue work` and the config of
// built-in workers refuse to start on it, so no job walks to the dead-letter
// queue with "no such file".
func CheckCommand(argv []string, dir string) error {
	if len(argv) == 0 || argv[0] == "" {
		return errors.New("no command given")
	}
	name := argv[0]
	if !strings.Contains(name, "/") {
		if _, err := exec.LookPath(name); err != nil {
			return fmt.Errorf("command %q is not found on PATH (%s): install it, or give its path (./%s for one in the working directory)", name, os.Getenv("PATH"), name)
		}
		return nil
	}
	path := name
	if !filepath.IsAbs(path) {
		base := dir
		if base == "" {
			base, _ = os.Getwd()
		}
		path = filepath.Join(base, path)
	}
	st, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("command %s does not exist (looked for %s): fix the path, or create the file", name, path)
	case err != nil:
		return fmt.Errorf("command %s: %w", name, err)
	case st.IsDir():
		return fmt.Errorf("command %s is a directory (%s), not a program", name, path)
	case st.Mode()&0o111 == 0 || syscall.Access(path, 1) != nil: // 1: X_OK
		return fmt.Errorf("command %s is not executable (%s, mode %s): chmod +x it, or run it through its interpreter (sh %s)", name, path, st.Mode().Perm(), name)
	}
	return nil
}

// CheckDir reports whether dir can be a command's working directory.
func CheckDir(dir string) error {
	st, err := os.Stat(dir)
	switch {
	case err != nil:
		return fmt.Errorf("working directory %s: %w; create it or fix the path", dir, errors.Unwrap(err))
	case !st.IsDir():
		return fmt.Errorf("working directory %s is not a directory", dir)
	}
	return nil
}

// Exit codes and limits of the command contract.
const (
	// ExitPermanent (EX_DATAERR) fails the job without retry: it goes to
	// the dead-letter queue with reason permanent_failure.
	ExitPermanent = 65
	// StderrTailBytes is how much of the end of stderr a failure keeps.
	StderrTailBytes = 4 << 10
	// DefaultKillGrace is the time between SIGTERM and SIGKILL.
	DefaultKillGrace = 10 * time.Second
)

// CommandHandler returns a Handler that runs cfg.Command for each job, in a
// process group of its own, with the payload on stdin. Its environment is
// not the worker's: of that it gets only PATH (/usr/local/bin:/usr/bin:/bin
// if unset), HOME, USER, LOGNAME, LANG, LC_*, TZ, TMPDIR and cfg.PassEnv;
// then cfg.Env; then QUEUE_JOB_ID, QUEUE_JOB_KIND, QUEUE_QUEUE, QUEUE_ATTEMPT
// and QUEUE_MAX_ATTEMPTS, which nothing overrides (nor TRACEPARENT and
// TRACESTATE, set for a traced job: see trace.go). So the worker's secrets
// (QUEUE_TOKEN, a password in QUEUE_DB) never reach a job. The environment
// is read once, here, not for each job. A workflow step also gets
// QUEUE_WORKFLOW_ID and QUEUE_STEP, and one with dependencies
// QUEUE_PARENTS_FILE: a file holding its parents (see writeParents),
// removed once the command has ended.
//
// Exit 0 completes the job with stdout as its result: the JSON value if
// stdout is JSON, else a JSON string of it; past 1 MiB the result is
// {"truncated": true, "output_bytes": n, "output": "<the start>"}. Exit 65
// is a Permanent failure. Any other exit or a signal is a failure with retry
// whose error names the exit status or signal and holds the last 4 KiB of
// stderr. When ctx ends (timeout, cancel, lost lease, shutdown) the process
// group gets SIGTERM, then SIGKILL after cfg.KillGrace.
//
// Memory stays bounded whatever the command prints: the first 1 MiB of
// stdout and the last 4 KiB of stderr are kept, the rest is read and dropped.
func CommandHandler(cfg CommandConfig) Handler {
	grace := cfg.KillGrace
	if grace <= 0 {
		grace = DefaultKillGrace
	}
	base, envErr := commandEnv(os.Environ(), cfg.Env, cfg.PassEnv)
	return func(ctx context.Context, job *app.Job) (any, error) {
		if len(cfg.Command) == 0 || cfg.Command[0] == "" {
			return nil, Permanent(errors.New("no command configured"))
		}
		if envErr != nil {
			return nil, Permanent(envErr)
		}
		cmd := exec.Command(cfg.Command[0], cfg.Command[1:]...)
		cmd.Dir = cfg.Dir
		cmd.Env = make([]string, len(base), len(base)+len(jobEnv))
		copy(cmd.Env, base)
		cmd.Env = append(cmd.Env,
			"QUEUE_JOB_ID="+strconv.FormatInt(job.ID, 10),
			"QUEUE_JOB_KIND="+job.Kind,
			"QUEUE_QUEUE="+job.Queue,
			"QUEUE_ATTEMPT="+strconv.Itoa(job.Attempts),
			"QUEUE_MAX_ATTEMPTS="+strconv.Itoa(job.MaxAttempts),
		)
		cmd.Env = append(cmd.Env, traceEnv(job)...) // the attempt's span (trace.go)
		if job.WorkflowID != 0 {
			cmd.Env = append(cmd.Env, "QUEUE_WORKFLOW_ID="+strconv.FormatInt(job.WorkflowID, 10), "QUEUE_STEP="+job.Step)
		}
		if len(job.Parents) > 0 {
			path, err := writeParents(job.Parents)
			if err != nil {
				return nil, fmt.Errorf("write the parents of step %s to a file: %w", job.Step, err)
			}
			defer os.Remove(path)
			cmd.Env = append(cmd.Env, "QUEUE_PARENTS_FILE="+path)
		}
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		payload := []byte(job.Payload)
		if len(payload) == 0 {
			payload = []byte("null")
		}
		cmd.Stdin = bytes.NewReader(payload)
		stdout := &headBuffer{limit: app.MaxResultBytes}
		stderr := &tailBuffer{limit: StderrTailBytes}
		outLines, errLines := commandOutput(job) // the attempt's log and progress (progress.go)
		cmd.Stdout, cmd.Stderr = io.MultiWriter(stdout, outLines), io.MultiWriter(stderr, errLines)
		cmd.WaitDelay = grace // a detached grandchild holding the pipes cannot hold the job
		if err := cmd.Start(); err != nil {
			return nil, fmt.Errorf("start %s: %w", cfg.Command[0], err)
		}
		pgid := cmd.Process.Pid
		waited := make(chan error, 1)
		go func() { waited <- cmd.Wait() }()
		var err error
		select {
		case err = <-waited:
		case <-ctx.Done():
			_ = syscall.Kill(-pgid, syscall.SIGTERM)
			t := time.NewTimer(grace)
			select {
			case err = <-waited:
			case <-t.C:
				_ = syscall.Kill(-pgid, syscall.SIGKILL)
				err = <-waited
			}
			t.Stop()
			_ = syscall.Kill(-pgid, syscall.SIGKILL) // children that outlived the leader
		}
		if errors.Is(err, exec.ErrWaitDelay) { // exited 0; output cut after the grace
			err = nil
		}
		outLines.flush()
		errLines.flush()
		if err == nil && ctx.Err() == nil {
			return commandResult(stdout.head.Bytes(), stdout.total), nil
		}
		if err == nil {
			return nil, fmt.Errorf("exited 0 after its context ended%s", stderr.describe())
		}
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			return nil, fmt.Errorf("wait for %s: %w%s", cfg.Command[0], err, stderr.describe())
		}
		ws, _ := ee.Sys().(syscall.WaitStatus)
		switch {
		case ws.Signaled():
			return nil, fmt.Errorf("killed by signal %s%s", signalName(ws.Signal()), stderr.describe())
		case ws.ExitStatus() == ExitPermanent && ctx.Err() == nil:
			return nil, Permanent(fmt.Errorf("exit status %d%s", ExitPermanent, stderr.describe()))
		}
		return nil, fmt.Errorf("exit status %d%s", ws.ExitStatus(), stderr.describe())
	}
}

// jobEnv are the variables CommandHandler sets for each job; nothing else
// can set them (QUEUE_WORKFLOW_ID, QUEUE_STEP and QUEUE_PARENTS_FILE only
// for a workflow step, TRACEPARENT and TRACESTATE only for a traced job,
// and left unset for any other job, whatever the configured environment
// says).
var jobEnv = []string{"QUEUE_JOB_ID", "QUEUE_JOB_KIND", "QUEUE_QUEUE", "QUEUE_ATTEMPT", "QUEUE_MAX_ATTEMPTS",
	"QUEUE_WORKFLOW_ID", "QUEUE_STEP", "QUEUE_PARENTS_FILE", "TRACEPARENT", "TRACESTATE"}

// writeParents writes the parents of a workflow step to a new file of the
// worker's temporary directory, readable by the worker's user only, as one
// JSON object keyed by step name: {"<step>": {"status", "job_id",
// "result", "error"}}, the fields of a parent in the claim answer. The
// parents go to a file, not to stdin (the payload's, as for any job) nor to
// a variable: a fan-in's parents may hold a result of up to 1 MiB each,
// past what an environment can carry. The caller removes the file.
func writeParents(parents []app.Parent) (path string, err error) {
	f, err := os.CreateTemp("", "queue-parents-*.json")
	if err != nil {
		return "", err
	}
	defer func() {
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			os.Remove(f.Name())
		}
	}()
	w := bufio.NewWriter(f)
	w.WriteByte('{')
	for i, p := range parents {
		if i > 0 {
			w.WriteByte(',')
		}
		k, _ := json.Marshal(p.Step)
		w.Write(k)
		w.WriteByte(':')
		v, err := json.Marshal(struct {
			Status app.StepStatus  `json:"status"`
			JobID  int64           `json:"job_id,omitempty"`
			Result json.RawMessage `json:"result"`
			Error  string          `json:"error,omitempty"`
		}{p.Status, p.JobID, nullIfEmpty(p.Result), p.Error})
		if err != nil {
			return "", err
		}
		w.Write(v)
	}
	w.WriteString("}\n")
	return f.Name(), w.Flush()
}

// nullIfEmpty is r, or null when a parent has none.
func nullIfEmpty(r json.RawMessage) json.RawMessage {
	if len(r) == 0 {
		return json.RawMessage("null")
	}
	return r
}

// defaultPath is the command's PATH when the worker has none.
const defaultPath = "/usr/local/bin:/usr/bin:/bin"

// ValidatePassEnv checks a name to copy from the worker's environment into
// a command's: letters, digits and '_', not starting with a digit, and not
// QUEUE_*: those are the queue's own settings and secrets (QUEUE_TOKEN,
// QUEUE_DB); give a job one on purpose as a configured variable instead.
func ValidatePassEnv(name string) error {
	if !envNameRE.MatchString(name) {
		return fmt.Errorf("%q is not a variable name (letters, digits and '_', not starting with a digit)", name)
	}
	if strings.HasPrefix(name, "QUEUE_") {
		return fmt.Errorf("%q: QUEUE_* variables are the queue's own settings and secrets and are never passed on; to give jobs such a value on purpose, set it with env in [[workers]] or --env of queue work", name)
	}
	return nil
}

var envNameRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// commandEnv is the environment a command starts from, before the job's
// QUEUE_* variables: from environ (the worker's, as os.Environ gives it) only
// PATH (defaultPath if unset), HOME, USER, LOGNAME, LANG, LC_*, TZ, TMPDIR and
// the names in pass; then env, which overrides them. Nothing else of the
// worker's environment is passed on, so its secrets (QUEUE_TOKEN, a password
// in QUEUE_DB) never reach a job. The job's variables are left out of env,
// since the job's own values win. The result is sorted by name. It returns
// an error if a name in pass is refused by ValidatePassEnv.
func commandEnv(environ []string, env map[string]string, pass []string) ([]string, error) {
	for _, name := range pass {
		if err := ValidatePassEnv(name); err != nil {
			return nil, err
		}
	}
	vars := make(map[string]string, 8+len(pass)+len(env))
	for _, kv := range environ {
		k, v, ok := strings.Cut(kv, "=")
		if ok && (inheritable(k) || slices.Contains(pass, k)) {
			vars[k] = v
		}
	}
	if _, ok := vars["PATH"]; !ok {
		vars["PATH"] = defaultPath
	}
	for k, v := range env {
		vars[k] = v
	}
	for _, k := range jobEnv {
		delete(vars, k)
	}
	out := make([]string, 0, len(vars))
	for k, v := range vars {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out, nil
}

// inheritable reports whether a command gets the worker's variable name
// without asking for it.
func inheritable(name string) bool {
	switch name {
	case "PATH", "HOME", "USER", "LOGNAME", "LANG", "TZ", "TMPDIR":
		return true
	}
	return strings.HasPrefix(name, "LC_")
}

// commandResult turns the start of stdout (total bytes in all) into a result.
func commandResult(head []byte, total int64) json.RawMessage {
	truncated := total > int64(len(head))
	if !truncated {
		out := bytes.TrimSpace(head)
		if len(out) == 0 {
			return nil
		}
		if json.Valid(out) {
			return bytes.Clone(out)
		}
		if s, n := jsonString(out, app.MaxResultBytes); n == len(out) {
			return s
		}
	}
	const room = 64 // for the object around the output
	s, _ := jsonString(head, app.MaxResultBytes-room)
	var b bytes.Buffer
	b.Grow(len(s) + room)
	fmt.Fprintf(&b, `{"truncated":true,"output_bytes":%d,"output":`, total)
	b.Write(s)
	b.WriteByte('}')
	return b.Bytes()
}

// jsonString encodes b as a JSON string of at most budget bytes and returns
// it with how many bytes of b it holds. Invalid UTF-8 becomes U+FFFD.
func jsonString(b []byte, budget int) (json.RawMessage, int) {
	const hex = "0123456789abcdef"
	out := make([]byte, 0, min(len(b)+2, budget))
	out = append(out, '"')
	i := 0
	for i < len(b) {
		r, size := utf8.DecodeRune(b[i:])
		var enc []byte
		var tmp [8]byte
		switch {
		case r == '"' || r == '\\':
			enc = append(tmp[:0], '\\', byte(r))
		case r == '\n':
			enc = append(tmp[:0], '\\', 'n')
		case r == '\r':
			enc = append(tmp[:0], '\\', 'r')
		case r == '\t':
			enc = append(tmp[:0], '\\', 't')
		case r < 0x20:
			enc = append(tmp[:0], '\\', 'u', '0', '0', hex[r>>4], hex[r&0xf])
		case r == utf8.RuneError && size == 1:
			enc = append(tmp[:0], `\ufffd`...)
		default:
			enc = b[i : i+size]
		}
		if len(out)+len(enc)+1 > budget {
			break
		}
		out = append(out, enc...)
		i += size
	}
	return append(out, '"'), i
}

// headBuffer keeps the first limit bytes written and counts the rest.
type headBuffer struct {
	head  bytes.Buffer
	limit int
	total int64
}

func (h *headBuffer) Write(p []byte) (int, error) {
	h.total += int64(len(p))
	if room := h.limit - h.head.Len(); room > 0 {
		h.head.Write(p[:min(room, len(p))])
	}
	return len(p), nil
}

// tailBuffer keeps the last limit bytes written and counts them all.
type tailBuffer struct {
	buf   []byte
	limit int
	total int64
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.total += int64(len(p))
	if len(p) >= t.limit {
		t.buf = append(t.buf[:0], p[len(p)-t.limit:]...)
		return len(p), nil
	}
	t.buf = append(t.buf, p...)
	if len(t.buf) > 2*t.limit {
		t.buf = append(t.buf[:0], t.buf[len(t.buf)-t.limit:]...)
	}
	return len(p), nil
}

// tail returns the last limit bytes, starting at a whole UTF-8 character.
func (t *tailBuffer) tail() string {
	b := t.buf
	if len(b) > t.limit {
		b = b[len(b)-t.limit:]
	}
	for i := 0; i < utf8.UTFMax && len(b) > 0 && !utf8.RuneStart(b[0]); i++ {
		b = b[1:]
	}
	return strings.TrimSpace(strings.ToValidUTF8(string(b), "\uFFFD"))
}

// describe is the stderr part of an error message.
func (t *tailBuffer) describe() string {
	s := t.tail()
	switch {
	case s == "":
		return " (stderr empty)"
	case t.total > int64(t.limit):
		return fmt.Sprintf("; stderr (last %d of %d bytes): %s", t.limit, t.total, s)
	}
	return "; stderr: " + s
}

// signalName names common signals as kill(1) does.
func signalName(s syscall.Signal) string {
	names := map[syscall.Signal]string{
		syscall.SIGHUP: "SIGHUP", syscall.SIGINT: "SIGINT", syscall.SIGQUIT: "SIGQUIT",
		syscall.SIGILL: "SIGILL", syscall.SIGABRT: "SIGABRT", syscall.SIGBUS: "SIGBUS",
		syscall.SIGFPE: "SIGFPE", syscall.SIGKILL: "SIGKILL", syscall.SIGSEGV: "SIGSEGV",
		syscall.SIGPIPE: "SIGPIPE", syscall.SIGALRM: "SIGALRM", syscall.SIGTERM: "SIGTERM",
		syscall.SIGUSR1: "SIGUSR1", syscall.SIGUSR2: "SIGUSR2",
	}
	if n, ok := names[s]; ok {
		return n
	}
	return fmt.Sprintf("%d (%s)", int(s), s)
}
