package ui_test

import (
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

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
	wantBody(t, "drain", a, fmt.Sprintf("Queue emails drained: %s cancelled", plural(n)))
	if n, _ := env.svc.Store.CountJobs(ctx, app.JobFilter{Queue: "emails", StatusIn: []app.Status{app.StatusQueued}}); n != 0 {
		t.Fatalf("after drain: %d queued", n)
	}
}

func plural(n int) string {
	if n == 1 {
		return "1 queued job"
	}
	return fmt.Sprintf("%d queued jobs", n)
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
