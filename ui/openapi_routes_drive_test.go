package ui_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	assets "github.com/queuehq/queue/embed"
	"github.com/queuehq/queue/internal/openapitest"
	"github.com/queuehq/queue/ui"
)

// routeDriver sends real requests to a server whose answers are checked
// against the OpenAPI document (newUIEnv wraps its handler in
// openapitest.Handler), and notes which operation of the document each
// one reached.
type routeDriver struct {
	t       *testing.T
	base    string
	checker *openapitest.Checker
	pages   *uiClient
	mu      sync.Mutex
	reached map[string]bool
}

func (d *routeDriver) note(req *http.Request) {
	op, err := d.checker.Operation(req)
	if err != nil {
		d.t.Errorf("%s %s reaches no operation of the document", req.Method, req.URL.Path)
		return
	}
	d.mu.Lock()
	d.reached[op] = true
	d.mu.Unlock()
}

// api sends a JSON request and wants one of the statuses; it returns the
// answer's JSON (nil for none).
func (d *routeDriver) api(method, path, body string, want int, hdr ...string) map[string]any {
	d.t.Helper()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, d.base+path, r)
	if err != nil {
		d.t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	d.note(req)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		d.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != want {
		d.t.Fatalf("%s %s: %d, want %d: %s", method, path, resp.StatusCode, want, b)
	}
	var m map[string]any
	if len(b) > 0 && strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
		if err := json.Unmarshal(b, &m); err != nil {
			d.t.Fatalf("%s %s: %v", method, path, err)
		}
	}
	return m
}

// stream opens an event stream, reads its first event or comment, and
// hangs up: the handler returns, and its answer is checked.
func (d *routeDriver) stream(path string) {
	d.t.Helper()
	ctx, cancel := context.WithTimeout(d.t.Context(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, d.base+path, nil)
	d.note(req)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		d.t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
		d.t.Fatalf("GET %s: %d %s", path, resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	if _, err := resp.Body.Read(make([]byte, 64)); err != nil {
		d.t.Fatalf("GET %s: %v", path, err)
	}
}

// page sends a page request (a form for POST, with the CSRF token of the
// last page read) and wants one of the statuses.
func (d *routeDriver) page(method, path string, form url.Values, want ...int) uiAnswer {
	d.t.Helper()
	req, _ := http.NewRequest(method, d.base+path, nil)
	d.note(req)
	var a uiAnswer
	if method == http.MethodPost {
		a = d.pages.post(path, form)
	} else {
		a = d.pages.do(method, path, nil, nil)
	}
	if !slices.Contains(want, a.status) {
		d.t.Fatalf("%s %s: %d, want %v: %.300s", method, path, a.status, want, a.body)
	}
	return a
}

func num64(m map[string]any, k string) int64 { return num(m, k) }

// Every route of the router is driven once with a request that reaches
// its handler (success, or an error a client meets), and every answer is
// validated against the OpenAPI document: routes no other test touches
// are covered too. The test fails if an operation of the document was not
// reached.
func TestOpenAPIEveryRoute(t *testing.T) {
	checker, err := openapitest.Default()
	if err != nil {
		t.Fatal(err)
	}
	var metrics http.Handler
	env := newUIEnv(t, ui.Options{Metrics: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { metrics.ServeHTTP(w, r) })}, false)
	metrics = ui.NewMetrics(env.svc).Handler()
	env.svc.Config.ParseSchedule = parseCron
	d := &routeDriver{t: t, base: env.URL, checker: checker, pages: newUIClient(t, env.URL), reached: map[string]bool{}}

	// Health and metrics.
	d.api("GET", "/healthz", "", 200)
	d.api("HEAD", "/healthz", "", 200)
	d.api("GET", "/readyz", "", 200)
	d.api("HEAD", "/readyz", "", 200)
	d.api("GET", "/metrics", "", 200)
	d.api("GET", "/api/openapi.json", "", 200)

	// Jobs.
	first := d.api("POST", "/api/jobs", `{"queue":"oa","kind":"oa.work","payload":{"n":1},"tags":["t"]}`, 201, "Idempotency-Key", "oa-1")
	d.api("POST", "/api/jobs", `{"queue":"oa","kind":"oa.work","payload":{"n":1},"tags":["t"]}`, 200, "Idempotency-Key", "oa-1")
	d.api("POST", "/api/jobs/batch", `{"jobs":[{"queue":"oa","kind":"oa.work"},{"queue":"oa","kind":"oa.work"},{"queue":"oa","kind":"oa.work"},{"queue":"oa","kind":"oa.work"}]}`, 201)
	d.api("GET", "/api/jobs?queue=oa&limit=2", "", 200)
	d.api("GET", "/api/jobs?queue=oa&kind_prefix=oa.&status=retrying&sort=run_at&count=true&limit=2", "", 200)
	d.api("GET", "/api/suggest?field=kind&prefix=oa&limit=5", "", 200)
	id := num64(first, "id")
	d.api("GET", fmt.Sprintf("/api/jobs/%d?events=true", id), "", 200)
	d.api("GET", fmt.Sprintf("/api/jobs/%d/events", id), "", 200)

	// The worker protocol, on jobs claimed here.
	claim := func(path, body string) (int64, int64) {
		t.Helper()
		jobs := d.api("POST", path, body, 200)["jobs"].([]any)
		if len(jobs) != 1 {
			t.Fatalf("claim: %d jobs", len(jobs))
		}
		j := jobs[0].(map[string]any)
		return num64(j, "id"), num64(j, "lease")
	}
	a, la := claim("/api/queues/oa/claim", `{"worker_id":"oa-worker","limit":1}`)
	d.api("POST", fmt.Sprintf("/api/jobs/%d/heartbeat", a), fmt.Sprintf(`{"lease":%d,"extend":"30s","progress":10}`, la), 200)
	d.api("POST", fmt.Sprintf("/api/jobs/%d/progress", a), fmt.Sprintf(`{"lease":%d,"progress":50,"message":"half"}`, la), 200)
	d.api("POST", fmt.Sprintf("/api/jobs/%d/log", a), fmt.Sprintf(`{"lease":%d,"line":"hello"}`, la), 200)
	d.api("GET", fmt.Sprintf("/api/jobs/%d/log", a), "", 200)
	d.stream(fmt.Sprintf("/api/jobs/%d/log?follow=true", a))
	d.api("POST", fmt.Sprintf("/api/jobs/%d/complete", a), fmt.Sprintf(`{"lease":%d,"result":{"ok":true}}`, la), 200)
	b, lb := claim("/api/claim", `{"queues":["oa"],"limit":1}`)
	d.api("POST", fmt.Sprintf("/api/jobs/%d/fail", b), fmt.Sprintf(`{"lease":%d,"error":"boom","retry":false}`, lb), 200)
	c, lc := claim("/api/queues/oa/claim", `{"limit":1}`)
	d.api("POST", fmt.Sprintf("/api/jobs/%d/snooze", c), fmt.Sprintf(`{"lease":%d,"delay":"1h"}`, lc), 200)
	e, le := claim("/api/queues/oa/claim", `{"limit":1}`)
	d.api("POST", "/api/jobs/complete", fmt.Sprintf(`{"jobs":[{"id":%d,"lease":%d,"result":null}]}`, e, le), 200)
	d.api("POST", fmt.Sprintf("/api/jobs/%d/cancel", env.ids.Queued), `{}`, 200)
	for _, action := range []string{"cancel", "retry", "reschedule", "prioritize", "delete"} {
		body := `{"queue":"oa","dry_run":true}`
		switch action {
		case "reschedule":
			body = `{"queue":"oa","delay":"1m","dry_run":true}`
		case "prioritize":
			body = `{"queue":"oa","priority":5,"dry_run":true}`
		}
		d.api("POST", "/api/jobs/"+action, body, 200)
	}

	// Queues and their settings.
	d.api("GET", "/api/queues", "", 200)
	d.api("GET", "/api/queues/oa/keys?limit=5", "", 200)
	d.api("POST", "/api/queues/oa/pause", "", 200)
	d.api("POST", "/api/queues/oa/resume", `{}`, 200)
	d.api("POST", "/api/queues/oa/drain", `{"dry_run":true}`, 200)
	d.api("GET", "/api/queues/oa/settings", "", 200)
	d.api("PATCH", "/api/queues/oa/settings", `{"concurrency":3,"rate":null}`, 200)
	d.api("DELETE", "/api/queues/oa/settings", "", 200)

	// The dead-letter queue.
	d.api("GET", "/api/dlq?queue=billing", "", 200)
	d.api("GET", "/api/dlq/stats", "", 200)
	d.api("GET", fmt.Sprintf("/api/dlq/%d", env.ids.Dead[0]), "", 200)
	d.api("POST", fmt.Sprintf("/api/dlq/%d/replay", env.ids.Dead[0]), `{"delay":"1h"}`, 201, "Idempotency-Key", "oa-replay")
	d.api("DELETE", fmt.Sprintf("/api/dlq/%d", env.ids.Dead[1]), "", 204)
	d.api("POST", "/api/dlq/replay", `{"queue":"billing","dry_run":true}`, 200)
	d.api("POST", "/api/dlq/purge", `{"queue":"billing","dry_run":true}`, 200)
	d.api("POST", "/api/dlq/move", `{"queue":"oa","dry_run":true}`, 200)

	// Stats, events, audit.
	d.api("GET", "/api/stats", "", 200)
	d.api("GET", "/api/stats/series?queue=emails&range=24h", "", 200)
	d.stream("/api/events?queue=oa")
	d.api("GET", "/api/audit?limit=5", "", 200)

	// Workflows.
	wf := d.api("POST", "/api/workflows", `{"name":"oa-flow","steps":[{"step":"a","queue":"oaflow","kind":"oa.step"},{"step":"b","queue":"oaflow","kind":"oa.step","depends_on":["a"]}]}`, 201)
	wid := num64(wf, "id")
	d.api("GET", "/api/workflows?name=oa-flow", "", 200)
	d.api("GET", fmt.Sprintf("/api/workflows/%d", wid), "", 200)

	// Periodic jobs.
	d.api("GET", "/api/periodic", "", 200)
	d.api("POST", "/api/periodic", `{"name":"oa-hourly","cron":"@every 1h","queue":"oa","kind":"oa.tick"}`, 201)
	d.api("GET", "/api/periodic/oa-hourly", "", 200)
	d.api("PUT", "/api/periodic/oa-hourly", `{"name":"oa-hourly","cron":"@every 2h","queue":"oa","kind":"oa.tick","tags":["p"]}`, 200)
	d.api("POST", "/api/periodic/oa-hourly/pause", "", 200)
	d.api("POST", "/api/periodic/oa-hourly/resume", "", 200)
	d.api("POST", "/api/periodic/oa-hourly/run", "", 201)

	// Once.
	rec := d.api("POST", "/api/once/oa-once", `{"hold_for":"1m"}`, 201)
	d.api("POST", "/api/once/oa-once/done", fmt.Sprintf(`{"token":%q,"result":{"sent":true}}`, rec["token"]), 200)

	// Workers.
	w := d.api("POST", "/api/workers", `{"host":"oa-host","pid":42,"queues":["oa"],"concurrency":2,"version":"v1"}`, 201)
	wpath := "/api/workers/" + url.PathEscape(w["id"].(string))
	d.api("GET", "/api/workers", "", 200)
	d.api("GET", wpath, "", 200)
	d.api("POST", wpath+"/heartbeat", `{"in_flight":1,"done":3,"failed":0}`, 200)
	d.api("POST", wpath+"/quiet", "", 200)
	d.api("POST", wpath+"/stop", `{}`, 200)

	// Webhooks.
	d.api("POST", "/api/webhooks", `{"name":"oa-hook","url":"https://hooks.example.com/queue","secret":"0123456789abcdef","events":["job.succeeded"]}`, 201)
	d.api("GET", "/api/webhooks", "", 200)
	d.api("GET", "/api/webhooks/oa-hook", "", 200)
	d.api("PUT", "/api/webhooks/oa-hook", `{"name":"oa-hook","url":"https://hooks.example.com/queue","events":["*"],"queues":["oa"]}`, 200)
	d.api("POST", "/api/webhooks/oa-hook/test", "", 201)
	d.api("GET", "/api/webhooks/oa-hook/deliveries?limit=10", "", 200)

	// Pages: each GET page and its HEAD, then the forms (POST-redirect-GET).
	for _, p := range []string{"/", "/jobs?queue=oa", fmt.Sprintf("/jobs/%d", id), "/jobs/confirm?op=cancel&queue=oa", fmt.Sprintf("/jobs/go?id=%d", id),
		"/dlq", "/dlq/confirm?op=replay&queue=billing", fmt.Sprintf("/dlq/%d", env.ids.Dead[2]), "/dlq/export?format=csv&queue=billing",
		"/workflows", fmt.Sprintf("/workflows/%d", wid), fmt.Sprintf("/workflows/%d/cancel", wid),
		"/queues", "/audit", "/queues/drain?queue=oa", "/queues/keys?queue=oa", "/queues/chart?queue=emails", "/queues/settings?queue=oa",
		"/periodic", "/periodic/edit?name=oa-hourly", "/workers", "/workers/confirm?id=" + url.QueryEscape(w["id"].(string)) + "&command=quiet",
		"/webhooks", "/webhooks/oa-hook", "/login"} {
		d.page("HEAD", p, nil, 200, 303)
		d.page("GET", p, nil, 200, 303)
	}
	d.page("GET", "/static/app.css", nil, 200)
	d.page("GET", "/queues", nil, 200) // a page's CSRF token for the forms
	for _, f := range []struct {
		path string
		form url.Values
	}{
		{"/jobs/bulk", url.Values{"op": {"cancel"}, "queue": {"oa"}, "bound": {"0"}}},
		{fmt.Sprintf("/jobs/%d/cancel", id), nil},
		{fmt.Sprintf("/jobs/%d/move", env.ids.Scheduled), url.Values{"note": {"openapi"}}},
		{"/dlq/bulk", url.Values{"op": {"replay"}, "id": {fmt.Sprint(env.ids.Dead[3])}}},
		{fmt.Sprintf("/dlq/%d/replay", env.ids.Dead[2]), url.Values{"when": {"now"}}},
		{fmt.Sprintf("/workflows/%d/cancel", wid), url.Values{"confirm": {"yes"}}},
		{"/queues/pause", url.Values{"queue": {"oa"}}},
		{"/queues/resume", url.Values{"queue": {"oa"}}},
		{"/queues/drain", url.Values{"queue": {"oa"}}},
		{"/queues/settings", url.Values{"queue": {"oa"}, "concurrency": {"4"}}},
		{"/queues/settings/reset", url.Values{"queue": {"oa"}}},
		{"/periodic/save", url.Values{"name": {"oa-page"}, "cron": {"@every 1h"}, "queue": {"oa"}, "kind": {"oa.tick"}}},
		{"/periodic/run", url.Values{"name": {"oa-page"}}},
		{"/periodic/pause", url.Values{"name": {"oa-page"}}},
		{"/periodic/resume", url.Values{"name": {"oa-page"}}},
		{"/periodic/delete", url.Values{"name": {"oa-page"}}},
		{"/workers/command", url.Values{"id": {w["id"].(string)}, "command": {"quiet"}, "confirm": {"yes"}}},
		{"/login", url.Values{"token": {"x"}}},
		{"/logout", nil},
	} {
		d.page("POST", f.path, f.form, 303)
	}
	d.pageForms(t) // the webhook pages' forms (pages_webhooks.go)

	// Deletions last: the pages above read what they delete.
	d.api("DELETE", "/api/webhooks/oa-hook", "", 204)
	d.api("POST", fmt.Sprintf("/api/workflows/%d/cancel", wid), "", 409) // cancelled by its page's form: a realistic error
	d.api("DELETE", "/api/periodic/oa-hourly", "", 204)

	var missing []string
	for _, op := range openapiOperations(t) {
		if !d.reached[op] {
			missing = append(missing, op)
		}
	}
	if len(missing) > 0 {
		t.Errorf("operations of the document no request of this test reached: %v", missing)
	}
}

// openapiOperations lists "METHOD /path" of the embedded document.
func openapiOperations(t *testing.T) []string {
	var doc struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(assets.OpenAPI, &doc); err != nil {
		t.Fatal(err)
	}
	var out []string
	for p, item := range doc.Paths {
		for m := range item {
			out = append(out, strings.ToUpper(m)+" "+p)
		}
	}
	sort.Strings(out)
	return out
}

// pageForms posts the forms of the webhook pages (and reads their own pages).
func (d *routeDriver) pageForms(t *testing.T) {
	d.page("GET", "/webhooks", nil, 200)
	d.page("POST", "/webhooks", url.Values{"name": {"oa-page-hook"}, "url": {"https://hooks.example.com/p"}, "secret": {"0123456789abcdef"}, "events": {"job.dead_lettered"}}, 303)
	d.page("POST", "/webhooks/oa-page-hook", url.Values{"url": {"https://hooks.example.com/p2"}, "events": {"*"}, "queues": {"oa, emails"}}, 303)
	d.page("POST", "/webhooks/oa-page-hook/test", nil, 303)
	d.page("HEAD", "/webhooks/oa-page-hook/delete", nil, 200)
	d.page("GET", "/webhooks/oa-page-hook/delete", nil, 200)
	d.page("POST", "/webhooks/oa-page-hook/delete", url.Values{"confirm": {"yes"}}, 303)
}
