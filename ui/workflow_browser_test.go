package ui_test

import (
	"fmt"
	"math"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/queuehq/queue/app"
	"github.com/queuehq/queue/ui"
)

// cspWatch is run by the browser before each document's own code: it keeps
// every Content-Security-Policy violation, so a test can ask for them even
// when the browser's log says nothing (DevTools' scripts are exempt from the
// policy, the page's are not).
const cspWatch = `window.__csp = []; document.addEventListener("securitypolicyviolation", function (e) { window.__csp.push(e.violatedDirective + " " + (e.blockedURI || "inline") + " " + (e.sample || "")); });`

// TestBrowserWorkflows drives chromium through /workflows and a diamond
// workflow's page: the graph's boxes and arrows, a box's link to its job
// and back, the cancel through its confirm page; axe-core finds nothing in
// either colour scheme, and nothing breaks the pages' CSP.
func TestBrowserWorkflows(t *testing.T) {
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
			env := newUIEnv(t, ui.Options{}, false)
			d := submitPageDiamond(t, env)
			tb := newTab(t, browser, env.URL, js)
			if js {
				if _, err := chromedp.Call(tb.ctx, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: cspWatch}); err != nil {
					t.Fatal(err)
				}
			}
			browseWorkflows(t, tb, env, d)
			for _, p := range tb.problems() {
				t.Errorf("%s", p)
			}
		})
	}
}

func browseWorkflows(t *testing.T, tb *tab, env *uiEnv, d pageDiamond) {
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
		graphContrast(t, tb, name)
	}
	wfPath := fmt.Sprintf("/workflows/%d", d.ID)

	tb.open("/")
	tb.submit(`nav.nav a[href="/workflows"]`)
	tb.wantText("h1", "Workflows")
	tb.wantText("table.table tbody", `<script>alert("wf")</script>`, "running")
	if n := tb.count("table.table tbody tr"); n != 1 {
		t.Errorf("/workflows lists %d rows, want the one workflow", n)
	}
	check("workflows")

	tb.submit(fmt.Sprintf(`a.strong[href="%s"]`, wfPath))
	tb.wantText("h1", fmt.Sprintf("#%d", d.ID), `<script>alert("wf")</script>`, "running")
	if n := tb.count("script:not([src])"); n != 0 {
		t.Errorf("the workflow page has %d inline script elements, want none (only theme.js and app.js)", n)
	}
	for sel, want := range map[string]int{
		"svg.wf-graph .wf-node":               4,
		"svg.wf-graph a.wf-node":              3, // D has no job yet
		"svg.wf-graph .wf-node.st-done":       1,
		"svg.wf-graph .wf-node.st-processing": 1,
		"svg.wf-graph .wf-node.st-queued":     1,
		"svg.wf-graph .wf-node.st-waiting":    1,
		"svg.wf-graph path.wf-edge":           4,
		"svg.wf-graph path.wf-edge-continue":  1,
		"#steps table tbody tr":               4,
	} {
		if n := tb.count(sel); n != want {
			t.Errorf("the workflow page has %d of %s, want %d", n, sel, want)
		}
	}
	if n := tb.count(".wf-path li"); n < 2 {
		t.Errorf("the critical path has %d steps, want the chain from A", n)
	}
	check("workflow")

	// A box leads to its job, and the job back to its workflow.
	tb.submit(fmt.Sprintf(`svg.wf-graph a.wf-node[href="/jobs/%d"]`, d.Jobs["B"]))
	if loc := tb.location(); loc != fmt.Sprintf("/jobs/%d", d.Jobs["B"]) {
		t.Fatalf("clicking box B: at %s", loc)
	}
	tb.wantText(".sub", fmt.Sprintf("step B of workflow #%d", d.ID))
	check("workflow-step-job")
	tb.submit(fmt.Sprintf(`a.wf-link[href="%s"]`, wfPath))
	if loc := tb.location(); loc != wfPath {
		t.Fatalf("following the job's workflow link: at %s", loc)
	}

	// The dark scheme: the state colours must hold their contrast there too.
	if tb.js {
		dark := []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: "dark"}}
		if _, err := chromedp.Call(tb.ctx, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{Features: dark}); err != nil {
			t.Fatal(err)
		}
		tb.open(wfPath)
		check("workflow-dark")
		tb.open("/workflows")
		check("workflows-dark")
		if _, err := chromedp.Call(tb.ctx, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{}); err != nil {
			t.Fatal(err)
		}
		tb.open(wfPath)
	}

	// Cancel, through the confirm page.
	tb.submit(fmt.Sprintf(`a[href="%s/cancel"]`, wfPath))
	tb.wantText("h1", fmt.Sprintf("Cancel workflow #%d", d.ID))
	check("workflow-confirm")
	if wv, _ := env.svc.GetWorkflow(t.Context(), d.ID); wv.Status != app.WorkflowRunning {
		t.Fatalf("the confirm page changed the workflow: %s", wv.Status)
	}
	if st := tb.submit(`.confirm-actions button[type="submit"]`); st != http.StatusOK {
		t.Fatalf("the cancel answered %d", st)
	}
	tb.wantText(".flash", fmt.Sprintf("Workflow #%d cancelled.", d.ID))
	tb.wantText("h1", "cancelled")
	if wv, _ := env.svc.GetWorkflow(t.Context(), d.ID); wv.Status != app.WorkflowCancelled {
		t.Errorf("after clicking cancel the workflow is %s", wv.Status)
	}
	if n := tb.count("svg.wf-graph .wf-node.st-cancelled"); n != 2 {
		t.Errorf("after the cancel %d boxes are cancelled, want C and D", n)
	}
	if strings.Contains(tb.text("main"), "Cancel workflow…") {
		t.Error("the cancelled workflow still offers the cancel")
	}
	check("workflow-cancelled")
}

// graphContrast checks the text of each box of the graph against the box's
// fill as the browser computed them (axe-core leaves SVG text out of its
// contrast rule): WCAG AA, 4.5:1, for the step's name and its state.
func graphContrast(t *testing.T, tb *tab, name string) {
	t.Helper()
	ctx, cancel := tb.timeout()
	defer cancel()
	type box struct{ Class, Fill, Label, State string }
	boxes, err := chromedp.Run(ctx, chromedp.Evaluate[[]box](`Array.from(document.querySelectorAll("svg.wf-graph .wf-node")).map(function (n) {
		var fill = function (sel) { return getComputedStyle(n.querySelector(sel)).fill; };
		return {Class: n.getAttribute("class"), Fill: fill("rect"), Label: fill(".wf-label"), State: fill(".wf-state")};
	})`))
	if err != nil {
		t.Fatalf("read the graph's colours on %s: %v", name, err)
	}
	for _, b := range boxes {
		bg, ok := cssColor(b.Fill)
		if !ok {
			t.Errorf("%s: box %q has fill %q", name, b.Class, b.Fill)
			continue
		}
		for what, fg := range map[string]string{"name": b.Label, "state": b.State} {
			c, ok := cssColor(fg)
			if r := contrast(c, bg); !ok || r < 4.5 {
				t.Errorf("%s: box %q: the %s's colour %s on %s has contrast %.2f, want 4.5 or more", name, b.Class, what, fg, b.Fill, r)
			}
		}
	}
}

// cssColor reads a computed colour, "rgb(r, g, b)" or "color(srgb r g b)"
// (what color-mix() computes to), as sRGB channels in [0, 1].
func cssColor(s string) ([3]float64, bool) {
	var c [3]float64
	scale := 255.0
	switch {
	case strings.HasPrefix(s, "rgb(") || strings.HasPrefix(s, "rgba("):
		s = s[strings.IndexByte(s, '(')+1:]
	case strings.HasPrefix(s, "color(srgb "):
		s, scale = strings.TrimPrefix(s, "color(srgb "), 1
	default:
		return c, false
	}
	f := strings.FieldsFunc(strings.TrimSuffix(s, ")"), func(r rune) bool { return r == ',' || r == ' ' || r == '/' })
	if len(f) < 3 || len(f) == 4 && f[3] != "1" {
		return c, false // translucent: not what a box is
	}
	for i := range 3 {
		v, err := strconv.ParseFloat(f[i], 64)
		if err != nil {
			return c, false
		}
		c[i] = v / scale
	}
	return c, true
}

// contrast is the WCAG contrast ratio of two sRGB colours.
func contrast(a, b [3]float64) float64 {
	lum := func(c [3]float64) float64 {
		var l [3]float64
		for i, v := range c {
			if v <= 0.03928 {
				l[i] = v / 12.92
			} else {
				l[i] = math.Pow((v+0.055)/1.055, 2.4)
			}
		}
		return 0.2126*l[0] + 0.7152*l[1] + 0.0722*l[2]
	}
	la, lb := lum(a), lum(b)
	return (max(la, lb) + 0.05) / (min(la, lb) + 0.05)
}
