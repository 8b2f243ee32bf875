package ui_test

import (
	"net/http"
	"net/url"
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

// The dashboard's counts say what they count: the Dead letter card's
// last-minute number is of failed attempts (retries included), not of
// jobs dead-lettered; so are the queues table's and the chart's.
func TestPagesDashboardCountsSayWhat(t *testing.T) {
	env := newUIEnv(t, ui.Options{}, false)
	u := newUIClient(t, env.URL)
	a := u.get("/")
	wantStatus(t, "dashboard", a, http.StatusOK)
	wantBody(t, "dashboard", a, "failed attempts in 1 min</span>", "Attempts, last minute", " failed</span>", "Failed attempts <b>")
	if strings.Contains(a.body, "failed in the last minute") {
		t.Fatal(`the dashboard still says "failed in the last minute" of failed attempts`)
	}
}

// Drain's confirm page names every job it cancels, queued and scheduled,
// split as the queues page counts them.
func TestPagesDrainConfirmSplit(t *testing.T) {
	env := newUIEnv(t, ui.Options{}, false)
	u := newUIClient(t, env.URL)
	later := app.Duration(time.Hour)
	var ins []app.SubmitInput
	for range 3 {
		ins = append(ins, app.SubmitInput{Queue: "drainme", Kind: "k"})
	}
	for range 2 {
		ins = append(ins, app.SubmitInput{Queue: "drainme", Kind: "k", Delay: &later})
	}
	mustSubmit(t, env.svc, ins...)
	a := u.get("/queues")
	wantBody(t, "queues", a, "Draining cancels every waiting job: queued and scheduled.")
	a = u.get("/queues/drain?queue=drainme")
	wantStatus(t, "drain confirm", a, http.StatusOK)
	wantBody(t, "drain confirm", a, "Drain queue drainme: cancel 5 waiting jobs (3 queued, 2 scheduled)?", "Cancel 5 jobs",
		"<th>Status</th><th>Runs</th>", "badge-scheduled")
	a = u.follow(u.post("/queues/drain", url.Values{"queue": {"drainme"}}))
	wantBody(t, "drain", a, "Queue drainme drained: 5 waiting jobs cancelled (queued or scheduled).")
	a = u.follow(u.get("/queues/drain?queue=drainme"))
	wantBody(t, "drain of an empty queue", a, "no waiting jobs (queued or scheduled) to drain")
}
