package ui_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/queuehq/queue/app"
	"github.com/queuehq/queue/ui"
)

// row is how the audit page shows an entry's action.
func row(action string) string { return `<td class="mono">` + action + `</td>` }

// auditIDs lists the ids of the audit rows of a page, in page order.
func auditIDs(body string) []string {
	var ids []string
	for _, m := range regexp.MustCompile(`<tr id="audit-(\d+)">`).FindAllStringSubmatch(body, -1) {
		ids = append(ids, m[1])
	}
	return ids
}

// The audit page: entries newest first with their actor, action, target
// (linked), queue, count and folded details; hostile strings escaped;
// filters by action (the store's), actor, target, queue and time;
// pages that neither repeat nor skip an entry; bad input answers 400 with
// the form and a message, never 500.
func TestPagesAudit(t *testing.T) {
	env := newUIEnv(t, ui.Options{}, false)
	ctx := t.Context()
	u := newUIClient(t, env.URL)

	a := u.get("/audit")
	wantStatus(t, "empty audit", a, http.StatusOK)
	wantBody(t, "empty audit", a, "<h1>Audit trail</h1>", `data-refresh="15"`, `id="live-audit" data-live`)

	if err := env.svc.SetPaused(ctx, "emails", true, "alice"); err != nil {
		t.Fatal(err)
	}
	env.clock.Advance(time.Minute)
	t0 := env.clock.Now()
	if err := env.svc.SetPaused(ctx, "emails", false, "bob"); err != nil {
		t.Fatal(err)
	}
	if _, err := env.svc.Cancel(ctx, env.ids.Queued, nil, "alice"); err != nil {
		t.Fatal(err)
	}
	if err := env.svc.RecordDenied(ctx, `<script>alert("a")</script>`, "POST /api/queues/:queue/pause"); err != nil {
		t.Fatal(err)
	}
	if _, err := env.svc.Drain(ctx, "reports", false, "carol"); err != nil {
		t.Fatal(err)
	}

	a = u.get("/audit")
	wantStatus(t, "audit", a, http.StatusOK)
	wantBody(t, "audit", a, row("queue.pause"), row("queue.resume"), row("job.cancel"), ">alice<", ">bob<",
		fmt.Sprintf(`<a class="mono" href="/jobs/%d">job %d</a>`, env.ids.Queued, env.ids.Queued),
		`<a class="mono" href="/queues">queue emails</a>`, `<a href="/jobs?queue=emails">emails</a>`,
		`&lt;script&gt;alert(&#34;a&#34;)&lt;/script&gt;`, `<time datetime=`,
		// A bulk action names no target: its queue comes from its filter, shown folded.
		row("queue.drain"), `<a href="/jobs?queue=reports">reports</a>`, `<details class="fold"><summary><span class="mono">{&#34;queue&#34;:&#34;reports&#34;`)
	if strings.Contains(a.body, `<script>alert("a")`) {
		t.Fatal("the audit page does not escape an actor")
	}
	// Newest first.
	if i, j := strings.Index(a.body, row("queue.resume")), strings.Index(a.body, row("queue.pause")); i < 0 || j < 0 || i > j {
		t.Fatalf("resume (newer) at %d, pause at %d: not newest first", i, j)
	}

	// Filters.
	a = u.get("/audit?action=queue.pause")
	wantStatus(t, "action filter", a, http.StatusOK)
	if !strings.Contains(a.body, row("queue.pause")) || strings.Contains(a.body, row("queue.resume")) {
		t.Fatal("?action=queue.pause does not keep only pauses")
	}
	wantBody(t, "action filter", a, `<option value="queue.pause" selected>`)
	a = u.get("/audit?actor=bob")
	if !strings.Contains(a.body, row("queue.resume")) || strings.Contains(a.body, row("job.cancel")) || strings.Contains(a.body, row("queue.pause")) {
		t.Fatal("?actor=bob does not keep only bob's entries")
	}
	a = u.get("/audit?target=JOB")
	if !strings.Contains(a.body, row("job.cancel")) || strings.Contains(a.body, row("queue.resume")) {
		t.Fatal("?target=JOB does not keep the entries whose target contains it (any case)")
	}
	a = u.get("/audit?queue=emails")
	if !strings.Contains(a.body, row("queue.resume")) || strings.Contains(a.body, row("job.cancel")) {
		t.Fatal("?queue=emails does not keep only the entries of queue emails")
	}
	since := t0.UTC().Format("2006-01-02T15:04:05")
	a = u.get("/audit?since=" + since)
	if !strings.Contains(a.body, row("queue.resume")) || strings.Contains(a.body, row("queue.pause")) {
		t.Fatal("?since= keeps an older entry or loses a newer one")
	}
	a = u.get("/audit?until=" + since)
	if strings.Contains(a.body, row("queue.resume")) || !strings.Contains(a.body, row("queue.pause")) {
		t.Fatal("?until= keeps a newer entry or loses an older one")
	}
	a = u.get("/audit?actor=nobody")
	wantBody(t, "no match", a, "No audit entries match these filters")

	// Bad input: 400 with the form and a message.
	for q, want := range map[string]string{
		"action=nope":                       "is not one of",
		"since=yesterday":                   "is not a time",
		"before=x":                          "is not an integer",
		"before=-3":                         "before is an audit entry id",
		"limit=0":                           "limit must be between",
		"since=2026-01-02&until=2026-01-01": "must be after since",
	} {
		a = u.get("/audit?" + q)
		wantStatus(t, q, a, http.StatusBadRequest)
		wantBody(t, q, a, want, `<form class="filters panel" method="get" action="/audit">`)
	}

	// Paging: 120 more entries, 50 a page, none twice, none lost.
	for i := range 120 {
		if err := env.svc.RecordDenied(ctx, fmt.Sprintf("actor-%d", i%2), fmt.Sprintf("GET /x/%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	all, err := env.svc.Audit(ctx, app.AuditFilter{Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	denials := 0
	for _, e := range all {
		if e.Action == "auth.denied" {
			denials++
		}
	}
	for _, tc := range []struct {
		path string
		want int
	}{{"/audit", len(all)}, {"/audit?actor=actor-1", 60}, {"/audit?action=auth.denied&limit=7", denials}} {
		seen := map[string]bool{}
		path, pages := tc.path, 0
		for path != "" {
			a = u.get(path)
			wantStatus(t, path, a, http.StatusOK)
			for _, id := range auditIDs(a.body) {
				if seen[id] {
					t.Fatalf("%s: entry %s on two pages", tc.path, id)
				}
				seen[id] = true
			}
			path = ""
			if m := regexp.MustCompile(`href="([^"]+)" rel="next"`).FindStringSubmatch(a.body); m != nil {
				path = strings.ReplaceAll(m[1], "&amp;", "&")
				if !strings.Contains(a.body, "« First page") && pages > 0 {
					t.Fatalf("%s: page %d has no link to the first", tc.path, pages)
				}
			}
			if pages++; pages > 30 {
				t.Fatal("too many pages")
			}
		}
		if len(seen) != tc.want {
			t.Errorf("%s: %d entries over %d pages, want %d", tc.path, len(seen), pages, tc.want)
		}
	}
}

// The audit trail spans every queue: a token limited to some queues may
// not read it (403 page, as GET /api/audit; the pages refuse such a token
// anyway), a read token of every queue may.
func TestPagesAuditAccess(t *testing.T) {
	tokens := []ui.Token{
		{Name: "boss", Secret: "admin-token-0123456789", Role: ui.RoleAdmin},
		{Name: "viewer", Secret: "read-token-0123456789", Role: ui.RoleRead},
		{Name: "mailer", Secret: "mail-token-0123456789", Role: ui.RoleAdmin, Queues: []string{"emails"}},
	}
	env := newUIEnv(t, ui.Options{Tokens: tokens}, false)
	if err := env.svc.SetPaused(t.Context(), "emails", true, "boss"); err != nil {
		t.Fatal(err)
	}
	anon := newUIClient(t, env.URL)
	if a := anon.get("/audit"); a.status != http.StatusUnauthorized {
		t.Fatalf("/audit without a token: %d", a.status)
	}
	for _, tc := range []struct {
		token string
		want  int
	}{{"admin-token-0123456789", 200}, {"read-token-0123456789", 200}, {"mail-token-0123456789", 403}} {
		// A token with a queue list cannot log in to the UI; it may send itself.
		a := anon.do(http.MethodGet, "/audit", nil, map[string]string{"Authorization": "Bearer " + tc.token})
		wantStatus(t, tc.token, a, tc.want)
		if tc.want == 200 {
			wantBody(t, tc.token, a, row("queue.pause"), ">boss<")
		} else {
			wantBody(t, tc.token, a, "limited to queues emails")
			if strings.Contains(a.body, row("queue.pause")) {
				t.Fatal("a token of one queue reads the audit trail")
			}
		}
	}
}

// The pages whose actions are audited link to their part of the trail,
// and the link finds the entries.
func TestPagesLinkToAudit(t *testing.T) {
	env := newUIEnv(t, ui.Options{}, false)
	env.svc.Config.ParseSchedule = parseCron
	ctx := t.Context()
	if _, err := env.svc.PatchQueueSettings(ctx, "emails", map[string]json.RawMessage{"concurrency": json.RawMessage("3")}, "alice"); err != nil {
		t.Fatal(err)
	}
	u := newUIClient(t, env.URL)
	for page, href := range map[string]string{
		"/queues/settings?queue=emails": "/audit?queue=emails",
		"/periodic":                     "/audit?target=periodic",
		"/workers":                      "/audit?target=worker",
	} {
		a := u.get(page)
		wantBody(t, page, a, `href="`+href+`"`)
	}
	a := u.get("/audit?queue=emails")
	wantBody(t, "the settings' audit link", a, row("queue.settings"), ">alice<")
}

// A filter the page applies reads at most 5,000 entries a page: past
// that, the page says so and its next page reads on from there, so an
// old match is still found.
func TestPagesAuditScanBound(t *testing.T) {
	env := newUIEnv(t, ui.Options{}, false)
	ctx := t.Context()
	if err := env.svc.RecordDenied(ctx, "needle", "GET /old"); err != nil {
		t.Fatal(err)
	}
	for i := range 5200 {
		if err := env.svc.RecordDenied(ctx, "noise", fmt.Sprintf("GET /%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	u := newUIClient(t, env.URL)
	a := u.get("/audit?actor=needle")
	wantStatus(t, "first page", a, http.StatusOK)
	wantBody(t, "first page", a, "No audit entries match these filters among the 5,000 read", "the next page reads on from there", `rel="next"`)
	m := regexp.MustCompile(`href="([^"]+)" rel="next"`).FindStringSubmatch(a.body)
	a = u.get(strings.ReplaceAll(m[1], "&amp;", "&"))
	wantStatus(t, "next page", a, http.StatusOK)
	if ids := auditIDs(a.body); len(ids) != 1 || !strings.Contains(a.body, ">needle<") {
		t.Fatalf("the next page found %v, want the needle's entry", ids)
	}
	if strings.Contains(a.body, `rel="next"`) {
		t.Fatal("the last page links to a next one")
	}
}
