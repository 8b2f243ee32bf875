package ui_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	cdplog "github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/queuehq/queue/app"
	"github.com/queuehq/queue/ui"
)

// The browser tests drive Debian's chromium, headless, against a real
// server: every page, and every action clicked with JavaScript on and off.
// They save a screenshot of each page under testdata/screenshots/ at the
// repository root (ignored by git) for a person to look at.

// screenshotDir is testdata/screenshots at the repository root.
const screenshotDir = "../testdata/screenshots"

// chromiumPath finds chromium, or skips the test (fails it under CI=true).
func chromiumPath(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "/usr/bin/chromium"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("chromium is not installed; CI needs it for the browser tests (apt-get install chromium)")
	}
	t.Skip("chromium is not installed: the browser tests need Debian's package chromium (apt-get install chromium)")
	return ""
}

// newBrowser starts a headless chromium for t with a fresh profile and the
// flags that keep it off the network.
func newBrowser(t *testing.T) context.Context {
	t.Helper()
	bin := chromiumPath(t)
	profile, err := os.MkdirTemp("", "queue-ui-chromium-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(profile) })
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(),
		chromedp.ExecPath(bin), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.NoFirstRun, chromedp.NoDefaultBrowserCheck, chromedp.UserDataDir(profile),
		chromedp.WindowSize(1366, 900),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("disable-extensions", true),
		chromedp.Flag("disable-default-apps", true),
		chromedp.Flag("disable-features", "Translate,OptimizationHints,MediaRouter,DialMediaRouteProvider,AutofillServerCommunication"),
		chromedp.Flag("hide-scrollbars", true),
		chromedp.Flag("force-color-profile", "srgb"),
	)
	t.Cleanup(cancelAlloc)
	bctx, cancelBrowser := chromedp.NewContext(actx)
	t.Cleanup(cancelBrowser)
	if err := chromedp.Do(bctx); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	return bctx
}

// tab is one browser tab that records what must not happen: console
// errors, uncaught exceptions and requests to any host but the server's.
type tab struct {
	t       *testing.T
	ctx     context.Context
	base    string
	js      bool
	mu      sync.Mutex
	allowed map[string]bool // hosts (host:port) the tab may talk to
	bad     []string
}

func newTab(t *testing.T, browser context.Context, base string, js bool) *tab {
	t.Helper()
	u, _ := url.Parse(base)
	tb := &tab{t: t, base: base, js: js, allowed: map[string]bool{u.Host: true}}
	ctx, cancel := chromedp.NewContext(browser, chromedp.WithListener(tb.listen))
	t.Cleanup(cancel)
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("open tab: %v", err)
	}
	if !js {
		if _, err := chromedp.Call(ctx, emulation.SetScriptExecutionDisabled, emulation.SetScriptExecutionDisabledParams{Value: true}); err != nil {
			t.Fatalf("disable JavaScript: %v", err)
		}
	}
	tb.ctx = ctx
	return tb
}

// listen runs in the tab's event loop: it only records.
func (tb *tab) listen(ev any) {
	var problem string
	switch ev := ev.(type) {
	case *runtime.EventExceptionThrown:
		problem = "uncaught exception: " + ev.ExceptionDetails.Text
		if ev.ExceptionDetails.Exception != nil {
			problem += " " + ev.ExceptionDetails.Exception.Description
		}
	case *runtime.EventConsoleAPICalled:
		if ev.Type == runtime.ConsoleAPICalledTypeError || ev.Type == runtime.ConsoleAPICalledTypeAssert {
			var parts []string
			for _, a := range ev.Args {
				parts = append(parts, string(a.Value), a.Description)
			}
			problem = "console." + string(ev.Type) + ": " + strings.Join(parts, " ")
		}
	case *cdplog.EventEntryAdded:
		if ev.Entry.Level == cdplog.EntryLevelError {
			problem = "browser log error: " + ev.Entry.Text + " " + ev.Entry.URL
		}
	case *network.EventRequestWillBeSent:
		u, err := url.Parse(ev.Request.URL)
		if err != nil || (u.Scheme != "data" && u.Scheme != "about" && !tb.host(u.Host)) {
			problem = "request left the server: " + ev.Request.URL
		}
	}
	if problem != "" {
		tb.mu.Lock()
		tb.bad = append(tb.bad, problem)
		tb.mu.Unlock()
	}
}

func (tb *tab) host(h string) bool {
	tb.mu.Lock()
	defer tb.mu.Unlock()
	return tb.allowed[h]
}

// problems returns what went wrong so far, and forgets it.
func (tb *tab) problems() []string {
	tb.mu.Lock()
	defer tb.mu.Unlock()
	p := tb.bad
	tb.bad = nil
	return p
}

func (tb *tab) timeout() (context.Context, context.CancelFunc) {
	return context.WithTimeout(tb.ctx, 20*time.Second)
}

// open navigates to path and wants a 200.
func (tb *tab) open(path string) {
	tb.t.Helper()
	ctx, cancel := tb.timeout()
	defer cancel()
	resp, err := chromedp.RunResponse(ctx, chromedp.Navigate(tb.base+path))
	if err != nil {
		tb.t.Fatalf("open %s: %v", path, err)
	}
	if resp.Status != http.StatusOK {
		tb.t.Fatalf("open %s: status %d", path, resp.Status)
	}
}

// openStatus navigates to path and returns the status of the page.
func (tb *tab) openStatus(path string) int64 {
	tb.t.Helper()
	ctx, cancel := tb.timeout()
	defer cancel()
	resp, err := chromedp.RunResponse(ctx, chromedp.Navigate(tb.base+path))
	if err != nil {
		tb.t.Fatalf("open %s: %v", path, err)
	}
	return resp.Status
}

// submit clicks the button (or link) sel and waits for the page it leads
// to (after the redirect of a POST); it returns that page's status.
func (tb *tab) submit(sel string) int64 {
	tb.t.Helper()
	ctx, cancel := tb.timeout()
	defer cancel()
	resp, err := chromedp.RunResponse(ctx, chromedp.Click(chromedp.CSS(sel), chromedp.NodeVisible))
	if err != nil {
		tb.t.Fatalf("click %s on %s: %v", sel, tb.location(), err)
	}
	return resp.Status
}

// click clicks sel without waiting for a page (a checkbox).
func (tb *tab) click(sel string) {
	tb.t.Helper()
	ctx, cancel := tb.timeout()
	defer cancel()
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(sel), chromedp.NodeVisible)); err != nil {
		tb.t.Fatalf("click %s: %v", sel, err)
	}
}

func (tb *tab) setValue(sel, v string) {
	tb.t.Helper()
	ctx, cancel := tb.timeout()
	defer cancel()
	if err := chromedp.Do(ctx, chromedp.SetValue(chromedp.CSS(sel), v)); err != nil {
		tb.t.Fatalf("set %s: %v", sel, err)
	}
}

func (tb *tab) typeInto(sel, v string) {
	tb.t.Helper()
	ctx, cancel := tb.timeout()
	defer cancel()
	if err := chromedp.Do(ctx, chromedp.SendKeys(chromedp.CSS(sel), v)); err != nil {
		tb.t.Fatalf("type into %s: %v", sel, err)
	}
}

func (tb *tab) text(sel string) string {
	tb.t.Helper()
	ctx, cancel := tb.timeout()
	defer cancel()
	s, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(sel)))
	if err != nil {
		tb.t.Fatalf("text of %s on %s: %v", sel, tb.location(), err)
	}
	return s
}

// wantText wants the text of sel to hold each of subs.
func (tb *tab) wantText(sel string, subs ...string) {
	tb.t.Helper()
	got := tb.text(sel)
	for _, s := range subs {
		if !strings.Contains(got, s) {
			tb.t.Errorf("%s: %s says %q, want it to hold %q", tb.location(), sel, got, s)
		}
	}
}

func (tb *tab) count(sel string) int {
	tb.t.Helper()
	ctx, cancel := tb.timeout()
	defer cancel()
	nodes, err := chromedp.Run(ctx, chromedp.Nodes(chromedp.CSSAll(sel), chromedp.AtLeast(0)))
	if err != nil {
		tb.t.Fatalf("count %s: %v", sel, err)
	}
	return len(nodes)
}

func (tb *tab) visible(sel string) bool {
	tb.t.Helper()
	ctx, cancel := context.WithTimeout(tb.ctx, 500*time.Millisecond)
	defer cancel()
	err := chromedp.Do(ctx, chromedp.WaitVisible(chromedp.CSS(sel)))
	return err == nil
}

func (tb *tab) location() string {
	ctx, cancel := tb.timeout()
	defer cancel()
	loc, _ := chromedp.Run(ctx, chromedp.Location())
	return strings.TrimPrefix(loc, tb.base)
}

// shot saves a full-page screenshot as testdata/screenshots/name.png.
func (tb *tab) shot(name string) {
	tb.t.Helper()
	ctx, cancel := tb.timeout()
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		tb.t.Fatalf("screenshot %s: %v", name, err)
	}
	if err := os.MkdirAll(screenshotDir, 0o755); err != nil {
		tb.t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(screenshotDir, name+".png"), png, 0o644); err != nil {
		tb.t.Fatal(err)
	}
}

// axeSource is axe-core (axe.min.js) when the machine has it: from
// QUEUE_TEST_AXE (a path to axe.min.js), or npm's global folders
// (npm install -g axe-core). Without it the accessibility checks are
// skipped, with a note in the test log.
var axeSource = sync.OnceValue(func() string {
	paths := []string{os.Getenv("QUEUE_TEST_AXE"), "/usr/lib/node_modules/axe-core/axe.min.js", "/usr/local/lib/node_modules/axe-core/axe.min.js"}
	if out, err := exec.Command("npm", "root", "-g").Output(); err == nil {
		paths = append(paths, filepath.Join(strings.TrimSpace(string(out)), "axe-core", "axe.min.js"))
	}
	for _, p := range paths {
		if p == "" {
			continue
		}
		if b, err := os.ReadFile(p); err == nil {
			return string(b)
		}
	}
	return ""
})

// axeViolation is one rule axe-core found broken, with where.
type axeViolation struct {
	ID     string `json:"id"`
	Impact string `json:"impact"`
	Help   string `json:"help"`
	Nodes  []struct {
		Target []any  `json:"target"`
		HTML   string `json:"html"`
	} `json:"nodes"`
}

// axe runs axe-core's WCAG 2 A and AA rules on the page open in the tab
// (JavaScript on; DevTools evaluates it, so the pages' CSP does not stop
// it) and fails the test for each violation. Without axe-core it does nothing.
func (tb *tab) axe(what string) {
	tb.t.Helper()
	tb.axeRun(what, `{type: "tag", values: ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]}`)
}

// axeColours runs only axe-core's rules about colour (contrast, links told
// apart from text): what a theme changes, at a fraction of the full run.
func (tb *tab) axeColours(what string) {
	tb.t.Helper()
	tb.axeRun(what, `{type: "rule", values: ["color-contrast", "link-in-text-block"]}`)
}

func (tb *tab) axeRun(what, only string) {
	tb.t.Helper()
	src := axeSource()
	if src == "" || !tb.js {
		return
	}
	ctx, cancel := tb.timeout()
	defer cancel()
	if loaded, err := chromedp.Run(ctx, chromedp.Evaluate[bool](src+";typeof axe === 'object'")); err != nil || !loaded {
		tb.t.Fatalf("inject axe-core on %s: %v", what, err)
	}
	run := `axe.run(document, {runOnly: ` + only + `, resultTypes: ["violations"]}).then(r => r.violations)`
	found, err := chromedp.Run(ctx, chromedp.Evaluate[[]axeViolation](run, chromedp.EvalAwaitPromise))
	if err != nil {
		tb.t.Fatalf("axe on %s: %v", what, err)
	}
	for _, v := range found {
		var where []string
		for _, n := range v.Nodes {
			where = append(where, fmt.Sprintf("%v %.120s", n.Target, n.HTML))
		}
		tb.t.Errorf("accessibility of %s (%s): %s [%s, %s]:\n  %s", what, tb.location(), v.Help, v.ID, v.Impact, strings.Join(where, "\n  "))
	}
}

// eval runs expr in the tab's page and returns its value.
func eval[T any](tb *tab, expr string) T {
	tb.t.Helper()
	ctx, cancel := tb.timeout()
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		tb.t.Fatalf("evaluate %s on %s: %v", expr, tb.location(), err)
	}
	return v
}

// waitFor polls expr (a boolean) every 50 ms until it holds or within
// has passed; it returns how long it took and whether it held.
func (tb *tab) waitFor(expr string, within time.Duration) (time.Duration, bool) {
	tb.t.Helper()
	start := time.Now()
	for {
		if eval[bool](tb, expr) {
			return time.Since(start), true
		}
		if time.Since(start) > within {
			return time.Since(start), false
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// colorScheme makes the tab's OS prefer dark or light colours.
func (tb *tab) colorScheme(scheme string) {
	tb.t.Helper()
	features := []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: scheme}}
	if _, err := chromedp.Call(tb.ctx, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{Features: features}); err != nil {
		tb.t.Fatal(err)
	}
}

// consolePages are the pages the accessibility checks walk, one of each
// kind (the fixture's ids). A page the console gains belongs here.
func consolePages(env *uiEnv) []string {
	return []string{
		"/", "/?range=24h", "/jobs", "/jobs?status=queued&queue=emails",
		fmt.Sprintf("/jobs/%d", env.ids.Queued), fmt.Sprintf("/jobs/%d", env.ids.Processing),
		fmt.Sprintf("/jobs/%d", env.ids.Done), fmt.Sprintf("/jobs/%d", env.ids.Scheduled),
		"/jobs/confirm?op=cancel&queue=emails",
		"/dlq", fmt.Sprintf("/dlq/%d", env.ids.Dead[0]), fmt.Sprintf("/dlq/%d", env.ids.DeadOther),
		"/queues", "/queues/chart?queue=emails", "/queues/settings?queue=emails", "/queues/keys?queue=emails",
		"/queues/drain?queue=webhooks",
		"/workers", "/periodic", "/workflows", "/webhooks",
		"/audit",
	}
}

// apiGet reads a JSON answer of the server's API.
func apiGet(t *testing.T, base, path string, into any) int {
	t.Helper()
	resp, err := http.Get(base + path)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	if into != nil && resp.StatusCode < 300 {
		if err := json.NewDecoder(resp.Body).Decode(into); err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
	}
	return resp.StatusCode
}

type apiJob struct {
	ID           int64  `json:"id"`
	Queue        string `json:"queue"`
	Status       string `json:"status"`
	ReplayedFrom *int64 `json:"replayed_from"`
}

type apiDead struct {
	ID                int64 `json:"id"`
	ResurrectionCount int   `json:"resurrection_count"`
}

func TestBrowser(t *testing.T) {
	browser := newBrowser(t)
	if axeSource() == "" {
		if os.Getenv("CI") == "true" { // .ci/run installs it: never skip the checks silently there
			t.Fatal("axe-core is not installed; CI needs it for the accessibility checks (npm install -g axe-core)")
		}
		t.Log("axe-core not found (npm install -g axe-core, or QUEUE_TEST_AXE=/path/to/axe.min.js): pages are not checked for accessibility")
	}
	for _, js := range []bool{true, false} {
		name := map[bool]string{true: "JavaScript", false: "NoJavaScript"}[js]
		t.Run(name, func(t *testing.T) {
			env := newUIEnv(t, ui.Options{}, true)
			tb := newTab(t, browser, env.URL, js)
			browse(t, tb, env)
			for _, p := range tb.problems() {
				t.Errorf("%s", p)
			}
		})
	}
	t.Run("Login", func(t *testing.T) {
		env := newUIEnv(t, ui.Options{Tokens: []ui.Token{{Name: "ops", Secret: "s3cret-token"}}}, false)
		tb := newTab(t, browser, env.URL, false)
		if st := tb.openStatus("/jobs?queue=emails"); st != http.StatusUnauthorized {
			t.Fatalf("without a session /jobs answers %d, want 401 with the login form", st)
		}
		tb.wantText("h1", "Log in")
		tb.shot("login")
		tb.typeInto(`input[name="token"]`, "wrong")
		if st := tb.submit(`form[action="/login"] button`); st != http.StatusUnauthorized {
			t.Fatalf("a wrong token: status %d, want 401", st)
		}
		tb.wantText(".flash-error", "not valid")
		for _, p := range tb.problems() { // the 401 of the refused login is expected
			if !strings.Contains(p, "401") {
				t.Errorf("%s", p)
			}
		}
		tb.typeInto(`input[name="token"]`, "s3cret-token")
		tb.submit(`form[action="/login"] button`)
		if loc := tb.location(); loc != "/jobs?queue=emails" {
			t.Fatalf("after login: at %s, want /jobs?queue=emails (the Secure session cookie must work on http://127.0.0.1)", loc)
		}
		tb.wantText(".who", "ops")
		tb.submit(`form[action="/logout"] button`)
		tb.wantText("h1", "Log in")
		tb.open("/login")
		if loc := tb.location(); !strings.HasPrefix(loc, "/login") {
			t.Fatalf("after logout: at %s", loc)
		}
		for _, p := range tb.problems() {
			t.Errorf("%s", p)
		}
	})
	t.Run("CrossSitePost", func(t *testing.T) {
		env := newUIEnv(t, ui.Options{}, false)
		// Another site (127.0.0.2 is another host to the browser) with a
		// form that posts to the queue server without a CSRF token.
		ln, err := net.Listen("tcp", "127.0.0.2:0")
		if err != nil {
			if os.Getenv("CI") == "true" {
				t.Fatalf("no second loopback address (127.0.0.2), so CI cannot run the cross-site browser test: %v", err)
			}
			t.Skipf("no second loopback address: %v", err)
		}
		evil := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			fmt.Fprintf(w, `<!doctype html><title>evil</title><form method="post" action="%s/queues/pause"><input type="hidden" name="queue" value="emails"><button id="go" type="submit">Win a prize</button></form>`, env.URL)
		}))
		evil.Listener.Close()
		evil.Listener = ln
		evil.Start()
		t.Cleanup(evil.Close)
		tb := newTab(t, browser, env.URL, false)
		tb.allowed[strings.TrimPrefix(evil.URL, "http://")] = true
		// Log in to the queue server's pages first, so the browser holds its cookies.
		tb.open("/queues")
		if _, err := chromedp.RunResponse(tb.ctx, chromedp.Navigate(evil.URL)); err != nil {
			t.Fatal(err)
		}
		if st := tb.submit("#go"); st != http.StatusForbidden {
			t.Fatalf("cross-site POST: status %d, want 403", st)
		}
		var qs struct {
			Queues []struct {
				Name   string `json:"name"`
				Paused bool   `json:"paused"`
			} `json:"queues"`
		}
		apiGet(t, env.URL, "/api/queues", &qs)
		for _, q := range qs.Queues {
			if q.Name == "emails" && q.Paused {
				t.Fatal("a cross-site POST paused the queue")
			}
		}
	})
}

// browse walks every page and clicks every action, checking the page and
// then the API after each click.
func browse(t *testing.T, tb *tab, env *uiEnv) {
	shot := func(name string) {
		if tb.js { // one set of pictures is enough, and axe needs JavaScript
			tb.shot(name)
			tb.axe(name)
		}
	}

	// Dashboard: counts that agree with the API, and the chart.
	tb.open("/")
	tb.wantText("h1", "Dashboard")
	if n := tb.count("svg.chart rect.done"); n < 30 {
		t.Errorf("the chart has %d bars of completed jobs, want one for most minutes of the hour", n)
	}
	if tb.count("svg.chart rect.failed") == 0 {
		t.Error("the chart shows no failed jobs")
	}
	var stats struct {
		Total app.QueueStats `json:"total"`
	}
	apiGet(t, env.URL, "/api/stats", &stats)
	tb.wantText(`a.card[href="/jobs?status=queued"] .card-num`, thousands(stats.Total.Queued))
	tb.wantText(`a.card[href="/dlq"] .card-num`, thousands(stats.Total.DeadLetter))
	if tb.js {
		tb.wantText("[data-live-status]", "Live")
	}
	// The fixture's periodic invoice.sync has no worker: the dashboard says so.
	tb.wantText(`section[aria-labelledby="unclaimed-title"]`, "no worker handles", "billing", "invoice.sync")
	shot("dashboard")

	// Jobs: the list, then a filter.
	tb.open("/jobs")
	tb.wantText("h1", "Jobs")
	shot("jobs")
	tb.setValue(`select[name="queue"]`, "emails")
	tb.setValue(`select[name="status"]`, "queued")
	tb.submit(`form.filters button[type="submit"]`)
	if loc := tb.location(); !strings.Contains(loc, "queue=emails") || !strings.Contains(loc, "status=queued") {
		t.Fatalf("after filtering: at %s", loc)
	}
	var page struct {
		Jobs []apiJob `json:"jobs"`
	}
	apiGet(t, env.URL, "/api/jobs?queue=emails&status=queued", &page)
	if rows := tb.count("table.table tbody tr"); rows != len(page.Jobs) || rows == 0 {
		t.Errorf("filtered list shows %d rows; the API lists %d", rows, len(page.Jobs))
	}
	body := tb.text("table.table tbody")
	for _, other := range []string{"reports", "billing", "webhooks", "done", "processing"} {
		if strings.Contains(body, other) {
			t.Errorf("the list filtered to queued emails jobs shows %q", other)
		}
	}

	// A job: open it from the list, check the payload is shown as text, cancel it.
	id := env.ids.Queued
	tb.submit(fmt.Sprintf(`a[href="/jobs/%d"]`, id))
	tb.wantText("h1", fmt.Sprintf("#%d", id), "email.welcome", "queued")
	tb.wantText("pre.code", `"subject": "<script>alert('x')</script>"`)
	if n, ours := tb.count("script"), tb.count(`head script[src^="/static/theme.js?v="]`)+tb.count(`head script[src^="/static/app.js?v="][defer]`); n != 2 || ours != 2 {
		t.Errorf("the job page has %d script elements (%d of them theme.js and app.js), want only those two", n, ours)
	}
	shot("job")
	tb.submit(fmt.Sprintf(`.head-actions a[href^="/jobs/confirm?"][href*="op=cancel"][href*="&id=%d&"]`, id)) // cancel goes through the confirm page
	tb.wantText("h1", fmt.Sprintf("Cancel job #%d?", id))
	tb.submit(`.confirm button[type="submit"]`)
	tb.wantText(".flash", fmt.Sprintf("Job #%d cancelled.", id))
	tb.wantText("h1", "cancelled")
	var job apiJob
	apiGet(t, env.URL, fmt.Sprintf("/api/jobs/%d", id), &job)
	if job.Status != "cancelled" {
		t.Errorf("after clicking cancel the API shows job %d %s", id, job.Status)
	}

	// DLQ: list, a row's page, replay now.
	tb.open("/dlq")
	tb.wantText("h1", "Dead letters")
	tb.wantText(".bulk-bar .count", "5 rows match")
	if tb.visible("input[data-select-all]") != tb.js {
		t.Errorf("the select-all box is visible=%v with JavaScript %v", !tb.js, tb.js)
	}
	shot("dlq")
	dead := env.ids.Dead[0]
	tb.submit(fmt.Sprintf(`a[href="/dlq/%d"]`, dead))
	tb.wantText(".panel-bad", "max_attempts", "card_declined")
	shot("dlq-detail")
	tb.submit(fmt.Sprintf(`.head-actions form[action="/dlq/%d/replay"] button`, dead))
	tb.wantText(".flash", fmt.Sprintf("Dead-letter job #%d replayed as job #", dead))
	var d apiDead
	apiGet(t, env.URL, fmt.Sprintf("/api/dlq/%d", dead), &d)
	if d.ResurrectionCount != 1 {
		t.Errorf("after replay the API shows resurrection_count %d", d.ResurrectionCount)
	}
	tb.submit(".flash a")
	tb.wantText(".sub", fmt.Sprintf("replayed from dead letter #%d", dead))
	apiGet(t, env.URL, "/api/jobs?queue=billing&status=queued", &page)
	replayed := false
	for _, j := range page.Jobs {
		replayed = replayed || (j.ReplayedFrom != nil && *j.ReplayedFrom == dead)
	}
	if !replayed {
		t.Errorf("the API lists no queued billing job replayed from %d", dead)
	}

	// Bulk purge of two selected rows, after the confirm page.
	tb.open("/dlq?queue=billing")
	tb.click(fmt.Sprintf(`input[name="id"][value="%d"]`, env.ids.Dead[2]))
	tb.click(fmt.Sprintf(`input[name="id"][value="%d"]`, env.ids.Dead[3]))
	tb.submit(`button[name="op"][value="purge"]`)
	tb.wantText("h1", "Purge 2 selected dead-letter jobs?")
	if n := tb.count(".confirm table tbody tr"); n != 2 {
		t.Errorf("the confirm page lists %d rows, want 2", n)
	}
	if st := apiGet(t, env.URL, fmt.Sprintf("/api/dlq/%d", env.ids.Dead[2]), nil); st != http.StatusOK {
		t.Fatalf("the confirm page purged already: %d", st)
	}
	shot("dlq-confirm")
	tb.submit(`.confirm-actions button[type="submit"]`)
	tb.wantText(".flash", "Purged 2 dead-letter jobs.")
	for _, gone := range env.ids.Dead[2:] {
		if st := apiGet(t, env.URL, fmt.Sprintf("/api/dlq/%d", gone), nil); st != http.StatusNotFound {
			t.Errorf("after the purge GET /api/dlq/%d answers %d, want 404", gone, st)
		}
	}

	// Bulk purge of all rows matching a filter.
	tb.open("/dlq?reason=permanent_failure")
	tb.submit(`button[name="op"][value="purge_all"]`)
	tb.wantText("h1", "Purge all 1 matching dead-letter job?")
	tb.submit(`.confirm-actions button[type="submit"]`)
	tb.wantText(".flash", "Purged 1 dead-letter job.")
	var dl struct {
		Jobs []apiDead `json:"jobs"`
	}
	apiGet(t, env.URL, "/api/dlq?reason=permanent_failure", &dl)
	if len(dl.Jobs) != 0 {
		t.Errorf("after purging all permanent failures the API lists %d", len(dl.Jobs))
	}

	// The DLQ's second pass: the counts and the export links of the list,
	// a replay with changes, a bulk move from the jobs page, one job moved.
	tb.open("/dlq?replayed=any")
	tb.wantText("#dlq-counts", "Counts", "billing", "Replays in all")
	if n := tb.count(`a[href^="/dlq/export?format=csv"]`) + tb.count(`a[href^="/dlq/export?format=ndjson"]`); n != 2 {
		t.Errorf("the list has %d export links, want 2", n)
	}
	shot("dlq-replayed")
	row := env.ids.Dead[1]
	tb.open(fmt.Sprintf("/dlq/%d", row))
	tb.wantText(".panel-bad", "Failed attempt started", "worker-1")
	tb.click("details.replay-more > summary")
	tb.typeInto(`.replay-form input[name="queue"]`, "billing-v2")
	tb.typeInto(`.replay-form input[name="priority"]`, "3")
	shot("dlq-replay-form")
	tb.submit(`.replay-form button[type="submit"]`)
	tb.wantText(".flash", fmt.Sprintf("Dead-letter job #%d replayed as job #", row), "in queue billing-v2")
	var after struct {
		ReplayedJobID int64 `json:"replayed_job_id"`
	}
	apiGet(t, env.URL, fmt.Sprintf("/api/dlq/%d", row), &after)
	var made struct {
		Queue    string `json:"queue"`
		Priority int    `json:"priority"`
	}
	apiGet(t, env.URL, fmt.Sprintf("/api/jobs/%d", after.ReplayedJobID), &made)
	if made.Queue != "billing-v2" || made.Priority != 3 {
		t.Errorf("the job replayed with changes: %+v, want queue billing-v2 and priority 3", made)
	}
	tb.open("/jobs?queue=emails&kind=email.digest")
	tb.submit(`a[href^="/dlq/confirm?"]`)
	tb.wantText("h1", "to the dead-letter queue?")
	shot("move-confirm")
	tb.typeInto(`input[name="note"]`, "digest template broken")
	tb.submit(`.confirm-actions button[type="submit"]`)
	tb.wantText(".flash", "to the dead-letter queue.")
	var moved struct {
		Jobs []struct {
			Kind string `json:"kind"`
			Note string `json:"note"`
		} `json:"jobs"`
	}
	apiGet(t, env.URL, "/api/dlq?reason=admin_move", &moved)
	if len(moved.Jobs) == 0 {
		t.Error("after the move the API lists no row moved by an operator")
	}
	for _, m := range moved.Jobs {
		if m.Kind != "email.digest" || m.Note != "digest template broken" {
			t.Errorf("a moved row: %+v", m)
		}
	}
	tb.open(fmt.Sprintf("/jobs/%d", id)) // cancelled above
	tb.typeInto(fmt.Sprintf(`form[action="/jobs/%d/move"] input[name="note"]`, id), "backfill")
	tb.submit(fmt.Sprintf(`form[action="/jobs/%d/move"] button`, id))
	tb.wantText(".flash", fmt.Sprintf("Job #%d moved to the dead-letter queue.", id))
	tb.wantText(".panel-bad", "admin_move", "backfill")

	// Queues: pause and resume.
	tb.open("/queues")
	tb.wantText("h1", "Queues")
	tb.wantText("#periodic table", "nightly-report", "sync-invoices")
	shot("queues")
	paused := func(name string) bool {
		var qs struct {
			Queues []app.QueueInfo `json:"queues"`
		}
		apiGet(t, env.URL, "/api/queues", &qs)
		for _, q := range qs.Queues {
			if q.Name == name {
				return q.Paused
			}
		}
		t.Fatalf("the API lists no queue %s", name)
		return false
	}
	tb.submit(`button[aria-label="Pause queue emails"]`)
	tb.wantText(".flash", "Queue emails paused")
	shot("queues-paused")
	if !paused("emails") {
		t.Error("after clicking pause the API shows emails running")
	}
	tb.submit(`button[aria-label="Resume queue emails"]`)
	tb.wantText(".flash", "Queue emails resumed")
	if paused("emails") {
		t.Error("after clicking resume the API shows emails paused")
	}
	tb.open("/queues/drain?queue=webhooks")
	shot("drain-confirm")

	// The dark scheme, for a person to look at.
	if tb.js {
		dark := []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: "dark"}}
		if _, err := chromedp.Call(tb.ctx, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{Features: dark}); err != nil {
			t.Fatal(err)
		}
		tb.open(fmt.Sprintf("/dlq/%d", env.ids.Dead[1]))
		shot("dlq-detail-dark")
		tb.open("/")
		shot("dashboard-dark")
		if _, err := chromedp.Call(tb.ctx, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{}); err != nil {
			t.Fatal(err)
		}
	}

	// An error page is a page too.
	ctx, cancel := tb.timeout()
	defer cancel()
	resp, err := chromedp.RunResponse(ctx, chromedp.Navigate(env.URL+"/jobs/987654321"))
	if err != nil || resp.Status != http.StatusNotFound {
		t.Errorf("a missing job: %v, %v", resp, err)
	}
	tb.wantText("h1", "Not Found")
	shot("not-found")
	// A 404 document is logged by the browser as a failed resource; that one is expected.
	var keep []string
	for _, p := range tb.problems() {
		if !strings.Contains(p, "404") {
			keep = append(keep, p)
		}
	}
	for _, p := range keep {
		t.Errorf("%s", p)
	}
}

// thousands writes n as the pages do (1,234).
func thousands(n int64) string {
	s := fmt.Sprint(n)
	var b strings.Builder
	for i, r := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(r)
	}
	return b.String()
}
