package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/queuehq/queue/internal/otlptest"
)

// Issue 27, done-when 3: a job submitted with a traceparent header runs a
// command that sees TRACEPARENT in the same trace, whose parent id is the
// queue.attempt span the collector receives; the collector gets
// queue.submit (a child of the caller's span), queue.wait and
// queue.attempt (children of submit) in one trace. A job failing once has
// two attempt spans, and the second wait says retry. The spans left at
// SIGTERM are sent before the server exits.
func TestTracingIntoCommands(t *testing.T) {
	col := otlptest.New(t)
	dir := t.TempDir()
	seen := t.TempDir() // each attempt's TRACEPARENT, in <job>.<attempt>
	config := filepath.Join(dir, "queue.toml")
	if err := os.WriteFile(config, []byte(fmt.Sprintf(`
[tracing]
endpoint = %q
service_name = "queue-e2e"

[queues.flaky]
backoff_base = "50ms"

[[workers]]
queue = "traced"
command = ["sh", "-c", "echo \"$TRACEPARENT\" > %s/$QUEUE_JOB_ID.$QUEUE_ATTEMPT"]

[[workers]]
queue = "flaky"
command = ["sh", "-c", "echo \"$TRACEPARENT\" > %s/$QUEUE_JOB_ID.$QUEUE_ATTEMPT; [ \"$QUEUE_ATTEMPT\" -gt 1 ] || { echo first try fails >&2; exit 3; }"]
`, col.URL, seen, seen)), 0o644); err != nil {
		t.Fatal(err)
	}
	p := start(t, dir, "", "--config", config)

	const trace = "4bf92f3577b34da6a3ce929d0e0e4736"
	const caller = "00f067aa0ba902b7"
	one := submitTraced(t, p.url, map[string]any{"queue": "traced", "kind": "k"}, "00-"+trace+"-"+caller+"-01")
	flaky := submitTraced(t, p.url, map[string]any{"queue": "flaky", "kind": "k", "max_attempts": 3}, "00-"+trace+"-"+caller+"-01")
	for _, id := range []int64{one, flaky} {
		if m := getJob(t, p.url, id, "20s"); m["status"] != "done" {
			t.Fatalf("job %d: %v", id, m)
		}
	}
	stored := map[int64]string{}
	for _, id := range []int64{one, flaky} {
		stored[id], _ = getJob(t, p.url, id, "")["traceparent"].(string)
	}

	// The spans held are sent on SIGTERM, before the server exits.
	p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(20 * time.Second):
		t.Fatal("serve did not stop after SIGTERM")
	}
	spans := col.Spans()
	for _, s := range spans {
		if s.TraceID != trace {
			t.Errorf("span %s in trace %s, want %s", s.Name, s.TraceID, trace)
		}
		if s.Resource["service.name"] != "queue-e2e" {
			t.Errorf("span %s of service %v", s.Name, s.Resource["service.name"])
		}
	}
	byJob := func(name string, id int64) []otlptest.Span {
		var out []otlptest.Span
		for _, s := range otlptest.Named(spans, name) {
			if s.Attrs["queue.job_id"] == id {
				out = append(out, s)
			}
		}
		return out
	}
	for _, c := range []struct {
		id       int64
		attempts int
	}{{one, 1}, {flaky, 2}} {
		submit, waits, attempts := byJob("queue.submit", c.id), byJob("queue.wait", c.id), byJob("queue.attempt", c.id)
		if len(submit) != 1 || len(waits) != c.attempts || len(attempts) != c.attempts {
			t.Fatalf("job %d: %d submit, %d wait, %d attempt spans; want 1, %d, %d:\n%s", c.id, len(submit), len(waits), len(attempts),
				c.attempts, c.attempts, otlptest.Describe(spans))
		}
		if submit[0].ParentID != caller {
			t.Errorf("job %d: queue.submit's parent %s, want the caller's span %s", c.id, submit[0].ParentID, caller)
		}
		if want := "00-" + trace + "-" + submit[0].SpanID + "-01"; stored[c.id] != want {
			t.Errorf("job %d stores traceparent %s, want its submit span's %s", c.id, stored[c.id], want)
		}
		for _, s := range append(waits, attempts...) {
			if s.ParentID != submit[0].SpanID {
				t.Errorf("job %d: %s's parent %s, want queue.submit %s", c.id, s.Name, s.ParentID, submit[0].SpanID)
			}
		}
		for _, a := range attempts {
			n := a.Attrs["queue.attempt"].(int64)
			b, err := os.ReadFile(filepath.Join(seen, fmt.Sprintf("%d.%d", c.id, n)))
			if err != nil {
				t.Fatalf("job %d attempt %d: the command left no TRACEPARENT: %v", c.id, n, err)
			}
			got := strings.TrimSpace(string(b))
			if want := "00-" + trace + "-" + a.SpanID + "-01"; got != want {
				t.Errorf("job %d attempt %d: the command saw TRACEPARENT=%q, want %q (the queue.attempt span)", c.id, n, got, want)
			}
			switch {
			case c.id == flaky && n == 1:
				if a.Attrs["queue.outcome"] != "error" || !strings.Contains(a.Status.GetMessage(), "first try fails") {
					t.Errorf("the failed attempt: outcome %v, status %v; want error with the stderr", a.Attrs["queue.outcome"], a.Status)
				}
			case a.Attrs["queue.outcome"] != "ok":
				t.Errorf("job %d attempt %d: outcome %v, want ok", c.id, n, a.Attrs["queue.outcome"])
			}
		}
		for _, w := range waits {
			if retry := w.Attrs["queue.retry"] == true; retry != (w.Attrs["queue.attempt"] == int64(2)) {
				t.Errorf("job %d: the wait of attempt %v says retry=%v", c.id, w.Attrs["queue.attempt"], retry)
			}
		}
	}
}

// submitTraced submits body with a traceparent header and returns the job's id.
func submitTraced(t *testing.T, url string, body map[string]any, traceparent string) int64 {
	t.Helper()
	b, _ := json.Marshal(body)
	req, _ := http.NewRequest("POST", url+"/api/jobs", bytes.NewReader(b))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("traceparent", traceparent)
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var m map[string]any
	json.NewDecoder(resp.Body).Decode(&m)
	if resp.StatusCode != 201 {
		t.Fatalf("submit: %d %v", resp.StatusCode, m)
	}
	return id(m)
}
