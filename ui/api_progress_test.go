package ui_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/queuehq/queue/app"
	"github.com/queuehq/queue/sqlite"
	"github.com/queuehq/queue/ui"
)

// A worker reports progress and log lines under its lease; the job's
// answer shows the progress, GET .../log the lines of each attempt.
func TestProgressAndLogOverHTTP(t *testing.T) {
	s := newServer(t, ui.Options{}, true)
	id := num(s.submit(`{"queue":"imports","kind":"csv","max_attempts":3}`), "id")
	c := s.claim("imports")
	lease := num(c, "lease")
	path := func(p string) string { return fmt.Sprintf("/api/jobs/%d/%s", id, p) }

	a := s.post(path("progress"), fmt.Sprintf(`{"lease":%d,"progress":42,"message":"importing <rows>"}`, lease))
	if a.status != 200 {
		t.Fatalf("progress: %d %s", a.status, a.body)
	}
	if m := a.json(t); num(m, "id") != id || num(m, "progress") != 42 || m["progress_message"] != "importing <rows>" || m["cancel_requested"] != false {
		t.Fatalf("progress answered %s", a.body)
	}
	job := s.get(fmt.Sprintf("/api/jobs/%d", id)).json(t)
	if num(job, "progress") != 42 || job["progress_message"] != "importing <rows>" || job["progress_at"] == nil {
		t.Fatalf("the job after progress: %v", job)
	}
	for body, want := range map[string]string{
		fmt.Sprintf(`{"lease":%d,"progress":101}`, lease):        "progress",
		fmt.Sprintf(`{"lease":%d,"progress":-1}`, lease):         "progress",
		fmt.Sprintf(`{"lease":%d,"message":"no number"}`, lease): "progress",
		fmt.Sprintf(`{"lease":%d}`, lease):                       "progress",
		`{"progress":5}`:                                         "lease",
	} {
		a := s.post(path("progress"), body)
		if a.status != 400 || a.code(t) != "invalid_field" || a.json(t)["error"].(map[string]any)["field"] != want {
			t.Errorf("progress %s: %d %s, want 400 invalid_field on %s", body, a.status, a.body, want)
		}
	}
	if a := s.post(path("progress"), fmt.Sprintf(`{"lease":%d,"progress":5}`, lease+1)); a.status != 409 || a.code(t) != "lease_lost" {
		t.Fatalf("progress with a stale lease: %d %s", a.status, a.body)
	}
	long := strings.Repeat("é", 150) // 300 bytes: cut at 200, on a character
	if a := s.post(path("heartbeat"), fmt.Sprintf(`{"lease":%d,"progress":50,"message":%q}`, lease, long)); a.status != 200 {
		t.Fatalf("heartbeat with progress: %d %s", a.status, a.body)
	}
	job = s.get(fmt.Sprintf("/api/jobs/%d", id)).json(t)
	if num(job, "progress") != 50 || job["progress_message"] != strings.Repeat("é", 100) {
		t.Fatalf("after a heartbeat with progress: %v %v", job["progress"], job["progress_message"])
	}

	a = s.post(path("log"), fmt.Sprintf(`{"lease":%d,"lines":[{"line":"one","stream":"stdout"},{"line":"<script>two</script>","stream":"stderr","at":"2026-01-02T03:04:05.678Z"}]}`, lease))
	if a.status != 200 || num(a.json(t), "stored") != 2 || num(a.json(t), "last_seq") != 2 || a.json(t)["truncated"] != false {
		t.Fatalf("log append: %d %s", a.status, a.body)
	}
	if a := s.post(path("log"), fmt.Sprintf(`{"lease":%d,"line":"three"}`, lease)); a.status != 200 || num(a.json(t), "last_seq") != 3 {
		t.Fatalf("one line: %d %s", a.status, a.body)
	}
	many := `{"lease":1,"lines":[` + strings.TrimSuffix(strings.Repeat(`{"line":"x"},`, app.MaxLogLines+1), ",") + `]}`
	for body, want := range map[string]struct {
		status int
		field  string
	}{
		fmt.Sprintf(`{"lease":%d,"lines":[{"line":"x","stream":"stdin"}]}`, lease): {400, "lines[0].stream"},
		fmt.Sprintf(`{"lease":%d,"lines":[{"stream":"log"}]}`, lease):              {400, "lines[0].line"},
		fmt.Sprintf(`{"lease":%d,"lines":[]}`, lease):                              {400, "lines"},
		fmt.Sprintf(`{"lease":%d,"line":"x","lines":[{"line":"y"}]}`, lease):       {400, "line"},
		many: {413, "lines"},
	} {
		a := s.post(path("log"), body)
		if a.status != want.status || a.json(t)["error"].(map[string]any)["field"] != want.field {
			t.Errorf("log %.60s: %d %s, want %d on %s", body, a.status, a.body, want.status, want.field)
		}
	}
	if a := s.post(path("log"), fmt.Sprintf(`{"lease":%d,"line":"late"}`, lease+1)); a.status != 409 || a.code(t) != "lease_lost" {
		t.Fatalf("log with a stale lease: %d %s", a.status, a.body)
	}

	var l app.JobLog
	get := s.get(path("log"))
	if err := json.Unmarshal(get.body, &l); err != nil || get.status != 200 {
		t.Fatalf("GET log: %d %s", get.status, get.body)
	}
	if l.JobID != id || l.Attempt != 1 || fmt.Sprint(l.Attempts) != "[1]" || len(l.Lines) != 3 || l.Truncated ||
		l.Lines[1].Line != "<script>two</script>" || l.Lines[1].Stream != "stderr" || l.Lines[2].Stream != "log" ||
		l.Lines[1].At.Format(time.RFC3339Nano) != "2026-01-02T03:04:05.678Z" {
		t.Fatalf("GET log: %s", get.body)
	}
	if !strings.Contains(string(get.body), `"seq":1,"at":"`) {
		t.Fatalf("a line's fields: %s", get.body)
	}
	if a := s.get(path("log?after=2")); a.status != 200 || len(a.json(t)["lines"].([]any)) != 1 {
		t.Fatalf("after=2: %d %s", a.status, a.body)
	}
	if a := s.get(path("log?limit=2")); a.status != 200 || num(a.json(t), "next_after") != 2 {
		t.Fatalf("limit=2: %d %s", a.status, a.body)
	}
	for _, q := range []string{"attempt=-1", "after=x", "limit=20000", "tail=5"} {
		if a := s.get(path("log?" + q)); a.status != 400 {
			t.Errorf("GET log?%s: %d %s, want 400", q, a.status, a.body)
		}
	}
	if a := s.get("/api/jobs/999999/log"); a.status != 404 {
		t.Fatalf("log of an unknown job: %d %s", a.status, a.body)
	}

	// A retry: attempt 2 has a log of its own; attempt 1's stays.
	if a := s.post(path("fail"), fmt.Sprintf(`{"lease":%d,"error":"boom","retry_in":"0s"}`, lease)); a.status != 200 {
		t.Fatalf("fail: %d %s", a.status, a.body)
	}
	s.clock.Advance(time.Second)
	c = s.claim("imports")
	if job := s.get(fmt.Sprintf("/api/jobs/%d", id)).json(t); job["progress"] != nil || job["progress_message"] != nil || job["progress_at"] != nil {
		t.Fatalf("attempt 2 shows attempt 1's progress: %v", job)
	}
	if a := s.post(path("log"), fmt.Sprintf(`{"lease":%d,"line":"second try"}`, num(c, "lease"))); a.status != 200 || num(a.json(t), "attempt") != 2 {
		t.Fatalf("log in attempt 2: %d %s", a.status, a.body)
	}
	if m := s.get(path("log")).json(t); num(m, "attempt") != 2 || fmt.Sprint(m["attempts"]) != "[1 2]" {
		t.Fatalf("the latest attempt: %v", m)
	}
	if m := s.get(path("log?attempt=1")).json(t); len(m["lines"].([]any)) != 3 {
		t.Fatalf("attempt 1 after attempt 2: %v", m)
	}
}

// events reads Server-Sent Events from resp into a channel, one "type
// data" string each, until the body ends.
func events(resp *http.Response) <-chan string {
	ch := make(chan string, 100)
	go func() {
		defer close(ch)
		sc := bufio.NewScanner(resp.Body)
		typ := ""
		for sc.Scan() {
			line := sc.Text()
			switch {
			case strings.HasPrefix(line, "event: "):
				typ = strings.TrimPrefix(line, "event: ")
			case strings.HasPrefix(line, "data: "):
				ch <- typ + " " + strings.TrimPrefix(line, "data: ")
			}
		}
	}()
	return ch
}

// next waits for the next event of ch.
func next(t *testing.T, ch <-chan string) string {
	t.Helper()
	select {
	case e, ok := <-ch:
		if !ok {
			t.Fatal("the stream ended")
		}
		return e
	case <-time.After(10 * time.Second):
		t.Fatal("no event within 10s")
	}
	return ""
}

// A followed log streams the lines so far, then new ones, including those
// the follower's bus never hears of (written through another node), then
// end once the attempt is over.
func TestFollowLogStreamsUntilTheAttemptEnds(t *testing.T) {
	// The store publishes on one bus, the server listens on another: as
	// with a line written on another PostgreSQL node, only polling finds it.
	clock := app.NewFakeClock(time.Now().UTC().Truncate(time.Millisecond))
	store, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "q.db"), sqlite.Options{StoreOptions: app.StoreOptions{Clock: clock, Bus: app.NewBus()}, Sync: "normal"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	svc := app.NewService(store, nil, clock, app.NewBus(), zerolog.Nop())
	s := newServer(t, ui.Options{Service: svc}, false)
	id := num(s.submit(`{"kind":"k"}`), "id")

	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("%s/api/jobs/%d/log", s.url, id), nil)
	req.Header.Set("Accept", "text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("follow: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	ch := events(resp)
	// The job had not started: the stream waits for its first attempt.
	c := s.claim("default")
	lease := num(c, "lease")
	if a := s.post(fmt.Sprintf("/api/jobs/%d/log", id), fmt.Sprintf(`{"lease":%d,"lines":[{"line":"first"},{"line":"</script><b>x</b>"}]}`, lease)); a.status != 200 {
		t.Fatalf("append: %d %s", a.status, a.body)
	}
	for _, want := range []string{`"seq":1`, `"seq":2`} {
		if e := next(t, ch); !strings.HasPrefix(e, "job.log ") || !strings.Contains(e, want) || !strings.Contains(e, `"attempt":1`) {
			t.Fatalf("event %s, want job.log with %s", e, want)
		}
	}
	if a := s.post(fmt.Sprintf("/api/jobs/%d/complete", id), fmt.Sprintf(`{"lease":%d}`, lease)); a.status != 200 {
		t.Fatalf("complete: %d %s", a.status, a.body)
	}
	if e := next(t, ch); !strings.HasPrefix(e, "end ") || !strings.Contains(e, `"status":"done"`) {
		t.Fatalf("after the job ended: %s, want end", e)
	}
	if e, ok := <-ch; ok {
		t.Fatalf("the stream went on after end: %s", e)
	}
	// Following an ended attempt sends its lines and ends at once.
	req2, _ := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("%s/api/jobs/%d/log?follow=true&after=1", s.url, id), nil)
	resp2, err := http.DefaultClient.Do(req2)
	if err != nil {
		t.Fatal(err)
	}
	defer resp2.Body.Close()
	ch2 := events(resp2)
	if e := next(t, ch2); !strings.Contains(e, `"seq":2`) || !strings.Contains(e, `\u003c/script\u003e`) {
		t.Fatalf("replay after 1: %s", e)
	}
	if e := next(t, ch2); !strings.HasPrefix(e, "end ") {
		t.Fatalf("replay: %s, want end", e)
	}
}

// A token of one queue reads and follows the logs of its queue's jobs
// only; reporting needs the work role.
func TestLogHonoursTokenScopeAndRole(t *testing.T) {
	tokens := []ui.Token{
		{Name: "ops", Secret: testToken},
		{Name: "mailer", Secret: "mailer-token-0123456789", Role: ui.RoleWork, Queues: []string{"mail"}},
		{Name: "viewer", Secret: "viewer-token-0123456789", Role: ui.RoleRead},
	}
	s := newServer(t, ui.Options{Tokens: tokens}, false)
	auth := func(tok string) []string { return []string{"Authorization", "Bearer " + tok} }
	submit := func(queue string) int64 {
		a := s.post("/api/jobs", `{"queue":"`+queue+`","kind":"k"}`, auth(testToken)...)
		if a.status != 201 {
			t.Fatalf("submit: %d %s", a.status, a.body)
		}
		return num(a.json(t), "id")
	}
	mail, other := submit("mail"), submit("other")
	for _, id := range []int64{mail, other} {
		if a := s.post(fmt.Sprintf("/api/queues/%s/claim", map[bool]string{true: "mail", false: "other"}[id == mail]), `{"worker_id":"w"}`, auth(testToken)...); a.status != 200 {
			t.Fatalf("claim: %d %s", a.status, a.body)
		}
		if a := s.post(fmt.Sprintf("/api/jobs/%d/log", id), `{"lease":1,"line":"secret of `+fmt.Sprint(id)+`"}`, auth(testToken)...); a.status != 200 {
			t.Fatalf("append: %d %s", a.status, a.body)
		}
	}
	get := func(path, tok string, hdr ...string) answer {
		return s.do(http.MethodGet, path, "", nil, append(auth(tok), hdr...)...)
	}
	if a := get(fmt.Sprintf("/api/jobs/%d/log", mail), "mailer-token-0123456789"); a.status != 200 || !strings.Contains(string(a.body), "secret of") {
		t.Fatalf("the mail token on its queue's log: %d %s", a.status, a.body)
	}
	for _, p := range []string{"/api/jobs/%d/log", "/api/jobs/%d/log?follow=true"} {
		if a := get(fmt.Sprintf(p, other), "mailer-token-0123456789"); a.status != 403 || strings.Contains(string(a.body), "secret") {
			t.Fatalf("the mail token on another queue's log (%s): %d %s", p, a.status, a.body)
		}
	}
	if a := s.post(fmt.Sprintf("/api/jobs/%d/progress", other), `{"lease":1,"progress":1}`, auth("mailer-token-0123456789")...); a.status != 403 {
		t.Fatalf("the mail token reporting on another queue's job: %d %s", a.status, a.body)
	}
	for _, p := range []string{"progress", "log"} {
		if a := s.post(fmt.Sprintf("/api/jobs/%d/%s", mail, p), `{"lease":1,"progress":1}`, auth("viewer-token-0123456789")...); a.status != 403 {
			t.Fatalf("a read token on POST %s: %d %s", p, a.status, a.body)
		}
	}
	if a := get(fmt.Sprintf("/api/jobs/%d/log", mail), "viewer-token-0123456789"); a.status != 200 {
		t.Fatalf("a read token reading a log: %d %s", a.status, a.body)
	}
}

// The job page lists the attempts that have lines and the current one,
// whatever ?attempt= asks for: a reader asking for attempt 9e12 gets the
// page at once (it once counted up to it, pinning a core).
func TestJobPageAttemptListIsTheJobs(t *testing.T) {
	s := newServer(t, ui.Options{}, true)
	id := num(s.submit(`{"queue":"imports","kind":"csv"}`), "id")
	c := s.claim("imports")
	if a := s.post(fmt.Sprintf("/api/jobs/%d/log", id), fmt.Sprintf(`{"lease":%d,"line":"one"}`, num(c, "lease"))); a.status != 200 {
		t.Fatalf("log: %d %s", a.status, a.body)
	}
	a := s.get(fmt.Sprintf("/jobs/%d?attempt=9000000000000", id))
	if a.status != 200 {
		t.Fatalf("page: %d %s", a.status, a.body)
	}
	if n := strings.Count(string(a.body), "?attempt="); n < 1 || n > 3 {
		t.Fatalf("the page links %d attempts, want those of the job (1)", n)
	}
	if strings.Contains(string(a.body), "?attempt=2") {
		t.Fatalf("the page links an attempt the job never had")
	}
}
