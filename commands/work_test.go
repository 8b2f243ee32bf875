package commands_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/queuehq/queue/commands"
)

// lockedBuffer is a bytes.Buffer that commands running in goroutines share.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// start runs `queue args...` until the end of the test, and returns once its
// output holds ready: urfave/cli parses flags through a global help flag, so
// two commands must not start at once.
func start(t *testing.T, ready string, args ...string) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	var out lockedBuffer
	done := make(chan struct{})
	go func() {
		defer close(done)
		if code := commands.Run(ctx, append([]string{"queue"}, args...), strings.NewReader(""), &out, &out, commands.Build{Version: "test"}); code != 0 {
			t.Errorf("queue %s: exit %d", args[0], code)
		}
	}()
	t.Cleanup(func() {
		cancel()
		<-done
		if t.Failed() {
			t.Logf("queue %s:\n%s", strings.Join(args, " "), out.String())
		}
	})
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(out.String(), ready); time.Sleep(10 * time.Millisecond) {
		select {
		case <-done:
			t.Fatalf("queue %s exited before %q", args[0], ready)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("queue %s: no %q after 10s", args[0], ready)
		}
	}
}

// Neither `queue work` nor the built-in workers of `queue serve` hand their
// environment to a job: the token, the database and anything not asked for
// stay out; pass_env / --pass-env and env / --env go in.
func TestWorkersKeepTheirEnvironment(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	t.Setenv("QUEUE_TOKEN", "token-secret-0123456789abcdef")
	t.Setenv("QUEUE_SERVER", "http://"+addr)
	t.Setenv("QUEUE_DB", "memory")
	t.Setenv("QUEUE_LOG_FORMAT", "json")
	t.Setenv("SOME_SECRET", "s3cr3t")
	t.Setenv("AWS_REGION", "eu-west-1")
	config := filepath.Join(t.TempDir(), "queue.toml")
	os.WriteFile(config, []byte(`
[[workers]]
queue = "builtin"
command = ["env"]
env = { EXTRA = "builtin" }
pass_env = ["AWS_REGION"]
`), 0o600)
	start(t, `"queue serving"`, "serve", "--addr", addr, "--config", config)
	start(t, `"worker started"`, "work", "--queue", "remote", "--poll-wait", "1s", "--env", "EXTRA=remote", "--pass-env", "AWS_REGION", "--", "env")

	for _, queue := range []string{"builtin", "remote"} {
		code, out, errs := run(t, "submit", "--queue", queue, "--kind", "env", "--wait", "--json")
		if code != 0 {
			t.Fatalf("submit to %s: exit %d: %s%s", queue, code, out, errs)
		}
		var job struct {
			Result string `json:"result"`
		}
		if err := json.Unmarshal([]byte(out), &job); err != nil {
			t.Fatalf("submit to %s: %v in %s", queue, err, out)
		}
		for _, bad := range []string{"QUEUE_TOKEN", "token-secret", "QUEUE_SERVER", "QUEUE_DB", "QUEUE_LOG_FORMAT", "SOME_SECRET"} {
			if strings.Contains(job.Result, bad) {
				t.Errorf("a job of %s sees %s", queue, bad)
			}
		}
		for _, want := range []string{"AWS_REGION=eu-west-1", "EXTRA=" + queue, "QUEUE_QUEUE=" + queue, "QUEUE_JOB_KIND=env", "QUEUE_ATTEMPT=1", "PATH="} {
			if !strings.Contains(job.Result, want) {
				t.Errorf("a job of %s does not see %s:\n%s", queue, want, job.Result)
			}
		}
	}
}

// --pass-env refuses QUEUE_* names and non-names before the worker starts.
func TestWorkPassEnvUsage(t *testing.T) {
	for _, tc := range []struct{ name, want string }{
		{"QUEUE_TOKEN", `--pass-env "QUEUE_TOKEN": QUEUE_* variables`},
		{"A-B", `--pass-env "A-B" is not a variable name`},
	} {
		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second) // a worker that starts anyway stops
		var out lockedBuffer
		code := commands.Run(ctx, []string{"queue", "work", "--server", "http://127.0.0.1:1", "--pass-env", tc.name, "--", "env"}, strings.NewReader(""), &out, &out, commands.Build{Version: "test"})
		cancel()
		if code != 2 || !strings.Contains(out.String(), tc.want) {
			t.Errorf("queue work --pass-env %s: exit %d, output %q; want exit 2 and %q", tc.name, code, out.String(), tc.want)
		}
	}
}
