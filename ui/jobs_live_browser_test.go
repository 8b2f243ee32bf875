package ui_test

import (
	"context"
	"encoding/json"
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

// TestBrowserLiveJobs drives chromium, with JavaScript on and off: the jobs
// page filters by a payload field, and its bulk cancel goes through the
// confirm page (count, sample, bound) to the cancelled jobs; a hostile
// payload value stays text; nothing breaks the CSP.
func TestBrowserLiveJobs(t *testing.T) {
	browser := newBrowser(t)
	for _, js := range []bool{true, false} {
		name := map[bool]string{true: "JavaScript", false: "NoJavaScript"}[js]
		t.Run(name, func(t *testing.T) {
			svc, _ := newFlowService(t, false)
			for _, p := range []string{`{"customer":42}`, `{"customer":"42"}`, `{"customer":7}`, `{"customer":"<img src=x>"}`} {
				mustSubmit(t, svc, app.SubmitInput{Queue: "shop", Kind: "order", Payload: json.RawMessage(p)})
			}
			srv := httptest.NewServer(openapitest.Handler(t, ui.New(ui.Options{Service: svc, Log: zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel)})))
			t.Cleanup(srv.Close)
			tb := newTab(t, browser, srv.URL, js)
			if js {
				if _, err := chromedp.Call(tb.ctx, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: cspWatch}); err != nil {
					t.Fatal(err)
				}
			}
			tb.open("/jobs")
			tb.setValue(`input[name="payload"]`, "customer=42")
			tb.submit(`form.filters button[type="submit"]`)
			if n := tb.count("table.table tbody tr"); n != 2 {
				t.Fatalf("filtered by payload.customer=42: %d rows, want 2 (42 and \"42\")", n)
			}
			tb.submit(`.bulk-bar a[href^="/jobs/confirm?op=cancel"]`)
			tb.wantText("h1", "Cancel 2 jobs?")
			tb.wantText(".confirm", "payload.customer = 42", "counted here")
			if n := tb.count(".confirm table tbody tr"); n != 2 {
				t.Fatalf("confirm page sample: %d rows, want 2", n)
			}
			tb.submit(`.confirm button[type="submit"]`)
			tb.wantText("body", "Cancelled 2 jobs.")
			cancelled, err := svc.List(t.Context(), app.ListInput{Status: "cancelled"})
			if err != nil || len(cancelled.Jobs) != 2 {
				t.Fatalf("cancelled jobs: %v %v, want 2", cancelled, err)
			}
			for _, j := range cancelled.Jobs {
				if !strings.Contains(string(j.Payload), "42") {
					t.Errorf("job %d (%s) was cancelled", j.ID, j.Payload)
				}
			}
			audit, _ := svc.Audit(t.Context(), app.AuditFilter{Action: "jobs.cancel"})
			if len(audit) != 1 || audit[0].Count != 2 {
				t.Errorf("audit: %+v, want one jobs.cancel of 2", audit)
			}
			// A hostile value is shown as typed, never as markup.
			tb.open("/jobs?payload=" + "customer%3D%3Cimg+src%3Dx%3E")
			if n := tb.count("table.table tbody tr"); n != 1 || tb.count("img") != 0 {
				t.Errorf("hostile payload filter: %d rows, %d img", n, tb.count("img"))
			}
			if js {
				ctx, cancel := tb.timeout()
				defer cancel()
				v, err := chromedp.Run(ctx, chromedp.Evaluate[[]string]("window.__csp || []"))
				if err != nil || len(v) > 0 {
					t.Errorf("Content-Security-Policy violations: %v %v", v, err)
				}
			}
			for _, p := range tb.problems() {
				t.Errorf("%s", p)
			}
		})
	}
}

// TestBrowserJobsLive: done-when 2 of issue 28, on the jobs pages with
// JavaScript on: a job submitted while /jobs is open appears in the list,
// and its status changes to done, without a reload; the job's own page
// follows it too (its header badge and timeline), and the ticks of rows
// survive the updates while a checkbox has focus.
func TestBrowserJobsLive(t *testing.T) {
	browser := newBrowser(t)
	env := newUIEnv(t, ui.Options{}, false)
	tb := newTab(t, browser, env.URL, true)
	tb.open("/jobs?queue=live")
	mark := func() {
		ctx, cancel := tb.timeout()
		defer cancel()
		if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool]("window.__sameDocument = true")); err != nil {
			t.Fatal(err)
		}
	}
	same := func(what string) {
		ctx, cancel := tb.timeout()
		defer cancel()
		if v, err := chromedp.Run(ctx, chromedp.Evaluate[bool]("window.__sameDocument === true")); err != nil || !v {
			t.Errorf("%s: the page was reloaded (or navigated), not updated in place", what)
		}
	}
	// waitFor waits up to 20 s for the page to hold sel.
	waitFor := func(sel, what string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(tb.ctx, 20*time.Second)
		defer cancel()
		if err := chromedp.Do(ctx, chromedp.WaitVisible(chromedp.CSS(sel))); err != nil {
			t.Fatalf("%s: %s did not appear within 20 s on %s", what, sel, tb.location())
		}
	}
	mark()
	j := mustSubmit(t, env.svc, app.SubmitInput{Queue: "live", Kind: "live.work", Payload: json.RawMessage(`{}`)})[0]
	row := fmt.Sprintf(`#jobs-list a[href="/jobs/%d"]`, j.ID)
	waitFor(row, "a submitted job")
	tb.wantText("#jobs-total", "1 job matches")
	c := mustClaim(t, env.svc, "live", 1)[0]
	if err := env.svc.Complete(t.Context(), c.ID, c.Lease, json.RawMessage(`{"ok":true}`)); err != nil {
		t.Fatal(err)
	}
	waitFor(`#jobs-list tbody .badge-done`, "the job's status changing to done")
	same("/jobs")

	// The job's page follows the job: submitted, then done.
	k := mustSubmit(t, env.svc, app.SubmitInput{Queue: "live", Kind: "live.work", Payload: json.RawMessage(`{}`)})[0]
	tb.open(fmt.Sprintf("/jobs/%d", k.ID))
	tb.wantText("#job-head h1", "queued")
	mark()
	c = mustClaim(t, env.svc, "live", 1)[0]
	if err := env.svc.Complete(t.Context(), c.ID, c.Lease, json.RawMessage(`{"rows":3}`)); err != nil {
		t.Fatal(err)
	}
	waitFor(`#job-head .badge-done`, "the job page's badge changing to done")
	tb.wantText("#job-result", `"rows": 3`)
	tb.wantText("#job-timeline", "job.succeeded")
	same("/jobs/{id}")

	// A ticked row stays ticked while the list updates around it.
	tb.open("/jobs?queue=live")
	tb.click(fmt.Sprintf(`input[name="id"][value="%d"]`, j.ID))
	mark()
	mustSubmit(t, env.svc, app.SubmitInput{Queue: "live", Kind: "live.more", Payload: json.RawMessage(`{}`)})
	time.Sleep(7 * time.Second) // past a refresh
	ctx, cancel := tb.timeout()
	defer cancel()
	if v, err := chromedp.Run(ctx, chromedp.Evaluate[bool](fmt.Sprintf(`document.querySelector('input[name="id"][value="%d"]').checked`, j.ID))); err != nil || !v {
		t.Errorf("the ticked row lost its tick on an update (%v)", err)
	}
	same("/jobs with a ticked row")
	for _, p := range tb.problems() {
		t.Errorf("%s", p)
	}
}
