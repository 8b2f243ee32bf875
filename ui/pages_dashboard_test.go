package ui_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/queuehq/queue/app"
	"github.com/queuehq/queue/ui"
)

// The dashboard names a kind no worker claims once its jobs waited
// app.UnclaimedAfter.
func TestPagesDashboardUnclaimedKinds(t *testing.T) {
	env := newUIEnv(t, ui.Options{}, false)
	u := newUIClient(t, env.URL)
	mustSubmit(t, env.svc, app.SubmitInput{Queue: "emails", Kind: "email.welcom"}, app.SubmitInput{Queue: "emails", Kind: "email.welcom"})
	a := u.get("/")
	if strings.Contains(a.body, ">email.welcom</a>") {
		t.Fatalf("the dashboard names email.welcom before its jobs waited %s", app.UnclaimedAfter)
	}
	env.clock.Advance(app.UnclaimedAfter + time.Minute)
	a = u.get("/")
	wantStatus(t, "dashboard", a, http.StatusOK)
	wantBody(t, "dashboard", a, "no worker handles", "no running worker claims the kind", `href="/jobs?kind=email.welcom&amp;queue=emails&amp;status=queued">email.welcom</a>`,
		"<td class=\"r\">2</td>", "<td class=\"r\">11m</td>", "more than 10m")
	// Listed by queue, then kind.
	i, j := strings.Index(a.body, ">email.welcom</a>"), strings.Index(a.body, ">invoice.sync</a>")
	if i < 0 || j < 0 || j > i {
		t.Fatalf("unclaimed kinds out of order: billing's invoice.sync at %d, emails' email.welcom at %d", j, i)
	}
}
