package ui_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/queuehq/queue/ui"
)

// ids reads the ids of a job listing.
func ids(t *testing.T, a answer) []int64 {
	t.Helper()
	if a.status != http.StatusOK {
		t.Fatalf("list: %d %s", a.status, a.body)
	}
	out := []int64{}
	for _, j := range a.json(t)["jobs"].([]any) {
		out = append(out, num(j.(map[string]any), "id"))
	}
	slices.Sort(out)
	return out
}

// Issue 26's "done when": GET /api/jobs?payload.customer=42 finds exactly
// the jobs with that payload field; a bulk cancel with the same filter and
// dry_run counts them, and without it cancels them, audited.
func TestLiveJobsFindAndCancelOverHTTP(t *testing.T) {
	for _, withSQLite := range []bool{false, true} {
		t.Run(fmt.Sprint("sqlite=", withSQLite), func(t *testing.T) {
			s := newServer(t, ui.Options{}, withSQLite)
			var want []int64
			for _, p := range []string{`{"customer":42}`, `{"customer":"42","x":1}`, `{"customer":42.0}`} {
				want = append(want, num(s.submit(`{"kind":"k","payload":`+p+`}`), "id"))
			}
			for _, p := range []string{`{"customer":43}`, `{"customer":{"id":42}}`, `{"client":42}`, `null`} {
				s.submit(`{"kind":"k","payload":` + p + `}`)
			}
			if got := ids(t, s.get("/api/jobs?payload.customer=42")); !slices.Equal(got, want) {
				t.Fatalf("payload.customer=42: %v, want %v", got, want)
			}
			if got := ids(t, s.get("/api/jobs?payload.customer=42&payload.x=1")); len(got) != 1 || got[0] != want[1] {
				t.Fatalf("two payload fields: %v, want [%d]", got, want[1])
			}
			// Bad filters are 400 naming the parameter; an unknown parameter still is.
			for path, field := range map[string]string{
				"/api/jobs?payload.a..b=1": "payload.a..b", "/api/jobs?created_after=soon": "created_after",
				"/api/jobs?finished_before=-1h": "finished_before", "/api/jobs?payload.=1": "payload.", "/api/jobs?payloadx=1": "payloadx",
			} {
				a := s.get(path)
				e, _ := a.json(t)["error"].(map[string]any)
				if a.status != http.StatusBadRequest || e["field"] != field {
					t.Errorf("%s: %d %s, want 400 naming %s", path, a.status, a.body, field)
				}
			}

			dry := s.post("/api/jobs/cancel", `{"payload":{"customer":42},"dry_run":true}`)
			d := dry.json(t)
			if dry.status != 200 || num(d, "matched") != 3 || num(d, "changed") != 3 || num(d, "count") != 3 || d["bound"] == "" || len(d["sample"].([]any)) != 3 {
				t.Fatalf("dry run: %d %s", dry.status, dry.body)
			}
			if got := ids(t, s.get("/api/jobs?payload.customer=42&status=queued")); len(got) != 3 {
				t.Fatalf("the dry run cancelled jobs: %v still queued", got)
			}
			res := s.post("/api/jobs/cancel", fmt.Sprintf(`{"payload":{"customer":"42"},"bound":%q}`, d["bound"]))
			if r := res.json(t); res.status != 200 || num(r, "changed") != 3 {
				t.Fatalf("cancel: %d %s", res.status, res.body)
			}
			if got := ids(t, s.get("/api/jobs?payload.customer=42&status=cancelled")); !slices.Equal(got, want) {
				t.Fatalf("cancelled: %v, want %v", got, want)
			}
			if got := ids(t, s.get("/api/jobs?status=queued")); len(got) != 4 {
				t.Fatalf("other jobs: %d queued, want 4", len(got))
			}
			audit := s.get("/api/audit?action=jobs.cancel").json(t)["entries"]
			b, _ := json.Marshal(audit)
			if !strings.Contains(string(b), `"count":3`) || !strings.Contains(string(b), `customer`) {
				t.Fatalf("audit: %s, want jobs.cancel with the filter and count 3", b)
			}
		})
	}
}

func TestLiveBulkRoutesRefuseWhatTheyShould(t *testing.T) {
	tokens := []ui.Token{
		{Name: "viewer", Secret: "read-token-0123456789", Role: ui.RoleRead},
		{Name: "ops-a", Secret: "admin-token-a-0123456789", Role: ui.RoleAdmin, Queues: []string{"a"}},
		{Name: "boss", Secret: "admin-token-0123456789", Role: ui.RoleAdmin},
	}
	s := newServer(t, ui.Options{Tokens: tokens}, false)
	as := func(tok ui.Token) []string { return []string{"Authorization", "Bearer " + tok.Secret} }
	viewer, opsA, boss := as(tokens[0]), as(tokens[1]), as(tokens[2])
	for _, q := range []string{"a", "b"} {
		if a := s.post("/api/jobs", `{"queue":"`+q+`","kind":"k","payload":{"c":1}}`, boss...); a.status != 201 {
			t.Fatal(a.status, string(a.body))
		}
	}
	for _, c := range []struct {
		who          []string
		path, body   string
		status       int
		code, reason string
	}{
		{viewer, "/api/jobs/cancel", `{"queue":"a"}`, 403, "forbidden", "a read token"},
		{opsA, "/api/jobs/cancel", `{"payload":{"c":1}}`, 403, "forbidden", "a scoped token without queue"},
		{opsA, "/api/jobs/cancel", `{"queue":"b"}`, 403, "forbidden", "a scoped token, another queue"},
		{boss, "/api/jobs/cancel", `{}`, 400, "filter_required", "an empty filter"},
		{boss, "/api/jobs/retry", `{"status":"queued"}`, 400, "filter_required", "status alone"},
		{boss, "/api/jobs/reschedule", `{"queue":"a"}`, 400, "invalid_field", "reschedule without a time"},
		{boss, "/api/jobs/prioritize", `{"queue":"a","priority":5000}`, 400, "invalid_field", "a priority out of range"},
		{boss, "/api/jobs/cancel", `{"queue":"a","payload":{"c":{"d":1}}}`, 400, "", "an object as a payload value"},
		{boss, "/api/jobs/cancel", `{"queue":"a","nonsense":1}`, 400, "invalid_field", "an unknown field"},
	} {
		a := s.post(c.path, c.body, c.who...)
		if a.status != c.status || (c.code != "" && a.code(t) != c.code) {
			t.Errorf("%s: %d %s, want %d %s", c.reason, a.status, a.body, c.status, c.code)
		}
	}
	// The scoped token acts in its queue only.
	a := s.post("/api/jobs/prioritize", `{"queue":"a","priority":3}`, opsA...)
	if a.status != 200 || num(a.json(t), "changed") != 1 {
		t.Fatalf("prioritize in queue a: %d %s", a.status, a.body)
	}
	if a := s.post("/api/jobs/reschedule", `{"allow_all":true,"delay":"1h","dry_run":true}`, boss...); a.status != 200 || num(a.json(t), "changed") != 2 {
		t.Fatalf("reschedule dry run over everything: %d %s", a.status, a.body)
	}
}

// The live actions name their own filters when they refuse an empty one,
// and refuse a rate too slow to spread jobs without overflow.
func TestLiveBulkFilterMessageAndRate(t *testing.T) {
	s := newServer(t, ui.Options{}, false)
	if a := s.post("/api/jobs", `{"queue":"c","kind":"k"}`); a.status != 201 {
		t.Fatal(a.status, string(a.body))
	}
	a := s.post("/api/jobs/cancel", `{}`)
	msg := string(a.body)
	if a.status != 400 || a.code(t) != "filter_required" || !strings.Contains(msg, "key, workflow, replayed_from, a payload field or error text") ||
		!strings.Contains(msg, "status and the time ranges only narrow it") || strings.Contains(msg, "moved_before") {
		t.Errorf("POST /api/jobs/cancel {}: %d %s, want filter_required naming the live filters", a.status, msg)
	}
	if a := s.post("/api/dlq/purge", `{}`); a.status != 400 || !strings.Contains(string(a.body), "moved_before only narrow it") {
		t.Errorf("POST /api/dlq/purge {}: %d %s, want the DLQ's filter_required", a.status, a.body)
	}
	for _, body := range []string{`{"queue":"c","rate":1e-10,"delay":"1m"}`, `{"queue":"c","rate":0.0009,"delay":"1m"}`, `{"queue":"c","rate":2e6,"delay":"1m"}`} {
		if a := s.post("/api/jobs/reschedule", body); a.status != 400 || a.code(t) != "invalid_field" || !strings.Contains(string(a.body), `"field":"rate"`) {
			t.Errorf("reschedule %s: %d %s, want 400 invalid_field rate", body, a.status, a.body)
		}
	}
	if a := s.post("/api/jobs/reschedule", `{"queue":"c","rate":0.001,"delay":"1m"}`); a.status != 200 || num(a.json(t), "changed") != 1 {
		t.Errorf("reschedule at the slowest rate: %d %s", a.status, a.body)
	}
}
