package ui_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/robfig/cron/v3"
	"github.com/rs/zerolog"

	"github.com/queuehq/queue/app"
	"github.com/queuehq/queue/internal/openapitest"
	"github.com/queuehq/queue/memory"
	"github.com/queuehq/queue/sqlite"
	"github.com/queuehq/queue/ui"
)

// uiEnv is a real HTTP server over ui.New with a store full of jobs, for
// the page tests and the browser tests.
type uiEnv struct {
	t     testing.TB
	URL   string
	svc   *app.Service
	clock *app.FakeClock
	sched *app.Scheduler
	ids   seeded
}

// seeded names the jobs seedUI made, for tests to act on.
type seeded struct {
	Queued     int64 // queued in "emails", payload with HTML in it
	Processing int64 // claimed in "reports"
	Done       int64
	Scheduled  int64
	Dead       []int64 // in the DLQ, queue "billing"
	DeadOther  int64   // in the DLQ, queue "webhooks", permanent failure
}

// uiConfig is the config of the test servers: a tuned queue and two periodic jobs.
func uiConfig(t testing.TB) *app.Config {
	cfg := app.DefaultConfig()
	cfg.Queues["emails"] = app.QueueConfig{Concurrency: 20, Rate: 50, MaxQueued: 100000, MaxAttempts: 8}
	cfg.Queues["billing"] = app.QueueConfig{MaxAttempts: 3, Timeout: app.Duration(2 * time.Minute)}
	for _, p := range []app.PeriodicConfig{
		{Name: "nightly-report", Cron: "0 3 * * *", Queue: "reports", Kind: "report.nightly"},
		{Name: "sync-invoices", Cron: "*/15 * * * *", Queue: "billing", Kind: "invoice.sync", CatchUp: "one"},
	} {
		s, err := cron.ParseStandard(p.Cron)
		if err != nil {
			t.Fatal(err)
		}
		p.Schedule, p.PayloadJSON = s, json.RawMessage(`{}`)
		cfg.Periodic = append(cfg.Periodic, p)
	}
	return cfg
}

// newUIEnv starts a server over a fresh store (SQLite when withSQLite)
// filled by seedUI. The fake clock starts an hour ago so the throughput
// chart has an hour of history, and ends at the wall clock.
func newUIEnv(t testing.TB, opts ui.Options, withSQLite bool) *uiEnv {
	t.Helper()
	bus := app.NewBus()
	clock := app.NewFakeClock(time.Now().UTC().Add(-61 * time.Minute).Truncate(time.Millisecond))
	sopts := app.StoreOptions{Clock: clock, Bus: bus}
	var store app.Store = memory.New(sopts)
	if withSQLite {
		s, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "q.db"), sqlite.Options{StoreOptions: sopts, Sync: "normal"})
		if err != nil {
			t.Fatal(err)
		}
		store = s
	}
	t.Cleanup(func() { store.Close() })
	svc := app.NewService(store, uiConfig(t), clock, bus, zerolog.Nop())
	sched := &app.Scheduler{Service: svc}
	if err := sched.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	env := &uiEnv{t: t, svc: svc, clock: clock, sched: sched}
	env.ids = seedUI(t, svc, clock, sched)
	opts.Service, opts.Scheduler = svc, sched
	if opts.Now == nil {
		// The pages' now is the store's: the seed leaves the fake clock a
		// few seconds ahead of the wall clock, and a job submitted just
		// after it showed as scheduled on a page that read the wall clock.
		opts.Now = clock.Now
	}
	opts.Log = zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel)
	if opts.Version == "" {
		opts.Version = "v0.0.0-test"
	}
	srv := httptest.NewServer(openapitest.Handler(t, ui.New(opts)))
	t.Cleanup(srv.Close)
	env.URL = srv.URL
	return env
}

func mustSubmit(t testing.TB, svc *app.Service, ins ...app.SubmitInput) []*app.Job {
	t.Helper()
	res, err := svc.Submit(t.Context(), ins)
	if err != nil {
		t.Fatalf("Submit: %v", err)
	}
	out := make([]*app.Job, len(res))
	for i, r := range res {
		out[i] = r.Job
	}
	return out
}

func mustClaim(t testing.TB, svc *app.Service, queue string, n int, kinds ...string) []*app.Job {
	t.Helper()
	jobs, err := svc.Claim(t.Context(), queue, app.ClaimInput{WorkerID: "worker-1", Limit: n, Kinds: kinds})
	if err != nil {
		t.Fatalf("Claim(%q, %d): %v", queue, n, err)
	}
	return jobs
}

func ptr[T any](v T) *T { return &v }

// seedUI fills the store through the service as workers would: an hour of
// throughput, then jobs in every state and a few dead letters.
func seedUI(t testing.TB, svc *app.Service, clock *app.FakeClock, sched *app.Scheduler) seeded {
	t.Helper()
	ctx := t.Context()
	var ids seeded
	kinds := map[string][]string{"emails": {"email.welcome", "email.digest"}, "reports": {"report.build"}, "webhooks": {"webhook.deliver"}}
	for m := 0; m < 60; m++ {
		for q, ks := range kinds {
			n := 2 + (m*7+len(q))%9
			var ins []app.SubmitInput
			for i := range n {
				ins = append(ins, app.SubmitInput{Queue: q, Kind: ks[i%len(ks)], Tags: []string{"seed"},
					Payload: json.RawMessage(fmt.Sprintf(`{"minute":%d,"n":%d}`, m, i))})
			}
			mustSubmit(t, svc, ins...)
			for i, j := range mustClaim(t, svc, q, n) {
				if (m+i)%11 == 3 {
					if _, err := svc.Fail(ctx, j.ID, app.FailInput{Lease: j.Lease, Error: "connection reset by peer", RetryIn: ptr(app.Duration(time.Hour))}); err != nil {
						t.Fatal(err)
					}
					continue
				}
				if err := svc.Complete(ctx, j.ID, j.Lease, json.RawMessage(`{"ok":true}`)); err != nil {
					t.Fatal(err)
				}
			}
		}
		clock.Advance(time.Minute)
		if _, err := sched.Due(ctx); err != nil {
			t.Fatal(err)
		}
	}
	clock.Set(time.Now().UTC())

	payload := json.RawMessage(`{"to":"ada@example.com","subject":"<script>alert('x')</script>","html":"<b>Hello</b> & welcome","lines":[1,2,3]}`)
	q := mustSubmit(t, svc,
		app.SubmitInput{Queue: "emails", Kind: "email.welcome", Payload: payload, Tags: []string{"welcome", "vip"}, Priority: ptr(-5)},
		app.SubmitInput{Queue: "emails", Kind: "email.digest", Payload: json.RawMessage(`{"user":42}`)},
		app.SubmitInput{Queue: "emails", Kind: "email.digest", Payload: json.RawMessage(`{"user":43}`), Delay: ptr(app.Duration(2 * time.Hour))},
		app.SubmitInput{Queue: "reports", Kind: "report.build", Payload: json.RawMessage(`{"report":"weekly"}`)},
	)
	ids.Queued, ids.Scheduled = q[0].ID, q[2].ID
	ids.Processing = mustClaim(t, svc, "reports", 1, "report.build")[0].ID

	// Dead letters: billing jobs whose attempts run out, one permanent failure in webhooks.
	big := map[string]any{"invoice": 991, "lines": make([]map[string]any, 60)}
	for i := range big["lines"].([]map[string]any) {
		big["lines"].([]map[string]any)[i] = map[string]any{"sku": fmt.Sprintf("SKU-%03d", i), "qty": i % 4, "price_cents": 1999}
	}
	bigJSON, _ := json.Marshal(big)
	var billing []app.SubmitInput
	for i := range 4 {
		p := json.RawMessage(fmt.Sprintf(`{"invoice":%d}`, 1000+i))
		if i == 0 {
			p = bigJSON
		}
		billing = append(billing, app.SubmitInput{Queue: "billing", Kind: "invoice.charge", Payload: p, MaxAttempts: ptr(2), Tags: []string{"stripe"}})
	}
	mustSubmit(t, svc, billing...)
	for attempt := 1; attempt <= 2; attempt++ {
		clock.Advance(time.Second) // the retry's run_at comes due
		for _, j := range mustClaim(t, svc, "billing", 4, "invoice.charge") {
			res, err := svc.Fail(ctx, j.ID, app.FailInput{Lease: j.Lease, Error: fmt.Sprintf("card_declined: the card was declined (attempt %d)\nstripe: request req_%d", attempt, j.ID), RetryIn: ptr(app.Duration(0))})
			if err != nil {
				t.Fatal(err)
			}
			if res.Outcome == app.OutcomeDeadLettered {
				ids.Dead = append(ids.Dead, j.ID)
			}
		}
	}
	if len(ids.Dead) != 4 {
		t.Fatalf("seed: %d billing jobs dead-lettered, want 4", len(ids.Dead))
	}
	w := mustSubmit(t, svc, app.SubmitInput{Queue: "webhooks", Kind: "webhook.deliver", Payload: json.RawMessage(`{"url":"https://hooks.example.com/x"}`)})
	j := mustClaim(t, svc, "webhooks", 100, "webhook.deliver")
	for _, c := range j {
		if c.ID == w[0].ID {
			if _, err := svc.Fail(ctx, c.ID, app.FailInput{Lease: c.Lease, Error: "410 Gone: the endpoint was removed", Retry: ptr(false)}); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := svc.Complete(ctx, c.ID, c.Lease, nil); err != nil {
			t.Fatal(err)
		}
	}
	ids.DeadOther = w[0].ID

	d := mustSubmit(t, svc, app.SubmitInput{Queue: "reports", Kind: "report.build", Payload: json.RawMessage(`{"report":"daily"}`)})
	for _, c := range mustClaim(t, svc, "reports", 10, "report.build") {
		if err := svc.Complete(ctx, c.ID, c.Lease, json.RawMessage(`{"rows":1234,"url":"s3://reports/daily.csv"}`)); err != nil {
			t.Fatal(err)
		}
	}
	ids.Done = d[0].ID
	c := mustSubmit(t, svc, app.SubmitInput{Queue: "webhooks", Kind: "webhook.deliver", Payload: json.RawMessage(`{}`)})
	if _, err := svc.Cancel(ctx, c[0].ID, nil, "local"); err != nil {
		t.Fatal(err)
	}
	if err := svc.SetPaused(ctx, "reports", true, "local"); err != nil {
		t.Fatal(err)
	}
	return ids
}

// uiClient is a browser without JavaScript: it keeps cookies, follows no
// redirects by itself, and sends the CSRF token of the last page it read.
type uiClient struct {
	t       testing.TB
	base    string
	c       *http.Client
	csrf    string
	session string // the queue_session cookie (Secure, so the jar keeps it off plain HTTP)
}

func newUIClient(t testing.TB, base string) *uiClient {
	jar, _ := cookiejar.New(nil)
	return &uiClient{t: t, base: base, c: &http.Client{Jar: jar, Timeout: 10 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

// uiAnswer is a page answer.
type uiAnswer struct {
	status int
	header http.Header
	body   string
}

var csrfRE = regexp.MustCompile(`name="_csrf" value="([^"]+)"`)

func (u *uiClient) do(method, path string, form url.Values, header map[string]string) uiAnswer {
	u.t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, u.base+path, body)
	if err != nil {
		u.t.Fatal(err)
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	if u.session != "" {
		req.AddCookie(&http.Cookie{Name: "queue_session", Value: u.session})
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := u.c.Do(req)
	if err != nil {
		u.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	a := uiAnswer{status: resp.StatusCode, header: resp.Header, body: string(b)}
	if m := csrfRE.FindStringSubmatch(a.body); m != nil {
		u.csrf = m[1]
	}
	return a
}

func (u *uiClient) get(path string) uiAnswer { return u.do(http.MethodGet, path, nil, nil) }

// post sends a form with the CSRF token of the last page read.
func (u *uiClient) post(path string, form url.Values) uiAnswer {
	u.t.Helper()
	if form == nil {
		form = url.Values{}
	}
	if u.csrf != "" && form.Get("_csrf") == "" {
		form.Set("_csrf", u.csrf)
	}
	return u.do(http.MethodPost, path, form, nil)
}

// follow reads the page a 303 points to.
func (u *uiClient) follow(a uiAnswer) uiAnswer {
	u.t.Helper()
	if a.status != http.StatusSeeOther {
		u.t.Fatalf("answer %d, want 303: %.400s", a.status, a.body)
	}
	return u.get(a.header.Get("Location"))
}

func regexpMust(s string) *regexp.Regexp { return regexp.MustCompile(s) }

// login posts the login form (after a page gave the CSRF token) and keeps
// the session cookie it sets.
func (u *uiClient) login(token string) {
	u.t.Helper()
	a := u.post("/login", url.Values{"token": {token}})
	if a.status != http.StatusSeeOther {
		u.t.Fatalf("login: %d %.300s", a.status, a.body)
	}
	for _, c := range (&http.Response{Header: a.header}).Cookies() {
		if c.Name == "queue_session" {
			u.session = c.Value
		}
	}
}
