package ui_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/queuehq/queue/app"
	"github.com/queuehq/queue/internal/openapitest"
	"github.com/queuehq/queue/ui"
)

// hostileKey is a key a client may choose: every page shows it escaped.
const hostileKey = `<script>alert(1)</script>"><img src=x onerror=alert(2)>`

// escapedKey is hostileKey as html/template writes it in text.
const escapedKey = `&lt;script&gt;alert(1)&lt;/script&gt;&#34;&gt;&lt;img src=x onerror=alert(2)&gt;`

// newFlowPages serves the pages over newFlowService with keyedJobs in
// queue tenants, hostileKey among the keys.
func newFlowPages(t *testing.T) (*uiClient, *app.Service) {
	t.Helper()
	svc, _ := newFlowService(t, false)
	keyedJobs(t, svc, hostileKey)
	srv := httptest.NewServer(openapitest.Handler(t, ui.New(ui.Options{Service: svc, Log: zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel)})))
	t.Cleanup(srv.Close)
	return newUIClient(t, srv.URL), svc
}

// wantClean checks a page holds no markup from a key: no script or img
// element, no handler attribute.
func wantClean(t *testing.T, what string, a uiAnswer) {
	t.Helper()
	for _, bad := range []string{"<script>", "<img", `"><img`, "onerror=alert(2)>"} {
		if strings.Contains(a.body, bad) {
			t.Errorf("%s: the page holds %q: a key reached it unescaped", what, bad)
		}
	}
}

func TestPagesShowKeys(t *testing.T) {
	u, svc := newFlowPages(t)
	keyLink := "/jobs?" + url.Values{"queue": {"tenants"}, "key": {hostileKey}}.Encode()
	keyHref := `href="` + strings.NewReplacer("&", "&amp;", "+", "&#43;").Replace(keyLink) + `"`

	// The queues page: the key limits of each queue, how many jobs wait
	// for their key, and the way to the queue's keys.
	a := u.get("/queues")
	wantStatus(t, "queues", a, http.StatusOK)
	wantBody(t, "queues", a, "key concurrency 1", "key rate 10/1m", "fairness round robin",
		"4 waiting for their key", `href="/queues/keys?queue=tenants"`, `href="/queues/keys?queue=fair"`)
	if strings.Contains(a.body, `href="/queues/keys?queue=default"`) {
		t.Errorf("queues: a queue that limits no key and holds none back links to its keys")
	}

	// The keys page of a queue: limits, held jobs, keys at their limit,
	// the busiest keys, each linked to its jobs.
	a = u.get("/queues/keys?queue=tenants")
	wantStatus(t, "keys", a, http.StatusOK)
	wantBody(t, "keys", a, "Keys of queue", "1 job (one after another) per key", "10/1m", "4 jobs",
		"Keys at their limit <span class=\"muted\">· 3</span>", "Busiest keys <span class=\"muted\">· 4</span>",
		`href="/jobs?key=acme&amp;queue=tenants">acme</a>`, escapedKey, keyHref)
	wantClean(t, "keys", a)
	if i, j := strings.Index(a.body, ">acme</a>"), strings.Index(a.body, ">globex</a>"); i < 0 || j < 0 || i > j {
		t.Errorf("keys: acme (2 held) is not listed before globex (1 held)")
	}
	atLimit, busiest, _ := strings.Cut(a.body[strings.Index(a.body, "Keys at their limit"):], "Busiest keys")
	if strings.Contains(atLimit, ">initech</a>") || !strings.Contains(busiest, ">initech</a>") {
		t.Errorf("keys: initech (one job, none held) is at its limit, or not among the busiest")
	}
	a = u.get("/queues/keys?queue=plain")
	wantStatus(t, "keys of a queue without limits", a, http.StatusOK)
	wantBody(t, "keys of a queue without limits", a, "This queue limits no key", "No key holds jobs back", "0 jobs")
	a = u.get("/queues/keys?queue=" + url.QueryEscape(hostileKey))
	wantStatus(t, "keys of a bad queue name", a, http.StatusBadRequest)
	wantClean(t, "keys of a bad queue name", a)

	// A held job's page: its key, linked to the key's jobs, and that it
	// waits for the key.
	var held, free *app.Job
	jobs, err := svc.List(t.Context(), app.ListInput{Key: hostileKey, Asc: true})
	if err != nil || len(jobs.Jobs) != 2 {
		t.Fatalf("List by key: %v, %v", jobs, err)
	}
	free, held = jobs.Jobs[0], jobs.Jobs[1]
	if free.Held || !held.Held {
		t.Fatalf("the first job of the key is held %v, the second %v; want the second held", free.Held, held.Held)
	}
	a = u.get(fmt.Sprintf("/jobs/%d", held.ID))
	wantStatus(t, "held job", a, http.StatusOK)
	wantBody(t, "held job", a, "waiting for its key", escapedKey, keyHref, "<dt>Key</dt>")
	wantClean(t, "held job", a)
	a = u.get(fmt.Sprintf("/jobs/%d", free.ID))
	wantBody(t, "released job", a, escapedKey)
	if strings.Contains(a.body, "waiting for its key") {
		t.Errorf("released job: shown as waiting for its key")
	}

	// The jobs list filtered by key: only its jobs, the key echoed into the
	// form escaped, the held one marked; no move by queue (it would move
	// the jobs of every key).
	a = u.get(keyLink)
	wantStatus(t, "jobs by key", a, http.StatusOK)
	wantBody(t, "jobs by key", a, `name="key" value="`+escapedKey+`"`, "waiting for key", `class="flowkey"`,
		fmt.Sprintf(`href="/jobs/%d"`, held.ID), fmt.Sprintf(`href="/jobs/%d"`, free.ID), "not by key")
	wantClean(t, "jobs by key", a)
	if n := strings.Count(a.body, `<a class="strong mono" href="/jobs/`); n != 2 {
		t.Errorf("jobs by key: %d rows, want 2", n)
	}
	if strings.Contains(a.body, "/dlq/confirm") {
		t.Errorf("jobs by key: offers to move the queue's jobs to the DLQ")
	}
	a = u.get("/jobs?queue=tenants")
	wantBody(t, "jobs of tenants", a, `>acme</a>`, `href="/jobs?key=globex&amp;queue=tenants"`)
	a = u.get("/jobs?key=" + strings.Repeat("k", app.MaxKeyLength+1))
	wantStatus(t, "jobs by a key too long", a, http.StatusBadRequest)
	wantBody(t, "jobs by a key too long", a, "flash-error", "at most 255")
	// Paging keeps the key.
	a = u.get("/jobs?key=acme&limit=1")
	wantBody(t, "jobs by key, paged", a, `rel="next"`)
	if !strings.Contains(a.body, "key=acme") || !strings.Contains(a.body[strings.Index(a.body, "pager"):], "key=acme") {
		t.Errorf("jobs by key, paged: the next page drops the key")
	}
}
