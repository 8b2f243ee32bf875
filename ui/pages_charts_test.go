package ui_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/queuehq/queue/app"
	"github.com/queuehq/queue/ui"
)

// rolledUIEnv is newUIEnv with its hour of seeded throughput rolled up by
// the leader's chart pass, as serve would have.
func rolledUIEnv(t *testing.T) *uiEnv {
	t.Helper()
	env := newUIEnv(t, ui.Options{}, false)
	if err := (&app.Maintainer{Service: env.svc}).Charts(t.Context()); err != nil {
		t.Fatal(err)
	}
	return env
}

// The dashboard's throughput chart has a range switch that works without
// JavaScript: each range draws its number of bars, says what it shows, and
// keeps the chosen queue; the links of the queues keep the range.
func TestPagesDashboardChartRanges(t *testing.T) {
	env := rolledUIEnv(t)
	u := newUIClient(t, env.URL)
	for _, c := range []struct {
		query, caption string
		bars           int
		current        string
	}{
		{"", "last hour, per minute", 60, `<a href="/" aria-current="true">1 h</a>`},
		{"?range=1h", "last hour, per minute", 60, `<a href="/" aria-current="true">1 h</a>`},
		{"?range=24h", "last 24 hours, per 15 minutes", 96, `<a href="/?range=24h" aria-current="true">24 h</a>`},
		{"?range=7d", "last 7 days, per hour", 168, `<a href="/?range=7d" aria-current="true">7 d</a>`},
		{"?queue=emails&range=7d", "last 7 days, per hour", 168, `<a href="/?queue=emails&amp;range=7d" aria-current="true">7 d</a>`},
	} {
		a := u.get("/" + c.query)
		wantStatus(t, "dashboard"+c.query, a, http.StatusOK)
		if n := strings.Count(a.body, `<g class="bar">`); n != c.bars {
			t.Errorf("dashboard%s: %d bars, want %d", c.query, n, c.bars)
		}
		wantBody(t, "dashboard"+c.query, a, "· "+c.caption+"</span>", c.current, `aria-label="Chart range"`,
			`<title id="chart-title">Completed and failed jobs`)
		if strings.Count(a.body, `aria-current="true">`) < 2 { // a range and a queue chip
			t.Errorf("dashboard%s: the range or the queue chip is not marked", c.query)
		}
		if strings.Contains(a.body, "No jobs finished") {
			t.Errorf("dashboard%s: the seeded hour is not in the chart", c.query)
		}
	}
	a := u.get("/?range=24h")
	wantBody(t, "dashboard 24h", a, `href="/?queue=emails&amp;range=24h"`, `<a href="/?range=24h" aria-current="true">All queues</a>`, "24 h ago", ">now</text>")
	a = u.get("/?queue=emails")
	wantBody(t, "dashboard of a queue", a, `href="/queues/chart?queue=emails">Queued depth and pickup latency of emails`)
}

// Each queue's chart page draws its throughput, queued depth and pickup
// latency for each range, with a table saying the same; the queues page
// links to it.
func TestPagesQueueChart(t *testing.T) {
	env := rolledUIEnv(t)
	u := newUIClient(t, env.URL)
	wantBody(t, "queues page", u.get("/queues"), `href="/queues/chart?queue=emails"`)
	for _, c := range []struct {
		rng    string
		points int
	}{{"", 60}, {"1h", 60}, {"24h", 96}, {"7d", 168}} {
		path := "/queues/chart?queue=emails"
		if c.rng != "" {
			path += "&range=" + c.rng
		}
		a := u.get(path)
		wantStatus(t, path, a, http.StatusOK)
		// bars of the throughput, a hover area per point in each line chart
		if n := strings.Count(a.body, `<g class="bar">`); n != 3*c.points {
			t.Errorf("%s: %d bars and points, want %d", path, n, 3*c.points)
		}
		if n := strings.Count(a.body, "<tr><td>"); n != 2*c.points { // the two line charts' tables
			t.Errorf("%s: %d table rows, want %d", path, n, 2*c.points)
		}
		wantBody(t, path, a, `<title id="depth-title">Queued jobs (due, not scheduled)`, `<desc id="latency-desc">`,
			`<title id="latency-title">Pickup latency (due to claim)`, `aria-describedby="latency-desc"`,
			`class="line line-wait"`, "as a table</summary>", `aria-label="Chart range"`)
	}
	// The seeded claims waited nothing: a latency line at zero; nothing is
	// queued before the first depth sample... which the roll-up took.
	a := u.get("/queues/chart?queue=emails")
	wantBody(t, "1h", a, "mean wait 0s, longest wait 0s")
}

// Bad input on the chart pages is a 400 page, with the value escaped.
func TestPagesChartBadInput(t *testing.T) {
	env := newUIEnv(t, ui.Options{}, false)
	u := newUIClient(t, env.URL)
	hostile := `"><script>alert(1)</script>`
	for _, path := range []string{
		"/?range=" + url.QueryEscape(hostile),
		"/?range=2d",
		"/queues/chart?queue=" + url.QueryEscape(hostile),
		"/queues/chart",
		"/queues/chart?queue=emails&range=" + url.QueryEscape(hostile),
	} {
		a := u.get(path)
		wantStatus(t, path, a, http.StatusBadRequest)
		if strings.Contains(a.body, "<script>alert(1)") {
			t.Fatalf("%s: the value reached the page unescaped", path)
		}
	}
}
