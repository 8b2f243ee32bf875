package commands_test

import (
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/queuehq/queue/commands"
)

// A `queue work` command's output and progress lines reach the job's log
// and progress: `queue jobs logs -f` prints the lines as they come and
// exits when the attempt ends, `queue jobs logs` prints them after, and
// `queue jobs show` the progress.
func TestJobsLogsOfACommandWorker(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	t.Setenv("QUEUE_SERVER", "http://"+addr)
	t.Setenv("QUEUE_DB", "memory")
	t.Setenv("QUEUE_LOG_FORMAT", "json")
	dir := t.TempDir()
	gate := filepath.Join(dir, "gate")
	script := filepath.Join(dir, "job.sh")
	os.WriteFile(script, []byte(`#!/bin/sh
echo "::progress 10 starting" >&2
echo "first line"
while [ ! -e `+gate+` ]; do sleep 0.05; done
echo "oops <b>" >&2
echo "::progress 100 done" >&2
echo "last line"
`), 0o755)
	start(t, `"queue serving"`, "serve", "--addr", addr)
	start(t, `"worker started"`, "work", "--queue", "sh", "--poll-wait", "1s", "--", script)

	code, out, errs := run(t, "submit", "--queue", "sh", "--kind", "script", "--json")
	if code != 0 {
		t.Fatalf("submit: exit %d %s%s", code, out, errs)
	}
	var job struct {
		ID int64 `json:"id"`
	}
	if err := json.Unmarshal([]byte(out), &job); err != nil || job.ID == 0 {
		t.Fatalf("submit printed %s (%v)", out, err)
	}
	id := strconv.FormatInt(job.ID, 10)

	var follow lockedBuffer
	done := make(chan int, 1)
	go func() {
		done <- commands.Run(t.Context(), []string{"queue", "jobs", "logs", "-f", id}, strings.NewReader(""), &follow, &follow, commands.Build{Version: "test"})
	}()
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(20 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("no %s after 10s; logs -f printed:\n%s", what, follow.String())
			}
		}
	}
	waitFor("first line while the job runs", func() bool { return strings.Contains(follow.String(), "first line") })
	if _, out, _ := run(t, "jobs", "show", id); !strings.Contains(out, "10% starting") {
		t.Fatalf("jobs show while running:\n%s", out)
	}
	os.WriteFile(gate, nil, 0o600)
	select {
	case code := <-done:
		if code != 0 {
			t.Fatalf("logs -f: exit %d\n%s", code, follow.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("logs -f did not end with the attempt:\n%s", follow.String())
	}
	line := regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z (stdout|stderr) `)
	var lines []string
	for _, l := range strings.Split(strings.TrimSpace(follow.String()), "\n") {
		if strings.HasPrefix(l, "attempt ") {
			continue
		}
		if !line.MatchString(l) {
			t.Fatalf("line %q is not time stream line", l)
		}
		lines = append(lines, line.ReplaceAllString(l, "$1 "))
	}
	// Lines of one stream keep their order; stdout and stderr are two pipes,
	// read as they come.
	sort.Strings(lines)
	if got := strings.Join(lines, "|"); got != "stderr oops <b>|stdout first line|stdout last line" {
		t.Fatalf("logs -f printed %s", got)
	}
	if !strings.Contains(follow.String(), "attempt 1 is over (job done)") {
		t.Fatalf("logs -f did not say the attempt ended:\n%s", follow.String())
	}
	// Kept after the end.
	code, out, _ = run(t, "jobs", "logs", id)
	if code != 0 || strings.Count(out, "\n") != 3 || !strings.Contains(out, "stdout last line") {
		t.Fatalf("jobs logs after the end: exit %d\n%s", code, out)
	}
	if _, out, _ := run(t, "jobs", "show", id); !strings.Contains(out, "100% done") {
		t.Fatalf("jobs show after the end:\n%s", out)
	}
	if code, _, errs := run(t, "jobs", "logs", "--attempt", "-1", id); code != 2 {
		t.Fatalf("--attempt -1: exit %d %s", code, errs)
	}
}
