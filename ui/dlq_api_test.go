package ui_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/queuehq/queue/app"
	"github.com/queuehq/queue/ui"
)

// deadLetter submits body, claims it from queue and fails it for good; it
// returns the job's id.
func (s *server) deadLetter(queue, body string) int64 {
	s.t.Helper()
	id := num(s.submit(body), "id")
	c := s.claim(queue)
	if a := s.post(fmt.Sprintf("/api/jobs/%d/fail", id), fmt.Sprintf(`{"lease":%d,"error":"no","retry":false}`, num(c, "lease"))); a.status != 200 {
		s.t.Fatalf("fail %d: %d %s", id, a.status, a.body)
	}
	return id
}

// The DLQ's second pass over HTTP, the way its "done when" reads.
func TestDeadLetterQueueSecondPassOverHTTP(t *testing.T) {
	s := newServer(t, ui.Options{}, true)

	// 1. Replaying a dead job with key K, then submitting with K, finds the live job.
	id := s.deadLetter("default", `{"kind":"k","idempotency_key":"k-imp"}`)
	a := s.post(fmt.Sprintf("/api/dlq/%d/replay", id), `{}`, "Idempotency-Key", "retry-1")
	if a.status != http.StatusCreated {
		t.Fatalf("replay: %d %s", a.status, a.body)
	}
	live := num(a.json(t), "id")
	if again := s.post(fmt.Sprintf("/api/dlq/%d/replay", id), `{}`, "Idempotency-Key", "retry-1"); num(again.json(t), "id") != live {
		t.Fatalf("a retried replay request: %s, want job %d again", again.body, live)
	}
	sub := s.post("/api/jobs", `{"kind":"k","idempotency_key":"k-imp"}`)
	if got := sub.json(t); num(got, "id") != live || got["status"] != "queued" {
		t.Fatalf("submit with the key after the replay: %d %s, want live job %d", sub.status, sub.body, live)
	}
	if row := s.get(fmt.Sprintf("/api/dlq/%d", id)).json(t); num(row, "replayed_job_id") != live {
		t.Fatalf("the row after the replay: %v, want replayed_job_id %d", row, live)
	}
	s.post(fmt.Sprintf("/api/jobs/%d/cancel", live), `{}`) // out of the claims below

	// 2. older_than or reason alone is filter_required on replay, purge and move.
	for _, path := range []string{"/api/dlq/replay", "/api/dlq/purge", "/api/dlq/move"} {
		for _, body := range []string{`{"older_than":"0s","dry_run":true}`, `{"reason":"permanent_failure"}`} {
			if path == "/api/dlq/move" && strings.Contains(body, "older_than") {
				continue
			}
			if a := s.post(path, body); a.status != 400 || a.code(t) != "filter_required" {
				t.Fatalf("%s %s: %d %s, want 400 filter_required", path, body, a.status, a.body)
			}
		}
	}

	// 3. Overrides make a job with those values; the audit entry shows them.
	id = s.deadLetter("default", `{"kind":"k"}`)
	a = s.post(fmt.Sprintf("/api/dlq/%d/replay", id), `{"queue":"fixed","priority":5,"max_attempts":9}`)
	if got := a.json(t); a.status != 201 || got["queue"] != "fixed" || num(got, "priority") != 5 || num(got, "max_attempts") != 9 {
		t.Fatalf("replay with overrides: %d %s", a.status, a.body)
	}
	if audit := s.get("/api/audit?action=dlq.replay&limit=1"); !strings.Contains(string(audit.body), `\"queue\":\"fixed\"`) && !strings.Contains(string(audit.body), `"queue":"fixed"`) {
		t.Fatalf("audit of the replay: %s, want the overrides", audit.body)
	}

	// 4. Newest move first, and the cursor visits every row once.
	for range 4 {
		s.clock.Advance(time.Second)
		s.deadLetter("default", `{"kind":"k"}`)
	}
	seen, last, cursor := map[int64]bool{}, "", ""
	for {
		page := s.get("/api/dlq?limit=2" + cursor).json(t)
		for _, r := range page["jobs"].([]any) {
			row := r.(map[string]any)
			if seen[num(row, "id")] || (last != "" && row["moved_to_dead_letter_at"].(string) > last) {
				t.Fatalf("paging: row %v seen twice or out of order", row)
			}
			seen[num(row, "id")], last = true, row["moved_to_dead_letter_at"].(string)
		}
		if page["next_cursor"] == "" {
			break
		}
		cursor = "&cursor=" + page["next_cursor"].(string)
	}
	total := num(s.get("/api/dlq/stats").json(t), "total")
	if int64(len(seen)) != total || total != 6 {
		t.Fatalf("paging visited %d rows, the DLQ holds %d (want 6)", len(seen), total)
	}

	// 5. A cancelled job moves by id with a reason text that shows on the row.
	id = num(s.submit(`{"kind":"k","queue":"c"}`), "id")
	s.post(fmt.Sprintf("/api/jobs/%d/cancel", id), `{}`)
	if a := s.post("/api/dlq/move", fmt.Sprintf(`{"ids":[%d],"reason":"bad customer data"}`, id)); num(a.json(t), "count") != 1 {
		t.Fatalf("move by id: %d %s", a.status, a.body)
	}
	if row := s.get(fmt.Sprintf("/api/dlq/%d", id)).json(t); row["note"] != "bad customer data" || row["dead_letter_reason"] != "admin_move" {
		t.Fatalf("the moved row: %v", row)
	}

	// 6. The stats add up by queue, kind and reason.
	st := s.get("/api/dlq/stats").json(t)
	for _, by := range []string{"by_queue", "by_kind", "by_reason", "by_day"} {
		var sum int64
		for _, v := range st[by].(map[string]any) {
			sum += int64(v.(float64))
		}
		if sum != num(st, "total") || sum != 7 {
			t.Fatalf("%s adds up to %d, total %d (want 7): %v", by, sum, num(st, "total"), st)
		}
	}

	// 7. A purge confirmed after a dry run deletes what the dry run counted.
	dry := s.post("/api/dlq/purge", `{"queue":"default","dry_run":true}`).json(t)
	n, bound := num(dry, "count"), dry["bound"].(string)
	s.clock.Advance(time.Second)
	late := s.deadLetter("default", `{"kind":"k"}`)
	if a := s.post("/api/dlq/purge", fmt.Sprintf(`{"queue":"default","bound":%q}`, bound)); num(a.json(t), "count") != n {
		t.Fatalf("confirmed purge: %s, want the %d counted", a.body, n)
	}
	if a := s.get(fmt.Sprintf("/api/dlq/%d", late)); a.status != 200 {
		t.Fatalf("the row that came after the dry run: %d, want it kept", a.status)
	}
	if a := s.get("/api/dlq?moved_after=yesterday"); a.status != 400 || a.code(t) != "invalid_field" {
		t.Fatalf("a bad moved_after: %d %s", a.status, a.body)
	}
}

// GET /api/stats names a kind no worker has claimed for app.UnclaimedAfter.
func TestStatsNameUnclaimedKinds(t *testing.T) {
	s := newServer(t, ui.Options{}, false)
	s.submit(`{"kind":"nobody.handles.me","queue":"mail"}`)
	if u := s.get("/api/stats").json(t)["unclaimed_kinds"]; u == nil || len(u.([]any)) != 0 {
		t.Fatalf("unclaimed_kinds at once: %v, want an empty list", u)
	}
	s.clock.Advance(app.UnclaimedAfter + time.Minute)
	u := s.get("/api/stats").json(t)["unclaimed_kinds"].([]any)
	if len(u) != 1 || u[0].(map[string]any)["kind"] != "nobody.handles.me" || u[0].(map[string]any)["queue"] != "mail" {
		t.Fatalf("unclaimed_kinds: %v, want mail/nobody.handles.me", u)
	}
}
