package ui_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/queuehq/queue/app"
	"github.com/queuehq/queue/ui"
)

func wantStatus(t *testing.T, what string, a uiAnswer, want int) {
	t.Helper()
	if a.status != want {
		t.Fatalf("%s: status %d, want %d: %.600s", what, a.status, want, a.body)
	}
}

func wantBody(t *testing.T, what string, a uiAnswer, subs ...string) {
	t.Helper()
	for _, s := range subs {
		if !strings.Contains(a.body, s) {
			t.Errorf("%s: page lacks %q", what, s)
		}
	}
}

func TestPagesRender(t *testing.T) {
	for _, store := range []string{"memory", "sqlite"} {
		t.Run(store, func(t *testing.T) {
			env := newUIEnv(t, ui.Options{}, store == "sqlite")
			u := newUIClient(t, env.URL)
			for _, tc := range []struct {
				path string
				want []string
			}{
				{"/", []string{"<h1>Dashboard</h1>", "<svg class=\"chart\"", "class=\"bar\"", ">emails</a>", "Dead letter"}},
				{"/?queue=emails", []string{`aria-current="true">emails</a>`}},
				{"/jobs", []string{"<h1>Jobs</h1>", "email.welcome", `rel="next"`}},
				{"/jobs?queue=emails&status=scheduled", []string{fmt.Sprintf(`href="/jobs/%d"`, env.ids.Scheduled), "badge-scheduled"}},
				{"/jobs?status=dead_letter", []string{fmt.Sprintf(`href="/jobs/%d"`, env.ids.Dead[0])}},
				{"/jobs?order=asc", []string{"Oldest first</option>", "Created ▲"}},
				{fmt.Sprintf("/jobs/%d", env.ids.Queued), []string{"Cancel…", fmt.Sprintf(`href="/jobs/confirm?back=%%2Fjobs%%2F%d&amp;id=%d&amp;op=cancel"`, env.ids.Queued, env.ids.Queued), "Timeline", "job.submitted", "vip"}},
				{fmt.Sprintf("/jobs/%d", env.ids.Done), []string{"s3://reports/daily.csv", "job.succeeded"}},
				{fmt.Sprintf("/jobs/%d", env.ids.Dead[0]), []string{"Dead letter", "max_attempts", "Replay now", "card_declined", "<details class=\"fold\">"}},
				{"/dlq", []string{"<h1>Dead letters</h1>", "<b>5</b> rows match", `name="id"`, "Purge all…"}},
				{"/dlq?reason=permanent_failure", []string{"<b>1</b> row matches", "410 Gone"}},
				{fmt.Sprintf("/dlq/%d", env.ids.DeadOther), []string{"permanent_failure", "Replay later or with changes", `type="datetime-local"`, `name="payload_patch"`}},
				{"/queues", []string{"<h1>Queues</h1>", "badge-paused", "Resume", "nightly-report", "*/15 * * * *", "concurrency 20"}},
			} {
				a := u.get(tc.path)
				wantStatus(t, "GET "+tc.path, a, http.StatusOK)
				if ct := a.header.Get("Content-Type"); !strings.HasPrefix(ct, "text/html") {
					t.Errorf("GET %s: Content-Type %q", tc.path, ct)
				}
				csp := a.header.Get("Content-Security-Policy")
				if !strings.Contains(csp, "frame-ancestors 'none'") || strings.Contains(csp, "unsafe-inline") {
					t.Errorf("GET %s: Content-Security-Policy %q", tc.path, csp)
				}
				if a.header.Get("X-Content-Type-Options") != "nosniff" {
					t.Errorf("GET %s: no nosniff", tc.path)
				}
				if strings.Contains(a.body, "<script>") || strings.Contains(a.body, " style=") || strings.Contains(a.body, "<style") {
					t.Errorf("GET %s: inline script or style", tc.path)
				}
				if !strings.Contains(a.header.Get("Server-Timing"), "app;") {
					t.Errorf("GET %s: no Server-Timing", tc.path)
				}
				wantBody(t, "GET "+tc.path, a, tc.want...)
			}
		})
	}
}

func TestPagesEscape(t *testing.T) {
	env := newUIEnv(t, ui.Options{}, false)
	u := newUIClient(t, env.URL)
	a := u.get(fmt.Sprintf("/jobs/%d", env.ids.Queued))
	wantStatus(t, "job page", a, http.StatusOK)
	if strings.Contains(a.body, "<script>alert") || strings.Contains(a.body, "<b>Hello</b>") {
		t.Fatalf("payload reached the page unescaped")
	}
	wantBody(t, "job page", a, "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;", "&lt;b&gt;Hello&lt;/b&gt; &amp; welcome")
	// Filter values are echoed into the form, escaped.
	a = u.get("/jobs?kind=" + url.QueryEscape(`"><script>x</script>`))
	wantStatus(t, "bad kind", a, http.StatusBadRequest)
	if strings.Contains(a.body, "<script>x") {
		t.Fatalf("filter value reached the page unescaped")
	}
	wantBody(t, "bad kind", a, "flash-error")
}

func TestPagesStatic(t *testing.T) {
	env := newUIEnv(t, ui.Options{}, false)
	u := newUIClient(t, env.URL)
	for path, ct := range map[string]string{"/static/app.css": "text/css", "/static/app.js": "text/javascript", "/static/favicon.svg": "image/svg+xml"} {
		a := u.get(path)
		wantStatus(t, path, a, http.StatusOK)
		if !strings.HasPrefix(a.header.Get("Content-Type"), ct) {
			t.Errorf("%s: Content-Type %q, want %s", path, a.header.Get("Content-Type"), ct)
		}
	}
	a := u.get("/static/nope.css")
	wantStatus(t, "missing static file", a, http.StatusNotFound)
}

func TestPagesErrorsAreHTML(t *testing.T) {
	env := newUIEnv(t, ui.Options{}, false)
	u := newUIClient(t, env.URL)
	for path, want := range map[string]int{"/jobs/99999999": 404, "/dlq/99999999": 404, "/nope": 404, "/jobs/abc": 400} {
		a := u.get(path)
		wantStatus(t, path, a, want)
		if !strings.HasPrefix(a.header.Get("Content-Type"), "text/html") || !strings.Contains(a.body, "<h1>") {
			t.Errorf("%s: not an HTML error page: %s %.200s", path, a.header.Get("Content-Type"), a.body)
		}
		if a.header.Get("Content-Security-Policy") == "" {
			t.Errorf("%s: no Content-Security-Policy", path)
		}
	}
	// The API keeps answering JSON.
	a := u.get("/api/jobs/99999999")
	if !strings.HasPrefix(a.header.Get("Content-Type"), "application/json") {
		t.Errorf("API error: Content-Type %q", a.header.Get("Content-Type"))
	}
}

func TestPagesCSRF(t *testing.T) {
	env := newUIEnv(t, ui.Options{}, false)
	id := env.ids.Queued
	path := fmt.Sprintf("/jobs/%d/cancel", id)
	u := newUIClient(t, env.URL)
	u.get(fmt.Sprintf("/jobs/%d", id))
	if u.csrf == "" {
		t.Fatal("the job page has no CSRF token")
	}
	for name, send := range map[string]func() uiAnswer{
		"no token": func() uiAnswer { return u.do(http.MethodPost, path, url.Values{}, nil) },
		"wrong token": func() uiAnswer {
			return u.do(http.MethodPost, path, url.Values{"_csrf": {"x" + u.csrf}}, nil)
		},
		"token without cookie": func() uiAnswer {
			return newUIClient(t, env.URL).do(http.MethodPost, path, url.Values{"_csrf": {u.csrf}}, nil)
		},
		"cross-site with token": func() uiAnswer {
			return u.do(http.MethodPost, path, url.Values{"_csrf": {u.csrf}}, map[string]string{"Sec-Fetch-Site": "cross-site", "Origin": "https://evil.example"})
		},
		"foreign origin with token": func() uiAnswer {
			return u.do(http.MethodPost, path, url.Values{"_csrf": {u.csrf}}, map[string]string{"Origin": "https://evil.example"})
		},
		"cross-site, no token": func() uiAnswer {
			return newUIClient(t, env.URL).do(http.MethodPost, path, url.Values{}, map[string]string{"Sec-Fetch-Site": "cross-site"})
		},
	} {
		a := send()
		wantStatus(t, name, a, http.StatusForbidden)
		if !strings.HasPrefix(a.header.Get("Content-Type"), "text/html") {
			t.Errorf("%s: refusal is not HTML", name)
		}
	}
	if j, _ := env.svc.Get(t.Context(), id, 0, false); j.Status != app.StatusQueued {
		t.Fatalf("after refused posts the job is %s, want queued", j.Status)
	}
	// Same origin with the token (as a browser sends it): done.
	a := u.do(http.MethodPost, path, url.Values{"_csrf": {u.csrf}}, map[string]string{"Sec-Fetch-Site": "same-origin", "Origin": "null"})
	wantStatus(t, "same-origin cancel", a, http.StatusSeeOther)
	a = u.follow(a)
	wantBody(t, "after cancel", a, "cancelled.", "badge-cancelled")
	if j, _ := env.svc.Get(t.Context(), id, 0, false); j.Status != app.StatusCancelled {
		t.Fatalf("after cancel the job is %s", j.Status)
	}
	// Cancelling again is a message, not an error page.
	a = u.follow(u.post(path, nil))
	wantBody(t, "second cancel", a, "flash-error")
}

func TestPagesCancelProcessing(t *testing.T) {
	env := newUIEnv(t, ui.Options{}, false)
	u := newUIClient(t, env.URL)
	u.get("/queues") // a CSRF token: the job page has no form of its own now (its cancel goes through the confirm page)
	a := u.follow(u.post(fmt.Sprintf("/jobs/%d/cancel", env.ids.Processing), nil))
	wantBody(t, "cancel processing", a, "Cancel requested", "cancel requested")
	j, _ := env.svc.Get(t.Context(), env.ids.Processing, 0, false)
	if j.Status != app.StatusProcessing || !j.CancelRequested {
		t.Fatalf("job %s cancel_requested=%v, want processing with a cancel request", j.Status, j.CancelRequested)
	}
}

func TestPagesDLQ(t *testing.T) {
	env := newUIEnv(t, ui.Options{}, false)
	ctx := t.Context()
	u := newUIClient(t, env.URL)

	// Replay one from its page, later.
	id := env.ids.Dead[1]
	u.get(fmt.Sprintf("/dlq/%d", id))
	a := u.follow(u.post(fmt.Sprintf("/dlq/%d/replay", id), url.Values{"when": {"later"}, "delay": {"2h"}}))
	wantBody(t, "replay later", a, "replayed as job", "to run at")
	d, err := env.svc.GetDead(ctx, id)
	if err != nil || d.ResurrectionCount != 1 {
		t.Fatalf("after replay: %+v, %v; want resurrection_count 1", d, err)
	}
	page, _ := env.svc.List(ctx, app.ListInput{Queue: "billing", Status: "scheduled"})
	if len(page.Jobs) != 1 || *page.Jobs[0].ReplayedFrom != id {
		t.Fatalf("scheduled billing jobs after replay: %d, want the replay of %d", len(page.Jobs), id)
	}
	a = u.follow(u.post(fmt.Sprintf("/dlq/%d/replay", id), url.Values{"when": {"later"}}))
	wantBody(t, "replay later without a time", a, "flash-error", "give a delay")

	// Purge two selected rows: the confirm page counts them, the post purges.
	a = u.get(fmt.Sprintf("/dlq/confirm?op=purge&id=%d&id=%d&queue=billing", env.ids.Dead[2], env.ids.Dead[3]))
	wantStatus(t, "confirm", a, http.StatusOK)
	wantBody(t, "confirm", a, "Purge 2 selected dead-letter jobs?", "Purge 2 jobs")
	if n, _ := env.svc.Store.CountDead(ctx, app.DeadFilter{}); n != 5 {
		t.Fatalf("the confirm page changed something: %d rows, want 5", n)
	}
	a = u.follow(u.post("/dlq/bulk", url.Values{"op": {"purge"}, "id": {fmt.Sprint(env.ids.Dead[2]), fmt.Sprint(env.ids.Dead[3])}, "queue": {"billing"}}))
	wantBody(t, "after purge", a, "Purged 2 dead-letter jobs.")
	if n, _ := env.svc.Store.CountDead(ctx, app.DeadFilter{}); n != 3 {
		t.Fatalf("after purging 2 of 5: %d rows", n)
	}

	// Nothing selected: sent back with a message.
	a = u.follow(u.get("/dlq/confirm?op=purge"))
	wantBody(t, "nothing selected", a, "Select at least one row")

	// Replay all matching a filter, then purge everything.
	a = u.get("/dlq/confirm?op=replay_all&reason=permanent_failure")
	wantBody(t, "confirm replay all", a, "Replay all 1 matching dead-letter job?", "reason = permanent_failure")
	a = u.follow(u.post("/dlq/bulk", url.Values{"op": {"replay_all"}, "reason": {"permanent_failure"}}))
	wantBody(t, "after replay all", a, "Replayed 1 dead-letter job as new queued jobs.")
	a = u.get("/dlq/confirm?op=purge_all")
	wantBody(t, "confirm purge all", a, "Purge all 3 matching dead-letter jobs?", "every row of the dead-letter queue")
	a = u.follow(u.post("/dlq/bulk", url.Values{"op": {"purge_all"}}))
	wantBody(t, "after purge all", a, "Purged 3 dead-letter jobs.", "The dead-letter queue is empty.")
	if n, _ := env.svc.Store.CountDead(ctx, app.DeadFilter{}); n != 0 {
		t.Fatalf("after purge all: %d rows", n)
	}
	audit, _ := env.svc.Audit(ctx, app.AuditFilter{})
	var actions []string
	for _, e := range audit {
		actions = append(actions, e.Action)
	}
	if got := strings.Join(actions, " "); !strings.Contains(got, "dlq.purge") || !strings.Contains(got, "dlq.replay") {
		t.Fatalf("audit: %s", got)
	}
}

func TestPagesQueues(t *testing.T) {
	env := newUIEnv(t, ui.Options{}, false)
	ctx := t.Context()
	u := newUIClient(t, env.URL)
	u.get("/queues")
	a := u.follow(u.post("/queues/pause", url.Values{"queue": {"emails"}}))
	wantBody(t, "pause", a, "Queue emails paused")
	paused := func(name string) bool {
		qs, _ := env.svc.Queues(ctx)
		for _, q := range qs {
			if q.Name == name {
				return q.Paused
			}
		}
		t.Fatalf("no queue %s", name)
		return false
	}
	if !paused("emails") {
		t.Fatal("emails is not paused")
	}
	a = u.follow(u.post("/queues/resume", url.Values{"queue": {"reports"}}))
	wantBody(t, "resume", a, "Queue reports resumed")
	if paused("reports") {
		t.Fatal("reports is still paused")
	}
	a = u.follow(u.post("/queues/pause", url.Values{"queue": {"no/such"}}))
	wantBody(t, "bad queue", a, "flash-error")

	// Drain asks first, then cancels the queued jobs.
	a = u.get("/queues/drain?queue=emails")
	wantStatus(t, "drain confirm", a, http.StatusOK)
	wantBody(t, "drain confirm", a, "Drain queue emails")
	n, _ := env.svc.Store.CountJobs(ctx, app.JobFilter{Queue: "emails", StatusIn: []app.Status{app.StatusQueued}})
	if n == 0 {
		t.Fatal("emails has no queued jobs to drain")
	}
	a = u.follow(u.post("/queues/drain", url.Values{"queue": {"emails"}}))
	// n counts the scheduled jobs too (the store's status is queued for both): the flash says so.
	wantBody(t, "drain", a, fmt.Sprintf("Queue emails drained: %s cancelled (queued or scheduled).", plural(n)))
	if n, _ := env.svc.Store.CountJobs(ctx, app.JobFilter{Queue: "emails", StatusIn: []app.Status{app.StatusQueued}}); n != 0 {
		t.Fatalf("after drain: %d queued", n)
	}
}

func plural(n int) string {
	if n == 1 {
		return "1 waiting job"
	}
	return fmt.Sprintf("%s waiting jobs", thousands(int64(n)))
}

func TestPagesPagination(t *testing.T) {
	env := newUIEnv(t, ui.Options{}, false)
	u := newUIClient(t, env.URL)
	seen := map[string]bool{}
	path := "/jobs?queue=emails&limit=100"
	pages := 0
	for path != "" && pages < 100 {
		a := u.get(path)
		wantStatus(t, path, a, http.StatusOK)
		for _, m := range jobLinkRE.FindAllStringSubmatch(a.body, -1) {
			if seen[m[1]] {
				t.Fatalf("job %s on two pages", m[1])
			}
			seen[m[1]] = true
		}
		path = ""
		if m := nextRE.FindStringSubmatch(a.body); m != nil {
			path = strings.ReplaceAll(m[1], "&amp;", "&")
		}
		pages++
	}
	n, _ := env.svc.Store.CountJobs(t.Context(), app.JobFilter{Queue: "emails"})
	if len(seen) != n || pages < 2 {
		t.Fatalf("paged through %d jobs in %d pages, want %d in 2 or more", len(seen), pages, n)
	}
}

var (
	jobLinkRE = regexpMust(`<a class="strong mono" href="/jobs/(\d+)">`)
	nextRE    = regexpMust(`<a class="btn btn-sm" href="([^"]+)" rel="next">`)
)

func TestPagesLogin(t *testing.T) {
	env := newUIEnv(t, ui.Options{Tokens: []ui.Token{{Name: "ops", Secret: "s3cret-token"}}}, false)
	u := newUIClient(t, env.URL)
	a := u.get("/jobs?queue=emails")
	// Without a session every page is a 401 whose body is the login form,
	// which leads back to the page asked for.
	wantStatus(t, "page without session", a, http.StatusUnauthorized)
	wantBody(t, "page without session", a, `type="password" name="token"`)
	wantBody(t, "page without session", a, `name="next" value="/jobs?queue=emails"`)
	a = u.get("/login?next=" + url.QueryEscape("/jobs?queue=emails"))
	wantStatus(t, "login page", a, http.StatusOK)
	wantBody(t, "login page", a, `type="password" name="token"`)
	if strings.Contains(a.body, `href="/jobs"`) {
		t.Error("the login page shows the navigation")
	}
	// A static file is public (the login page needs its CSS).
	wantStatus(t, "static", u.get("/static/app.css"), http.StatusOK)

	a = u.post("/login", url.Values{"token": {"wrong"}, "next": {"/jobs"}})
	wantStatus(t, "bad token", a, http.StatusUnauthorized)
	wantBody(t, "bad token", a, "not valid")
	if strings.Contains(a.header.Get("Set-Cookie"), "queue_session=wrong") {
		t.Fatal("a wrong token was stored")
	}
	// A post without the CSRF token is refused even on the login form.
	wantStatus(t, "login without csrf", u.do(http.MethodPost, "/login", url.Values{"token": {"s3cret-token"}}, nil), http.StatusForbidden)

	a = u.post("/login", url.Values{"token": {"s3cret-token"}, "next": {"/jobs?queue=emails"}})
	wantStatus(t, "login", a, http.StatusSeeOther)
	if loc := a.header.Get("Location"); loc != "/jobs?queue=emails" {
		t.Fatalf("after login: redirect to %q", loc)
	}
	var session, csrf *http.Cookie
	for _, c := range (&http.Response{Header: a.header}).Cookies() {
		switch c.Name {
		case "queue_session":
			session = c
		case "queue_csrf":
			csrf = c
		}
	}
	if session == nil || !session.HttpOnly || !session.Secure || session.SameSite != http.SameSiteStrictMode {
		t.Fatalf("session cookie %+v, want HttpOnly, Secure, SameSite=Strict", session)
	}
	// The cookie is a session, not the token; the CSRF token is renewed at login.
	if strings.Contains(session.Value, "s3cret-token") {
		t.Fatalf("the session cookie holds the token: %q", session.Value)
	}
	if csrf == nil || csrf.Value == "" || csrf.Value == u.csrf {
		t.Fatalf("login did not renew the CSRF cookie: %+v (form token %q)", csrf, u.csrf)
	}
	u.session = session.Value
	a = u.get("/jobs?queue=emails")
	wantStatus(t, "page with session", a, http.StatusOK)
	wantBody(t, "page with session", a, ">ops</span>", "Log out")

	// Actions are audited under the token's name.
	u.get(fmt.Sprintf("/jobs/%d", env.ids.Queued))
	u.follow(u.post(fmt.Sprintf("/jobs/%d/cancel", env.ids.Queued), nil))
	audit, _ := env.svc.Audit(t.Context(), app.AuditFilter{Action: "job.cancel"})
	if len(audit) == 0 || audit[0].Actor != "ops" {
		t.Fatalf("audit of the cancel: %+v, want actor ops", audit)
	}

	// An open redirect is not followed.
	a = u.post("/login", url.Values{"token": {"s3cret-token"}, "next": {"//evil.example/x"}})
	if loc := a.header.Get("Location"); loc != "/" {
		t.Fatalf("next=//evil.example: redirect to %q", loc)
	}

	u.get("/") // the login renewed the CSRF token: forms of pages before it are stale
	a = u.post("/logout", nil)
	wantStatus(t, "logout", a, http.StatusSeeOther)
	if sc := strings.Join(a.header.Values("Set-Cookie"), "\n"); !strings.Contains(sc, "queue_session=;") {
		t.Fatalf("logout does not clear the session: %q", sc)
	}
	// The old cookie is revoked, not merely cleared in this browser.
	wantStatus(t, "old session after logout", u.get("/"), http.StatusUnauthorized)
	u.session = ""
	wantStatus(t, "after logout", u.get("/"), http.StatusUnauthorized)
	// Without a session a page POST is refused, and the page says to log in.
	a = u.post("/queues/pause", url.Values{"queue": {"emails"}})
	wantStatus(t, "post without session", a, http.StatusUnauthorized)
	wantBody(t, "post without session", a, `href="/login"`)
}

func TestPagesHeadAndPlainHTTPWarning(t *testing.T) {
	env := newUIEnv(t, ui.Options{Tokens: []ui.Token{{Name: "ops", Secret: "s3cret-token"}},
		AllowedHosts: []string{"queue.example.com", "10.0.0.5"}}, false)
	for host, warn := range map[string]bool{"": false, "localhost:8080": false, "queue.example.com:8080": true, "10.0.0.5": true} {
		req, _ := http.NewRequest(http.MethodGet, env.URL+"/login", nil)
		if host != "" {
			req.Host = host
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		_, _ = io.Copy(&b, resp.Body)
		resp.Body.Close()
		if got := strings.Contains(b.String(), "flash-warn"); got != warn {
			t.Errorf("login page for Host %q: plain-HTTP warning %v, want %v", host, got, warn)
		}
	}
	u := newUIClient(t, env.URL)
	u.get("/login")
	u.login("s3cret-token")
	a := u.do(http.MethodHead, "/", nil, nil)
	wantStatus(t, "HEAD /", a, http.StatusOK)
	if a.body != "" || a.header.Get("Content-Security-Policy") == "" {
		t.Errorf("HEAD /: body %d bytes, CSP %q", len(a.body), a.header.Get("Content-Security-Policy"))
	}
}

// retryingJobs makes n jobs of queue that failed once and wait out a
// backoff: queued, attempts 1, run_at in the future (the ith one after
// backoffs[i]).
func retryingJobs(t *testing.T, env *uiEnv, queue string, backoffs ...time.Duration) []int64 {
	t.Helper()
	var ids []int64
	for _, b := range backoffs {
		j := mustSubmit(t, env.svc, app.SubmitInput{Queue: queue, Kind: "flaky.call", Payload: json.RawMessage(`{}`)})[0]
		c := mustClaim(t, env.svc, queue, 1)
		if len(c) != 1 || c[0].ID != j.ID {
			t.Fatalf("claim in %s: %v, want job %d", queue, c, j.ID)
		}
		if _, err := env.svc.Fail(t.Context(), j.ID, app.FailInput{Lease: c[0].Lease, Error: "timeout", RetryIn: ptr(app.Duration(b))}); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, j.ID)
	}
	return ids
}

var (
	bulkFormRE = regexp.MustCompile(`(?s)<form method="post" action="/jobs/bulk">(.*?)</form>`)
	hiddenRE   = regexp.MustCompile(`<input type="hidden" name="([^"]+)" value="([^"]*)">`)
	// timeRE is one time of the "time" template: its absolute text and relative part.
	timeRE    = regexp.MustCompile(`<time datetime="([^"]+)" data-abs>([^<]*)</time> <span class="rel" data-rel>\(([^)<]*)\)</span>`)
	anyTimeRE = regexp.MustCompile(`<time\b[^>]*>([^<]*)</time>`)
	absRE     = regexp.MustCompile(`^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2} UTC$`)
)

// tableBody is the rows of a page's (first) table.
func tableBody(page string) string {
	_, rest, _ := strings.Cut(page, "<tbody>")
	rows, _, _ := strings.Cut(rest, "</tbody>")
	return rows
}

// confirmForm is what the confirm page's button sends: its hidden fields.
func confirmForm(t *testing.T, a uiAnswer) url.Values {
	t.Helper()
	m := bulkFormRE.FindStringSubmatch(a.body)
	if m == nil {
		t.Fatalf("no confirm form on the page: %.600s", a.body)
	}
	form := url.Values{}
	for _, f := range hiddenRE.FindAllStringSubmatch(m[1], -1) {
		form.Add(html.UnescapeString(f[1]), html.UnescapeString(f[2]))
	}
	return form
}

// actionLink is the href of the job page's action link labelled label.
func actionLink(t *testing.T, a uiAnswer, label string) string {
	t.Helper()
	m := regexp.MustCompile(`<a class="btn [^"]*" href="([^"]+)">` + regexp.QuoteMeta(label) + `</a>`).FindStringSubmatch(a.body)
	if m == nil {
		t.Fatalf("the page has no action %q", label)
	}
	return html.UnescapeString(m[1])
}

func jobOf(t *testing.T, env *uiEnv, id int64) *app.Job {
	t.Helper()
	j, err := env.svc.Get(t.Context(), id, 0, false)
	if err != nil {
		t.Fatalf("job %d: %v", id, err)
	}
	return j
}

// Issue 28, done-when 1 without JavaScript: three failed-and-retrying jobs
// ticked on the jobs list, "Retry now", a confirm page that says 3, and the
// three (only they) are due at once and claimable.
func TestPagesRetryNowTicked(t *testing.T) {
	env := newUIEnv(t, ui.Options{}, false)
	u := newUIClient(t, env.URL)
	ids := retryingJobs(t, env, "flaky", 2*time.Hour, 3*time.Hour, 4*time.Hour)
	other := retryingJobs(t, env, "flaky", 30*time.Minute)[0] // retrying too, not ticked

	list := "/jobs?queue=flaky&status=retrying"
	a := u.get(list)
	wantStatus(t, "retrying view", a, http.StatusOK)
	wantBody(t, "retrying view", a, "retrying (after a failed attempt)</option>", `value="retrying" selected`, "badge-retrying",
		"<b>4</b> jobs match", "soonest first", `aria-sort="ascending"`, "data-needs-selection", `name="back" value="/jobs?queue=flaky&amp;status=retrying"`)
	var order []string
	for _, m := range jobLinkRE.FindAllStringSubmatch(a.body, -1) {
		order = append(order, m[1])
	}
	if want := []string{fmt.Sprint(other), fmt.Sprint(ids[0]), fmt.Sprint(ids[1]), fmt.Sprint(ids[2])}; strings.Join(order, " ") != strings.Join(want, " ") {
		t.Errorf("retrying view lists %v, want run order (soonest first) %v", order, want)
	}

	q := url.Values{"op": {"retry"}, "back": {list}}
	for _, id := range ids {
		q.Add("id", fmt.Sprint(id))
	}
	a = u.get("/jobs/confirm?" + q.Encode())
	wantStatus(t, "confirm", a, http.StatusOK)
	wantBody(t, "confirm", a, "<h1>Retry now 3 jobs?</h1>", ">Retry now 3 jobs</button>", "<b>3</b> counted here", "3 selected jobs")
	if n := strings.Count(a.body, `<td><a class="mono" href="/jobs/`); n != 3 {
		t.Errorf("confirm sample: %d rows, want 3", n)
	}
	for _, id := range ids {
		if !jobOf(t, env, id).RunAt.After(env.clock.Now()) {
			t.Fatalf("the confirm page moved job %d already", id)
		}
	}
	form := confirmForm(t, a)
	if got := form["id"]; len(got) != 3 || form.Get("bound") == "" || form.Get("op") != "retry" {
		t.Fatalf("confirm form %v: want the 3 ids, op retry and the bound", form)
	}
	a = u.post("/jobs/bulk", form)
	wantStatus(t, "retry now", a, http.StatusSeeOther)
	if loc := a.header.Get("Location"); loc != list {
		t.Errorf("after retry now: to %q, want back to %q", loc, list)
	}
	wantBody(t, "after retry now", u.follow(a), "Retried 3 jobs.")
	now := env.clock.Now()
	for _, id := range ids {
		if j := jobOf(t, env, id); j.Status != app.StatusQueued || j.RunAt.After(now) {
			t.Errorf("job %d after retry now: %s, run_at %s (now %s), want queued and due", id, j.Status, j.RunAt, now)
		}
	}
	if j := jobOf(t, env, other); !j.RunAt.After(now) {
		t.Errorf("job %d, not ticked, was retried too", other)
	}
	var claimed []int64
	for _, j := range mustClaim(t, env.svc, "flaky", 10) {
		claimed = append(claimed, j.ID)
	}
	slices.Sort(claimed)
	if !slices.Equal(claimed, ids) {
		t.Errorf("claimable after retry now: %v, want %v", claimed, ids)
	}
	audit, _ := env.svc.Audit(t.Context(), app.AuditFilter{Action: "jobs.retry"})
	if len(audit) != 1 || audit[0].Count != 3 {
		t.Errorf("audit: %+v, want one jobs.retry of 3", audit)
	}
}

// Each job action from the job page, as plain forms with the CSRF token:
// only the actions that apply are offered; each goes through the confirm
// page and back to the job (to the list after a delete).
func TestPagesJobActions(t *testing.T) {
	env := newUIEnv(t, ui.Options{}, false)
	u := newUIClient(t, env.URL)
	retrying := retryingJobs(t, env, "flaky", time.Hour)[0]
	page := func(id int64) uiAnswer {
		t.Helper()
		a := u.get(fmt.Sprintf("/jobs/%d", id))
		wantStatus(t, fmt.Sprintf("job %d", id), a, http.StatusOK)
		return a
	}
	labels := []string{"Retry now…", "Run now…", "Cancel…", "Request cancel…", "Delete…"}
	for id, want := range map[int64][]string{
		env.ids.Queued:     {"Cancel…"},
		env.ids.Scheduled:  {"Run now…", "Cancel…"},
		retrying:           {"Retry now…", "Cancel…"},
		env.ids.Processing: {"Request cancel…"},
		env.ids.Done:       {"Delete…"},
		env.ids.Dead[0]:    nil,
	} {
		a := page(id)
		for _, l := range labels {
			if got := strings.Contains(a.body, `">`+l+`</a>`); got != slices.Contains(want, l) {
				t.Errorf("job %d (%s): action %q shown %v, want %v", id, jobOf(t, env, id).Status, l, got, !got)
			}
		}
	}
	act := func(id int64, label, heading, flashText, wantBack string) {
		t.Helper()
		a := u.get(actionLink(t, page(id), label))
		wantStatus(t, label+" confirm", a, http.StatusOK)
		wantBody(t, label+" confirm", a, "<h1>"+heading+"</h1>")
		a = u.post("/jobs/bulk", confirmForm(t, a))
		wantStatus(t, label, a, http.StatusSeeOther)
		if loc := a.header.Get("Location"); loc != wantBack {
			t.Errorf("%s: to %q, want %q", label, loc, wantBack)
		}
		wantBody(t, label, u.follow(a), flashText)
	}

	s := env.ids.Scheduled
	act(s, "Run now…", fmt.Sprintf("Run now job #%d?", s), fmt.Sprintf("Job #%d is due now: a worker may claim it.", s), fmt.Sprintf("/jobs/%d", s))
	if j := jobOf(t, env, s); j.Status != app.StatusQueued || j.RunAt.After(env.clock.Now()) {
		t.Errorf("after run now: %s at %s, want queued and due", j.Status, j.RunAt)
	}
	act(retrying, "Retry now…", fmt.Sprintf("Retry now job #%d?", retrying), fmt.Sprintf("Job #%d is due now", retrying), fmt.Sprintf("/jobs/%d", retrying))
	if j := jobOf(t, env, retrying); j.RunAt.After(env.clock.Now()) {
		t.Errorf("after retry now: run_at %s", j.RunAt)
	}

	q := env.ids.Queued
	act(q, "Cancel…", fmt.Sprintf("Cancel job #%d?", q), fmt.Sprintf("Job #%d cancelled.", q), fmt.Sprintf("/jobs/%d", q))
	if j := jobOf(t, env, q); j.Status != app.StatusCancelled {
		t.Errorf("after cancel: %s", j.Status)
	}
	p := env.ids.Processing
	act(p, "Request cancel…", fmt.Sprintf("Cancel job #%d?", p), "Cancel requested", fmt.Sprintf("/jobs/%d", p))
	if j := jobOf(t, env, p); j.Status != app.StatusProcessing || !j.CancelRequested {
		t.Errorf("after cancel of a processing job: %s, cancel_requested %v", j.Status, j.CancelRequested)
	}

	d := env.ids.Done
	act(d, "Delete…", fmt.Sprintf("Delete job #%d?", d), fmt.Sprintf("Job #%d deleted.", d), "/jobs")
	if _, err := env.svc.Get(t.Context(), d, 0, false); !errors.Is(err, app.ErrNotFound) {
		t.Errorf("after delete: Get = %v, want not found", err)
	}
	// The cancelled job may go too.
	act(q, "Delete…", fmt.Sprintf("Delete job #%d?", q), fmt.Sprintf("Job #%d deleted.", q), "/jobs")
}

// Bad input to the jobs' confirm page and its form: a message on the page
// it came from, never an error page.
func TestPagesJobActionsBadInput(t *testing.T) {
	env := newUIEnv(t, ui.Options{}, false)
	u := newUIClient(t, env.URL)
	u.get("/jobs")
	for _, tc := range []struct{ path, back, want string }{
		{"/jobs/confirm?op=retry", "/jobs", "Tick at least one job"},
		{"/jobs/confirm?op=retry&back=" + url.QueryEscape("/jobs?status=retrying"), "/jobs?status=retrying", "Tick at least one job"},
		{"/jobs/confirm?op=retry&status=retrying", "/jobs?status=retrying", "Tick at least one job"}, // a status only narrows
		{fmt.Sprintf("/jobs/confirm?op=nope&id=%d", env.ids.Queued), "/jobs", "Pick an action"},
		{fmt.Sprintf("/jobs/confirm?id=%d", env.ids.Queued), "/jobs", "Pick an action"},
		{fmt.Sprintf("/jobs/confirm?op=delete&id=%d&back=/jobs/%d", env.ids.Queued, env.ids.Queued), fmt.Sprintf("/jobs/%d", env.ids.Queued),
			fmt.Sprintf("Delete does not apply to job #%d, which is queued: it acts on finished jobs (done or cancelled).", env.ids.Queued)},
		{fmt.Sprintf("/jobs/confirm?op=retry&id=%d", env.ids.Done), "/jobs", fmt.Sprintf("Retry now does not apply to job #%d, which is done", env.ids.Done)},
		{fmt.Sprintf("/jobs/confirm?op=run&id=%d", env.ids.Queued), "/jobs", fmt.Sprintf("Run now does not apply to job #%d, which is queued", env.ids.Queued)},
		{fmt.Sprintf("/jobs/confirm?op=cancel&id=%d&id=%d", env.ids.Done, env.ids.Dead[0]), "/jobs", "Cancel applies to none of the 2 selected jobs"},
		{"/jobs/confirm?op=cancel&id=99999999", "/jobs", "Job #99999999 does not exist"},
		{"/jobs/confirm?op=cancel&id=abc", "/jobs", "not a job id"},
		{fmt.Sprintf("/jobs/confirm?op=cancel&id=%d&back=//evil.example/x", env.ids.Done), "/jobs", "does not apply"},
		{fmt.Sprintf("/jobs/confirm?op=cancel&id=%d&back=/queues", env.ids.Done), "/jobs", "does not apply"},
		{"/jobs/confirm?op=cancel&kind=email.*", "/jobs?kind=email.%2A", "a whole kind, not a prefix"},
	} {
		a := u.get(tc.path)
		wantStatus(t, tc.path, a, http.StatusSeeOther)
		if loc := a.header.Get("Location"); loc != tc.back {
			t.Errorf("%s: back to %q, want %q", tc.path, loc, tc.back)
		}
		b := u.follow(a)
		wantStatus(t, tc.path+" (followed)", b, http.StatusOK)
		wantBody(t, tc.path, b, "flash-error", html.EscapeString(tc.want))
	}
	for _, tc := range []struct {
		form url.Values
		want string
	}{
		{url.Values{"op": {"retry"}}, "Tick at least one job"},
		{url.Values{"op": {"bogus"}, "id": {fmt.Sprint(env.ids.Queued)}}, "Pick an action"},
		{url.Values{"op": {"delete"}, "id": {fmt.Sprint(env.ids.Queued)}}, "Nothing changed: Delete does not apply to job"},
		{url.Values{"op": {"cancel"}, "id": {"0"}}, "not a job id"},
		{url.Values{"op": {"prioritize"}, "id": {fmt.Sprint(env.ids.Queued)}, "priority": {"high"}}, "whole number"},
	} {
		a := u.post("/jobs/bulk", tc.form)
		wantStatus(t, fmt.Sprint(tc.form), a, http.StatusSeeOther)
		wantBody(t, fmt.Sprint(tc.form), u.follow(a), "flash-error", html.EscapeString(tc.want))
	}
	if j := jobOf(t, env, env.ids.Queued); j.Status != app.StatusQueued {
		t.Fatalf("after refused actions the queued job is %s", j.Status)
	}
	// The action's form without the CSRF token is refused.
	a := u.do(http.MethodPost, "/jobs/bulk", url.Values{"op": {"cancel"}, "id": {fmt.Sprint(env.ids.Queued)}}, nil)
	wantStatus(t, "bulk without CSRF", a, http.StatusForbidden)
	if j := jobOf(t, env, env.ids.Queued); j.Status != app.StatusQueued {
		t.Fatalf("a post without the token cancelled the job")
	}
}

// The jobs list: a total, suggestions, kind prefixes, run order, the
// live region and "Go to job #".
func TestPagesJobsList(t *testing.T) {
	env := newUIEnv(t, ui.Options{}, false)
	u := newUIClient(t, env.URL)
	a := u.get("/jobs?queue=emails")
	wantStatus(t, "jobs", a, http.StatusOK)
	n, _ := env.svc.Store.CountJobs(t.Context(), app.JobFilter{Queue: "emails"})
	wantBody(t, "jobs", a, fmt.Sprintf("<b>%s</b> jobs match", thousands(int64(n))), `data-refresh="5"`, `<div data-live id="jobs-list">`,
		`<datalist id="kind-suggestions"><option value="email.digest"></option><option value="email.welcome"></option>`,
		`<option value="seed"></option>`, `list="kind-suggestions"`, `list="tag-suggestions"`, `action="/jobs/go"`,
		`placeholder="any kind; email.* for a prefix"`, `<button class="btn btn-sm btn-danger-ghost" type="submit" name="op" value="delete" data-needs-selection>Delete…</button>`,
		`<a class="btn btn-sm btn-danger-ghost" href="/jobs/confirm?op=delete&amp;queue=emails">Delete…</a>`)

	a = u.get("/jobs?kind=" + url.QueryEscape("email.*") + "&limit=20")
	wantStatus(t, "kind prefix", a, http.StatusOK)
	wantBody(t, "kind prefix", a, `name="kind" value="email.*"`, "email.welcome", "email.digest", "not a prefix", "kind=email.%2A")
	rows := tableBody(a.body)
	if !strings.Contains(rows, "email.welcome") || !strings.Contains(rows, "email.digest") {
		t.Error("kind email.* lacks email.welcome or email.digest rows")
	}
	for _, other := range []string{"report.build", "webhook.deliver", "invoice.charge"} {
		if strings.Contains(rows, other) {
			t.Errorf("kind email.* lists %s", other)
		}
	}
	if strings.Contains(a.body, "Act on every live job") {
		t.Error("a kind prefix offers the bulk actions on the filter (they take a whole kind)")
	}

	a = u.get("/jobs?kind=" + url.QueryEscape("bad kind*"))
	wantStatus(t, "bad kind prefix", a, http.StatusBadRequest)
	wantBody(t, "bad kind prefix", a, "flash-error", "kind prefix &#34;bad kind&#34; must be", `name="kind" value="bad kind*"`)

	a = u.get("/jobs?status=scheduled&limit=1000")
	wantBody(t, "scheduled view", a, "soonest first", `aria-sort="ascending"`, "badge-scheduled")
	if strings.Contains(a.body, `name="order"`) {
		t.Error("the scheduled view offers the id order")
	}

	for _, tc := range []struct{ id, to, flash string }{
		{fmt.Sprint(env.ids.Queued), fmt.Sprintf("/jobs/%d", env.ids.Queued), ""},
		{fmt.Sprintf(" #%d ", env.ids.Done), fmt.Sprintf("/jobs/%d", env.ids.Done), ""},
		{fmt.Sprint(env.ids.Dead[0]), fmt.Sprintf("/dlq/%d", env.ids.Dead[0]), ""},
		{"abc", "/jobs", `&#34;abc&#34; is not a job id`},
		{"-4", "/jobs", "is not a job id"},
		{"", "/jobs", "Type a job id"},
		{"99999999", "/jobs", "There is no job #99999999"},
	} {
		a := u.get("/jobs/go?id=" + url.QueryEscape(tc.id))
		wantStatus(t, "go to "+tc.id, a, http.StatusSeeOther)
		if loc := a.header.Get("Location"); loc != tc.to {
			t.Errorf("go to %q: to %q, want %q", tc.id, loc, tc.to)
		}
		if tc.flash != "" {
			wantBody(t, "go to "+tc.id, u.follow(a), "flash-error", tc.flash)
		}
	}
}

// The job page: live regions (the job's events only), every time absolute
// as text beside a rounded relative one, the log's times in UTC, and a
// result's JSON shown as its payload is (html/template escapes it).
func TestPagesJobPage(t *testing.T) {
	env := newUIEnv(t, ui.Options{}, false)
	u := newUIClient(t, env.URL)
	id := env.ids.Queued
	a := u.get(fmt.Sprintf("/jobs/%d", id))
	wantBody(t, "job page", a, `data-refresh="5"`, fmt.Sprintf(`<div class="page-head" data-live id="job-head" data-events="/api/events?job=%d">`, id),
		`data-live id="job-details"`, `data-live id="job-result"`, `data-live id="job-errors"`, `data-live id="job-timeline"`)
	if strings.Count(a.body, "data-events=") != 1 {
		t.Error("the job page names its event stream more than once")
	}

	// Every time, on a job's page and a dead letter's, is absolute text.
	s := mustSubmit(t, env.svc, app.SubmitInput{Queue: "later", Kind: "k", Delay: ptr(app.Duration(time.Hour + 58*time.Minute + 20*time.Second))})[0]
	for _, path := range []string{fmt.Sprintf("/jobs/%d", s.ID), fmt.Sprintf("/jobs/%d", env.ids.Dead[0]), fmt.Sprintf("/dlq/%d", env.ids.Dead[0]), fmt.Sprintf("/jobs/%d", env.ids.Done)} {
		a := u.get(path)
		wantStatus(t, path, a, http.StatusOK)
		all, full := anyTimeRE.FindAllStringSubmatch(a.body, -1), timeRE.FindAllStringSubmatch(a.body, -1)
		if len(all) < 4 || len(full) != len(all) {
			t.Errorf("%s: %d <time> elements, %d of them with their relative part", path, len(all), len(full))
		}
		for _, m := range full {
			at, err := time.Parse(time.RFC3339Nano, m[1])
			if err != nil || !absRE.MatchString(m[2]) || m[2] != at.UTC().Format("2006-01-02 15:04:05 UTC") {
				t.Errorf("%s: <time datetime=%q> says %q, want the UTC date-time", path, m[1], m[2])
			}
		}
		if strings.Contains(a.body, "<time") && strings.Contains(a.body, `<time datetime="`) && strings.Contains(a.body, "title=\"20") {
			t.Errorf("%s: a time is still in a tooltip", path)
		}
	}
	a = u.get(fmt.Sprintf("/jobs/%d", s.ID))
	wantBody(t, "scheduled job", a, "(in 1 h 58 min)</span>", "Scheduled: the job runs at "+s.RunAt.UTC().Format("2006-01-02 15:04:05 UTC"))

	// A result with HTML in it reads as the payload does.
	mustSubmit(t, env.svc, app.SubmitInput{Queue: "esc", Kind: "html", Payload: json.RawMessage(`{"html":"<b>bold</b> & <script>x()</script>"}`)})
	c := mustClaim(t, env.svc, "esc", 1)[0]
	// As a Go worker sends it: json.Marshal writes <, > and & as \u003c, \u003e, \u0026.
	result := `{"html":"\u003cb\u003ebold\u003c/b\u003e \u0026 \u003cscript\u003ex()\u003c/script\u003e","path":"C:\\u003cdir"}`
	if err := env.svc.Complete(t.Context(), c.ID, c.Lease, json.RawMessage(result)); err != nil {
		t.Fatal(err)
	}
	a = u.get(fmt.Sprintf("/jobs/%d", c.ID))
	text := `&#34;html&#34;: &#34;&lt;b&gt;bold&lt;/b&gt; &amp; &lt;script&gt;x()&lt;/script&gt;&#34;`
	if n := strings.Count(a.body, text); n != 2 {
		t.Errorf("the hostile string reads as text %d times, want twice (payload and result)", n)
	}
	if strings.Contains(a.body, `\u003c`+"b") || strings.Contains(a.body, "<b>bold") || strings.Contains(a.body, "<script>x") {
		t.Error("the result shows escapes, or raw markup reached the page")
	}
	wantBody(t, "result", a, `C:\\u003cdir`) // an escaped backslash stays text
}

// The log's times say UTC, with the date.
func TestPagesJobLogTimes(t *testing.T) {
	env := newUIEnv(t, ui.Options{}, false)
	u := newUIClient(t, env.URL)
	mustSubmit(t, env.svc, app.SubmitInput{Queue: "logq", Kind: "k"})
	c := mustClaim(t, env.svc, "logq", 1)[0]
	if _, err := env.svc.AppendLog(t.Context(), c.ID, c.Lease, app.LogInput{Line: ptr("hello")}); err != nil {
		t.Fatal(err)
	}
	a := u.get(fmt.Sprintf("/jobs/%d", c.ID))
	wantBody(t, "log", a, fmt.Sprintf("Time (UTC, %s)", env.clock.Now().UTC().Format("2006-01-02")), "hello",
		`<td class="nowrap mono log-at">`+env.clock.Now().UTC().Format("15:04:05"))
}
