package ui_test

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/queuehq/queue/app"
	"github.com/queuehq/queue/ui"
)

// registerPageWorkers registers the workers the page tests look at: a
// running one with hostile strings, one of another queue, and one gone.
func registerPageWorkers(t *testing.T, env *uiEnv) {
	t.Helper()
	for _, in := range []app.WorkerInput{
		{ID: `<script>alert("w")</script>`, Host: "box-1", PID: 41, Version: `<b>v1</b> "x"`,
			Queues: &app.QueueChoice{Names: []string{"emails", "reports"}, Weights: []int{3, 1}}, Kinds: []string{"email.welcome"}, Concurrency: 4, Type: app.WorkerHTTP},
		{ID: "box-2:42-aa", Host: "box-2", PID: 42, Queues: &app.QueueChoice{Names: []string{"emails"}}, Concurrency: 2, Type: app.WorkerGo},
	} {
		if _, err := env.svc.RegisterWorker(t.Context(), in); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := env.svc.WorkerHeartbeat(t.Context(), "box-2:42-aa", app.WorkerBeat{InFlight: 1, Done: 1234, Failed: 5}); err != nil {
		t.Fatal(err)
	}
}

// The workers page: every worker with its counts, state and last seen
// (relative and absolute), hostile strings escaped; the quiet and stop
// buttons lead to a confirm page whose POST (CSRF) quiets the worker,
// audited; a post without the confirm field goes back to the confirm
// page; a reader sees no buttons.
func TestWorkersPage(t *testing.T) {
	env := newUIEnv(t, ui.Options{}, false)
	registerPageWorkers(t, env)
	u := newUIClient(t, env.URL)
	a := u.get("/workers")
	wantStatus(t, "GET /workers", a, http.StatusOK)
	wantBody(t, "/workers", a, "<h1>Workers</h1>", `href="/workers" aria-current="page"`, "box-2:42-aa", "1,234",
		"badge-running", "emails=3,reports=1", "email.welcome", "UTC</time>", "Quiet…", "Stop…",
		`&lt;script&gt;alert(&#34;w&#34;)&lt;/script&gt;`, `&lt;b&gt;v1&lt;/b&gt;`)
	if strings.Contains(a.body, `<script>alert("w")`) || strings.Contains(a.body, "<b>v1</b>") {
		t.Fatal("the workers page does not escape a worker's id or version")
	}

	confirm := link("/workers/confirm", "id", "box-2:42-aa", "command", "quiet")
	a = u.get(confirm)
	wantStatus(t, "GET confirm", a, http.StatusOK)
	wantBody(t, "confirm", a, "Quiet worker box-2:42-aa?", "1 job it runs", `name="confirm" value="yes"`, `action="/workers/command"`)

	// Without the confirm field: back to the confirm page, nothing changed.
	a = u.post("/workers/command", url.Values{"id": {"box-2:42-aa"}, "command": {"quiet"}})
	if a.status != http.StatusSeeOther || !strings.HasPrefix(a.header.Get("Location"), "/workers/confirm?") {
		t.Fatalf("post without confirm: %d %s", a.status, a.header.Get("Location"))
	}
	if w, _ := env.svc.Worker(t.Context(), "box-2:42-aa"); w.Command != app.WorkerRun {
		t.Fatalf("a post without confirm changed the command to %s", w.Command)
	}
	// Without a CSRF token: refused.
	if a := u.do(http.MethodPost, "/workers/command", url.Values{"id": {"box-2:42-aa"}, "command": {"quiet"}, "confirm": {"yes"}}, nil); a.status != http.StatusForbidden {
		t.Fatalf("post without CSRF: %d, want 403", a.status)
	}
	u.get(confirm)
	a = u.follow(u.post("/workers/command", url.Values{"id": {"box-2:42-aa"}, "command": {"quiet"}, "confirm": {"yes"}}))
	wantBody(t, "after quiet", a, "Worker box-2:42-aa told to quiet", "badge-quiet")
	if w, _ := env.svc.Worker(t.Context(), "box-2:42-aa"); w.Command != app.WorkerQuiet {
		t.Fatalf("command after the confirmed post: %s, want quiet", w.Command)
	}
	entries, _ := env.svc.Audit(t.Context(), app.AuditFilter{Action: "worker.quiet"})
	if len(entries) != 1 || entries[0].Target != "worker box-2:42-aa" {
		t.Fatalf("audit: %+v", entries)
	}

	// Unknown worker, unknown command: a message, not a 500.
	a = u.get(link("/workers/confirm", "id", "nobody", "command", "stop"))
	if a.status != http.StatusSeeOther {
		t.Fatalf("confirm of an unknown worker: %d", a.status)
	}
	wantBody(t, "unknown worker", u.follow(a), "worker not registered")
	if a := u.get(link("/workers/confirm", "id", "box-2:42-aa", "command", "explode")); a.status != http.StatusSeeOther {
		t.Fatalf("confirm of an unknown command: %d", a.status)
	}

	// Gone after 15 s without a heartbeat: no buttons.
	env.clock.Advance(app.WorkerGoneAfter + 1)
	a = u.get("/workers")
	wantBody(t, "gone", a, "badge-gone")
	if strings.Contains(a.body, "Quiet…") || strings.Contains(a.body, "Stop…") {
		t.Fatal("a gone worker has quiet or stop buttons")
	}
}

// A reader sees the workers without buttons and may not open the confirm
// page nor post a command. (The web UI takes no queue-scoped token; the
// API's scope is tested in TestWorkerRegistryAPI.)
func TestWorkersPageReader(t *testing.T) {
	tokens := []ui.Token{{Name: "viewer", Secret: "read-token-0123456789", Role: ui.RoleRead}}
	env := newUIEnv(t, ui.Options{Tokens: tokens}, false)
	registerPageWorkers(t, env)
	u := newUIClient(t, env.URL)
	u.get("/login")
	u.login("read-token-0123456789")
	a := u.get("/workers")
	wantStatus(t, "GET /workers", a, http.StatusOK)
	wantBody(t, "/workers as a reader", a, "box-2:42-aa", "box-1")
	if strings.Contains(a.body, "Quiet…") || strings.Contains(a.body, "Stop…") {
		t.Fatal("a reader sees quiet or stop buttons")
	}
	if a := u.get(link("/workers/confirm", "id", "box-2:42-aa", "command", "stop")); a.status != http.StatusForbidden {
		t.Fatalf("confirm page for a reader: %d, want 403", a.status)
	}
	if a := u.post("/workers/command", url.Values{"id": {"box-2:42-aa"}, "command": {"stop"}, "confirm": {"yes"}}); a.status != http.StatusForbidden {
		t.Fatalf("command posted by a reader: %d, want 403", a.status)
	}
	if w, _ := env.svc.Worker(t.Context(), "box-2:42-aa"); w.Command != app.WorkerRun {
		t.Fatalf("a reader changed the command to %s", w.Command)
	}
}

func link(p string, kv ...string) string {
	q := url.Values{}
	for i := 0; i+1 < len(kv); i += 2 {
		q.Set(kv[i], kv[i+1])
	}
	return p + "?" + q.Encode()
}

// TestBrowserWorkers quiets a worker from /workers in chromium, through
// its confirm page, with JavaScript on and off.
func TestBrowserWorkers(t *testing.T) {
	browser := newBrowser(t)
	for _, js := range []bool{true, false} {
		name := map[bool]string{true: "JavaScript", false: "NoJavaScript"}[js]
		t.Run(name, func(t *testing.T) {
			env := newUIEnv(t, ui.Options{}, false)
			registerPageWorkers(t, env)
			tb := newTab(t, browser, env.URL, js)
			tb.open("/")
			tb.submit(`nav.nav a[href="/workers"]`)
			tb.wantText("h1", "Workers")
			tb.wantText("table.table tbody", "box-2:42-aa", `<script>alert("w")</script>`, "running")
			if js {
				tb.shot("workers")
				tb.axe("workers")
			}
			tb.submit(`a[aria-label="Quiet worker box-2:42-aa"]`)
			tb.wantText("h1", "Quiet worker box-2:42-aa?")
			tb.submit(`form[action="/workers/command"] button[type="submit"]`)
			if loc := tb.location(); loc != "/workers" {
				t.Fatalf("after quiet: at %s, want /workers", loc)
			}
			tb.wantText(".flash", "told to quiet")
			if n := tb.count("td.state .badge-quiet"); n != 1 {
				t.Fatalf("%d workers shown quiet after quiet, want 1", n)
			}
			if w, _ := env.svc.Worker(t.Context(), "box-2:42-aa"); w.Command != app.WorkerQuiet {
				t.Fatalf("command after the browser's quiet: %s", w.Command)
			}
			for _, p := range tb.problems() {
				t.Errorf("%s", p)
			}
		})
	}
}

// The workers page lists the jobs each worker runs (its in-flight jobs,
// linked), as well as their count.
func TestWorkersPageInFlightJobs(t *testing.T) {
	env := newUIEnv(t, ui.Options{}, false)
	registerPageWorkers(t, env)
	mustSubmit(t, env.svc, app.SubmitInput{Queue: "emails", Kind: "email.welcome"}, app.SubmitInput{Queue: "emails", Kind: "email.welcome"})
	if err := env.svc.SetPaused(t.Context(), "emails", false, "test"); err != nil {
		t.Fatal(err)
	}
	jobs, err := env.svc.Claim(t.Context(), "emails", app.ClaimInput{WorkerID: "box-2:42-aa", Limit: 2})
	if err != nil || len(jobs) == 0 {
		t.Fatalf("claim as box-2:42-aa: %v, %d jobs", err, len(jobs))
	}
	a := newUIClient(t, env.URL).get("/workers")
	wantStatus(t, "/workers", a, http.StatusOK)
	for _, j := range jobs {
		wantBody(t, "/workers", a, fmt.Sprintf(`<a class="mono" href="/jobs/%d">#%d</a>`, j.ID, j.ID))
	}
	// The other worker runs none of them.
	row := a.body[strings.Index(a.body, "&lt;script&gt;alert"):]
	row = row[:strings.Index(row, "</tr>")]
	if strings.Contains(row, `class="in-flight"`) {
		t.Fatalf("a worker that claimed nothing lists in-flight jobs: %s", row)
	}
}
