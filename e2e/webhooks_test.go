package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	queueclient "github.com/queuehq/queue/client"
)

// hook is a receiver of webhooks: it records every request and answers
// with the next of its statuses (the last one repeats).
type hook struct {
	mu       sync.Mutex
	reqs     []hookRequest
	statuses []int
	srv      *httptest.Server
}

type hookRequest struct {
	header http.Header
	body   []byte
	status int
}

func newHook(t *testing.T, statuses ...int) *hook {
	h := &hook{statuses: statuses}
	h.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		h.mu.Lock()
		st := h.statuses[min(len(h.reqs), len(h.statuses)-1)]
		h.reqs = append(h.reqs, hookRequest{r.Header.Clone(), b, st})
		h.mu.Unlock()
		w.WriteHeader(st)
		fmt.Fprintf(w, "answer %d", st)
	}))
	t.Cleanup(h.srv.Close)
	return h
}

func (h *hook) got() []hookRequest {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]hookRequest(nil), h.reqs...)
}

// waitFor polls ok every 50 ms for up to within.
func waitFor(t *testing.T, within time.Duration, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v", what, within)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// claimOne claims the one job of queue q and returns its id and lease.
func claimOne(t *testing.T, url, q string) (int64, int64) {
	t.Helper()
	st, m, err := call("POST", url+"/api/queues/"+q+"/claim", map[string]any{"limit": 1})
	jobs, _ := m["jobs"].([]any)
	if err != nil || st != 200 || len(jobs) != 1 {
		t.Fatalf("claim from %s: %d %v %v", q, st, m, err)
	}
	j := jobs[0].(map[string]any)
	return id(j), int64(j["lease"].(float64))
}

const (
	e2eHookSecret     = "e2e-subscription-secret-0123"
	e2eCallbackSecret = "e2e-callback-secret-0123456"
)

// Issue 27, done-when 1 and 2, against the real binary: a subscription to
// job.dead_lettered (its receiver failing three times, then taking it) gets
// the dead-letter of a job once successfully, in 4 signed requests of one
// delivery id; the delivery is a job of _webhooks, done after 4 attempts,
// and the subscription's delivery history says so. A callback_url at
// 127.0.0.1 is refused (400 invalid_field naming the config keys) by a
// server whose config does not allow it, and called back, signed with the
// callback secret, by one whose does.
func TestWebhooksEndToEnd(t *testing.T) {
	rcv := newHook(t, 500, 500, 500, 200)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "queue.toml")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf(`
[webhooks]
allow = ["127.0.0.1"]
callback_secret = %q

[[webhooks.subscriptions]]
name = "dead"
url = %q
secret = %q
events = ["job.dead_lettered"]
`, e2eCallbackSecret, rcv.srv.URL+"/hook", e2eHookSecret)), 0o600); err != nil {
		t.Fatal(err)
	}
	p := start(t, dir, "", "--config", cfg)

	t.Run("dead-lettered, delivered after three failures", func(t *testing.T) {
		jobID := submitJob(t, p.url, map[string]any{"queue": "e2e", "kind": "doomed", "max_attempts": 1})
		cid, lease := claimOne(t, p.url, "e2e")
		if st, m, err := call("POST", fmt.Sprintf("%s/api/jobs/%d/fail", p.url, cid), map[string]any{"lease": lease, "error": "boom"}); err != nil || st != 200 {
			t.Fatalf("fail: %d %v %v", st, m, err)
		}
		// Backoff from 1 s: 1 + 2 + 4 s and jitter.
		waitFor(t, 40*time.Second, "the receiver answered 200", func() bool {
			reqs := rcv.got()
			return len(reqs) > 0 && reqs[len(reqs)-1].status == 200
		})
		time.Sleep(300 * time.Millisecond) // no fifth request comes
		reqs := rcv.got()
		if len(reqs) != 4 {
			t.Fatalf("the receiver got %d requests, want 4", len(reqs))
		}
		deliveryID := reqs[0].header.Get("Queue-Webhook-Id")
		ok2xx := 0
		for i, r := range reqs {
			if err := queueclient.VerifyWebhook(e2eHookSecret, r.header, r.body, time.Minute); err != nil {
				t.Fatalf("request %d: %v", i, err)
			}
			if r.header.Get("Queue-Webhook-Id") != deliveryID || r.header.Get("Queue-Event") != "job.dead_lettered" {
				t.Fatalf("request %d: id %q event %q, want %q job.dead_lettered", i, r.header.Get("Queue-Webhook-Id"), r.header.Get("Queue-Event"), deliveryID)
			}
			if r.status/100 == 2 {
				ok2xx++
			}
			var body struct {
				ID    string         `json:"id"`
				Type  string         `json:"type"`
				JobID int64          `json:"job_id"`
				Queue string         `json:"queue"`
				Job   map[string]any `json:"job"`
			}
			if err := json.Unmarshal(r.body, &body); err != nil || body.ID != deliveryID || body.Type != "job.dead_lettered" || body.JobID != jobID ||
				body.Queue != "e2e" || body.Job["status"] != "dead_letter" {
				t.Fatalf("request %d body: %s (%v)", i, r.body, err)
			}
		}
		if ok2xx != 1 {
			t.Fatalf("%d requests answered 2xx, want exactly 1", ok2xx)
		}
		did, _ := strconv.ParseInt(deliveryID, 10, 64)
		job := waitJob(t, p.url, did, "done")
		if job["queue"] != "_webhooks" || job["kind"] != "webhook" || job["attempts"] != float64(4) || len(job["errors"].([]any)) != 3 ||
			!strings.HasPrefix(firstError(job), "HTTP 500: answer 500") {
			t.Fatalf("the delivery job: %v", jsonOf(job))
		}
		if strings.Contains(jsonOf(job), e2eHookSecret) {
			t.Fatal("the delivery job holds the secret")
		}
		st, list, err := call("GET", p.url+"/api/jobs?queue=_webhooks", nil)
		if err != nil || st != 200 || !strings.Contains(jsonOf(list["jobs"]), `"id":`+deliveryID+`,`) {
			t.Fatalf("GET /api/jobs?queue=_webhooks: %d %v %v", st, list, err)
		}
		st, hist, err := call("GET", p.url+"/api/webhooks/dead/deliveries", nil)
		ds, _ := hist["deliveries"].([]any)
		if err != nil || st != 200 || len(ds) != 1 {
			t.Fatalf("GET /api/webhooks/dead/deliveries: %d %v %v", st, hist, err)
		}
		d := ds[0].(map[string]any)
		if d["job_id"] != float64(did) || d["status"] != "done" || d["attempts"] != float64(4) || d["response_status"] != float64(200) ||
			d["event"] != "job.dead_lettered" || d["event_job_id"] != float64(jobID) {
			t.Fatalf("the delivery in the history: %v", d)
		}
	})

	t.Run("callback_url allowed by the config", func(t *testing.T) {
		cb := newHook(t, 204)
		jobID := submitJob(t, p.url, map[string]any{"queue": "cb", "kind": "ping", "callback_url": cb.srv.URL + "/done?ref=7"})
		cid, lease := claimOne(t, p.url, "cb")
		if cid != jobID {
			t.Fatalf("claimed %d, want %d", cid, jobID)
		}
		if st, m, err := call("POST", fmt.Sprintf("%s/api/jobs/%d/complete", p.url, cid), map[string]any{"lease": lease, "result": map[string]any{"ok": true}}); err != nil || st != 200 {
			t.Fatalf("complete: %d %v %v", st, m, err)
		}
		waitFor(t, 20*time.Second, "the callback", func() bool { return len(cb.got()) > 0 })
		r := cb.got()[0]
		if err := queueclient.VerifyWebhook(e2eCallbackSecret, r.header, r.body, time.Minute); err != nil {
			t.Fatalf("the callback is not signed with the callback secret: %v", err)
		}
		if queueclient.VerifyWebhook(e2eHookSecret, r.header, r.body, time.Minute) == nil {
			t.Fatal("the callback verifies with a subscription's secret")
		}
		var body struct {
			Type  string         `json:"type"`
			JobID int64          `json:"job_id"`
			Job   map[string]any `json:"job"`
		}
		if err := json.Unmarshal(r.body, &body); err != nil || body.Type != "job.succeeded" || body.JobID != jobID ||
			body.Job["status"] != "done" || jsonOf(body.Job["result"]) != `{"ok":true}` {
			t.Fatalf("the callback's body: %s (%v)", r.body, err)
		}
	})

	t.Run("callback_url refused without allow", func(t *testing.T) {
		q := start(t, t.TempDir(), "")
		cb := newHook(t, 204)
		st, m, err := call("POST", q.url+"/api/jobs", map[string]any{"kind": "ping", "callback_url": cb.srv.URL + "/"})
		e, _ := m["error"].(map[string]any)
		if err != nil || st != 400 || e["code"] != "invalid_field" || !strings.Contains(fmt.Sprint(e["message"]), "allow") {
			t.Fatalf("a callback_url at 127.0.0.1 without allow: %d %v %v, want 400 invalid_field naming allow", st, m, err)
		}
		st, m, _ = call("GET", q.url+"/api/jobs", nil)
		if jobs, _ := m["jobs"].([]any); st != 200 || len(jobs) != 0 {
			t.Fatalf("the refused submission made a job: %v", m)
		}
	})
}

// The Python receiver of docs/integrations.md, run for real: it takes a
// signed test delivery (the delivery ends done with its 204) and refuses
// a request whose signature does not match (401).
func TestWebhooksPythonReceiverOfTheDocs(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 is not installed")
	}
	doc, err := os.ReadFile("../docs/integrations.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, _ := strings.Cut(string(doc), "## Webhooks")
	_, rest, _ = strings.Cut(rest, "```python\n")
	code, _, ok := strings.Cut(rest, "```")
	if !ok {
		t.Fatal("docs/integrations.md: no python block under ## Webhooks")
	}
	dir := t.TempDir()
	script := filepath.Join(dir, "receiver.py")
	if err := os.WriteFile(script, []byte(code), 0o600); err != nil {
		t.Fatal(err)
	}
	addr := freeAddr(t)
	port := addr[strings.LastIndex(addr, ":")+1:]
	cmd := exec.Command(py, script)
	cmd.Env = append(os.Environ(), "QUEUE_WEBHOOK_SECRET="+e2eHookSecret, "PORT="+port)
	out := &syncBuffer{}
	cmd.Stderr = out
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	printed := make(chan string, 10)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			printed <- sc.Text()
		}
	}()
	waitFor(t, 10*time.Second, "the python receiver listening", func() bool {
		resp, err := http.Post("http://"+addr+"/", "application/json", strings.NewReader("{}"))
		if err == nil {
			resp.Body.Close()
		}
		return err == nil && resp.StatusCode == 401 // unsigned: refused
	})

	cfg := filepath.Join(dir, "queue.toml")
	if err := os.WriteFile(cfg, []byte("[webhooks]\nallow = [\"127.0.0.1\"]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	p := start(t, dir, "", "--config", cfg)
	if st, m, err := call("POST", p.url+"/api/webhooks", map[string]any{"name": "py", "url": "http://" + addr + "/hook",
		"secret": e2eHookSecret, "events": []string{"job.succeeded"}}); err != nil || st != 201 {
		t.Fatalf("create the subscription: %d %v %v", st, m, err)
	}
	st, m, err := call("POST", p.url+"/api/webhooks/py/test", nil)
	if err != nil || st != 201 {
		t.Fatalf("test delivery: %d %v %v", st, m, err)
	}
	did := int64(m["job_id"].(float64))
	job := waitJob(t, p.url, did, "done")
	if !strings.Contains(jsonOf(job["result"]), `"status":204`) {
		t.Fatalf("the test delivery: %v\npython: %s", jsonOf(job), out.String())
	}
	select {
	case line := <-printed:
		if !strings.HasPrefix(line, strconv.FormatInt(did, 10)+" webhook.test") {
			t.Fatalf("the receiver printed %q", line)
		}
	case <-time.After(5 * time.Second):
		t.Fatalf("the receiver printed nothing; stderr: %s", out.String())
	}
	// A body changed on the way: refused.
	body := []byte(`{"id":"1","type":"job.succeeded","job_id":1}`)
	req, _ := http.NewRequest("POST", "http://"+addr+"/hook", bytes.NewReader(body))
	req.Header.Set("Queue-Signature", fmt.Sprintf("t=%d,v1=%s", time.Now().Unix(), strings.Repeat("0", 64)))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 401 {
		t.Fatalf("a forged signature: %d, want 401", resp.StatusCode)
	}
}
