package ui_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"
	"github.com/rs/zerolog"

	"github.com/queuehq/queue/app"
	"github.com/queuehq/queue/internal/openapitest"
	"github.com/queuehq/queue/ui"
)

// postJob submits a job over the HTTP API, as curl would, and returns its id.
func postJob(t *testing.T, base, body string) int64 {
	t.Helper()
	resp, err := http.Post(base+"/api/jobs", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var j apiJob
	if err := json.NewDecoder(resp.Body).Decode(&j); err != nil || resp.StatusCode != http.StatusCreated {
		t.Fatalf("POST /api/jobs %s: %d %v", body, resp.StatusCode, err)
	}
	return j.ID
}

// liveOpen is the live bar saying the page follows the event stream (not
// only the fallback poll).
const liveOpen = `(s => !!s && !s.closest("[hidden]") && s.textContent.startsWith("Live · updated"))(document.querySelector("[data-live-status]"))`

// TestBrowserLivePages: an open jobs page follows the event stream. A job
// submitted over the API shows up, and its status turns to done, without a
// reload (a mark left in the window survives), within a couple of seconds
// (the fallback poll is slower); in the zone the user chose. The pause
// control stops that, for the tab, until resumed.
func TestBrowserLivePages(t *testing.T) {
	browser := newBrowser(t)
	env := newUIEnv(t, ui.Options{}, false)
	tb := newTab(t, browser, env.URL, true)
	if _, err := chromedp.Call(tb.ctx, emulation.SetTimezoneOverride, emulation.SetTimezoneOverrideParams{TimezoneID: "Asia/Kolkata"}); err != nil {
		t.Fatal(err)
	}
	timeZone(t, tb, env)
	tb.open("/jobs?queue=emails")
	choose(tb, "[data-pref-tz]", "local")
	if _, ok := tb.waitFor(liveOpen, 5*time.Second); !ok {
		t.Fatalf("the live bar says %q, want the event stream open", tb.text("[data-live-status]"))
	}
	eval[bool](tb, `window.queueMark = 42, true`)
	const marked = `window.queueMark === 42`
	row := func(id int64) string {
		return fmt.Sprintf(`document.querySelector('[data-live] a[href="/jobs/%d"]')`, id)
	}

	// A job submitted with curl appears.
	id := postJob(t, env.URL, `{"queue":"emails","kind":"live.check","payload":{"n":1}}`)
	took, ok := tb.waitFor(row(id)+" !== null", 5*time.Second)
	if !ok {
		t.Fatalf("job %d did not appear on the open /jobs page within 5 s", id)
	}
	if !eval[bool](tb, marked) {
		t.Fatal("the page was reloaded (the window's mark is gone)")
	}
	if took > 3*time.Second {
		t.Errorf("job %d took %v to appear; the event stream should bring it within about a second", id, took)
	}
	t.Logf("a submitted job appeared after %v", took)
	// Its times are in the zone chosen (India has no summer time: IST, +05:30).
	when := eval[string](tb, row(id)+`.closest("tr").querySelector("time[data-abs]")?.textContent || ""`)
	if !strings.HasSuffix(when, " GMT+5:30") && !strings.HasSuffix(when, " IST") {
		t.Errorf("a row swapped in shows %q, want the browser's zone (IST) as chosen", when)
	}

	// It runs: the row says done.
	jobs := mustClaim(t, env.svc, "emails", 1, "live.check")
	if len(jobs) != 1 || jobs[0].ID != id {
		t.Fatalf("claimed %v, want job %d", jobs, id)
	}
	badge := row(id) + `.closest("tr").querySelector(".badge").textContent`
	if _, ok := tb.waitFor(badge+` === "processing"`, 5*time.Second); !ok {
		t.Errorf("job %d's row says %q after the claim, want processing", id, eval[string](tb, badge))
	}
	if err := env.svc.Complete(t.Context(), id, jobs[0].Lease, json.RawMessage(`{"ok":true}`)); err != nil {
		t.Fatal(err)
	}
	if took, ok := tb.waitFor(badge+` === "done"`, 5*time.Second); !ok || took > 3*time.Second {
		t.Errorf("job %d's row says %q %v after it completed, want done within a few seconds", id, eval[string](tb, badge), took)
	}
	if !eval[bool](tb, marked) {
		t.Fatal("the page was reloaded (the window's mark is gone)")
	}

	// A burst of events is one re-read a second or so, not one each.
	reads := `performance.getEntriesByType("resource").filter(e => e.name === location.href).length`
	before := eval[int](tb, reads)
	for i := range 30 {
		postJob(t, env.URL, fmt.Sprintf(`{"queue":"emails","kind":"live.burst","payload":{"n":%d}}`, i))
		time.Sleep(50 * time.Millisecond)
	}
	time.Sleep(1500 * time.Millisecond)
	if n := eval[int](tb, reads) - before; n < 1 || n > 5 {
		t.Errorf("30 events over about 2 s made the page read itself %d times, want a few (at most about one a second)", n)
	}

	// A ticked row holds the updates (the tick stays); unticked, they come.
	tb.click(fmt.Sprintf(`input[name="id"][value="%d"]`, id))
	held := postJob(t, env.URL, `{"queue":"emails","kind":"live.check","payload":{"n":"held"}}`)
	if _, ok := tb.waitFor(row(held)+" !== null", 2500*time.Millisecond); ok {
		t.Error("a page with a ticked row swapped its rows")
	}
	if !eval[bool](tb, fmt.Sprintf(`document.querySelector('input[name="id"][value="%d"]').checked`, id)) {
		t.Error("the ticked row lost its tick")
	}
	tb.wantText("[data-live-status]", "held")
	tb.click(fmt.Sprintf(`input[name="id"][value="%d"]`, id))
	eval[bool](tb, `document.activeElement.blur(), true`)
	if _, ok := tb.waitFor(row(held)+" !== null", 4*time.Second); !ok {
		t.Error("after unticking the row the page does not catch up")
	}

	// Keyboard focus in the list holds the updates too (a swap would drop
	// it): tab from a row's box to its link.
	tb.click(fmt.Sprintf(`input[name="id"][value="%d"]`, id))
	tb.click(fmt.Sprintf(`input[name="id"][value="%d"]`, id)) // ticked and unticked: focus stays on the box
	key(tb, "\t")
	focused := eval[string](tb, `document.activeElement.getAttribute("href") || ""`)
	if focused != fmt.Sprintf("/jobs/%d", id) {
		t.Fatalf("tab from job %d's box went to %q, want its link", id, focused)
	}
	kept := postJob(t, env.URL, `{"queue":"emails","kind":"live.check","payload":{"n":"focus"}}`)
	if _, ok := tb.waitFor(row(kept)+" !== null", 2500*time.Millisecond); ok {
		t.Error("the list was swapped under the keyboard focus")
	}
	if got := eval[string](tb, `document.activeElement.getAttribute("href") || ""`); got != focused {
		t.Errorf("the keyboard focus moved to %q", got)
	}
	eval[bool](tb, `document.activeElement.blur(), true`)
	if _, ok := tb.waitFor(row(kept)+" !== null", 4*time.Second); !ok {
		t.Error("after the focus left the list the page does not catch up")
	}

	// Paused, nothing changes; the choice lasts for the tab; resumed, it catches up.
	tb.click("[data-live-pause]")
	if p := eval[string](tb, `document.querySelector("[data-live-pause]").getAttribute("aria-pressed")`); p != "true" {
		t.Errorf("the pause button's aria-pressed is %q after pressing it", p)
	}
	tb.wantText("[data-live-status]", "Paused")
	second := postJob(t, env.URL, `{"queue":"emails","kind":"live.check","payload":{"n":2}}`)
	if _, ok := tb.waitFor(row(second)+" !== null", 2500*time.Millisecond); ok {
		t.Error("a paused page showed a new job")
	}
	tb.open("/jobs?queue=emails")
	eval[bool](tb, `window.queueMark = 43, true`)
	if eval[string](tb, `document.querySelector("[data-live-pause]").getAttribute("aria-pressed")`) != "true" {
		t.Error("after a reload the tab is no longer paused")
	}
	third := postJob(t, env.URL, `{"queue":"emails","kind":"live.check","payload":{"n":3}}`)
	time.Sleep(1500 * time.Millisecond)
	if eval[bool](tb, row(third)+" !== null") {
		t.Error("a paused page (after a reload) showed a new job")
	}
	tb.click("[data-live-pause]")
	if _, ok := tb.waitFor(row(third)+" !== null && "+liveOpen, 4*time.Second); !ok {
		t.Errorf("after resuming, job %d does not show (status %q)", third, tb.text("[data-live-status]"))
	}
	if !eval[bool](tb, `window.queueMark === 43`) {
		t.Fatal("resuming reloaded the page")
	}
	for _, p := range tb.problems() {
		t.Errorf("%s", p)
	}
}

// TestBrowserServerDown: with the dashboard open, the server goes away
// (its listener and every connection closed); within 10 s a banner says
// so. When it is back, the banner goes and the page is live again.
func TestBrowserServerDown(t *testing.T) {
	browser := newBrowser(t)
	env := newUIEnv(t, ui.Options{}, false)
	inner := openapitest.Handler(t, ui.New(ui.Options{Service: env.svc, Scheduler: env.sched,
		Log: zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.ErrorLevel)}))
	// failing makes the pages (not the API, nor /readyz) answer 500: a
	// server that is there but cannot serve the page.
	var failing atomic.Bool
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if failing.Load() && r.URL.Path == "/" {
			http.Error(w, "store down", http.StatusInternalServerError)
			return
		}
		inner.ServeHTTP(w, r)
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	serve := func(ln net.Listener) *http.Server {
		s := &http.Server{Handler: handler}
		go func() {
			if err := s.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				t.Errorf("serve: %v", err)
			}
		}()
		return s
	}
	srv := serve(ln)
	t.Cleanup(func() { srv.Close() })
	tb := newTab(t, browser, "http://"+addr, true)
	tb.open("/")
	if _, ok := tb.waitFor(liveOpen, 5*time.Second); !ok {
		t.Fatalf("the live bar says %q, want the event stream open", tb.text("[data-live-status]"))
	}
	if tb.visible("[data-down-banner]") {
		t.Fatal("the banner shows while the server is up")
	}

	// The server answers, but not the page: the banner says so, and goes
	// when the page can be read again.
	failing.Store(true)
	mustSubmit(t, env.svc, app.SubmitInput{Queue: "emails", Kind: "while.failing"}) // an event: the page reads itself
	if _, ok := tb.waitFor(`!document.querySelector("[data-down-banner]").hidden`, 10*time.Second); !ok {
		t.Errorf("the page cannot be refreshed (500) but shows no banner (live bar: %q)", tb.text("[data-live-status]"))
	} else {
		tb.wantText("[data-down-banner]", "could not refresh this page since", "500", "may be out of date")
	}
	failing.Store(false)
	if _, ok := tb.waitFor(`document.querySelector("[data-down-banner]").hidden`, 10*time.Second); !ok {
		t.Errorf("the page answers again but the banner stays: %q", tb.text("[data-down-banner]"))
	}

	srv.Close() // the listener and every connection, the event stream's too
	took, ok := tb.waitFor(`!document.querySelector("[data-down-banner]").hidden`, 10*time.Second)
	if !ok {
		t.Fatalf("10 s after the server went away the page shows no banner (live bar: %q)", tb.text("[data-live-status]"))
	}
	t.Logf("the banner showed %v after the server went away", took)
	tb.wantText("[data-down-banner]", "Cannot reach the server since", "may be out of date")
	if role := eval[string](tb, `document.querySelector("[data-down-banner]").getAttribute("role")`); role != "alert" {
		t.Errorf("the banner's role is %q, want alert", role)
	}
	tb.wantText("[data-live-status]", "Not updating")
	tb.axe("dashboard, server down")

	// Back: the banner goes, the page updates again.
	ln, err = net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("listen again on %s: %v", addr, err)
	}
	srv = serve(ln)
	if took, ok := tb.waitFor(`document.querySelector("[data-down-banner]").hidden && `+liveOpen, 15*time.Second); !ok {
		t.Errorf("the server is back but the banner stays (%q, live bar %q)", tb.text("[data-down-banner]"), tb.text("[data-live-status]"))
	} else {
		t.Logf("the banner went %v after the server came back", took)
	}
	mustSubmit(t, env.svc, app.SubmitInput{Queue: "emails", Kind: "after.restart"})
	want := thousands(mustStats(t, env.svc).Total.Queued)
	if _, ok := tb.waitFor(fmt.Sprintf(`document.querySelector('a.card[href="/jobs?status=queued"] .card-num').textContent === %q`, want), 5*time.Second); !ok {
		t.Errorf("after the restart the dashboard does not follow: queued shows %q, want %s", tb.text(`a.card[href="/jobs?status=queued"] .card-num`), want)
	}
	for _, p := range tb.problems() {
		// While the server is away the browser logs each refused request.
		if strings.Contains(p, "status of 500") && strings.HasSuffix(strings.TrimSpace(p), "/") {
			continue // the page refused on purpose
		}
		if strings.Contains(p, "ERR_CONNECTION_REFUSED") || strings.Contains(p, "ERR_EMPTY_RESPONSE") || strings.Contains(p, "ERR_CONNECTION_RESET") ||
			strings.Contains(p, "Failed to fetch") || strings.Contains(p, "ERR_CONNECTION_CLOSED") || strings.Contains(p, "ERR_INCOMPLETE_CHUNKED_ENCODING") || strings.Contains(p, "aborted") {
			continue
		}
		t.Errorf("%s", p)
	}
}

func mustStats(t *testing.T, svc *app.Service) *app.Stats {
	t.Helper()
	st, err := svc.Stats(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// timeZone: a job page shows its times in UTC as the server wrote them;
// choosing browser time (here India's, which has no summer time) rewrites
// each to that zone with its name, the footer says so, the choice holds
// on the next page, and choosing UTC brings the server's text back. The
// relative times beside them are rounded as the server rounds them.
func timeZone(t *testing.T, tb *tab, env *uiEnv) {
	t.Helper()
	tb.open(fmt.Sprintf("/jobs/%d", env.ids.Done))
	first := `document.querySelector("time[data-abs]")`
	iso, server := eval[string](tb, first+`.getAttribute("datetime")`), tb.text("time[data-abs]")
	at, err := time.Parse(time.RFC3339Nano, iso)
	if err != nil {
		t.Fatalf("time datetime=%q: %v", iso, err)
	}
	if want := at.UTC().Format("2006-01-02 15:04:05 UTC"); server != want {
		t.Fatalf("the job page shows %q, want %q (UTC)", server, want)
	}
	tb.wantText("[data-tz-note]", "UTC")
	choose(tb, "[data-pref-tz]", "local")
	kolkata, err := time.LoadLocation("Asia/Kolkata")
	if err != nil {
		t.Skipf("no zone data: %v", err)
	}
	local := at.In(kolkata).Format("2006-01-02 15:04:05")
	if got := tb.text("time[data-abs]"); got != local+" IST" && got != local+" GMT+5:30" {
		t.Errorf("with browser time chosen the job page shows %q, want %q and the zone's name", got, local+" IST")
	}
	if n := eval[int](tb, `[...document.querySelectorAll("time[data-abs]")].filter(e => e.textContent.endsWith(" UTC")).length`); n != 0 {
		t.Errorf("%d times still say UTC", n)
	}
	if note := tb.text("[data-tz-note]"); !strings.Contains(note, "Asia/Kolkata") && !strings.Contains(note, "Asia/Calcutta") {
		t.Errorf("with browser time chosen the footer says %q, want it to name the zone", note)
	}
	// Relative times, rounded (not floored) as the server's relTime.
	for _, tc := range []struct {
		offset time.Duration
		want   string
	}{
		{-(time.Hour + 58*time.Minute + 40*time.Second), "(1 h 59 min ago)"},
		{time.Hour + 58*time.Minute + 10*time.Second, "(in 1 h 58 min)"},
		{-(3*24*time.Hour + 4*time.Hour + 10*time.Minute), "(3 d 4 h ago)"},
		{25 * time.Second, "(in 25 s)"},
		{-(2*time.Minute + 40*time.Second), "(3 min ago)"},
		{0, "(just now)"},
	} {
		set := fmt.Sprintf(`(t => { t.setAttribute("datetime", new Date(Date.now() + %d).toISOString()); return true; })(%s)`, tc.offset.Milliseconds(), first)
		eval[bool](tb, set)
		choose(tb, "[data-pref-tz]", "utc")
		choose(tb, "[data-pref-tz]", "local") // a choice rewrites the relative times too
		if got := tb.text(".when [data-rel]"); got != tc.want {
			t.Errorf("a time %v from now reads %q, want %q", tc.offset, got, tc.want)
		}
	}
	tb.open(fmt.Sprintf("/jobs/%d", env.ids.Done))
	if got := tb.text("time[data-abs]"); !strings.HasPrefix(got, local) {
		t.Errorf("on the next page the time reads %q: the choice did not hold", got)
	}
	choose(tb, "[data-pref-tz]", "utc")
	if got := tb.text("time[data-abs]"); got != server {
		t.Errorf("back on UTC the job page shows %q, want the server's %q", got, server)
	}
}
