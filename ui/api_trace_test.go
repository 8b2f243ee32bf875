package ui_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/queuehq/queue/app"
	"github.com/queuehq/queue/memory"
	"github.com/queuehq/queue/ui"
)

// The traceparent and tracestate headers put a submitted job without a
// traceparent of its own in their trace (POST /api/jobs, /api/jobs/batch,
// /api/workflows); the body's field wins; a header that is not a valid
// traceparent is ignored (W3C), where the same body field is refused.
func TestTraceHeaders(t *testing.T) {
	svc := app.NewService(memory.New(app.StoreOptions{}), nil, app.SystemClock{}, app.NewBus(), zerolog.Nop())
	h := ui.New(ui.Options{Service: svc, Log: zerolog.Nop()})
	const hdr = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	const own = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00"
	post := func(path, body string, headers ...string) (int, map[string]any) {
		t.Helper()
		req := httptest.NewRequest(http.MethodPost, path, strings.NewReader(body))
		req.Host = "127.0.0.1:8080"
		req.Header.Set("Content-Type", "application/json")
		for i := 0; i+1 < len(headers); i += 2 {
			req.Header.Add(headers[i], headers[i+1])
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		var m map[string]any
		json.Unmarshal(rec.Body.Bytes(), &m)
		return rec.Code, m
	}
	for _, c := range []struct {
		name, body     string
		headers        []string
		wantTP, wantTS string
	}{
		{"header", `{"kind":"k"}`, []string{"traceparent", hdr, "tracestate", "a=1", "tracestate", "b=2"}, hdr, "a=1,b=2"},
		{"body wins", `{"kind":"k","traceparent":"` + own + `"}`, []string{"traceparent", hdr, "tracestate", "a=1"}, own, ""},
		{"bad header ignored", `{"kind":"k"}`, []string{"traceparent", "00-xyz", "tracestate", "a=1"}, "", ""},
		{"two traceparents ignored", `{"kind":"k"}`, []string{"traceparent", hdr, "traceparent", own}, "", ""},
		{"long tracestate dropped", `{"kind":"k"}`, []string{"traceparent", hdr, "tracestate", "a=" + strings.Repeat("x", 600)}, hdr, ""},
		{"long tracestate cut", `{"kind":"k"}`, []string{"traceparent", hdr, "tracestate", "a=1,b=" + strings.Repeat("x", 600)}, hdr, "a=1"},
	} {
		st, job := post("/api/jobs", c.body, c.headers...)
		if st != http.StatusCreated || job["traceparent"] != nilIfEmpty(c.wantTP) || job["tracestate"] != nilIfEmpty(c.wantTS) {
			t.Errorf("%s: %d traceparent %v tracestate %v; want %q %q", c.name, st, job["traceparent"], job["tracestate"], c.wantTP, c.wantTS)
		}
	}
	if st, m := post("/api/jobs", `{"kind":"k","traceparent":"00-xyz"}`, "traceparent", hdr); st != http.StatusBadRequest {
		t.Errorf("a bad traceparent field: %d %v, want 400", st, m)
	}
	st, m := post("/api/jobs/batch", `{"jobs":[{"kind":"k"},{"kind":"k","traceparent":"`+own+`"}]}`, "traceparent", hdr)
	jobs, _ := m["jobs"].([]any)
	if st != http.StatusCreated || len(jobs) != 2 || jobs[0].(map[string]any)["traceparent"] != hdr || jobs[1].(map[string]any)["traceparent"] != own {
		t.Errorf("batch: %d %v", st, m)
	}
	st, m = post("/api/workflows", `{"name":"w","steps":[{"step":"a","kind":"k"}]}`, "traceparent", hdr)
	steps, _ := m["steps"].([]any)
	if st != http.StatusCreated || len(steps) != 1 {
		t.Fatalf("workflow: %d %v", st, m)
	}
	id := int64(steps[0].(map[string]any)["job_id"].(float64))
	if j, _, err := svc.Store.Lookup(t.Context(), id); err != nil || j.Traceparent != hdr {
		t.Errorf("workflow step's job: %v %v; want traceparent %s", j, err, hdr)
	}
}

func nilIfEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}
