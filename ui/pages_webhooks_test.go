package ui_test

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/queuehq/queue/app"
	"github.com/queuehq/queue/ui"
)

const pageSecret = "page-secret-0123456789"

// The webhooks pages: the list and its add form; a subscription made
// there shows its settings (never its secret, a URL's markup escaped),
// its edit form, and its deliveries; the test button queues a delivery
// that the history lists; edit keeps the secret when none is typed;
// delete goes through a confirm page and is audited; every post needs the
// CSRF token; bad input is a message on the page and changes nothing.
func TestWebhooksPages(t *testing.T) {
	env := newUIEnv(t, ui.Options{}, false)
	u := newUIClient(t, env.URL)
	a := u.get("/webhooks")
	wantStatus(t, "GET /webhooks", a, http.StatusOK)
	wantBody(t, "/webhooks", a, "<h1>Webhooks</h1>", `href="/webhooks" aria-current="page"`, "No webhook subscriptions",
		`action="/webhooks"`, `name="events" value="job.dead_lettered"`, `name="events" value="*"`, `name="_csrf"`)

	form := url.Values{"name": {"ops"}, "url": {`https://hooks.example.com/q?token=<b>x</b>`}, "secret": {pageSecret},
		"events": {app.EventDeadLettered, app.EventQueuePaused}, "queues": {"emails, billing"}}
	// Without the CSRF token: refused, nothing made.
	if a := u.do(http.MethodPost, "/webhooks", form, nil); a.status != http.StatusForbidden {
		t.Fatalf("create without CSRF: %d, want 403", a.status)
	}
	if subs, _ := env.svc.Webhooks(t.Context()); len(subs) != 0 {
		t.Fatalf("a refused post made %v", subs)
	}
	// Bad input: a message, nothing made.
	for what, c := range map[string]struct {
		change func(url.Values)
		says   string
	}{
		"loopback target": {func(f url.Values) { f.Set("url", "http://127.0.0.1:9/x") }, "allow_private"},
		"short secret":    {func(f url.Values) { f.Set("secret", "short") }, "secret"},
		"no event":        {func(f url.Values) { f.Del("events") }, "at least one event"},
		"bad name":        {func(f url.Values) { f.Set("name", "a b") }, "webhook name"},
	} {
		f := url.Values{}
		for k, v := range form {
			f[k] = append([]string(nil), v...)
		}
		c.change(f)
		a := u.post("/webhooks", f)
		if a.status != http.StatusSeeOther || a.header.Get("Location") != "/webhooks" {
			t.Fatalf("%s: %d %s, want a redirect to /webhooks", what, a.status, a.header.Get("Location"))
		}
		wantBody(t, what, u.follow(a), "flash-error", c.says)
		if subs, _ := env.svc.Webhooks(t.Context()); len(subs) != 0 {
			t.Fatalf("%s made %v", what, subs)
		}
	}

	a = u.post("/webhooks", form)
	if a.status != http.StatusSeeOther || a.header.Get("Location") != "/webhooks/ops" {
		t.Fatalf("create: %d %s", a.status, a.header.Get("Location"))
	}
	a = u.follow(a)
	wantBody(t, "/webhooks/ops", a, "Webhook ops created", "<h1>Webhook ops", "set (never shown)", "job.dead_lettered, queue.paused",
		`https://hooks.example.com/q?token=&lt;b&gt;x&lt;/b&gt;`, "No deliveries yet", `action="/webhooks/ops/test"`,
		`href="/webhooks/ops/delete"`, `action="/webhooks/ops"`, `value="emails, billing"`, `value="job.dead_lettered" checked`)
	if strings.Contains(a.body, pageSecret) || strings.Contains(a.body, "<b>x</b>") {
		t.Fatal("the subscription's page shows its secret, or does not escape its URL")
	}
	wantBody(t, "/webhooks with one", u.get("/webhooks"), `href="/webhooks/ops"`, "every queue", "queue.paused")
	if a := u.post("/webhooks", form); a.status != http.StatusSeeOther {
		t.Fatalf("create twice: %d", a.status)
	} else {
		wantBody(t, "create twice", u.follow(a), "flash-error", "exists")
	}

	// Send a test: a delivery job, listed in the history.
	if a := u.do(http.MethodPost, "/webhooks/ops/test", url.Values{}, nil); a.status != http.StatusForbidden {
		t.Fatalf("test without CSRF: %d, want 403", a.status)
	}
	a = u.follow(u.post("/webhooks/ops/test", nil))
	wantBody(t, "after test", a, "Test delivery", "webhook.test", "badge-queued", "0 <span class=\"muted\">/ 10</span>")
	page, err := env.svc.WebhookDeliveries(t.Context(), "ops", 10, "")
	if err != nil || len(page.Deliveries) != 1 || page.Deliveries[0].Event != app.EventWebhookTest {
		t.Fatalf("deliveries after the test: %+v %v", page, err)
	}
	if !strings.Contains(a.body, `href="/jobs/`+strconv.FormatInt(page.Deliveries[0].JobID, 10)+`"`) {
		t.Fatal("the history does not link the delivery's job")
	}

	// Edit without a secret: the URL changes, the secret stays.
	edit := url.Values{"url": {"https://hooks.example.com/v2"}, "events": {"*"}, "disabled": {"true"}}
	a = u.follow(u.post("/webhooks/ops", edit))
	wantBody(t, "after edit", a, "Webhook ops saved", "https://hooks.example.com/v2", "every event", "badge-paused")
	if _, s, _ := env.svc.WebhookTarget(t.Context(), "ops"); s != pageSecret {
		t.Fatalf("an edit without a secret changed it to %q", s)
	}
	edit.Set("url", "http://10.0.0.1/x")
	wantBody(t, "bad edit", u.follow(u.post("/webhooks/ops", edit)), "flash-error", "private")
	if w, _ := env.svc.Webhook(t.Context(), "ops"); w.URL != "https://hooks.example.com/v2" {
		t.Fatalf("a refused edit changed the URL to %s", w.URL)
	}

	// Delete: the confirm page, then the post with its confirm field.
	a = u.get("/webhooks/ops/delete")
	wantStatus(t, "GET confirm", a, http.StatusOK)
	wantBody(t, "confirm", a, "Delete webhook ops?", `name="confirm" value="yes"`, `action="/webhooks/ops/delete"`)
	a = u.post("/webhooks/ops/delete", nil)
	if a.status != http.StatusSeeOther || a.header.Get("Location") != "/webhooks/ops/delete" {
		t.Fatalf("delete without confirm: %d %s, want the confirm page", a.status, a.header.Get("Location"))
	}
	if a := u.do(http.MethodPost, "/webhooks/ops/delete", url.Values{"confirm": {"yes"}}, nil); a.status != http.StatusForbidden {
		t.Fatalf("delete without CSRF: %d, want 403", a.status)
	}
	if _, err := env.svc.Webhook(t.Context(), "ops"); err != nil {
		t.Fatalf("deleted without the confirm or the CSRF token: %v", err)
	}
	u.get("/webhooks/ops/delete")
	wantBody(t, "after delete", u.follow(u.post("/webhooks/ops/delete", url.Values{"confirm": {"yes"}})), "Webhook ops deleted", "No webhook subscriptions")
	entries, _ := env.svc.Audit(t.Context(), app.AuditFilter{})
	var actions []string
	for _, e := range entries {
		if strings.HasPrefix(e.Action, "webhook.") {
			actions = append(actions, e.Action)
			if strings.Contains(string(e.Filter), pageSecret) {
				t.Fatalf("the audit entry %s holds the secret: %s", e.Action, e.Filter)
			}
		}
	}
	if got := strings.Join(actions, " "); !strings.Contains(got, "webhook.create") || !strings.Contains(got, "webhook.test") ||
		!strings.Contains(got, "webhook.update") || !strings.Contains(got, "webhook.delete") {
		t.Fatalf("audit: %s", got)
	}
	// Gone: the page is a 404, the confirm page sends back with a message.
	if a := u.get("/webhooks/ops"); a.status != http.StatusNotFound {
		t.Fatalf("GET a deleted subscription: %d, want 404", a.status)
	}
}

// A subscription of the config file is shown, can be tested, and has no
// edit form nor delete button; a forged delete is refused with a message.
func TestWebhookPageOfTheConfigFile(t *testing.T) {
	env := newUIEnv(t, ui.Options{}, false)
	env.svc.Config.Webhooks.Subscriptions = []app.WebhookSubscription{{Name: "filed", URL: "https://hooks.example.com/f",
		Secret: pageSecret, Events: []string{app.WebhookAllEvents}, Source: app.WebhookFromConfig}}
	u := newUIClient(t, env.URL)
	a := u.get("/webhooks/filed")
	wantStatus(t, "GET /webhooks/filed", a, http.StatusOK)
	wantBody(t, "/webhooks/filed", a, "Declared in the config file", "every event", `action="/webhooks/filed/test"`)
	if strings.Contains(a.body, `href="/webhooks/filed/delete"`) || strings.Contains(a.body, `action="/webhooks/filed"`) {
		t.Fatal("a config subscription has a delete button or an edit form")
	}
	wantBody(t, "list", u.get("/webhooks"), "config file", `href="/webhooks/filed"`)
	wantBody(t, "confirm of a config one", u.follow(u.get("/webhooks/filed/delete")), "flash-error", "config file")
	wantBody(t, "forged delete", u.follow(u.post("/webhooks/filed/delete", url.Values{"confirm": {"yes"}})), "flash-error", "config file")
	wantBody(t, "forged edit", u.follow(u.post("/webhooks/filed", url.Values{"url": {"https://x.example.com/"}, "events": {"*"}})), "flash-error", "config file")
	if _, err := env.svc.Webhook(t.Context(), "filed"); err != nil {
		t.Fatal(err)
	}
	wantBody(t, "test", u.follow(u.post("/webhooks/filed/test", nil)), "Test delivery", "webhook.test")
}

// Subscriptions are for admins, as on the API: a reader has no nav link
// and gets 403 on every page and post.
func TestWebhookPagesNeedAdmin(t *testing.T) {
	tokens := []ui.Token{{Name: "viewer", Secret: "read-token-0123456789", Role: ui.RoleRead}}
	env := newUIEnv(t, ui.Options{Tokens: tokens}, false)
	if _, err := env.svc.CreateWebhook(t.Context(), app.WebhookInput{Name: "ops", URL: "https://hooks.example.com/x", Secret: pageSecret,
		Events: []string{app.EventSucceeded}}, "test"); err != nil {
		t.Fatal(err)
	}
	u := newUIClient(t, env.URL)
	u.get("/login")
	u.login("read-token-0123456789")
	if a := u.get("/jobs"); strings.Contains(a.body, `href="/webhooks"`) {
		t.Fatal("a reader sees the Webhooks link")
	}
	for _, p := range []string{"/webhooks", "/webhooks/ops", "/webhooks/ops/delete"} {
		if a := u.get(p); a.status != http.StatusForbidden {
			t.Fatalf("GET %s as a reader: %d, want 403", p, a.status)
		}
	}
	u.get("/jobs")
	for _, p := range []string{"/webhooks", "/webhooks/ops", "/webhooks/ops/test", "/webhooks/ops/delete"} {
		if a := u.post(p, url.Values{"confirm": {"yes"}, "name": {"x"}, "url": {"https://x.example.com"}, "secret": {pageSecret}, "events": {"*"}}); a.status != http.StatusForbidden {
			t.Fatalf("POST %s as a reader: %d, want 403", p, a.status)
		}
	}
	if subs, _ := env.svc.Webhooks(t.Context()); len(subs) != 1 || subs[0].URL != "https://hooks.example.com/x" {
		t.Fatalf("a reader changed the subscriptions: %+v", subs)
	}
	if page, _ := env.svc.WebhookDeliveries(t.Context(), "ops", 10, ""); len(page.Deliveries) != 0 {
		t.Fatal("a reader sent a test")
	}
}
