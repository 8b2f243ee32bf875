package ui_test

import (
	"fmt"
	"net/http/httptest"
	"os"
	"testing"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"github.com/rs/zerolog"

	"github.com/queuehq/queue/app"
	"github.com/queuehq/queue/internal/openapitest"
	"github.com/queuehq/queue/ui"
)

// TestBrowserKeys drives chromium from the queues page to a queue's keys,
// from a key to its jobs and to a held job's page, with JavaScript on and
// off: the links work, a hostile key stays text, axe-core finds nothing in
// either colour scheme, and nothing breaks the pages' CSP.
func TestBrowserKeys(t *testing.T) {
	browser := newBrowser(t)
	if axeSource() == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("axe-core is not installed; CI needs it for the accessibility checks (npm install -g axe-core)")
		}
		t.Log("axe-core not found (npm install -g axe-core, or QUEUE_TEST_AXE=/path/to/axe.min.js): pages are not checked for accessibility")
	}
	for _, js := range []bool{true, false} {
		name := map[bool]string{true: "JavaScript", false: "NoJavaScript"}[js]
		t.Run(name, func(t *testing.T) {
			svc, _ := newFlowService(t, false)
			keyedJobs(t, svc, hostileKey)
			srv := httptest.NewServer(openapitest.Handler(t, ui.New(ui.Options{Service: svc, Log: zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel)})))
			t.Cleanup(srv.Close)
			tb := newTab(t, browser, srv.URL, js)
			if js {
				if _, err := chromedp.Call(tb.ctx, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: cspWatch}); err != nil {
					t.Fatal(err)
				}
			}
			browseKeys(t, tb, svc)
			for _, p := range tb.problems() {
				t.Errorf("%s", p)
			}
		})
	}
}

func browseKeys(t *testing.T, tb *tab, svc *app.Service) {
	check := func(name string) {
		t.Helper()
		if !tb.js { // one set of pictures is enough, and axe needs JavaScript
			return
		}
		tb.shot(name)
		tb.axe(name)
		ctx, cancel := tb.timeout()
		defer cancel()
		v, err := chromedp.Run(ctx, chromedp.Evaluate[[]string]("window.__csp || []"))
		if err != nil {
			t.Fatalf("read CSP violations on %s: %v", name, err)
		}
		for _, s := range v {
			t.Errorf("%s: Content-Security-Policy violation: %s", name, s)
		}
	}
	tb.open("/queues")
	tb.wantText("#live-queues", "key concurrency 1", "4 waiting for their key")
	check("queues-keys")
	tb.submit(`a[aria-label="Keys of queue tenants"]`)
	tb.wantText("h1", "Keys of queue", "tenants")
	tb.wantText("#live-keys", "Keys at their limit", "acme", hostileKey)
	if n := tb.count("img"); n != 0 {
		t.Errorf("the keys page holds %d img elements: a key became markup", n)
	}
	check("queue-keys")

	// A key leads to its jobs; the held one to its page.
	tb.submit(`#live-keys td.key-full a[href*="key=%3Cscript"]`)
	if loc := tb.location(); loc != "/jobs?key=%3Cscript%3Ealert%281%29%3C%2Fscript%3E%22%3E%3Cimg+src%3Dx+onerror%3Dalert%282%29%3E&queue=tenants" {
		t.Errorf("the key's link led to %s", loc)
	}
	if n := tb.count("tbody tr"); n != 2 {
		t.Errorf("the jobs of the key: %d rows, want 2", n)
	}
	tb.wantText("tbody", "waiting for key")
	check("jobs-by-key")
	jobs, err := svc.List(t.Context(), app.ListInput{Key: hostileKey, Asc: true})
	if err != nil || len(jobs.Jobs) != 2 {
		t.Fatalf("List by key: %v, %v", jobs, err)
	}
	held := jobs.Jobs[1]
	tb.submit(fmt.Sprintf(`a[href="/jobs/%d"]`, held.ID))
	tb.wantText("h1", "waiting for its key")
	tb.wantText(".fields", hostileKey)
	check("job-held")

	// The key filter of the form, typed in: the filter survives the form.
	tb.open("/jobs")
	tb.typeInto(`input[name="key"]`, "acme")
	tb.submit(`.filters button[type="submit"]`)
	if n := tb.count("tbody tr"); n != 3 {
		t.Errorf("the jobs list filtered by key acme from the form: %d rows, want 3", n)
	}

	if tb.js {
		dark := []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: "dark"}}
		if _, err := chromedp.Call(tb.ctx, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{Features: dark}); err != nil {
			t.Fatal(err)
		}
		tb.open("/queues/keys?queue=tenants")
		check("queue-keys-dark")
		tb.open("/jobs?queue=tenants")
		check("jobs-keys-dark")
		if _, err := chromedp.Call(tb.ctx, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{}); err != nil {
			t.Fatal(err)
		}
	}
}
