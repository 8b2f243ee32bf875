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
// health (unless closed, as here) and metrics when opened on purpose.
func TestEveryRouteNeedsATokenWhenTokensAreSet(t *testing.T) {
	opts := ui.Options{Tokens: []ui.Token{{Name: "ops", Secret: testToken}}, AuthFailLimit: -1, PrivateHealth: true}
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

// Health answers anyone by default (it reveals nothing, not even the
// version); PrivateHealth (public_health = false) closes it. /metrics is
// closed unless PublicMetrics.
func TestHealthOpenByDefaultMetricsOnlyWhenConfigured(t *testing.T) {
	tokens := []ui.Token{{Name: "ops", Secret: testToken}}
	metrics := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("m 1\n")) })
	def := newServer(t, ui.Options{Tokens: tokens, Metrics: metrics, Version: "v9.9.9"}, false)
	for _, p := range []string{"/healthz", "/readyz"} {
		a := def.get(p)
		if a.status != 200 {
			t.Errorf("%s by default: %d, want 200", p, a.status)
		}
		if strings.Contains(string(a.body), "v9.9.9") {
			t.Errorf("%s without a token shows the version: %s", p, a.body)
		}
	}
	if a := def.get("/metrics"); a.status != 401 {
		t.Errorf("/metrics without public_metrics: %d, want 401", a.status)
	}
	closed := newServer(t, ui.Options{Tokens: tokens, PrivateHealth: true, Metrics: metrics}, false)
	for _, p := range []string{"/healthz", "/readyz"} {
		if a := closed.get(p); a.status != 401 {
			t.Errorf("%s with public_health = false: %d, want 401", p, a.status)
		}
		if a := closed.do("GET", p, "", nil, "Authorization", "Bearer "+testToken); a.status != 200 {
			t.Errorf("%s with public_health = false and the token: %d, want 200", p, a.status)
		}
	}
	opened := newServer(t, ui.Options{Tokens: tokens, PublicMetrics: true, Metrics: metrics}, false)
	if a := opened.get("/metrics"); a.status != 200 {
		t.Errorf("/metrics with public_metrics: %d", a.status)
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
