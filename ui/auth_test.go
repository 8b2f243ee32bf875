package ui_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/queuehq/queue/ui"
)

const testToken = "0123456789abcdef0123"

// With tokens configured, every route registered on the router answers 401
// without one: the list comes from the router, so a new route cannot be
// left open by mistake. Only the login page and static files are public, and
// health and metrics when opened on purpose.
func TestEveryRouteNeedsATokenWhenTokensAreSet(t *testing.T) {
	opts := ui.Options{Tokens: []ui.Token{{Name: "ops", Secret: testToken}}, AuthFailLimit: -1}
	s := newServer(t, opts, false)
	h := ui.New(ui.Options{Service: s.svc, Tokens: opts.Tokens, Metrics: http.NotFoundHandler()})
	routes := ui.Routes(h)
	if len(routes) < 30 {
		t.Fatalf("only %d routes", len(routes))
	}
	open := 0
	for _, r := range routes {
		if r.Method == "echo_route_not_found" || strings.HasPrefix(r.Path, "/static") || r.Path == "/login" {
			open++
			continue
		}
		path := strings.NewReplacer(":id", "1", ":queue", "default", ":key", "k", "*", "x").Replace(r.Path)
		for _, hdr := range [][]string{nil, {"Authorization", "Bearer wrong-token-0123456789"}, {"Authorization", "Basic " + testToken}} {
			ctype, body := "application/json", "{}"
			if !strings.HasPrefix(r.Path, "/api/") {
				ctype, body = "application/x-www-form-urlencoded", "a=b"
			}
			a := s.do(r.Method, path, ctype, strings.NewReader(body), hdr...)
			if a.status != http.StatusUnauthorized {
				t.Errorf("%s %s with %v: %d, want 401", r.Method, r.Path, hdr, a.status)
			}
		}
	}
	// The right token opens them.
	if a := s.do("GET", "/api/stats", "", nil, "Authorization", "Bearer "+testToken); a.status != 200 {
		t.Fatalf("with the token: %d %s", a.status, a.body)
	}
	t.Logf("%d routes closed, %d public", len(routes)-open, open)
}

func TestHealthAndMetricsOpenOnlyWhenConfigured(t *testing.T) {
	tokens := []ui.Token{{Name: "ops", Secret: testToken}}
	closed := newServer(t, ui.Options{Tokens: tokens, Metrics: http.NotFoundHandler()}, false)
	for _, p := range []string{"/healthz", "/readyz", "/metrics"} {
		if a := closed.get(p); a.status != 401 {
			t.Errorf("%s without public_*: %d", p, a.status)
		}
	}
	opened := newServer(t, ui.Options{Tokens: tokens, PublicHealth: true, PublicMetrics: true,
		Metrics: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("m 1\n")) })}, false)
	for _, p := range []string{"/healthz", "/readyz", "/metrics"} {
		if a := opened.get(p); a.status != 200 {
			t.Errorf("%s with public_*: %d", p, a.status)
		}
	}
}

// The audit trail names the token that acted.
func TestAuditNamesTheToken(t *testing.T) {
	s := newServer(t, ui.Options{Tokens: []ui.Token{{Name: "ops", Secret: testToken}}}, false)
	auth := []string{"Authorization", "Bearer " + testToken}
	s.do("POST", "/api/queues/q/pause", "", nil, auth...)
	a := s.do("GET", "/api/audit", "", nil, auth...)
	if !strings.Contains(string(a.body), `"actor":"ops"`) {
		t.Fatalf("audit: %s", a.body)
	}
}
