package ui_test

import (
	"strings"
	"testing"
	"time"

	"github.com/queuehq/queue/ui"
)

// TestBrowserAudit drives chromium, with JavaScript on and off: pausing a
// queue on the queues page puts an entry on the audit trail, which the
// audit page shows (who, what, on which queue, when: an absolute time
// without hovering), alone once filtered by its action through the form;
// with JavaScript on, an action taken elsewhere meanwhile appears on the
// open page without a reload, and axe-core finds no violation.
func TestBrowserAudit(t *testing.T) {
	browser := newBrowser(t)
	for _, js := range []bool{true, false} {
		name := map[bool]string{true: "JavaScript", false: "NoJavaScript"}[js]
		t.Run(name, func(t *testing.T) {
			env := newUIEnv(t, ui.Options{}, false)
			tb := newTab(t, browser, env.URL, js)

			tb.open("/queues")
			tb.submit(`button[aria-label="Pause queue emails"]`)
			tb.wantText(".flash", "Queue emails paused")

			tb.open("/audit")
			tb.wantText("h1", "Audit trail")
			tb.wantText("#live-audit tbody tr:first-child", "local", "queue.pause", "queue emails", "emails", "UTC")
			tb.axe("audit")

			tb.setValue(`select[name="action"]`, "queue.resume")
			tb.submit(`form.filters button[type="submit"]`)
			if !strings.Contains(tb.location(), "action=queue.resume") {
				t.Fatalf("the filter form went to %s", tb.location())
			}
			tb.wantText("#live-audit", "No audit entries match these filters")

			tb.setValue(`select[name="action"]`, "queue.pause")
			tb.setValue(`select[name="queue"]`, "emails")
			tb.submit(`form.filters button[type="submit"]`)
			tb.wantText("#live-audit tbody", "queue.pause")
			if n := tb.count("#live-audit tbody tr"); n != 1 {
				t.Fatalf("%d entries of action queue.pause on queue emails, want 1", n)
			}
			tb.axe("audit, filtered")

			if !js {
				return
			}
			// Live: the open page shows an entry made elsewhere without a reload.
			tb.open("/audit")
			if err := env.svc.SetPaused(t.Context(), "emails", false, "ops-bot"); err != nil {
				t.Fatal(err)
			}
			took, ok := tb.waitFor(`(document.querySelector("#live-audit tbody tr:first-child") || {textContent: ""}).textContent.includes("ops-bot")`, 20*time.Second)
			if !ok {
				t.Fatalf("the open audit page did not show the new entry within %s", took)
			}
			tb.wantText("#live-audit tbody tr:first-child", "queue.resume", "ops-bot")
		})
	}
}
