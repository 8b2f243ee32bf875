package ui_test

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/queuehq/queue/ui"
)

// listed reads the ids of a job listing in the order answered, and its
// next_cursor.
func listed(t *testing.T, a answer) ([]int64, string) {
	t.Helper()
	if a.status != http.StatusOK {
		t.Fatalf("list: %d %s", a.status, a.body)
	}
	m := a.json(t)
	out := []int64{}
	for _, j := range m["jobs"].([]any) {
		out = append(out, num(j.(map[string]any), "id"))
	}
	next, _ := m["next_cursor"].(string)
	return out, next
}

// wantInvalid checks a is 400 invalid_field naming field.
func wantInvalid(t *testing.T, what string, a answer, field string) {
	t.Helper()
	e, _ := a.json(t)["error"].(map[string]any)
	if a.status != http.StatusBadRequest || e["code"] != "invalid_field" || e["field"] != field {
		t.Errorf("%s: %d %s, want 400 invalid_field naming %s", what, a.status, a.body, field)
	}
}

// The jobs list's console parameters (issue 28): status retrying, sort
// run_at with its cursor, kind_prefix and count.
func TestAPIJobsRetryingSortPrefixCount(t *testing.T) {
	for _, withSQLite := range []bool{false, true} {
		t.Run(fmt.Sprint("sqlite=", withSQLite), func(t *testing.T) {
			s := newServer(t, ui.Options{}, withSQLite)
			failed := num(s.submit(`{"queue":"r","kind":"email.send"}`), "id")
			c := s.claim("r")
			if a := s.post(fmt.Sprintf("/api/jobs/%d/fail", failed), fmt.Sprintf(`{"lease":%d,"error":"boom","retry_in":"1h"}`, num(c, "lease"))); a.status != 200 {
				t.Fatalf("fail: %d %s", a.status, a.body)
			}
			now := s.clock.Now()
			var byRunAt []int64 // submitted out of run_at order, two at the same time
			for _, in := range []time.Duration{3, 1, 2, 1} {
				at := now.Add(in * time.Minute).Format(time.RFC3339Nano)
				byRunAt = append(byRunAt, num(s.submit(`{"queue":"r","kind":"email.bounce","run_at":"`+at+`"}`), "id"))
			}
			s.submit(`{"queue":"r","kind":"sms.send"}`)
			want := []int64{byRunAt[1], byRunAt[3], byRunAt[2], byRunAt[0], failed} // 1, 1, 2, 3 min, 1 h

			if got, _ := listed(t, s.get("/api/jobs?status=retrying")); !slices.Equal(got, []int64{failed}) {
				t.Errorf("status=retrying: %v, want [%d]", got, failed)
			}
			var got []int64
			cursor := ""
			for range 10 {
				ids, next := listed(t, s.get("/api/jobs?queue=r&status=scheduled&sort=run_at&limit=2&cursor="+url.QueryEscape(cursor)))
				got = append(got, ids...)
				if cursor = next; cursor == "" {
					break
				}
			}
			if !slices.Equal(got, want) {
				t.Errorf("sort=run_at, by pages of 2: %v, want %v (soonest first)", got, want)
			}
			slices.Reverse(want)
			if got, _ := listed(t, s.get("/api/jobs?queue=r&status=scheduled&sort=run_at&order=desc")); !slices.Equal(got, want) {
				t.Errorf("sort=run_at&order=desc: %v, want %v", got, want)
			}
			if got, _ := listed(t, s.get("/api/jobs?kind_prefix=email.&order=asc")); !slices.Equal(got, append([]int64{failed}, byRunAt...)) {
				t.Errorf("kind_prefix=email.: %v", got)
			}
			a := s.get("/api/jobs?kind_prefix=email.&limit=2&count=true")
			if ids, _ := listed(t, a); len(ids) != 2 || num(a.json(t), "total") != 5 {
				t.Errorf("count=true: %s, want 2 jobs of a total of 5", a.body)
			}
			if a := s.get("/api/jobs?limit=2"); strings.Contains(string(a.body), `"total"`) {
				t.Errorf("without count: %s has a total", a.body)
			}
			_, idCursor := listed(t, s.get("/api/jobs?limit=1"))
			for path, field := range map[string]string{
				"/api/jobs?sort=priority":                                   "sort",
				"/api/jobs?sort=run_at&cursor=" + url.QueryEscape(idCursor): "cursor",
				"/api/jobs?sort=run_at&cursor=cmF4LjE":                      "cursor",
				"/api/jobs?kind_prefix=" + url.QueryEscape("a%_"):           "kind_prefix",
				"/api/jobs?count=maybe":                                     "count",
				"/api/jobs?status=retried":                                  "status",
				"/api/jobs?status=dead_letter&sort=run_at":                  "sort",
			} {
				wantInvalid(t, path, s.get(path), field)
			}
		})
	}
}

// GET /api/suggest: kinds, queues and tags by prefix; bad input is 400; a
// token limited to queues gets its own queues and no kinds or tags.
func TestAPISuggest(t *testing.T) {
	tokens := []ui.Token{{Name: "boss", Secret: "admin-token-0123456789"},
		{Name: "mailer", Secret: "mailer-token-0123456789", Queues: []string{"mail", "mail.bulk"}, Role: ui.RoleRead}}
	s := newServer(t, ui.Options{Tokens: tokens}, true)
	boss := []string{"Authorization", "Bearer " + tokens[0].Secret}
	mailer := []string{"Authorization", "Bearer " + tokens[1].Secret}
	for _, body := range []string{`{"queue":"mail","kind":"email.send","tags":["vip"]}`, `{"queue":"mail","kind":"email.bounce","tags":["vip.gold"]}`,
		`{"queue":"billing","kind":"invoice.send","tags":["vip"]}`, `{"queue":"mailroom","kind":"email.send"}`} {
		if a := s.post("/api/jobs", body, boss...); a.status != 201 {
			t.Fatal(a.status, string(a.body))
		}
	}
	get := func(q string, who []string) answer {
		t.Helper()
		return s.do(http.MethodGet, "/api/suggest?"+q, "", nil, who...)
	}
	values := func(a answer) string {
		t.Helper()
		if a.status != 200 {
			t.Fatalf("suggest: %d %s", a.status, a.body)
		}
		var out []string
		for _, v := range a.json(t)["values"].([]any) {
			out = append(out, v.(string))
		}
		return strings.Join(out, ",")
	}
	for q, want := range map[string]string{
		"field=kind&prefix=email":         "email.bounce,email.send",
		"field=kind":                      "email.bounce,email.send,invoice.send",
		"field=kind&prefix=email&limit=1": "email.bounce",
		"field=queue&prefix=mail":         "mail,mailroom",
		"field=tag&prefix=vip":            "vip,vip.gold",
		"field=tag&prefix=none":           "",
	} {
		if got := values(get(q, boss)); got != want {
			t.Errorf("%s: %q, want %q", q, got, want)
		}
	}
	if a := get("field=kind&prefix=em", boss); a.json(t)["field"] != "kind" {
		t.Errorf("the answer names its field: %s", a.body)
	}
	for q, field := range map[string]string{
		"prefix=em": "field", "field=payload": "field", "field=kind&limit=101": "limit", "field=kind&limit=0": "limit",
		"field=kind&prefix=" + url.QueryEscape("<b>"): "prefix", "field=kind&prefx=em": "prefx",
	} {
		wantInvalid(t, q, get(q, boss), field)
	}
	// The limited token: its own queues, whether they hold jobs or not.
	if got := values(get("field=queue&prefix=mail", mailer)); got != "mail,mail.bulk" {
		t.Errorf("the mailer's queues: %q, want mail,mail.bulk (not mailroom)", got)
	}
	for _, q := range []string{"field=kind", "field=tag&prefix=vip"} {
		if a := get(q, mailer); a.status != http.StatusForbidden {
			t.Errorf("%s for a token of two queues: %d %s, want 403", q, a.status, a.body)
		}
	}
}

// POST /api/jobs/delete deletes the finished jobs a filter finds, with a
// dry run and its bound, audited as jobs.delete.
func TestAPIJobsDelete(t *testing.T) {
	s := newServer(t, ui.Options{}, true)
	done := num(s.submit(`{"queue":"d","kind":"k"}`), "id")
	c := s.claim("d")
	if a := s.post(fmt.Sprintf("/api/jobs/%d/complete", done), fmt.Sprintf(`{"lease":%d}`, num(c, "lease"))); a.status != 200 {
		t.Fatalf("complete: %d %s", a.status, a.body)
	}
	cancelled := num(s.submit(`{"queue":"d","kind":"k"}`), "id")
	if a := s.post(fmt.Sprintf("/api/jobs/%d/cancel", cancelled), `{}`); a.status != 200 {
		t.Fatalf("cancel: %d %s", a.status, a.body)
	}
	queued := num(s.submit(`{"queue":"d","kind":"k"}`), "id")
	dry := s.post("/api/jobs/delete", `{"queue":"d","dry_run":true}`)
	d := dry.json(t)
	if dry.status != 200 || num(d, "matched") != 3 || num(d, "changed") != 2 || num(d, "skipped") != 1 || d["bound"] == "" {
		t.Fatalf("dry run: %d %s", dry.status, dry.body)
	}
	if a := s.post("/api/jobs/delete", fmt.Sprintf(`{"queue":"d","bound":%q}`, d["bound"])); a.status != 200 || num(a.json(t), "changed") != 2 {
		t.Fatalf("delete: %d %s", a.status, a.body)
	}
	for _, id := range []int64{done, cancelled} {
		if a := s.get(fmt.Sprintf("/api/jobs/%d", id)); a.status != http.StatusNotFound {
			t.Errorf("deleted job %d: %d %s, want 404", id, a.status, a.body)
		}
	}
	if a := s.get(fmt.Sprintf("/api/jobs/%d", queued)); a.status != 200 {
		t.Errorf("queued job: %d, want it kept", a.status)
	}
	if a := s.get("/api/stats"); !strings.Contains(string(a.body), `"done":0`) || !strings.Contains(string(a.body), `"cancelled":0`) {
		t.Errorf("stats after the delete: %s", a.body)
	}
	audit := s.get("/api/audit?action=jobs.delete")
	if !strings.Contains(string(audit.body), `"count":2`) {
		t.Errorf("audit: %s, want a jobs.delete entry of 2", audit.body)
	}
	if a := s.post("/api/jobs/delete", `{}`); a.status != 400 || a.code(t) != "filter_required" {
		t.Errorf("delete without a filter: %d %s", a.status, a.body)
	}
}
