package ui_test

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/queuehq/queue/app"
	"github.com/queuehq/queue/ui"
)

// GET /api/stats/series answers the charts' numbers for each range, of one
// queue or of every queue; a token limited to queues sees only those.
func TestAPIStatsSeries(t *testing.T) {
	tokens := []ui.Token{{Name: "boss", Secret: "admin-token-0123456789"},
		{Name: "etl", Secret: "etl-token-0123456789", Queues: []string{"etl"}, Role: ui.RoleRead},
		{Name: "two", Secret: "two-token-0123456789", Queues: []string{"etl", "mail"}, Role: ui.RoleRead}}
	s := newServer(t, ui.Options{Tokens: tokens}, true)
	ctx := t.Context()
	for _, q := range []string{"etl", "etl", "mail"} {
		if _, err := s.svc.Submit(ctx, []app.SubmitInput{{Queue: q, Kind: "k"}}); err != nil {
			t.Fatal(err)
		}
	}
	s.clock.Advance(2 * time.Second)
	for _, q := range []string{"etl", "mail"} {
		if _, err := s.svc.Claim(ctx, q, app.ClaimInput{WorkerID: "w", Limit: 1}); err != nil {
			t.Fatal(err)
		}
	}
	if err := (&app.Maintainer{Service: s.svc}).Charts(ctx); err != nil {
		t.Fatal(err)
	}
	get := func(token, query string) answer {
		t.Helper()
		return s.do(http.MethodGet, "/api/stats/series"+query, "", nil, "Authorization", "Bearer "+token)
	}
	read := func(a answer) app.Series {
		t.Helper()
		if a.status != http.StatusOK {
			t.Fatalf("status %d: %s", a.status, a.body)
		}
		var out app.Series
		if err := json.Unmarshal(a.body, &out); err != nil {
			t.Fatal(err)
		}
		var raw any
		_ = json.Unmarshal(a.body, &raw)
		checkStyle(t, "series", raw, "")
		return out
	}
	for rng, n := range map[string]int{"": 60, "1h": 60, "24h": 96, "7d": 168} {
		sr := read(get(tokens[0].Secret, "?range="+rng))
		if len(sr.Points) != n || sr.Queue != "" {
			t.Fatalf("range %q: %d points of %q, want %d of every queue", rng, len(sr.Points), sr.Queue, n)
		}
		var claimed int64
		var queued float64
		for _, p := range sr.Points {
			claimed += p.Claimed
			queued = max(queued, p.Queued)
		}
		if claimed != 2 || queued == 0 {
			t.Fatalf("range %q: %d claimed (want 2), depth %v (want the sample)", rng, claimed, queued)
		}
	}
	etl := read(get(tokens[0].Secret, "?queue=etl&range=1h"))
	last := etl.Points[len(etl.Points)-1]
	if etl.Queue != "etl" || last.Claimed != 1 || last.WaitMax != 2 || last.Queued != 1 || etl.StepSeconds != 60 {
		t.Fatalf("etl: %+v, last point %+v", etl, last)
	}
	// A token of one queue gets it by default and no other.
	if sr := read(get(tokens[1].Secret, "")); sr.Queue != "etl" {
		t.Fatalf("the etl token's default series is of %q", sr.Queue)
	}
	for _, c := range []struct {
		token, query string
		status       int
		code         string
	}{
		{tokens[1].Secret, "?queue=mail", http.StatusForbidden, ""},
		{tokens[2].Secret, "", http.StatusForbidden, ""}, // two queues: name one
		{tokens[0].Secret, "?range=2d", http.StatusBadRequest, "invalid_field"},
		{tokens[0].Secret, "?queue=%3Cb%3E", http.StatusBadRequest, "invalid_field"},
		{tokens[0].Secret, "?step=1m", http.StatusBadRequest, "invalid_field"},
	} {
		a := get(c.token, c.query)
		if a.status != c.status || c.code != "" && a.code(t) != c.code {
			t.Errorf("GET /api/stats/series%s: %d %s, want %d %s", c.query, a.status, a.body, c.status, c.code)
		}
	}
	if sr := read(get(tokens[2].Secret, "?queue=mail")); sr.Queue != "mail" {
		t.Fatalf("the two-queue token's mail series is of %q", sr.Queue)
	}
}
