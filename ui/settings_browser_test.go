package ui_test

import (
	"testing"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/queuehq/queue/ui"
)

// TestBrowserSettings drives chromium, with JavaScript on and off, from
// the queues page to a queue's settings, changes its concurrency in the
// form and sees the new value in effect; then makes a periodic job on the
// periodic page, runs it now and pauses it.
func TestBrowserSettings(t *testing.T) {
	browser := newBrowser(t)
	for _, js := range []bool{true, false} {
		name := map[bool]string{true: "JavaScript", false: "NoJavaScript"}[js]
		t.Run(name, func(t *testing.T) {
			env := newUIEnv(t, ui.Options{}, false)
			env.svc.Config.ParseSchedule = parseCron
			tb := newTab(t, browser, env.URL, js)
			if js {
				if _, err := chromedp.Call(tb.ctx, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: cspWatch}); err != nil {
					t.Fatal(err)
				}
			}
			check := func(name string) {
				t.Helper()
				if !tb.js {
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
			tb.submit(`a[aria-label="Settings of queue emails"]`)
			tb.wantText("h1", "Settings of queue", "emails")
			tb.wantText(`[data-setting="concurrency"]`, "20")
			check("queue-settings")
			tb.setValue(`input[name="concurrency"]`, "3")
			if st := tb.submit(`#settings-form button[type="submit"]`); st != 200 {
				t.Fatalf("saving the settings: status %d", st)
			}
			tb.wantText(".flash", "concurrency changed")
			tb.wantText(`[data-setting="concurrency"]`, "3")
			if got := env.svc.Config.Queue("emails").Concurrency; got != 3 {
				t.Fatalf("concurrency in effect after the form: %d, want 3", got)
			}
			tb.setValue(`input[name="concurrency"]`, " ") // blank: unset (SetValue cannot set "")
			tb.submit(`#settings-form button[type="submit"]`)
			tb.wantText(`[data-setting="concurrency"]`, "20")

			tb.open("/")
			tb.submit(`nav a[href="/periodic"]`)
			tb.wantText("h1", "Periodic jobs")
			tb.setValue(`#periodic-form input[name="name"]`, "cleanup")
			tb.setValue(`#periodic-form input[name="cron"]`, "@every 10m")
			tb.setValue(`#periodic-form input[name="kind"]`, "cleanup")
			tb.setValue(`#periodic-form input[name="queue"]`, "maint")
			tb.submit(`#periodic-form button[type="submit"]`)
			tb.wantText(".flash", "Periodic job cleanup created")
			tb.wantText("#live-periodic", "cleanup", "@every 10m", "maint")
			check("periodic")
			tb.submit(`button[aria-label="Run now: cleanup"]`)
			tb.wantText(".flash", "run now: job")
			tb.submit(`button[aria-label="Pause cleanup"]`)
			tb.wantText(".flash", "cleanup paused")
			if n := tb.count(`button[aria-label="Resume cleanup"]`); n != 1 {
				t.Fatalf("after pause: %d resume buttons, want 1", n)
			}
			tb.submit(`a[aria-label="Edit cleanup"]`)
			tb.setValue(`#periodic-form input[name="cron"]`, "@every 30m")
			tb.submit(`#periodic-form button[type="submit"]`)
			tb.wantText("#live-periodic", "@every 30m")
			tb.submit(`button[aria-label="Delete cleanup"]`)
			tb.wantText(".flash", "cleanup deleted")
			st, err := env.svc.PeriodicStatus(t.Context())
			if err != nil || len(st) != 2 {
				t.Fatalf("periodic jobs after delete: %d (%v), want the file's 2", len(st), err)
			}
			for _, p := range tb.problems() {
				t.Errorf("%s", p)
			}
		})
	}
}
