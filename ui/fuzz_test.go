package ui_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/queuehq/queue/app"
	"github.com/queuehq/queue/memory"
	"github.com/queuehq/queue/ui"
)

// FuzzAPIRequests sends arbitrary bodies and query strings to every API
// route: whatever comes in, the answer is never a 500 and every error is
// the JSON error shape with a code. The seed corpus runs in `make test`;
// `go test -fuzz=FuzzAPIRequests ./ui` explores.
func FuzzAPIRequests(f *testing.F) {
	store := memory.New(app.StoreOptions{})
	svc := app.NewService(store, nil, nil, nil, zerolog.Nop())
	h := ui.New(ui.Options{Service: svc, Log: zerolog.Nop()})
	var routes []ui.Route
	for _, r := range ui.Routes(h) {
		if strings.HasPrefix(r.Path, "/api/") && r.Path != "/api/events" && r.Method != "echo_route_not_found" {
			routes = append(routes, r)
		}
	}
	// A job to act on, so ids resolve; and no waits: a stopped service ends
	// every long poll at once.
	svc.Submit(f.Context(), []app.SubmitInput{{Kind: "k"}})
	svc.Stop()
	for i, body := range []string{
		`{"kind":"k"}`, `{"jobs":[{"kind":"k"}]}`, `{"lease":1}`, `{"lease":1,"result":{"a":1}}`, `{"limit":5,"wait":"0s"}`,
		`{"queue":"q","dry_run":true}`, `{"allow_all":true,"dry_run":true}`, `{"jobs":[{"id":1,"lease":1}]}`, `{"delay":"1s"}`,
		`{`, `[]`, `null`, `"x"`, `{"kind":"k","priority":1e99}`, `{"lease":-1,"extend":"-1s"}`, `{"retry_in":"1e9h"}`,
	} {
		f.Add(uint8(i), "id=1&limit=2&status=queued", []byte(body))
	}
	f.Fuzz(func(t *testing.T, route uint8, query string, body []byte) {
		r := routes[int(route)%len(routes)]
		path := strings.NewReplacer(":id", "1", ":queue", "default", ":key", "k").Replace(r.Path)
		req := httptest.NewRequest(r.Method, "/", strings.NewReader(string(body)))
		req.URL.Path = path
		req.URL.RawQuery = query
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		t0 := time.Now()
		h.ServeHTTP(rec, req)
		if d := time.Since(t0); d > 2*time.Second {
			t.Fatalf("%s %s?%s %q took %v", r.Method, path, query, body, d)
		}
		if rec.Code >= 500 && rec.Code != http.StatusServiceUnavailable {
			t.Fatalf("%s %s?%s %q: %d %s", r.Method, path, query, body, rec.Code, rec.Body.String())
		}
		if rec.Code >= 400 {
			var e struct {
				Error struct{ Code, Message string }
			}
			if json.Unmarshal(rec.Body.Bytes(), &e) != nil || e.Error.Code == "" || e.Error.Message == "" {
				t.Fatalf("%s %s %q: %d without a JSON error: %s", r.Method, path, body, rec.Code, rec.Body.String())
			}
		}
	})
}
