package ui_test

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/queuehq/queue/app"
	"github.com/queuehq/queue/ui"
)

// The worker registry over HTTP: register, heartbeat, list, quiet and stop
// with their roles, scopes and audit, and the claim answer's command.
func TestWorkerRegistryAPI(t *testing.T) {
	tokens := []ui.Token{
		{Name: "boss", Secret: "admin-token-0123456789"},
		{Name: "worker", Secret: "work-token-0123456789", Role: ui.RoleWork},
		{Name: "worker-a", Secret: "work-token-a-0123456789", Role: ui.RoleWork, Queues: []string{"a"}},
		{Name: "admin-a", Secret: "admin-token-a-0123456789", Role: ui.RoleAdmin, Queues: []string{"a"}},
		{Name: "viewer-a", Secret: "read-token-a-0123456789", Role: ui.RoleRead, Queues: []string{"a"}},
	}
	s := newServer(t, ui.Options{Tokens: tokens}, true)
	as := func(tok string) []string { return []string{"Authorization", "Bearer " + tok} }
	const (
		boss    = "admin-token-0123456789"
		work    = "work-token-0123456789"
		workA   = "work-token-a-0123456789"
		adminA  = "admin-token-a-0123456789"
		viewerA = "read-token-a-0123456789"
	)

	// Register: 201 with the id, run and the heartbeat interval.
	a := s.post("/api/workers", `{"id":"box:1/builtin-0","host":"box","pid":1,"version":"v1","queues":{"a":2,"b":1},"kinds":["k"],"concurrency":3,"type":"builtin"}`, as(work)...)
	if a.status != http.StatusCreated {
		t.Fatalf("register: %d %s", a.status, a.body)
	}
	m := a.json(t)
	if m["id"] != "box:1/builtin-0" || m["command"] != "run" || m["heartbeat_interval"] != "5s" {
		t.Fatalf("register answer: %s", a.body)
	}
	a = s.post("/api/workers", `{"host":"box","pid":2,"queues":["a"],"concurrency":1}`, as(workA)...)
	if a.status != http.StatusCreated {
		t.Fatalf("register without id: %d %s", a.status, a.body)
	}
	idA := a.json(t)["id"].(string)
	if !strings.HasPrefix(idA, "box:2-") {
		t.Fatalf("server-made id %q, want box:2-<random>", idA)
	}

	// Bad input: 400 and nothing stored; a read token may not register;
	// a token of queue a may not register a worker of queue b.
	for _, body := range []string{
		`{"host":"box","pid":0,"queues":["a"],"concurrency":1}`,
		`{"host":"box","pid":1,"queues":[],"concurrency":1}`,
		`{"host":"box","pid":1,"queues":["a"],"concurrency":0}`,
		`{"id":"has space","host":"box","pid":1,"queues":["a"],"concurrency":1}`,
		`{"host":"box","pid":1,"queues":["a"],"concurrency":1,"type":"nope"}`,
		`{"host":"box","pid":1,"queues":["a"],"concurrency":1,"extra":1}`,
		`[1]`,
	} {
		if a := s.post("/api/workers", body, as(work)...); a.status != http.StatusBadRequest {
			t.Errorf("register %s: %d %s, want 400", body, a.status, a.body)
		}
	}
	// Past PostgreSQL's integer: 400 naming the field on every store, not 500.
	for body, field := range map[string]string{
		`{"host":"box","pid":99999999999,"queues":["a"],"concurrency":1}`: "pid",
	} {
		a := s.post("/api/workers", body, as(work)...)
		if e, _ := a.json(t)["error"].(map[string]any); a.status != http.StatusBadRequest || e["code"] != "invalid_field" || e["field"] != field {
			t.Errorf("register %s: %d %s, want 400 invalid_field of %s", body, a.status, a.body, field)
		}
	}
	if a := s.post("/api/workers", `{"host":"box","pid":3,"queues":["a"],"concurrency":1}`, as(viewerA)...); a.status != http.StatusForbidden {
		t.Fatalf("register with a read token: %d, want 403", a.status)
	}
	if a := s.post("/api/workers", `{"host":"box","pid":3,"queues":["a","b"],"concurrency":1}`, as(workA)...); a.status != http.StatusForbidden {
		t.Fatalf("register of queue b with a token of queue a: %d, want 403", a.status)
	}

	// Heartbeat: the command; an id with a slash, escaped; unknown: 404 worker_not_found.
	esc := url.PathEscape("box:1/builtin-0")
	a = s.post("/api/workers/"+esc+"/heartbeat", `{"in_flight":2,"done":7,"failed":1}`, as(work)...)
	if a.status != http.StatusOK || a.json(t)["command"] != "run" {
		t.Fatalf("heartbeat: %d %s", a.status, a.body)
	}
	for body, field := range map[string]string{
		`{"in_flight":9007199254740993}`: "in_flight",
		`{"done":9007199254740993}`:      "done",
		`{"failed":-1}`:                  "failed",
	} {
		a := s.post("/api/workers/"+esc+"/heartbeat", body, as(work)...)
		if e, _ := a.json(t)["error"].(map[string]any); a.status != http.StatusBadRequest || e["code"] != "invalid_field" || e["field"] != field {
			t.Errorf("heartbeat %s: %d %s, want 400 invalid_field of %s", body, a.status, a.body, field)
		}
	}
	a = s.post("/api/workers/"+esc+"/heartbeat", `{"in_flight":3000000000,"done":7,"failed":1}`, as(work)...)
	if a.status != http.StatusOK {
		t.Fatalf("heartbeat with in_flight 3000000000: %d %s", a.status, a.body)
	}
	if a := s.post("/api/workers/"+esc+"/heartbeat", `{"in_flight":2,"done":7,"failed":1}`, as(work)...); a.status != http.StatusOK {
		t.Fatalf("heartbeat: %d %s", a.status, a.body)
	}
	a = s.post("/api/workers/gone-long-ago/heartbeat", `{}`, as(work)...)
	if a.status != http.StatusNotFound || a.code(t) != "worker_not_found" {
		t.Fatalf("heartbeat of an unknown worker: %d %s, want 404 worker_not_found", a.status, a.body)
	}
	if a := s.post("/api/workers/"+esc+"/heartbeat", `{}`, as(workA)...); a.status != http.StatusForbidden {
		t.Fatalf("heartbeat of a worker of queues a and b with a token of a: %d, want 403", a.status)
	}

	// List: counts and state; a token of queue a sees only the worker of a alone.
	list := func(tok string) []any {
		t.Helper()
		a := s.do(http.MethodGet, "/api/workers", "", nil, as(tok)...)
		if a.status != http.StatusOK {
			t.Fatalf("GET /api/workers: %d %s", a.status, a.body)
		}
		return a.json(t)["workers"].([]any)
	}
	ws := list(boss)
	if len(ws) != 2 {
		t.Fatalf("workers: %d, want 2", len(ws))
	}
	w := ws[0].(map[string]any)
	if w["id"] != "box:1/builtin-0" || num(w, "in_flight") != 2 || num(w, "done") != 7 || num(w, "failed") != 1 ||
		w["state"] != "running" || w["type"] != "builtin" || w["queues"].(map[string]any)["a"] != 2.0 {
		t.Fatalf("worker listed: %v", w)
	}
	if ws := list(viewerA); len(ws) != 1 || ws[0].(map[string]any)["id"] != idA {
		t.Fatalf("a token of queue a lists %v, want only %s", ws, idA)
	}

	// Quiet and stop: admin only, within the token's queues; audited.
	if a := s.post("/api/workers/"+idA+"/quiet", ``, as(work)...); a.status != http.StatusForbidden {
		t.Fatalf("quiet with a work token: %d, want 403", a.status)
	}
	if a := s.post("/api/workers/"+esc+"/quiet", ``, as(adminA)...); a.status != http.StatusForbidden {
		t.Fatalf("quiet of a worker of queue b with an admin token of a: %d, want 403", a.status)
	}
	if a := s.post("/api/workers/nobody/quiet", ``, as(boss)...); a.status != http.StatusNotFound || a.code(t) != "worker_not_found" {
		t.Fatalf("quiet of an unknown worker: %d %s", a.status, a.body)
	}
	a = s.post("/api/workers/"+idA+"/quiet", ``, as(adminA)...)
	if a.status != http.StatusOK || a.json(t)["state"] != "quiet" {
		t.Fatalf("quiet: %d %s", a.status, a.body)
	}

	// A quiet worker's claim hands out nothing and says quiet; an
	// unregistered worker's claim has no command.
	s.post("/api/jobs", `{"queue":"a","kind":"k"}`, as(boss)...)
	a = s.post("/api/queues/a/claim", `{"worker_id":"`+idA+`","limit":1}`, as(workA)...)
	if m := a.json(t); a.status != http.StatusOK || len(m["jobs"].([]any)) != 0 || m["command"] != "quiet" {
		t.Fatalf("claim of a quiet worker: %d %s", a.status, a.body)
	}
	a = s.post("/api/claim", `{"worker_id":"`+idA+`","limit":1,"queues":["a"]}`, as(workA)...)
	if m := a.json(t); a.status != http.StatusOK || len(m["jobs"].([]any)) != 0 || m["command"] != "quiet" {
		t.Fatalf("claim over queues of a quiet worker: %d %s", a.status, a.body)
	}
	a = s.post("/api/queues/a/claim", `{"worker_id":"box:1/builtin-0","limit":1}`, as(work)...)
	if m := a.json(t); len(m["jobs"].([]any)) != 1 || m["command"] != "run" {
		t.Fatalf("claim of a running worker: %s", a.body)
	}
	s.post("/api/jobs", `{"queue":"a","kind":"k"}`, as(boss)...)
	a = s.post("/api/queues/a/claim", `{"worker_id":"anonymous","limit":1}`, as(work)...)
	if m := a.json(t); len(m["jobs"].([]any)) != 1 || m["command"] != nil {
		t.Fatalf("claim of an unregistered worker: %s", a.body)
	}

	a = s.post("/api/workers/"+esc+"/stop", ``, as(boss)...)
	if a.status != http.StatusOK || a.json(t)["state"] != "stopping" {
		t.Fatalf("stop: %d %s", a.status, a.body)
	}
	if a := s.post("/api/workers/"+esc+"/heartbeat", `{}`, as(work)...); a.json(t)["command"] != "stop" {
		t.Fatalf("heartbeat after stop: %s", a.body)
	}
	if a := s.post("/api/workers/"+esc+"/quiet", ``, as(boss)...); a.status != http.StatusConflict {
		t.Fatalf("quiet after stop: %d %s, want 409", a.status, a.body)
	}
	a = s.do(http.MethodGet, "/api/audit?action=worker.stop", "", nil, as(boss)...)
	if entries := a.json(t)["entries"]; a.status != http.StatusOK || !strings.Contains(string(a.body), `"target":"worker box:1/builtin-0"`) {
		t.Fatalf("audit of stop: %d %v %s", a.status, entries, a.body)
	}

	// Three heartbeats missed: gone.
	s.clock.Advance(16 * time.Second)
	for _, w := range list(boss) {
		if st := w.(map[string]any)["state"]; st != "gone" {
			t.Fatalf("state after 16s without heartbeat: %v", st)
		}
	}
}

// A worker past the list's cut: read by id, its quiet heard at a heartbeat
// under a token with a queue list (which reads the worker for its queues:
// it was 404, so the worker registered again and the quiet was undone);
// the list says it was cut.
func TestWorkerBeyondTheList(t *testing.T) {
	tokens := []ui.Token{
		{Name: "boss", Secret: "admin-token-0123456789"},
		{Name: "worker-a", Secret: "work-token-a-0123456789", Role: ui.RoleWork, Queues: []string{"a"}},
	}
	s := newServer(t, ui.Options{Tokens: tokens}, false)
	as := func(tok string) []string { return []string{"Authorization", "Bearer " + tok} }
	const boss, workA = "admin-token-0123456789", "work-token-a-0123456789"
	now := s.clock.Now()
	if err := s.svc.Store.Write(t.Context(), func(tx app.Tx) error {
		for i := range app.MaxWorkersListed {
			if err := tx.PutWorker(&app.Worker{ID: fmt.Sprintf("w%04d", i), Host: "box", PID: i + 1,
				Queues: app.QueueChoice{Names: []string{"a"}}, Concurrency: 1, Type: app.WorkerHTTP,
				Command: app.WorkerRun, StartedAt: now, LastSeenAt: now}); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	last := fmt.Sprintf("w%04d", app.MaxWorkersListed)
	if a := s.post("/api/workers", `{"id":"`+last+`","host":"box","pid":1,"queues":["a"],"concurrency":1}`, as(workA)...); a.status != http.StatusCreated {
		t.Fatalf("register %s: %d %s", last, a.status, a.body)
	}
	a := s.do(http.MethodGet, "/api/workers", "", nil, as(boss)...)
	if m := a.json(t); a.status != http.StatusOK || len(m["workers"].([]any)) != app.MaxWorkersListed || m["truncated"] != true {
		t.Fatalf("GET /api/workers of %d: %d, %d listed, truncated %v", app.MaxWorkersListed+1, a.status, len(m["workers"].([]any)), m["truncated"])
	}
	if a := s.do(http.MethodGet, "/api/workers/"+last, "", nil, as(workA)...); a.status != http.StatusOK || a.json(t)["id"] != last {
		t.Fatalf("GET /api/workers/%s: %d %s", last, a.status, a.body)
	}
	if a := s.post("/api/workers/"+last+"/quiet", ``, as(boss)...); a.status != http.StatusOK {
		t.Fatalf("quiet %s: %d %s", last, a.status, a.body)
	}
	if a := s.post("/api/workers/"+last+"/heartbeat", `{"in_flight":1}`, as(workA)...); a.status != http.StatusOK || a.json(t)["command"] != "quiet" {
		t.Fatalf("heartbeat of %s with a token of queue a: %d %s, want 200 quiet", last, a.status, a.body)
	}
}
