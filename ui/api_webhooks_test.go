package ui_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/queuehq/queue/app"
	"github.com/queuehq/queue/memory"
	"github.com/queuehq/queue/ui"
)

// webhookServer is a server whose store sees its Service's webhook rules
// (as serve wires them), with one subscription from the config file.
func webhookServer(t *testing.T, opts ui.Options) *server {
	t.Helper()
	bus := app.NewBus()
	clock := app.NewFakeClock(time.Now().UTC().Truncate(time.Millisecond))
	cfg := app.DefaultConfig()
	cfg.Webhooks.Subscriptions = []app.WebhookSubscription{{Name: "file", URL: "https://hooks.example/file",
		Secret: "file-secret-0123456789", Events: []string{app.EventExpired}}}
	store := memory.New(app.StoreOptions{Clock: clock, Bus: bus, Webhooks: cfg.WebhookRules})
	t.Cleanup(func() { store.Close() })
	opts.Service = app.NewService(store, cfg, clock, bus, zerolog.Nop())
	s := newServer(t, opts, false)
	s.clock = clock
	return s
}

func (s *server) put(path, body string, hdr ...string) answer {
	s.t.Helper()
	return s.do(http.MethodPut, path, "application/json", strings.NewReader(body), hdr...)
}

const hookSecret = "hook-secret-0123456789"

// The webhook routes: create (201), list, show, replace (a PUT without a
// secret keeps it), delete (204), every answer without the secret;
// conflicts and config subscriptions are 409 with their codes; bad input
// is 400 invalid_field naming the field and changes nothing.
func TestWebhookRoutes(t *testing.T) {
	s := webhookServer(t, ui.Options{})
	body := `{"name": "ops", "url": "https://hooks.example/ops", "secret": "` + hookSecret + `", "events": ["job.dead_lettered"], "queues": ["emails"]}`
	a := s.post("/api/webhooks", body)
	if a.status != http.StatusCreated {
		t.Fatalf("POST /api/webhooks: %d %s", a.status, a.body)
	}
	m := a.json(t)
	if m["name"] != "ops" || m["secret_set"] != true || m["source"] != "api" || m["disabled"] != false ||
		m["url"] != "https://hooks.example/ops" || m["created_at"] == nil || m["updated_at"] == nil {
		t.Fatalf("created: %s", a.body)
	}
	noSecret := func(a answer) {
		t.Helper()
		if strings.Contains(string(a.body), hookSecret) || strings.Contains(string(a.body), "file-secret") || strings.Contains(string(a.body), `"secret"`) {
			t.Fatalf("an answer carries a secret: %s", a.body)
		}
	}
	noSecret(a)
	if a := s.post("/api/webhooks", body); a.status != http.StatusConflict || a.code(t) != "webhook_exists" {
		t.Fatalf("POST again: %d %s, want 409 webhook_exists", a.status, a.body)
	}
	a = s.get("/api/webhooks")
	noSecret(a)
	var list struct {
		Webhooks []map[string]any `json:"webhooks"`
	}
	if err := json.Unmarshal(a.body, &list); err != nil || a.status != http.StatusOK || len(list.Webhooks) != 2 ||
		list.Webhooks[0]["name"] != "file" || list.Webhooks[0]["source"] != "config" || list.Webhooks[1]["name"] != "ops" {
		t.Fatalf("GET /api/webhooks: %d %s", a.status, a.body)
	}
	if a := s.get("/api/webhooks/ops"); a.status != http.StatusOK || a.json(t)["name"] != "ops" {
		t.Fatalf("GET one: %d %s", a.status, a.body)
	}
	if a := s.get("/api/webhooks/nope"); a.status != http.StatusNotFound || a.code(t) != "not_found" {
		t.Fatalf("GET none: %d %s", a.status, a.body)
	}
	a = s.put("/api/webhooks/ops", `{"url": "https://hooks.example/ops2", "events": ["*"], "disabled": true}`)
	if a.status != http.StatusOK || a.json(t)["url"] != "https://hooks.example/ops2" || a.json(t)["disabled"] != true || a.json(t)["secret_set"] != true {
		t.Fatalf("PUT: %d %s", a.status, a.body)
	}
	noSecret(a)
	if u, sec, err := s.svc.WebhookTarget(t.Context(), "ops"); err != nil || sec != hookSecret || u != "https://hooks.example/ops2" {
		t.Fatalf("target after a PUT without a secret: %q %q %v, want the new URL and the old secret", u, sec, err)
	}
	for _, c := range []struct{ method, path, body, code string }{
		{http.MethodPut, "/api/webhooks/file", `{"url": "https://hooks.example/x", "events": ["*"]}`, "webhook_in_config"},
		{http.MethodDelete, "/api/webhooks/file", ``, "webhook_in_config"},
		{http.MethodPost, "/api/webhooks", `{"name": "file", "url": "https://hooks.example/x", "secret": "` + hookSecret + `", "events": ["*"]}`, "webhook_in_config"},
	} {
		a := s.do(c.method, c.path, "application/json", strings.NewReader(c.body))
		if a.status != http.StatusConflict || a.code(t) != c.code {
			t.Errorf("%s %s: %d %s, want 409 %s", c.method, c.path, a.status, a.body, c.code)
		}
	}
	before := s.get("/api/webhooks").body
	for b, field := range map[string]string{
		`{"name": "x", "url": "http://127.0.0.1:9/x", "secret": "` + hookSecret + `", "events": ["*"]}`:                             "url",
		`{"name": "x", "url": "http://localhost/x", "secret": "` + hookSecret + `", "events": ["*"]}`:                               "url",
		`{"name": "x", "url": "ftp://hooks.example/x", "secret": "` + hookSecret + `", "events": ["*"]}`:                            "url",
		`{"name": "x", "url": "https://hooks.example/x", "secret": "short", "events": ["*"]}`:                                       "secret",
		`{"name": "x", "url": "https://hooks.example/x", "events": ["*"]}`:                                                          "secret",
		`{"name": "x", "url": "https://hooks.example/x", "secret": "` + hookSecret + `", "events": []}`:                             "events",
		`{"name": "x", "url": "https://hooks.example/x", "secret": "` + hookSecret + `", "events": ["job.x"]}`:                      "events",
		`{"name": "a b", "url": "https://hooks.example/x", "secret": "` + hookSecret + `", "events": ["*"]}`:                        "name",
		`{"name": "..", "url": "https://hooks.example/x", "secret": "` + hookSecret + `", "events": ["*"]}`:                         "name",
		`{"name": ".", "url": "https://hooks.example/x", "secret": "` + hookSecret + `", "events": ["*"]}`:                          "name",
		`{"name": "x", "url": "https://hooks.example/x", "secret": "` + hookSecret + `", "events": ["*"], "queues": ["bad queue"]}`: "queues",
	} {
		a := s.post("/api/webhooks", b)
		if a.status != http.StatusBadRequest || a.code(t) != "invalid_field" || a.json(t)["error"].(map[string]any)["field"] != field {
			t.Errorf("POST %s: %d %s, want 400 invalid_field naming %s", b, a.status, a.body, field)
		}
	}
	if a := s.post("/api/webhooks", `{"name": "x", "nope": 1}`); a.status != http.StatusBadRequest {
		t.Errorf("POST with an unknown field: %d %s", a.status, a.body)
	}
	if a := s.post("/api/webhooks", `[1]`); a.status != http.StatusBadRequest || a.code(t) != "invalid_json" {
		t.Errorf("POST an array: %d %s", a.status, a.body)
	}
	if a := s.put("/api/webhooks/ops", `{"name": "other", "url": "https://hooks.example/x", "events": ["*"]}`); a.status != http.StatusBadRequest {
		t.Errorf("PUT renaming: %d %s", a.status, a.body)
	}
	if after := s.get("/api/webhooks").body; string(after) != string(before) {
		t.Fatalf("bad input changed the subscriptions:\n%s\n%s", before, after)
	}
	if a := s.do(http.MethodDelete, "/api/webhooks/ops", "", nil); a.status != http.StatusNoContent {
		t.Fatalf("DELETE: %d %s", a.status, a.body)
	}
	if a := s.do(http.MethodDelete, "/api/webhooks/ops", "", nil); a.status != http.StatusNotFound {
		t.Fatalf("DELETE again: %d %s", a.status, a.body)
	}
	a = s.get("/api/audit")
	noSecret(a)
	for _, action := range []string{"webhook.create", "webhook.update", "webhook.delete"} {
		if !strings.Contains(string(a.body), `"`+action+`"`) {
			t.Errorf("audit has no %s: %s", action, a.body)
		}
	}
	if a := s.get("/api/audit?action=webhook.create"); a.status != http.StatusOK {
		t.Errorf("audit filtered by webhook.create: %d %s", a.status, a.body)
	}
}

// A subscription delivers through the store that serves the API, its
// deliveries are listed with their status, paged, and a test delivery is
// a job (201 {"job_id"}).
func TestWebhookDeliveriesAndTestRoute(t *testing.T) {
	s := webhookServer(t, ui.Options{})
	if a := s.post("/api/webhooks", `{"name": "ops", "url": "https://hooks.example/ops", "secret": "`+hookSecret+`", "events": ["job.dead_lettered"]}`); a.status != http.StatusCreated {
		t.Fatalf("create: %d %s", a.status, a.body)
	}
	job := s.submit(`{"queue": "emails", "kind": "send", "max_attempts": 1}`)
	c := s.claim("emails")
	if a := s.post("/api/jobs/"+jsonID(c)+"/fail", `{"lease": `+jsonNum(c["lease"])+`, "error": "boom"}`); a.status != http.StatusOK {
		t.Fatalf("fail: %d %s", a.status, a.body)
	}
	a := s.post("/api/webhooks/ops/test", ``)
	if a.status != http.StatusCreated || num(a.json(t), "job_id") == 0 {
		t.Fatalf("POST test: %d %s", a.status, a.body)
	}
	testID := num(a.json(t), "job_id")
	a = s.get("/api/webhooks/ops/deliveries?limit=1")
	var page struct {
		Deliveries []map[string]any `json:"deliveries"`
		NextCursor string           `json:"next_cursor"`
	}
	if err := json.Unmarshal(a.body, &page); err != nil || a.status != http.StatusOK || len(page.Deliveries) != 1 || page.NextCursor == "" {
		t.Fatalf("deliveries page 1: %d %s", a.status, a.body)
	}
	d := page.Deliveries[0]
	if num(d, "job_id") != testID || d["event"] != app.EventWebhookTest || d["status"] != "queued" || d["event_job_id"] != nil {
		t.Fatalf("newest delivery: %v", d)
	}
	a = s.get("/api/webhooks/ops/deliveries?limit=1&cursor=" + page.NextCursor)
	if err := json.Unmarshal(a.body, &page); err != nil || a.status != http.StatusOK || len(page.Deliveries) != 1 {
		t.Fatalf("deliveries page 2: %d %s", a.status, a.body)
	}
	d = page.Deliveries[0]
	if d["event"] != app.EventDeadLettered || num(d, "event_job_id") != num(job, "id") || d["status"] != "queued" ||
		num(d, "max_attempts") != app.DefaultWebhookMaxAttempts || d["created_at"] == nil {
		t.Fatalf("delivery of the dead-letter: %v", d)
	}
	for path, code := range map[string]string{
		"/api/webhooks/ops/deliveries?limit=0":        "invalid_field",
		"/api/webhooks/ops/deliveries?limit=x":        "invalid_field",
		"/api/webhooks/ops/deliveries?cursor=forged":  "invalid_field",
		"/api/webhooks/ops/deliveries?order=asc":      "invalid_field",
		"/api/webhooks/nope/deliveries":               "not_found",
		"/api/webhooks/ops/deliveries?limit=1001":     "invalid_field",
		"/api/webhooks/ops/deliveries?limit=5&limit=": "invalid_field",
	} {
		if a := s.get(path); a.code(t) != code {
			t.Errorf("GET %s: %d %s, want %s", path, a.status, a.body, code)
		}
	}
	if a := s.post("/api/webhooks/nope/test", ``); a.status != http.StatusNotFound {
		t.Errorf("POST test of none: %d %s", a.status, a.body)
	}
	// Users cannot submit into the deliveries' queue.
	if a := s.post("/api/jobs", `{"queue": "_webhooks", "kind": "webhook"}`); a.status != http.StatusBadRequest || a.code(t) != "invalid_field" ||
		!strings.Contains(string(a.body), "reserved") {
		t.Errorf("submit to _webhooks: %d %s", a.status, a.body)
	}
}

// A callback_url pointing at a refused target is 400 invalid_field naming
// the config keys; the config's allow list lets it in.
func TestCallbackURLTargetPolicy(t *testing.T) {
	s := webhookServer(t, ui.Options{})
	for _, u := range []string{"http://127.0.0.1:8080/cb", "http://[::1]/cb", "http://10.1.2.3/cb", "http://localhost/cb", "http://169.254.169.254/latest"} {
		a := s.post("/api/jobs", `{"kind": "k", "callback_url": "`+u+`"}`)
		if a.status != http.StatusBadRequest || a.code(t) != "invalid_field" || a.json(t)["error"].(map[string]any)["field"] != "callback_url" ||
			!strings.Contains(string(a.body), "[webhooks] allow") {
			t.Errorf("callback_url %s: %d %s, want 400 naming [webhooks] allow", u, a.status, a.body)
		}
	}
	s.svc.Config.Webhooks.Targets.Allow = []string{"127.0.0.1"}
	if a := s.post("/api/jobs", `{"kind": "k", "callback_url": "http://127.0.0.1:8080/cb"}`); a.status != http.StatusCreated {
		t.Fatalf("allowed callback_url: %d %s", a.status, a.body)
	}
	if a := s.post("/api/jobs", `{"kind": "k", "callback_url": "https://hooks.example/cb"}`); a.status != http.StatusCreated {
		t.Fatalf("public callback_url: %d %s", a.status, a.body)
	}
}

// Every webhook route needs admin, reading too, and a token of every queue.
func TestWebhookRoutesNeedAdmin(t *testing.T) {
	s := webhookServer(t, ui.Options{Tokens: []ui.Token{
		{Name: "admin", Secret: "admin-token-0123456789"},
		{Name: "reader", Secret: "reader-token-0123456789", Role: ui.RoleRead},
		{Name: "worker", Secret: "worker-token-0123456789", Role: ui.RoleWork},
		{Name: "scoped", Secret: "scoped-token-0123456789", Queues: []string{"emails"}},
	}})
	bearer := func(tok string) []string { return []string{"Authorization", "Bearer " + tok} }
	routes := []struct{ method, path, body string }{
		{http.MethodGet, "/api/webhooks", ""},
		{http.MethodGet, "/api/webhooks/file", ""},
		{http.MethodGet, "/api/webhooks/file/deliveries", ""},
		{http.MethodPost, "/api/webhooks", `{"name": "x", "url": "https://hooks.example/x", "secret": "` + hookSecret + `", "events": ["*"]}`},
		{http.MethodPut, "/api/webhooks/x", `{"url": "https://hooks.example/x", "events": ["*"]}`},
		{http.MethodPost, "/api/webhooks/file/test", ""},
		{http.MethodDelete, "/api/webhooks/x", ""},
	}
	for _, tok := range []string{"reader-token-0123456789", "worker-token-0123456789", "scoped-token-0123456789"} {
		for _, r := range routes {
			a := s.do(r.method, r.path, "application/json", strings.NewReader(r.body), bearer(tok)...)
			if a.status != http.StatusForbidden {
				t.Errorf("%s %s with %s: %d %s, want 403", r.method, r.path, tok, a.status, a.body)
			}
		}
	}
	want := []int{200, 200, 200, 201, 200, 201, 204}
	for i, r := range routes {
		if a := s.do(r.method, r.path, "application/json", strings.NewReader(r.body), bearer("admin-token-0123456789")...); a.status != want[i] {
			t.Errorf("%s %s as admin: %d %s, want %d", r.method, r.path, a.status, a.body, want[i])
		}
	}
}

func jsonID(m map[string]any) string { return jsonNum(m["id"]) }

func jsonNum(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
