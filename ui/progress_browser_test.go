package ui_test

import (
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"github.com/rs/zerolog"

	"github.com/queuehq/queue/app"
	"github.com/queuehq/queue/internal/openapitest"
	"github.com/queuehq/queue/ui"
)

// TestBrowserJobProgressAndLog drives chromium to the page of a running
// job on a server with tokens (logged in: the page's session cookie is all
// its script has): with JavaScript the bar moves and new log lines appear
// without a reload, a hostile line staying text; without JavaScript the
// page shows the bar and the lines as of its request, and the attempts
// are links.
func TestBrowserJobProgressAndLog(t *testing.T) {
	chromiumPath(t)
	for _, js := range []bool{true, false} {
		name := map[bool]string{true: "JavaScript", false: "NoJavaScript"}[js]
		t.Run(name, func(t *testing.T) {
			browser := newBrowser(t) // its own cookies: each run logs in
			svc, clock := newFlowService(t, false)
			srv := httptest.NewServer(openapitest.Handler(t, ui.New(ui.Options{Service: svc, Tokens: []ui.Token{{Name: "ops", Secret: testToken}},
				Log: zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel)})))
			t.Cleanup(srv.Close)
			ctx := t.Context()
			sub, err := svc.Submit(ctx, []app.SubmitInput{{Queue: "imports", Kind: "csv", MaxAttempts: ptr(3)}})
			if err != nil {
				t.Fatal(err)
			}
			id := sub[0].Job.ID
			claim := func() *app.Job {
				jobs, err := svc.ClaimLocal(ctx, "imports", app.ClaimInput{WorkerID: "w", Limit: 1})
				if err != nil || len(jobs) != 1 {
					t.Fatalf("claim: %v %v", jobs, err)
				}
				return jobs[0]
			}
			appendLine := func(j *app.Job, line string) {
				if _, err := svc.AppendLog(ctx, j.ID, j.Lease, app.LogInput{Line: &line, Stream: app.StreamStdout}); err != nil {
					t.Fatal(err)
				}
			}
			setProgress := func(j *app.Job, pct int, msg string) {
				if _, err := svc.SetProgress(ctx, j.ID, j.Lease, app.ProgressInput{Progress: &pct, Message: &msg}); err != nil {
					t.Fatal(err)
				}
			}
			// Attempt 1 failed with a line; attempt 2 runs.
			c1 := claim()
			appendLine(c1, "attempt one says hi")
			if _, err := svc.Fail(ctx, id, app.FailInput{Lease: c1.Lease, Error: "boom"}); err != nil {
				t.Fatal(err)
			}
			clock.Advance(time.Hour)
			c2 := claim()
			appendLine(c2, "loading")
			setProgress(c2, 20, "rows 200 of 1000")

			tb := newTab(t, browser, srv.URL, js)
			if js {
				if _, err := chromedp.Call(tb.ctx, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: cspWatch}); err != nil {
					t.Fatal(err)
				}
			}
			if st := tb.openStatus(fmt.Sprintf("/jobs/%d", id)); st != 401 {
				t.Fatalf("the job page without a session: %d, want 401 with the login form", st)
			}
			tb.typeInto(`input[name="token"]`, testToken)
			tb.submit(`form[action="/login"] button`)
			if loc := tb.location(); loc != fmt.Sprintf("/jobs/%d", id) {
				t.Fatalf("after login at %s", loc)
			}
			for _, p := range tb.problems() { // the 401 of the page before the login is expected
				if !strings.Contains(p, "401") {
					t.Errorf("%s", p)
				}
			}
			tb.wantText("#job-live", "20% · rows 200 of 1000", "Log · attempt 2", "loading", "attempt 1", "attempt 2")
			if v := tb.attr("#job-progress", "value"); v != "20" {
				t.Fatalf("the bar's value is %q, want 20", v)
			}
			if js {
				// The worker goes on: the bar moves and the lines come in
				// without a reload, hostile ones as text.
				setProgress(c2, 65, "rows 650 of 1000")
				appendLine(c2, hostileKey)
				appendLine(c2, "almost there")
				tb.waitText("#job-log", "almost there")
				tb.waitText("#job-progress-text", "65% · rows 650 of 1000")
				if v := tb.attr("#job-progress", "value"); v != "65" {
					t.Errorf("the bar's value is %q after the progress moved, want 65", v)
				}
				if n := tb.count("#job-log img"); n != 0 {
					t.Errorf("a log line became markup: %d img elements", n)
				}
				tb.wantText("#job-log", hostileKey)
				tb.shot("job-live")
				// The attempt ends: the stream says so.
				if err := svc.Complete(ctx, id, c2.Lease, nil); err != nil {
					t.Fatal(err)
				}
				tb.waitText("#job-live-status", "Attempt 2 is over (done)")
				v, err := chromedp.Run(tb.ctx, chromedp.Evaluate[[]string]("window.__csp || []"))
				if err != nil {
					t.Fatal(err)
				}
				for _, s := range v {
					t.Errorf("Content-Security-Policy violation: %s", s)
				}
			} else {
				// Without JavaScript the attempts are links.
				tb.submit(`nav.attempts a[href="?attempt=1"]`)
				tb.wantText("#job-live", "Log · attempt 1", "attempt one says hi")
				if n := tb.count("#job-log tbody tr"); n != 1 {
					t.Errorf("attempt 1: %d lines, want 1", n)
				}
			}
			for _, p := range tb.problems() {
				t.Errorf("%s", p)
			}
		})
	}
}

// attr reads the DOM property name of sel (a <progress>'s value).
func (tb *tab) attr(sel, name string) string {
	tb.t.Helper()
	ctx, cancel := tb.timeout()
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[string](fmt.Sprintf(`String(document.querySelector(%q).%s)`, sel, name)))
	if err != nil {
		tb.t.Fatalf("%s.%s: %v", sel, name, err)
	}
	return v
}

// waitText waits until the text of sel holds sub (a page changing itself).
func (tb *tab) waitText(sel, sub string) {
	tb.t.Helper()
	ctx, cancel := tb.timeout()
	defer cancel()
	js := fmt.Sprintf(`(document.querySelector(%q) || {}).textContent.indexOf(%q) >= 0`, sel, sub)
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](js, chromedp.WithPollingInterval(50*time.Millisecond))); err != nil {
		tb.t.Fatalf("%s never said %q (it says %q): %v", sel, sub, tb.text(sel), err)
	}
}
