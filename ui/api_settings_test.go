package ui_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/robfig/cron/v3"

	"github.com/queuehq/queue/app"
	"github.com/queuehq/queue/ui"
)

func parseCron(spec string, loc *time.Location) (app.Schedule, error) {
	if loc != nil && loc != time.UTC && !strings.HasPrefix(spec, "@every") {
		spec = "CRON_TZ=" + loc.String() + " " + spec
	}
	return cron.ParseStandard(spec)
}

func (s *server) patch(path, body string, hdr ...string) answer {
	s.t.Helper()
	return s.do(http.MethodPatch, path, "application/json", strings.NewReader(body), hdr...)
}

// A queue's settings over the API: changed, in effect at once, unset with
// null, reset, validated with the field named, audited.
func TestQueueSettingsAPI(t *testing.T) {
	env := newUIEnv(t, ui.Options{}, false)
	s := &server{t: t, url: env.URL, svc: env.svc, clock: env.clock}
	a := s.get("/api/queues/emails/settings")
	if a.status != http.StatusOK {
		t.Fatalf("GET settings: %d %s", a.status, a.body)
	}
	m := a.json(t)
	eff := m["effective"].(map[string]any)
	if eff["concurrency"] != 20.0 || m["file"].(map[string]any)["concurrency"] != 20.0 || len(m["runtime"].(map[string]any)) != 0 ||
		m["sources"].(map[string]any)["concurrency"] != "file" || m["updated_at"] != nil || !strings.Contains(m["precedence"].(string), "wins over the config file") {
		t.Fatalf("GET settings before a change: %s", a.body)
	}
	a = s.patch("/api/queues/emails/settings", `{"concurrency": 3, "retention": "48h", "key_rate": "10/1m"}`)
	if a.status != http.StatusOK {
		t.Fatalf("PATCH: %d %s", a.status, a.body)
	}
	m = a.json(t)
	if eff = m["effective"].(map[string]any); eff["concurrency"] != 3.0 || eff["retention"] != "2d" || eff["key_rate"] != "10/1m" ||
		m["runtime"].(map[string]any)["concurrency"] != 3.0 || m["sources"].(map[string]any)["concurrency"] != "runtime" || m["updated_by"] != "local" {
		t.Fatalf("PATCH answer: %s", a.body)
	}
	if got := env.svc.Config.Queue("emails").Concurrency; got != 3 {
		t.Fatalf("Config.Queue after PATCH: concurrency %d", got)
	}
	for body, field := range map[string]string{
		`{"concurrency": -1}`:      "concurrency",
		`{"timeout": "forever"}`:   "timeout",
		`{"backoff_base": "2h"}`:   "backoff_base",
		`{"max_attempts": 0}`:      "max_attempts",
		`{"nope": 1}`:              "nope",
		`{}`:                       "settings",
		`{"fairness": "<script>"}`: "fairness",
		`{"rate": 1e308}`:          "rate", // 1s/rate is 0: a long-poll claim would spin
		`{"rate": 1e-12}`:          "rate", // 1s/rate overflows
		`{"timeout": "1ns"}`:       "timeout",
	} {
		a := s.patch("/api/queues/emails/settings", body)
		if a.status != http.StatusBadRequest || a.code(t) != "invalid_field" || a.json(t)["error"].(map[string]any)["field"] != field {
			t.Errorf("PATCH %s: %d %s, want 400 invalid_field naming %s", body, a.status, a.body, field)
		}
	}
	if a := s.patch("/api/queues/emails/settings", `[1]`); a.status != http.StatusBadRequest {
		t.Errorf("PATCH with an array: %d %s", a.status, a.body)
	}
	if a := s.patch("/api/queues/emails/settings", `{"concurrency": null}`); a.status != http.StatusOK ||
		a.json(t)["effective"].(map[string]any)["concurrency"] != 20.0 {
		t.Fatalf("PATCH null: %d %s", a.status, a.body)
	}
	if a := s.do(http.MethodDelete, "/api/queues/emails/settings", "", nil); a.status != http.StatusOK ||
		len(a.json(t)["runtime"].(map[string]any)) != 0 || a.json(t)["effective"].(map[string]any)["retention"] != "1d" {
		t.Fatalf("DELETE: %d %s", a.status, a.body)
	}
	a = s.get("/api/audit")
	entries := a.json(t)["entries"].([]any)
	if len(entries) < 3 || entries[0].(map[string]any)["action"] != "queue.settings.reset" || entries[2].(map[string]any)["action"] != "queue.settings" {
		t.Fatalf("audit: %s", a.body)
	}
	if f, _ := entries[2].(map[string]any)["filter"].(map[string]any); f["concurrency"] != 3.0 || f["retention"] != "2d" {
		t.Fatalf("audit filter of the PATCH: %v", entries[2])
	}
	if a := s.get("/api/audit?action=queue.settings"); a.status != http.StatusOK {
		t.Fatalf("audit ?action=queue.settings: %d %s", a.status, a.body)
	}
}

// Only admins change settings, and a token scoped to queue A only A's.
func TestSettingsRolesAndScope(t *testing.T) {
	tokens := []ui.Token{
		{Name: "admin", Secret: "admin-secret-0123456789", Role: ui.RoleAdmin},
		{Name: "scoped", Secret: "scoped-secret-0123456789", Role: ui.RoleAdmin, Queues: []string{"emails"}},
		{Name: "worker", Secret: "worker-secret-0123456789", Role: ui.RoleWork},
	}
	env := newUIEnv(t, ui.Options{Tokens: tokens}, false)
	env.svc.Config.ParseSchedule = parseCron
	s := &server{t: t, url: env.URL, svc: env.svc, clock: env.clock}
	auth := func(tok string) []string { return []string{"Authorization", "Bearer " + tok} }
	if a := s.patch("/api/queues/emails/settings", `{"concurrency": 2}`, auth("worker-secret-0123456789")...); a.status != http.StatusForbidden {
		t.Errorf("a work token changed settings: %d %s", a.status, a.body)
	}
	if a := s.patch("/api/queues/emails/settings", `{"concurrency": 2}`, auth("scoped-secret-0123456789")...); a.status != http.StatusOK {
		t.Errorf("a token scoped to emails could not change emails: %d %s", a.status, a.body)
	}
	for _, c := range []struct{ method, path, body string }{
		{http.MethodPatch, "/api/queues/billing/settings", `{"concurrency": 2}`},
		{http.MethodGet, "/api/queues/billing/settings", ``},
		{http.MethodDelete, "/api/queues/billing/settings", ``},
		{http.MethodPost, "/api/periodic", `{"name": "x", "cron": "@every 1m", "queue": "billing", "kind": "k"}`},
		{http.MethodPost, "/api/periodic/sync-invoices/run", ``},
		{http.MethodPost, "/api/periodic/sync-invoices/pause", ``},
	} {
		ct := ""
		var body *strings.Reader
		if c.body != "" {
			ct, body = "application/json", strings.NewReader(c.body)
		} else {
			body = strings.NewReader("")
		}
		if a := s.do(c.method, c.path, ct, body, auth("scoped-secret-0123456789")...); a.status != http.StatusForbidden {
			t.Errorf("%s %s with a token scoped to emails: %d %s, want 403", c.method, c.path, a.status, a.body)
		}
	}
	if a := s.post("/api/periodic/sync-invoices/pause", ``, auth("worker-secret-0123456789")...); a.status != http.StatusForbidden {
		t.Errorf("a work token paused a periodic job: %d", a.status)
	}
	a := s.get("/api/periodic")
	if a.status != http.StatusUnauthorized {
		t.Errorf("GET /api/periodic without a token: %d", a.status)
	}
}

// Periodic jobs over the API: create, list with source and state, replace,
// pause, resume, run now, delete; the config file's are 409 to change.
func TestPeriodicAPI(t *testing.T) {
	env := newUIEnv(t, ui.Options{}, false)
	env.svc.Config.ParseSchedule = parseCron
	s := &server{t: t, url: env.URL, svc: env.svc, clock: env.clock}
	a := s.post("/api/periodic", `{"name": "cleanup", "cron": "@every 10m", "queue": "maint", "kind": "cleanup", "payload": {"deep": true}, "tags": ["t"]}`)
	if a.status != http.StatusCreated {
		t.Fatalf("create: %d %s", a.status, a.body)
	}
	if m := a.json(t); m["source"] != "api" || m["paused"] != false || m["next_fire"] == nil || m["payload"].(map[string]any)["deep"] != true {
		t.Fatalf("create answer: %s", a.body)
	}
	for _, c := range []struct {
		method, path, body string
		status             int
		code               string
	}{
		{http.MethodPost, "/api/periodic", `{"name": "cleanup", "cron": "@every 1m", "kind": "k"}`, 409, "periodic_exists"},
		{http.MethodPost, "/api/periodic", `{"name": "nightly-report", "cron": "@every 1m", "kind": "k"}`, 409, "periodic_in_config"},
		{http.MethodPut, "/api/periodic/nightly-report", `{"cron": "@every 1m", "kind": "k"}`, 409, "periodic_in_config"},
		{http.MethodDelete, "/api/periodic/nightly-report", ``, 409, "periodic_in_config"},
		{http.MethodPost, "/api/periodic", `{"cron": "@every 1m", "kind": "k"}`, 400, "invalid_field"},
		{http.MethodPost, "/api/periodic", `{"name": "x", "cron": "every day", "kind": "k"}`, 400, "invalid_field"},
		{http.MethodPost, "/api/periodic", `{"name": "x", "cron": "0 6 * * *", "timezone": "Nowhere/Town", "kind": "k"}`, 400, "invalid_field"},
		{http.MethodPost, "/api/periodic", `{"name": "x", "cron": "0 0 30 2 *", "kind": "k"}`, 400, "invalid_field"}, // 30 February never comes
		{http.MethodPost, "/api/periodic", `{"name": "x", "cron": "0 6 * * *", "kind": "k", "colour": 1}`, 400, "invalid_field"},
		{http.MethodPut, "/api/periodic/nope", `{"cron": "@every 1m", "kind": "k"}`, 404, "not_found"},
		{http.MethodPost, "/api/periodic/nope/run", ``, 404, "not_found"},
		{http.MethodPut, "/api/periodic/cleanup", `{"name": "other", "cron": "@every 1m", "kind": "k"}`, 400, "invalid_field"},
	} {
		ct := ""
		if c.body != "" {
			ct = "application/json"
		}
		a := s.do(c.method, c.path, ct, strings.NewReader(c.body))
		if a.status != c.status || a.code(t) != c.code {
			t.Errorf("%s %s %s: %d %s, want %d %s", c.method, c.path, c.body, a.status, a.body, c.status, c.code)
		}
	}
	if a := s.do(http.MethodPut, "/api/periodic/cleanup", "application/json", strings.NewReader(`{"cron": "@every 30m", "queue": "maint", "kind": "cleanup2"}`)); a.status != http.StatusOK ||
		a.json(t)["kind"] != "cleanup2" || a.json(t)["cron"] != "@every 30m" {
		t.Fatalf("PUT: %d %s", a.status, a.body)
	}
	for _, name := range []string{"cleanup", "nightly-report"} {
		if a := s.post("/api/periodic/"+name+"/pause", ``); a.status != http.StatusOK || a.json(t)["paused"] != true || a.json(t)["next_fire"] != nil {
			t.Fatalf("pause %s: %d %s", name, a.status, a.body)
		}
	}
	a = s.post("/api/periodic/nightly-report/run", ``)
	if a.status != http.StatusCreated {
		t.Fatalf("run now: %d %s", a.status, a.body)
	}
	job := a.json(t)["job"].(map[string]any)
	if job["queue"] != "reports" || job["kind"] != "report.nightly" || job["status"] != "queued" {
		t.Fatalf("run now's job: %v", job)
	}
	a = s.get("/api/periodic")
	list := a.json(t)["periodic"].([]any)
	if len(list) != 3 {
		t.Fatalf("list: %s", a.body)
	}
	for _, e := range list {
		e := e.(map[string]any)
		switch e["name"] {
		case "nightly-report":
			if e["source"] != "file" || e["paused"] != true || e["last_fire"] == nil {
				t.Errorf("nightly-report: %v", e)
			}
		case "cleanup":
			if e["source"] != "api" || e["paused"] != true {
				t.Errorf("cleanup: %v", e)
			}
		case "sync-invoices":
			if e["source"] != "file" || e["paused"] != false || e["next_fire"] == nil {
				t.Errorf("sync-invoices: %v", e)
			}
		}
	}
	if a := s.post("/api/periodic/nightly-report/resume", ``); a.status != http.StatusOK || a.json(t)["paused"] != false {
		t.Fatalf("resume: %d %s", a.status, a.body)
	}
	if a := s.do(http.MethodDelete, "/api/periodic/cleanup", "", nil); a.status != http.StatusNoContent {
		t.Fatalf("delete: %d %s", a.status, a.body)
	}
	if a := s.get("/api/periodic/cleanup"); a.status != http.StatusNotFound {
		t.Fatalf("get after delete: %d", a.status)
	}
	a = s.get("/api/audit")
	var actions []string
	for _, e := range a.json(t)["entries"].([]any) {
		actions = append(actions, e.(map[string]any)["action"].(string))
	}
	if got := strings.Join(actions, " "); !strings.HasPrefix(got, "periodic.delete periodic.resume periodic.run periodic.pause periodic.pause periodic.update periodic.create") {
		t.Fatalf("audit: %s", got)
	}
}

// A file's entry named "queue/kind/cron" (its default name) is reached
// with its slashes and spaces escaped.
func TestPeriodicNameWithSlashes(t *testing.T) {
	env := newUIEnv(t, ui.Options{}, false)
	s := &server{t: t, url: env.URL, svc: env.svc, clock: env.clock}
	name := "reports/report.weekly/@every 1h"
	sch, _ := cron.ParseStandard("@every 1h")
	env.svc.Config.Periodic = append(env.svc.Config.Periodic, app.PeriodicConfig{Name: name, Cron: "@every 1h", Queue: "reports",
		Kind: "report.weekly", CatchUp: "one", Schedule: sch, PayloadJSON: []byte(`{}`)})
	a := s.post("/api/periodic/"+url.PathEscape(name)+"/pause", ``)
	if a.status != http.StatusOK || a.json(t)["name"] != name {
		t.Fatalf("pause %q: %d %s", name, a.status, a.body)
	}
}
