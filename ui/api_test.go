package ui_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/queuehq/queue/app"
	"github.com/queuehq/queue/internal/openapitest"
	"github.com/queuehq/queue/memory"
	"github.com/queuehq/queue/sqlite"
	"github.com/queuehq/queue/ui"
)

// server is a test server over a store, talking real HTTP.
type server struct {
	t     *testing.T
	url   string
	svc   *app.Service
	clock *app.FakeClock
}

func newServer(t *testing.T, opts ui.Options, withSQLite bool) *server {
	t.Helper()
	bus := app.NewBus()
	clock := app.NewFakeClock(time.Now().UTC().Truncate(time.Millisecond))
	sopts := app.StoreOptions{Clock: clock, Bus: bus}
	var store app.Store = memory.New(sopts)
	if withSQLite {
		s, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "q.db"), sqlite.Options{StoreOptions: sopts, Sync: "normal"})
		if err != nil {
			t.Fatal(err)
		}
		store = s
	}
	t.Cleanup(func() { store.Close() })
	cfg := opts.Service
	if cfg == nil {
		opts.Service = app.NewService(store, nil, clock, bus, zerolog.Nop())
	}
	opts.Log = zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel)
	srv := httptest.NewServer(openapitest.Handler(t, ui.New(opts))) // every answer checked against the OpenAPI document
	t.Cleanup(srv.Close)
	return &server{t: t, url: srv.URL, svc: opts.Service, clock: clock}
}

type answer struct {
	status int
	header http.Header
	body   []byte
}

func (a answer) json(t *testing.T) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(a.body, &m); err != nil {
		t.Fatalf("answer %d is not a JSON object: %v: %s", a.status, err, a.body)
	}
	return m
}

func (a answer) code(t *testing.T) string {
	t.Helper()
	e, _ := a.json(t)["error"].(map[string]any)
	if e == nil {
		t.Fatalf("answer %d has no error object: %s", a.status, a.body)
	}
	if msg, _ := e["message"].(string); msg == "" {
		t.Fatalf("error without a message: %s", a.body)
	}
	c, _ := e["code"].(string)
	return c
}

func (s *server) do(method, path, contentType string, body io.Reader, hdr ...string) answer {
	s.t.Helper()
	req, err := http.NewRequest(method, s.url+path, body)
	if err != nil {
		s.t.Fatal(err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return answer{resp.StatusCode, resp.Header, b}
}

func (s *server) post(path, body string, hdr ...string) answer {
	s.t.Helper()
	return s.do(http.MethodPost, path, "application/json", strings.NewReader(body), hdr...)
}

func (s *server) get(path string) answer {
	s.t.Helper()
	return s.do(http.MethodGet, path, "", nil)
}

func num(m map[string]any, k string) int64 {
	f, _ := m[k].(float64)
	return int64(f)
}

func (s *server) submit(body string) map[string]any {
	s.t.Helper()
	a := s.post("/api/jobs", body)
	if a.status != http.StatusCreated {
		s.t.Fatalf("submit %s: %d %s", body, a.status, a.body)
	}
	return a.json(s.t)
}

func (s *server) claim(queue string) map[string]any {
	s.t.Helper()
	a := s.post("/api/queues/"+queue+"/claim", `{"worker_id":"t","limit":1}`)
	if a.status != http.StatusOK {
		s.t.Fatalf("claim: %d %s", a.status, a.body)
	}
	jobs := a.json(s.t)["jobs"].([]any)
	if len(jobs) != 1 {
		s.t.Fatalf("claim: %d jobs, want 1", len(jobs))
	}
	return jobs[0].(map[string]any)
}

func TestLifecycleOverHTTP(t *testing.T) {
	s := newServer(t, ui.Options{}, true)
	job := s.submit(`{"queue":"mail","kind":"send","payload":{"to":"x"},"tags":["a"]}`)
	if job["status"] != "queued" || job["queue"] != "mail" || num(job, "id") <= 0 {
		t.Fatalf("submitted: %v", job)
	}
	id := num(job, "id")
	c := s.claim("mail")
	lease := num(c, "lease")
	if num(c, "id") != id || lease != 1 || c["lease_expires_at"] == nil || c["status"] != "processing" {
		t.Fatalf("claimed: %v", c)
	}
	hb := s.post(fmt.Sprintf("/api/jobs/%d/heartbeat", id), fmt.Sprintf(`{"lease":%d,"extend":"2m"}`, lease))
	if hb.status != 200 || hb.json(t)["cancel_requested"] != false || hb.json(t)["lease_expires_at"] == nil {
		t.Fatalf("heartbeat: %d %s", hb.status, hb.body)
	}
	done := s.post(fmt.Sprintf("/api/jobs/%d/complete", id), fmt.Sprintf(`{"lease":%d,"result":{"sent":true}}`, lease))
	if done.status != 200 {
		t.Fatalf("complete: %d %s", done.status, done.body)
	}
	got := s.get(fmt.Sprintf("/api/jobs/%d", id)).json(t)
	if got["status"] != "done" || got["result"].(map[string]any)["sent"] != true || got["finished_at"] == nil {
		t.Fatalf("after complete: %v", got)
	}
	// The stale lease of a finished job.
	for _, p := range []string{"heartbeat", "complete", "fail", "snooze"} {
		a := s.post(fmt.Sprintf("/api/jobs/%d/%s", id, p), fmt.Sprintf(`{"lease":%d}`, lease))
		if a.status != http.StatusConflict || a.code(t) != "lease_lost" {
			t.Errorf("%s with a stale lease: %d %s", p, a.status, a.body)
		}
	}
	if after := s.get(fmt.Sprintf("/api/jobs/%d", id)); !bytes.Equal(after.body, s.get(fmt.Sprintf("/api/jobs/%d", id)).body) || after.json(t)["status"] != "done" {
		t.Fatalf("stale calls changed the job: %s", after.body)
	}
	ev := s.get(fmt.Sprintf("/api/jobs/%d?events=true", id)).json(t)["events"].([]any)
	if len(ev) != 3 || ev[0].(map[string]any)["type"] != "job.submitted" || ev[2].(map[string]any)["type"] != "job.succeeded" {
		t.Fatalf("events: %v", ev)
	}
}

func TestFailIntoDeadLetterQueueOverHTTP(t *testing.T) {
	s := newServer(t, ui.Options{}, true)
	id := num(s.submit(`{"kind":"k","max_attempts":2}`), "id")
	c := s.claim("default")
	a := s.post(fmt.Sprintf("/api/jobs/%d/fail", id), fmt.Sprintf(`{"lease":%d,"error":"first"}`, num(c, "lease")))
	if a.status != 200 || a.json(t)["outcome"] != "retry_scheduled" {
		t.Fatalf("first fail: %d %s", a.status, a.body)
	}
	s.clock.Advance(time.Hour)
	c = s.claim("default")
	a = s.post(fmt.Sprintf("/api/jobs/%d/fail", id), fmt.Sprintf(`{"lease":%d,"error":"second"}`, num(c, "lease")))
	if a.status != 200 || a.json(t)["outcome"] != "dead_lettered" {
		t.Fatalf("last fail: %d %s", a.status, a.body)
	}
	got := s.get(fmt.Sprintf("/api/jobs/%d", id)).json(t)
	dl, _ := got["dead_letter"].(map[string]any)
	if got["status"] != "dead_letter" || dl == nil || dl["dead_letter_reason"] != "max_attempts" || dl["last_error"] != "second" {
		t.Fatalf("dead-lettered job: %v", got)
	}
	// retry:false goes straight there.
	id2 := num(s.submit(`{"kind":"k"}`), "id")
	c = s.claim("default")
	a = s.post(fmt.Sprintf("/api/jobs/%d/fail", id2), fmt.Sprintf(`{"lease":%d,"error":"bad input","retry":false}`, num(c, "lease")))
	if a.json(t)["outcome"] != "dead_lettered" {
		t.Fatalf("retry:false: %s", a.body)
	}
	if d := s.get(fmt.Sprintf("/api/dlq/%d", id2)).json(t); d["dead_letter_reason"] != "permanent_failure" || d["status"] != "dead_letter" {
		t.Fatalf("DLQ row: %v", d)
	}
}

func TestIdempotencyOverHTTP(t *testing.T) {
	s := newServer(t, ui.Options{}, false)
	first := s.post("/api/jobs", `{"kind":"k","payload":{"a":1}}`, "Idempotency-Key", "abc")
	if first.status != 201 {
		t.Fatalf("first: %d %s", first.status, first.body)
	}
	again := s.post("/api/jobs", `{"kind":"k","payload":{"a":1}}`, "Idempotency-Key", "abc")
	if again.status != 200 || again.header.Get("Idempotent-Replayed") != "true" || num(again.json(t), "id") != num(first.json(t), "id") {
		t.Fatalf("repeat: %d %v %s", again.status, again.header, again.body)
	}
	byField := s.post("/api/jobs", `{"kind":"k","payload":{"a":1},"idempotency_key":"abc"}`)
	if byField.status != 200 || num(byField.json(t), "id") != num(first.json(t), "id") {
		t.Fatalf("field form: %d %s", byField.status, byField.body)
	}
	conflict := s.post("/api/jobs", `{"kind":"k","payload":{"a":2}}`, "Idempotency-Key", "abc")
	if conflict.status != 409 || conflict.code(t) != "idempotency_conflict" {
		t.Fatalf("conflict: %d %s", conflict.status, conflict.body)
	}
}

func TestCancelAnswers(t *testing.T) {
	s := newServer(t, ui.Options{}, false)
	q := num(s.submit(`{"kind":"k"}`), "id")
	if a := s.post(fmt.Sprintf("/api/jobs/%d/cancel", q), ``); a.status != 200 || a.json(t)["status"] != "cancelled" {
		t.Fatalf("cancel queued: %d %s", a.status, a.body)
	}
	if a := s.post(fmt.Sprintf("/api/jobs/%d/cancel", q), ``); a.status != 409 || a.code(t) != "illegal_transition" {
		t.Fatalf("cancel cancelled: %d %s", a.status, a.body)
	}
	p := num(s.submit(`{"kind":"k"}`), "id")
	c := s.claim("default")
	if a := s.do(http.MethodPost, fmt.Sprintf("/api/jobs/%d/cancel", p), "", nil); a.status != 202 || a.json(t)["cancel_requested"] != true {
		t.Fatalf("cancel processing: %d %s", a.status, a.body)
	}
	hb := s.post(fmt.Sprintf("/api/jobs/%d/heartbeat", p), fmt.Sprintf(`{"lease":%d}`, num(c, "lease")))
	if hb.json(t)["cancel_requested"] != true {
		t.Fatalf("heartbeat does not show the cancel request: %s", hb.body)
	}
	if a := s.post(fmt.Sprintf("/api/jobs/%d/cancel", p), fmt.Sprintf(`{"lease":%d}`, num(c, "lease"))); a.status != 200 || a.json(t)["status"] != "cancelled" {
		t.Fatalf("worker acknowledges: %d %s", a.status, a.body)
	}
}

func TestBatchSubmitAndComplete(t *testing.T) {
	s := newServer(t, ui.Options{}, true)
	a := s.post("/api/jobs/batch", `{"jobs":[{"kind":"a"},{"kind":"b","priority":-1},{"kind":"c"}]}`)
	if a.status != 201 || len(a.json(t)["jobs"].([]any)) != 3 {
		t.Fatalf("batch: %d %s", a.status, a.body)
	}
	bad := s.post("/api/jobs/batch", `{"jobs":[{"kind":"ok"},{"kind":"bad kind!"}]}`)
	if bad.status != 400 || bad.code(t) != "invalid_field" || !strings.Contains(string(bad.body), "jobs[1].kind") {
		t.Fatalf("bad batch: %d %s", bad.status, bad.body)
	}
	if n := len(s.get("/api/jobs").json(t)["jobs"].([]any)); n != 3 {
		t.Fatalf("a refused batch stored jobs: %d jobs", n)
	}
	cl := s.post("/api/queues/default/claim", `{"limit":3}`).json(t)["jobs"].([]any)
	if len(cl) != 3 || cl[0].(map[string]any)["kind"] != "b" {
		t.Fatalf("claim order: %v", cl)
	}
	items := []string{}
	for _, j := range cl {
		m := j.(map[string]any)
		items = append(items, fmt.Sprintf(`{"id":%d,"lease":%d,"result":1}`, num(m, "id"), num(m, "lease")))
	}
	items = append(items, fmt.Sprintf(`{"id":%d,"lease":99}`, num(cl[0].(map[string]any), "id")))
	res := s.post("/api/jobs/complete", `{"jobs":[`+strings.Join(items, ",")+`]}`)
	rs := res.json(t)["results"].([]any)
	if res.status != 200 || len(rs) != 4 || rs[0].(map[string]any)["ok"] != true || rs[3].(map[string]any)["ok"] != false ||
		rs[3].(map[string]any)["error"].(map[string]any)["code"] != "lease_lost" {
		t.Fatalf("complete batch: %d %s", res.status, res.body)
	}
}

// Malformed requests get a 4xx JSON error with a code; none gets a 500.
func TestMalformedRequestsGetClearErrors(t *testing.T) {
	s := newServer(t, ui.Options{}, true)
	id := num(s.submit(`{"kind":"k"}`), "id")
	huge := strings.Repeat("x", 3<<20)
	cases := []struct {
		method, path, ctype, body string
		status                    int
		code                      string
	}{
		{"POST", "/api/jobs", "application/json", `{"kind":"k"`, 400, "invalid_json"},
		{"POST", "/api/jobs", "application/json", `{"kind":`, 400, "invalid_json"},
		{"POST", "/api/jobs", "application/json", `{kind:"k"}`, 400, "invalid_json"},
		{"POST", "/api/jobs", "application/json", ``, 400, "invalid_json"},
		{"POST", "/api/jobs", "application/json", `null`, 400, "invalid_field"},
		{"POST", "/api/jobs", "application/json", `[]`, 400, "invalid_json"},
		{"POST", "/api/jobs", "application/json", `"k"`, 400, "invalid_json"},
		{"POST", "/api/jobs", "application/json", `{"kind":"k"} {"kind":"k"}`, 400, "invalid_json"},
		{"POST", "/api/jobs", "application/json", `{}`, 400, "invalid_field"},
		{"POST", "/api/jobs", "application/json", `{"kind":5}`, 400, "invalid_field"},
		{"POST", "/api/jobs", "application/json", `{"kind":""}`, 400, "invalid_field"},
		{"POST", "/api/jobs", "application/json", `{"kind":"has space"}`, 400, "invalid_field"},
		{"POST", "/api/jobs", "application/json", `{"kind":"` + strings.Repeat("k", 129) + `"}`, 400, "invalid_field"},
		{"POST", "/api/jobs", "application/json", `{"kind":"k","queue":"a/b"}`, 400, "invalid_field"},
		{"POST", "/api/jobs", "application/json", `{"kind":"k","queue":""}`, 201, ""},
		{"POST", "/api/jobs", "application/json", `{"kind":"k","queue":"` + strings.Repeat("q", 65) + `"}`, 400, "invalid_field"},
		{"POST", "/api/jobs", "application/json", `{"kind":"k","priority":1001}`, 400, "invalid_field"},
		{"POST", "/api/jobs", "application/json", `{"kind":"k","priority":-1001}`, 400, "invalid_field"},
		{"POST", "/api/jobs", "application/json", `{"kind":"k","priority":"high"}`, 400, "invalid_field"},
		{"POST", "/api/jobs", "application/json", `{"kind":"k","priority":1.5}`, 400, "invalid_field"},
		{"POST", "/api/jobs", "application/json", `{"kind":"k","priority":99999999999999999999}`, 400, "invalid_field"},
		{"POST", "/api/jobs", "application/json", `{"kind":"k","max_attempts":0}`, 400, "invalid_field"},
		{"POST", "/api/jobs", "application/json", `{"kind":"k","max_attempts":1001}`, 400, "invalid_field"},
		{"POST", "/api/jobs", "application/json", `{"kind":"k","delay":"soon"}`, 400, "invalid_field"},
		{"POST", "/api/jobs", "application/json", `{"kind":"k","delay":"-5s"}`, 400, "invalid_field"},
		{"POST", "/api/jobs", "application/json", `{"kind":"k","delay":"5s","run_at":"2030-01-01T00:00:00Z"}`, 400, "invalid_field"},
		{"POST", "/api/jobs", "application/json", `{"kind":"k","run_at":"tomorrow"}`, 400, "invalid_field"},
		{"POST", "/api/jobs", "application/json", `{"kind":"k","timeout":"0s"}`, 400, "invalid_field"},
		{"POST", "/api/jobs", "application/json", `{"kind":"k","timeout":"48h"}`, 400, "invalid_field"},
		{"POST", "/api/jobs", "application/json", `{"kind":"k","ttl":"-1s"}`, 400, "invalid_field"},
		{"POST", "/api/jobs", "application/json", `{"kind":"k","tags":"a"}`, 400, "invalid_field"},
		{"POST", "/api/jobs", "application/json", `{"kind":"k","tags":["a b"]}`, 400, "invalid_field"},
		{"POST", "/api/jobs", "application/json", `{"kind":"k","tags":["1","2","3","4","5","6","7","8","9","10","11","12","13","14","15","16","17"]}`, 400, "invalid_field"},
		{"POST", "/api/jobs", "application/json", `{"kind":"k","idempotency_key":"` + strings.Repeat("i", 256) + `"}`, 400, "invalid_field"},
		{"POST", "/api/jobs", "application/json", `{"kind":"k","surprise":1}`, 400, "invalid_field"},
		{"POST", "/api/jobs", "application/json", `{"kind":"k","payload":"` + strings.Repeat("p", 1<<20) + `"}`, 413, "too_large"},
		{"POST", "/api/jobs", "application/json", `{"kind":"k","payload":"` + huge + `"}`, 413, "too_large"},
		{"POST", "/api/jobs", "text/plain", `{"kind":"k"}`, 415, "unsupported_media_type"},
		{"POST", "/api/jobs", "application/x-www-form-urlencoded", `kind=k`, 415, "unsupported_media_type"},
		{"POST", "/api/jobs", "application/json; charset=utf-8", `{"kind":"k"}`, 201, ""},
		{"POST", "/api/jobs/batch", "application/json", `{"jobs":[]}`, 400, "invalid_field"},
		{"POST", "/api/jobs/batch", "application/json", `{"jobs":{}}`, 400, "invalid_field"},
		{"POST", "/api/jobs/batch", "application/json", `{}`, 400, "invalid_field"},
		{"GET", "/api/jobs/abc", "", ``, 400, "invalid_field"},
		{"GET", "/api/jobs/-1", "", ``, 400, "invalid_field"},
		{"GET", "/api/jobs/99999999999999999999", "", ``, 400, "invalid_field"},
		{"GET", "/api/jobs/987654", "", ``, 404, "not_found"},
		{"GET", fmt.Sprintf("/api/jobs/%d?wait=forever", id), "", ``, 400, "invalid_field"},
		{"GET", fmt.Sprintf("/api/jobs/%d?wait=2m", id), "", ``, 400, "invalid_field"},
		{"GET", "/api/jobs?limit=0x10", "", ``, 400, "invalid_field"},
		{"GET", "/api/jobs?limit=5000", "", ``, 400, "invalid_field"},
		{"GET", "/api/jobs?status=running", "", ``, 400, "invalid_field"},
		{"GET", "/api/jobs?cursor=%27%20OR%201%3D1%20--", "", ``, 400, "invalid_field"},
		{"GET", "/api/jobs?queue=a%3BDROP", "", ``, 400, "invalid_field"},
		{"GET", "/api/jobs?order=sideways", "", ``, 400, "invalid_field"},
		{"POST", "/api/jobs/987654/complete", "application/json", `{"lease":1}`, 404, "not_found"},
		{"POST", fmt.Sprintf("/api/jobs/%d/complete", id), "application/json", `{}`, 400, "invalid_field"},
		{"POST", fmt.Sprintf("/api/jobs/%d/complete", id), "application/json", `{"lease":"one"}`, 400, "invalid_field"},
		{"POST", fmt.Sprintf("/api/jobs/%d/complete", id), "application/json", `{"lease":1,"result":{"a":}}`, 400, "invalid_json"},
		{"POST", fmt.Sprintf("/api/jobs/%d/heartbeat", id), "application/json", `{"lease":1,"extend":"-1s"}`, 400, "invalid_field"},
		{"POST", fmt.Sprintf("/api/jobs/%d/fail", id), "application/json", `{"lease":1,"retry":"no"}`, 400, "invalid_field"},
		{"POST", fmt.Sprintf("/api/jobs/%d/fail", id), "application/json", `{"lease":1,"retry_in":"never"}`, 400, "invalid_field"},
		{"POST", fmt.Sprintf("/api/jobs/%d/snooze", id), "application/json", `{"lease":1,"delay":"-1m"}`, 400, "invalid_field"},
		{"POST", "/api/jobs/complete", "application/json", `{"jobs":[{"id":1}]}`, 400, "invalid_field"},
		{"POST", "/api/jobs/complete", "application/json", `{"jobs":[]}`, 400, "invalid_field"},
		{"POST", "/api/queues/default/claim", "application/json", `{"limit":0}`, 200, ""},
		{"POST", "/api/queues/default/claim", "application/json", `{"limit":1001}`, 400, "invalid_field"},
		{"POST", "/api/queues/default/claim", "application/json", `{"limit":-1}`, 400, "invalid_field"},
		{"POST", "/api/queues/default/claim", "application/json", `{"wait":"61s"}`, 400, "invalid_field"},
		{"POST", "/api/queues/default/claim", "application/json", `{"kinds":"k"}`, 400, "invalid_field"},
		{"POST", "/api/queues/bad%20queue/claim", "application/json", `{}`, 400, "invalid_field"},
		{"GET", "/api/dlq?reason=bored", "", ``, 400, "invalid_field"},
		{"GET", "/api/dlq/12345", "", ``, 404, "not_found"},
		{"POST", "/api/dlq/12345/replay", "application/json", `{}`, 404, "not_found"},
		{"POST", "/api/dlq/12345/replay", "application/json", `{"delay":"x"}`, 400, "invalid_field"},
		{"DELETE", "/api/dlq/12345", "", ``, 404, "not_found"},
		{"POST", "/api/dlq/purge", "application/json", `{}`, 400, "filter_required"},
		{"POST", "/api/dlq/replay", "", ``, 400, "filter_required"},
		{"POST", "/api/dlq/move", "application/json", `{"reason":"max_attempts"}`, 400, "filter_required"},
		{"POST", "/api/dlq/replay", "application/json", `{"queue":"q","rate":-1}`, 400, "invalid_field"},
		{"GET", "/api/nothing-here", "", ``, 404, "not_found"},
		{"PUT", "/api/jobs", "application/json", `{}`, 405, "method_not_allowed"},
		{"GET", "/api/events?queue=a%20b", "", ``, 400, "invalid_field"},
		{"GET", "/api/audit?limit=x", "", ``, 400, "invalid_field"},
		{"POST", "/api/once/k/done", "application/json", `{}`, 400, "invalid_field"},
	}
	for _, tc := range cases {
		var body io.Reader
		if tc.body != "" {
			body = strings.NewReader(tc.body)
		}
		a := s.do(tc.method, tc.path, tc.ctype, body)
		name := tc.method + " " + tc.path + " " + app.TruncateString(tc.body, 60)
		if a.status != tc.status {
			t.Errorf("%s: %d %s, want %d", name, a.status, app.TruncateString(string(a.body), 300), tc.status)
			continue
		}
		if tc.code != "" {
			if got := a.code(t); got != tc.code {
				t.Errorf("%s: code %q, want %q", name, got, tc.code)
			}
			if strings.Contains(string(a.body), "goroutine") || strings.Contains(string(a.body), ".go:") {
				t.Errorf("%s: answer leaks internals: %s", name, a.body)
			}
		}
	}
	if len(cases) < 50 {
		t.Fatalf("only %d cases", len(cases))
	}
}

// A body above the limit is refused from its Content-Length, before it is read.
func TestHugeBodyRefusedBeforeReading(t *testing.T) {
	s := newServer(t, ui.Options{}, false)
	pr, pw := io.Pipe()
	defer pw.Close()
	req, _ := http.NewRequestWithContext(context.Background(), http.MethodPost, s.url+"/api/jobs", pr)
	req.Header.Set("Content-Type", "application/json")
	req.ContentLength = 1 << 30 // announced, never sent
	done := make(chan *http.Response, 1)
	go func() {
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Error(err)
			done <- nil
			return
		}
		done <- resp
	}()
	pw.Write([]byte(`{"kind":"k","payload":"`))
	select {
	case resp := <-done:
		if resp == nil {
			return
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusRequestEntityTooLarge {
			t.Fatalf("status %d, want 413", resp.StatusCode)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the server waited for a 1 GiB body instead of refusing it")
	}
}

func TestWaitForTerminalJob(t *testing.T) {
	s := newServer(t, ui.Options{}, false)
	id := num(s.submit(`{"kind":"k"}`), "id")
	c := s.claim("default")
	got := make(chan answer, 1)
	go func() { got <- s.get(fmt.Sprintf("/api/jobs/%d?wait=20s", id)) }()
	time.Sleep(50 * time.Millisecond)
	s.post(fmt.Sprintf("/api/jobs/%d/complete", id), fmt.Sprintf(`{"lease":%d}`, num(c, "lease")))
	select {
	case a := <-got:
		if a.json(t)["status"] != "done" {
			t.Fatalf("wait answered %s", a.body)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("wait did not answer after the job finished")
	}
}

func TestHealthAndReadiness(t *testing.T) {
	s := newServer(t, ui.Options{}, true)
	if a := s.get("/healthz"); a.status != 200 {
		t.Fatalf("healthz %d", a.status)
	}
	if a := s.get("/readyz"); a.status != 200 {
		t.Fatalf("readyz %d %s", a.status, a.body)
	}
	s.svc.Store.Close()
	if a := s.get("/readyz"); a.status != 503 || a.code(t) != "unavailable" {
		t.Fatalf("readyz after close: %d %s", a.status, a.body)
	}
	if a := s.post("/api/jobs", `{"kind":"k"}`); a.status != 503 || a.code(t) != "unavailable" {
		t.Fatalf("submit after close: %d %s", a.status, a.body)
	}
}
