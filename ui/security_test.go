package ui_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/queuehq/queue/app"
	"github.com/queuehq/queue/internal/openapitest"
	"github.com/queuehq/queue/memory"
	"github.com/queuehq/queue/ui"
)

// snapshot is what a refused request must leave as it was: counts per
// status and queue, the DLQ, paused queues, the audit trail, and the
// cancel flag of the processing job.
func snapshot(t *testing.T, env *uiEnv) string {
	t.Helper()
	ctx := t.Context()
	st, err := env.svc.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	qs, err := env.svc.Queues(ctx)
	if err != nil {
		t.Fatal(err)
	}
	audit, err := env.svc.Audit(ctx, app.AuditFilter{Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	p, err := env.svc.Get(ctx, env.ids.Processing, 0, false)
	if err != nil {
		t.Fatal(err)
	}
	st.At = time.Time{}
	for i := range st.Queues {
		st.Queues[i].OldestQueuedAge = 0
	}
	st.Total.OldestQueuedAge = 0
	b, _ := json.Marshal([]any{st, qs, len(audit), p.CancelRequested, p.Status})
	return string(b)
}

// routePath fills a route's parameters with things that exist in env, so
// a request that got through would change something.
func routePath(env *uiEnv, path string) string {
	id := env.ids.Queued
	if strings.HasPrefix(path, "/dlq/") || strings.HasPrefix(path, "/api/dlq/") {
		id = env.ids.Dead[0]
	}
	return strings.NewReplacer(":id", strconv.FormatInt(id, 10), ":queue", "emails", ":key", "k").Replace(path)
}

// Every state-changing route, read from the router, refuses what a page
// of another site can make a browser send: a cross-site Origin or
// Sec-Fetch-Site, a same-site page on another port, Origin "null" on the
// API, a body that is not JSON on the API (a form, text/plain, or no type
// at all), a page form that is not URL-encoded, and a Host the server does
// not answer to (DNS rebinding). This holds on the default setup, without
// tokens. Nothing changes in the store; curl's way (JSON, no Origin) works.
func TestCrossSiteRequestsChangeNothing(t *testing.T) {
	env := newUIEnv(t, ui.Options{}, false)
	u := newUIClient(t, env.URL)
	u.get("/queues")
	if u.csrf == "" {
		t.Fatal("no CSRF token on /queues")
	}
	before := snapshot(t, env)
	type attempt struct {
		name   string
		ctype  string
		body   string
		header map[string]string
		want   []int
	}
	host := strings.TrimPrefix(env.URL, "http://")
	routes := 0
	for _, r := range ui.Routes(ui.New(ui.Options{Service: env.svc})) {
		switch r.Method {
		case http.MethodGet, http.MethodHead, "echo_route_not_found":
			continue
		}
		routes++
		api := strings.HasPrefix(r.Path, "/api/")
		ctype, body := "application/json", `{"allow_all":true,"queue":"emails","worker_id":"w","kind":"x"}`
		if !api {
			ctype, body = "application/x-www-form-urlencoded", url.Values{"_csrf": {u.csrf}, "queue": {"emails"}, "op": {"purge_all"}, "confirm": {"yes"}}.Encode()
		}
		attempts := []attempt{
			{"cross-site Origin", ctype, body, map[string]string{"Origin": "https://evil.example"}, []int{403}},
			{"Sec-Fetch-Site cross-site", ctype, body, map[string]string{"Sec-Fetch-Site": "cross-site"}, []int{403}},
			{"same-site page on another port", ctype, body, map[string]string{"Sec-Fetch-Site": "same-site", "Origin": "http://127.0.0.1:1"}, []int{403}},
			{"other port, no Sec-Fetch-Site", ctype, body, map[string]string{"Origin": "http://localhost:9"}, []int{403}},
			{"foreign Host", ctype, body, map[string]string{"Host": "rebind.attacker.example:" + strings.Split(host, ":")[1]}, []int{421}},
		}
		if api {
			attempts = append(attempts,
				attempt{"Origin null", ctype, body, map[string]string{"Origin": "null"}, []int{403}},
				attempt{"form type, empty body", "application/x-www-form-urlencoded", "", nil, []int{415}},
				attempt{"form body", "application/x-www-form-urlencoded", "allow_all=true", nil, []int{415}},
				attempt{"text/plain JSON", "text/plain;charset=UTF-8", body, nil, []int{415}},
				attempt{"no type with a JSON body", "", body, nil, []int{415}},
				attempt{"multipart", "multipart/form-data; boundary=x", "--x--", nil, []int{415}},
			)
		} else {
			attempts = append(attempts,
				attempt{"JSON to a page", "application/json", `{"queue":"emails"}`, nil, []int{415}},
				attempt{"multipart to a page", "multipart/form-data; boundary=x", "--x\r\nContent-Disposition: form-data; name=\"queue\"\r\n\r\nemails\r\n--x--\r\n", nil, []int{415}},
			)
		}
		for _, a := range attempts {
			hdr := map[string]string{}
			for k, v := range a.header {
				hdr[k] = v
			}
			if a.ctype != "" {
				hdr["Content-Type"] = a.ctype
			}
			got := u.raw(r.Method, routePath(env, r.Path), a.body, hdr)
			ok := false
			for _, w := range a.want {
				ok = ok || got.status == w
			}
			if !ok {
				t.Errorf("%s %s, %s: %d, want %v: %.200s", r.Method, r.Path, a.name, got.status, a.want, got.body)
			}
		}
	}
	if routes < 20 {
		t.Fatalf("only %d state-changing routes", routes)
	}
	// A GET under a foreign Host is refused too: rebinding would let the page read it.
	if a := u.raw("GET", "/api/stats", "", map[string]string{"Host": "rebind.attacker.example"}); a.status != http.StatusMisdirectedRequest {
		t.Errorf("GET /api/stats with a foreign Host: %d", a.status)
	}
	if after := snapshot(t, env); after != before {
		t.Fatalf("refused requests changed the store:\nbefore %s\nafter  %s", before, after)
	}
	// What curl, the CLI and the Go package send still works.
	if a := u.raw("POST", "/api/jobs", `{"queue":"emails","kind":"ok"}`, map[string]string{"Content-Type": "application/json"}); a.status != http.StatusCreated {
		t.Fatalf("curl-style submit: %d %s", a.status, a.body)
	}
	if a := u.raw("POST", "/api/queues/emails/pause", "", nil); a.status != http.StatusOK {
		t.Fatalf("curl-style pause without a body: %d %s", a.status, a.body)
	}
	// And the pages' own forms (Origin null under Referrer-Policy: no-referrer).
	a := u.raw("POST", "/queues/resume", url.Values{"_csrf": {u.csrf}, "queue": {"emails"}}.Encode(),
		map[string]string{"Content-Type": "application/x-www-form-urlencoded", "Origin": "null", "Sec-Fetch-Site": "same-origin"})
	if a.status != http.StatusSeeOther {
		t.Fatalf("the page's own form: %d %.300s", a.status, a.body)
	}
}

// raw sends a request with the client's cookies and the given headers
// ("Host" sets the Host header).
func (u *uiClient) raw(method, path, body string, header map[string]string) uiAnswer {
	u.t.Helper()
	req, err := http.NewRequest(method, u.base+path, strings.NewReader(body))
	if err != nil {
		u.t.Fatal(err)
	}
	if body == "" {
		req.Body, req.ContentLength = http.NoBody, 0
	}
	for k, v := range header {
		if k == "Host" {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	if u.session != "" {
		req.AddCookie(&http.Cookie{Name: "queue_session", Value: u.session})
	}
	resp, err := u.c.Do(req)
	if err != nil {
		u.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return uiAnswer{status: resp.StatusCode, header: resp.Header, body: string(b)}
}

// Every page form is CSRF-guarded: each non-API POST route from the router
// is refused (403) without the form's token, with tokens and without, and
// nothing changes.
func TestEveryPagePostNeedsTheCSRFToken(t *testing.T) {
	for _, tokens := range [][]ui.Token{nil, {{Name: "ops", Secret: testToken}}} {
		env := newUIEnv(t, ui.Options{Tokens: tokens}, false)
		u := newUIClient(t, env.URL)
		u.get("/login")
		if tokens != nil {
			u.login(testToken)
		}
		u.get("/queues") // the CSRF cookie is set; the form token is not sent below
		before := snapshot(t, env)
		n := 0
		for _, r := range ui.Routes(ui.New(ui.Options{Service: env.svc})) {
			if r.Method != http.MethodPost || strings.HasPrefix(r.Path, "/api/") {
				continue
			}
			n++
			form := url.Values{"queue": {"emails"}, "op": {"purge_all"}, "confirm": {"yes"}, "token": {testToken}, "when": {"now"}}
			for _, f := range []url.Values{form, {"_csrf": {"forged"}, "queue": {"emails"}}} {
				a := u.raw("POST", routePath(env, r.Path), f.Encode(), map[string]string{"Content-Type": "application/x-www-form-urlencoded"})
				if a.status != http.StatusForbidden {
					t.Errorf("tokens=%v: POST %s without the CSRF token: %d, want 403", tokens != nil, r.Path, a.status)
				}
			}
		}
		if n < 8 {
			t.Fatalf("only %d page POST routes", n)
		}
		if after := snapshot(t, env); after != before {
			t.Fatalf("refused page posts changed the store:\nbefore %s\nafter  %s", before, after)
		}
	}
}

// Each role reaches what it should and gets 403 naming the missing role
// elsewhere; a queue list limits a token to its queues; the audit trail
// names the token.
func TestTokenRolesAndQueues(t *testing.T) {
	tokens := []ui.Token{
		{Name: "viewer", Secret: "read-token-0123456789", Role: ui.RoleRead},
		{Name: "producer", Secret: "submit-token-0123456789", Role: ui.RoleSubmit},
		{Name: "worker-a", Secret: "work-token-a-0123456789", Role: ui.RoleWork, Queues: []string{"a"}},
		{Name: "boss", Secret: "admin-token-0123456789", Role: ui.RoleAdmin},
	}
	s := newServer(t, ui.Options{Tokens: tokens}, false)
	as := func(tok string) []string { return []string{"Authorization", "Bearer " + tok} }
	viewer, producer, workerA, boss := as(tokens[0].Secret), as(tokens[1].Secret), as(tokens[2].Secret), as(tokens[3].Secret)
	call := func(who []string, method, path, body string) answer {
		t.Helper()
		ct := "application/json"
		if body == "" {
			ct = ""
		}
		return s.do(method, path, ct, strings.NewReader(body), who...)
	}
	want := func(what string, a answer, status int) {
		t.Helper()
		if a.status != status {
			t.Fatalf("%s: %d, want %d: %s", what, a.status, status, a.body)
		}
		if status == http.StatusForbidden {
			if c := a.code(t); c != "forbidden" {
				t.Fatalf("%s: code %q, want forbidden", what, c)
			}
		}
	}
	// Jobs in a and b, one of b dead-lettered.
	for _, q := range []string{"a", "b", "b"} {
		want("admin submits to "+q, call(boss, "POST", "/api/jobs", `{"queue":"`+q+`","kind":"k","max_attempts":1}`), 201)
	}
	cl := call(boss, "POST", "/api/queues/b/claim", `{"limit":1}`).json(t)["jobs"].([]any)[0].(map[string]any)
	want("admin fails a job of b", call(boss, "POST", fmt.Sprintf("/api/jobs/%d/fail", num(cl, "id")), fmt.Sprintf(`{"lease":%d,"error":"x","retry":false}`, num(cl, "lease"))), 200)
	deadID := num(cl, "id")

	// read: lists and stats, nothing else.
	want("read lists jobs", call(viewer, "GET", "/api/jobs", ""), 200)
	want("read gets stats", call(viewer, "GET", "/api/stats", ""), 200)
	want("read lists the DLQ", call(viewer, "GET", "/api/dlq", ""), 200)
	for _, c := range []struct{ method, path, body string }{
		{"POST", "/api/jobs", `{"queue":"a","kind":"k"}`},
		{"POST", "/api/jobs/batch", `{"jobs":[{"queue":"a","kind":"k"}]}`},
		{"POST", "/api/queues/a/claim", `{}`},
		{"POST", fmt.Sprintf("/api/dlq/%d/replay", deadID), `{}`},
		{"DELETE", fmt.Sprintf("/api/dlq/%d", deadID), ""},
		{"POST", "/api/dlq/purge", `{"allow_all":true}`},
		{"POST", "/api/queues/a/pause", ""},
		{"POST", "/api/queues/a/drain", ""},
		{"POST", "/api/jobs/1/cancel", ""},
	} {
		a := call(viewer, c.method, c.path, c.body)
		want("read: "+c.method+" "+c.path, a, 403)
		if !strings.Contains(string(a.body), "viewer") || !strings.Contains(string(a.body), "needs role") {
			t.Fatalf("the 403 does not name the token and the missing role: %s", a.body)
		}
	}
	// submit: submits, does not claim.
	want("submit submits", call(producer, "POST", "/api/jobs", `{"queue":"a","kind":"k"}`), 201)
	want("submit claims", call(producer, "POST", "/api/queues/a/claim", `{}`), 403)
	// work, queue a only.
	got := call(workerA, "POST", "/api/queues/a/claim", `{"limit":1}`)
	want("work claims from a", got, 200)
	ja := got.json(t)["jobs"].([]any)[0].(map[string]any)
	want("work claims from b", call(workerA, "POST", "/api/queues/b/claim", `{}`), 403)
	want("work submits to b", call(workerA, "POST", "/api/jobs", `{"queue":"b","kind":"k"}`), 403)
	want("work lists b", call(workerA, "GET", "/api/jobs?queue=b", ""), 403)
	want("work reads the dead job of b", call(workerA, "GET", fmt.Sprintf("/api/dlq/%d", deadID), ""), 403)
	want("work reads the audit", call(workerA, "GET", "/api/audit", ""), 403)
	want("work pauses a", call(workerA, "POST", "/api/queues/a/pause", ""), 403)
	want("work cancels without a lease", call(workerA, "POST", fmt.Sprintf("/api/jobs/%d/cancel", num(ja, "id")), ""), 403)
	list := call(workerA, "GET", "/api/jobs", "")
	want("work lists its queue", list, 200)
	for _, j := range list.json(t)["jobs"].([]any) {
		if q := j.(map[string]any)["queue"]; q != "a" {
			t.Fatalf("a token of queue a sees a job of %v", q)
		}
	}
	st := call(workerA, "GET", "/api/stats", "").json(t)
	if qs := st["queues"].(map[string]any); len(qs) != 1 || qs["a"] == nil {
		t.Fatalf("stats for a token of queue a: %v", qs)
	}
	want("work heartbeats in a", call(workerA, "POST", fmt.Sprintf("/api/jobs/%d/heartbeat", num(ja, "id")), fmt.Sprintf(`{"lease":%d}`, num(ja, "lease"))), 200)
	want("work completes in a", call(workerA, "POST", fmt.Sprintf("/api/jobs/%d/complete", num(ja, "id")), fmt.Sprintf(`{"lease":%d}`, num(ja, "lease"))), 200)
	// A batch acknowledgement is checked too, every item, in one read.
	want("admin submits to b", call(boss, "POST", "/api/jobs", `{"queue":"b","kind":"k"}`), 201)
	jb := call(boss, "POST", "/api/queues/b/claim", `{"limit":1}`).json(t)["jobs"].([]any)[0].(map[string]any)
	want("work completes a job of b in a batch", call(workerA, "POST", "/api/jobs/complete",
		fmt.Sprintf(`{"jobs":[{"id":%d,"lease":%d}]}`, num(jb, "id"), num(jb, "lease"))), 403)
	if j, _ := s.svc.Get(t.Context(), num(jb, "id"), 0, false); j.Status != app.StatusProcessing {
		t.Fatalf("a refused batch completion moved the job of b to %s", j.Status)
	}
	want("work submits to a", call(workerA, "POST", "/api/jobs", `{"queue":"a","kind":"k"}`), 201)
	ja2 := call(workerA, "POST", "/api/queues/a/claim", `{"limit":1}`).json(t)["jobs"].([]any)[0].(map[string]any)
	want("work completes a job of a in a batch", call(workerA, "POST", "/api/jobs/complete",
		fmt.Sprintf(`{"jobs":[{"id":%d,"lease":%d}]}`, num(ja2, "id"), num(ja2, "lease"))), 200)
	// admin: everything, audited under its name.
	want("admin pauses", call(boss, "POST", "/api/queues/a/pause", ""), 200)
	want("admin replays", call(boss, "POST", fmt.Sprintf("/api/dlq/%d/replay", deadID), `{}`), 201)
	want("admin purges", call(boss, "POST", "/api/dlq/purge", `{"allow_all":true}`), 200)
	audit := string(call(boss, "GET", "/api/audit", "").body)
	for _, action := range []string{"queue.pause", "dlq.replay", "dlq.purge"} {
		if !strings.Contains(audit, `"actor":"boss"`) || !strings.Contains(audit, action) {
			t.Fatalf("audit lacks %s by boss: %s", action, audit)
		}
	}
	// Refused attempts are in the trail too, under the token that tried.
	for _, name := range []string{"viewer", "producer", "worker-a"} {
		if !strings.Contains(audit, `"actor":"`+name+`","action":"auth.denied"`) {
			t.Fatalf("audit lacks the denied attempts of %s: %s", name, audit)
		}
	}
	if strings.Contains(audit, `"actor":"local"`) {
		t.Fatalf("an action was audited as local with tokens set: %s", audit)
	}
}

// The session cookie is a signed session, not the token: it opens pages
// and reads, but a state-changing API call with it alone is refused (a
// page of this site would need the CSRF header, which only our pages can
// read); logout revokes it.
func TestSessionCookieOnTheAPI(t *testing.T) {
	env := newUIEnv(t, ui.Options{Tokens: []ui.Token{{Name: "ops", Secret: testToken}}}, false)
	u := newUIClient(t, env.URL)
	u.get("/login")
	u.login(testToken)
	if strings.Contains(u.session, testToken) {
		t.Fatal("the session cookie holds the token")
	}
	if a := u.raw("GET", "/api/stats", "", nil); a.status != 200 {
		t.Fatalf("GET with the session: %d", a.status)
	}
	before := snapshot(t, env)
	if a := u.raw("POST", "/api/queues/emails/pause", "", nil); a.status != http.StatusForbidden {
		t.Fatalf("POST with the session and no CSRF header: %d %s", a.status, a.body)
	}
	if a := u.raw("POST", "/api/queues/emails/pause", "", map[string]string{"X-CSRF-Token": "forged"}); a.status != http.StatusForbidden {
		t.Fatalf("POST with a forged CSRF header: %d", a.status)
	}
	if after := snapshot(t, env); after != before {
		t.Fatal("a refused cookie call changed the store")
	}
	var csrf string
	base, _ := url.Parse(env.URL)
	for _, c := range u.c.Jar.Cookies(base) {
		if c.Name == "queue_csrf" {
			csrf = c.Value
		}
	}
	if a := u.raw("POST", "/api/queues/emails/pause", "", map[string]string{"X-CSRF-Token": csrf}); a.status != 200 {
		t.Fatalf("POST with the session and the CSRF header: %d %s", a.status, a.body)
	}
	// A forged or tampered cookie is nothing.
	for _, v := range []string{testToken, u.session + "x", strings.Replace(u.session, "b3Bz", "b3Bx", 1)} {
		f := newUIClient(t, env.URL)
		f.session = v
		if a := f.raw("GET", "/api/stats", "", nil); a.status != http.StatusUnauthorized {
			t.Fatalf("cookie %q: %d, want 401", v, a.status)
		}
	}
	old := u.session
	u.get("/")
	if a := u.post("/logout", nil); a.status != http.StatusSeeOther {
		t.Fatalf("logout: %d", a.status)
	}
	u.session = old
	if a := u.raw("GET", "/api/stats", "", nil); a.status != http.StatusUnauthorized {
		t.Fatalf("the session after logout: %d, want 401", a.status)
	}
}

// countingBody counts what the server read of a request body.
type countingBody struct {
	io.ReadCloser
	n *atomic.Int64
}

func (c countingBody) Read(p []byte) (int, error) {
	n, err := c.ReadCloser.Read(p)
	c.n.Add(int64(n))
	return n, err
}

// zeros is an endless body of 'a's.
type zeros struct{ left int64 }

func (z *zeros) Read(p []byte) (int, error) {
	if z.left <= 0 {
		return 0, io.EOF
	}
	n := min(int64(len(p)), z.left)
	for i := range p[:n] {
		p[i] = 'a'
	}
	z.left -= n
	return int(n), nil
}

// /login is public, so its body is the first thing a stranger controls:
// a 100 MiB post is refused with 413 before 1 MiB is read, announced or
// chunked; a multipart login is refused without being parsed.
func TestLoginBodyIsCappedBeforeReading(t *testing.T) {
	store := memory.New(app.StoreOptions{})
	svc := app.NewService(store, nil, app.SystemClock{}, app.NewBus(), zerolog.Nop())
	h := openapitest.Handler(t, ui.New(ui.Options{Service: svc, Tokens: []ui.Token{{Name: "ops", Secret: testToken}}, Log: zerolog.Nop()}))
	var read atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Body = countingBody{r.Body, &read}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	for _, chunked := range []bool{false, true} {
		read.Store(0)
		req, _ := http.NewRequest("POST", srv.URL+"/login", &zeros{left: 100 << 20})
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		if !chunked {
			req.ContentLength = 100 << 20
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("chunked=%v: %v", chunked, err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusRequestEntityTooLarge {
			t.Fatalf("chunked=%v: %d, want 413", chunked, resp.StatusCode)
		}
		if n := read.Load(); n >= 1<<20 {
			t.Fatalf("chunked=%v: the server read %d bytes before refusing", chunked, n)
		}
	}
	req, _ := http.NewRequest("POST", srv.URL+"/login", strings.NewReader("--x\r\nContent-Disposition: form-data; name=\"token\"\r\n\r\n"+testToken+"\r\n--x--\r\n"))
	req.Header.Set("Content-Type", "multipart/form-data; boundary=x")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnsupportedMediaType {
		t.Fatalf("multipart login: %d, want 415", resp.StatusCode)
	}
}

// Refused credentials are counted (for /metrics) and an address that keeps
// guessing is slowed down with 429 for the rest of the minute.
func TestRefusedCredentialsAreCountedAndSlowed(t *testing.T) {
	var mu sync.Mutex
	counts := map[string]int{}
	opts := ui.Options{Tokens: []ui.Token{{Name: "ops", Secret: testToken}}, AuthFailLimit: 5,
		AuthFailed: func(reason string) { mu.Lock(); counts[reason]++; mu.Unlock() }}
	env := newUIEnv(t, opts, false)
	u := newUIClient(t, env.URL)
	u.get("/login")
	if a := u.post("/login", url.Values{"token": {"wrong-wrong-wrong-wrong"}}); a.status != http.StatusUnauthorized {
		t.Fatalf("bad login: %d", a.status)
	}
	for i := 0; i < 4; i++ {
		if a := u.raw("GET", "/api/stats", "", map[string]string{"Authorization": "Bearer nope-nope-nope-nope"}); a.status != http.StatusUnauthorized {
			t.Fatalf("guess %d: %d", i, a.status)
		}
	}
	a := u.raw("GET", "/api/stats", "", map[string]string{"Authorization": "Bearer " + testToken})
	if a.status != http.StatusTooManyRequests || a.header.Get("Retry-After") == "" {
		t.Fatalf("after 5 refused credentials: %d (Retry-After %q), want 429", a.status, a.header.Get("Retry-After"))
	}
	mu.Lock()
	defer mu.Unlock()
	if counts["login"] != 1 || counts["token"] != 4 {
		t.Fatalf("counted %v, want 1 login and 4 token", counts)
	}
}

// The client address is the direct peer unless the peer is a trusted
// proxy: a client cannot name itself in X-Forwarded-For.
func TestClientAddressIgnoresForwardedForUnlessTrusted(t *testing.T) {
	for _, trusted := range [][]string{nil, {"127.0.0.1"}} {
		s := newServer(t, ui.Options{TrustedProxies: trusted}, false)
		s.submit(`{"kind":"k"}`)
		a := s.do("POST", "/api/queues/default/claim", "application/json", strings.NewReader(`{}`), "X-Forwarded-For", "203.0.113.9")
		jobs := a.json(t)["jobs"].([]any)
		got := jobs[0].(map[string]any)["worker_id"]
		want := "http:127.0.0.1"
		if trusted != nil {
			want = "http:203.0.113.9"
		}
		if got != want {
			t.Fatalf("trusted %v: worker_id %v, want %s", trusted, got, want)
		}
	}
}

// The Host list: loopback names and addresses, the listen address, any IP
// when listening on every address, and allowed_hosts (with wildcards).
func TestHostAllowList(t *testing.T) {
	cases := []struct {
		listen  string
		allowed []string
		host    string
		ok      bool
	}{
		{"127.0.0.1:8080", nil, "127.0.0.1:8080", true},
		{"127.0.0.1:8080", nil, "localhost:8080", true},
		{"127.0.0.1:8080", nil, "app.localhost", true},
		{"127.0.0.1:8080", nil, "[::1]:8080", true},
		{"127.0.0.1:8080", nil, "rebind.attacker.example:8080", false},
		{"127.0.0.1:8080", nil, "192.0.2.7:8080", false},
		{"192.0.2.7:8080", nil, "192.0.2.7:8080", true},
		{"0.0.0.0:8080", nil, "192.0.2.7:8080", true},
		{"0.0.0.0:8080", nil, "evil.example", false},
		{"127.0.0.1:8080", []string{"queue.example.com"}, "Queue.Example.com", true},
		{"127.0.0.1:8080", []string{"*.corp.example"}, "q.corp.example:443", true},
		{"127.0.0.1:8080", []string{"*.corp.example"}, "corp.example.evil", false},
		{"127.0.0.1:8080", []string{"*"}, "anything.example", true},
	}
	svc := app.NewService(memory.New(app.StoreOptions{}), nil, app.SystemClock{}, app.NewBus(), zerolog.Nop())
	for _, c := range cases {
		h := openapitest.Handler(t, ui.New(ui.Options{Service: svc, ListenAddr: c.listen, AllowedHosts: c.allowed, Log: zerolog.Nop()}))
		req := httptest.NewRequest("GET", "/api/stats", nil)
		req.Host = c.host
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		if got := w.Code != http.StatusMisdirectedRequest; got != c.ok {
			t.Errorf("listen %s, allowed %v, Host %q: answered %d", c.listen, c.allowed, c.host, w.Code)
		}
		req = httptest.NewRequest("GET", "/healthz", nil)
		req.Host = "monitor.elsewhere.example"
		w = httptest.NewRecorder()
		if h.ServeHTTP(w, req); w.Code != 200 {
			t.Errorf("/healthz under any Host: %d", w.Code)
		}
	}
}

// A token that may not act does not see the forms of the actions, and a
// forged post of one is refused.
func TestPagesHideWhatTheTokenMayNotDo(t *testing.T) {
	tokens := []ui.Token{{Name: "viewer", Secret: "read-token-0123456789", Role: ui.RoleRead}, {Name: "boss", Secret: testToken}}
	env := newUIEnv(t, ui.Options{Tokens: tokens}, false)
	pages := []string{fmt.Sprintf("/jobs/%d", env.ids.Queued), fmt.Sprintf("/dlq/%d", env.ids.Dead[0]), "/queues", "/dlq"}
	actions := []string{"op=cancel\"", "/replay\"", "action=\"/queues/pause\"", "action=\"/queues/resume\"", "Drain…", "Purge…", "Replay all"}
	seen := func(tok string) map[string]bool {
		u := newUIClient(t, env.URL)
		u.get("/login")
		u.login(tok)
		out := map[string]bool{}
		for _, p := range pages {
			a := u.get(p)
			if a.status != 200 {
				t.Fatalf("%s: %d", p, a.status)
			}
			for _, act := range actions {
				out[act] = out[act] || strings.Contains(a.body, act)
			}
		}
		if tok != testToken {
			u.get(fmt.Sprintf("/jobs/%d", env.ids.Queued))
			if a := u.post(fmt.Sprintf("/jobs/%d/cancel", env.ids.Queued), nil); a.status != http.StatusForbidden {
				t.Fatalf("read token cancels by a forged form: %d", a.status)
			}
			if a := u.get("/queues/drain?queue=emails"); a.status != http.StatusForbidden {
				t.Fatalf("read token opens the drain confirmation: %d", a.status)
			}
		}
		return out
	}
	for act, shown := range seen("read-token-0123456789") {
		if shown {
			t.Errorf("a read token sees %q", act)
		}
	}
	for act, shown := range seen(testToken) {
		if !shown {
			t.Errorf("an admin token does not see %q", act)
		}
	}
}
