package ui_test

import (
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/queuehq/queue/app"
	"github.com/queuehq/queue/ui"
)

// liveRegion is the markup of the element with id (which must carry
// data-live) in body, up to its closing tag: elements of its own tag
// nested inside are counted, so it ends where the region ends.
func liveRegion(t *testing.T, body, id string) string {
	t.Helper()
	m := regexp.MustCompile(`<([a-z]+)\b[^>]*\bid="` + regexp.QuoteMeta(id) + `"[^>]*>`).FindStringSubmatchIndex(body)
	if m == nil {
		t.Fatalf("no element with id %q", id)
	}
	open := body[m[0]:m[1]]
	if !regexp.MustCompile(`\sdata-live[\s>=]`).MatchString(open) {
		t.Fatalf("#%s is not a live region: %s", id, open)
	}
	tag := body[m[2]:m[3]]
	opening := regexp.MustCompile(`<` + tag + `\b`)
	depth, i := 1, m[1]
	for depth > 0 {
		end := strings.Index(body[i:], "</"+tag+">")
		if end < 0 {
			t.Fatalf("#%s: no closing </%s>", id, tag)
		}
		depth += len(opening.FindAllStringIndex(body[i:i+end], -1)) - 1
		i += end + len(tag) + 3
	}
	return body[m[0]:i]
}

// typed finds what a person types into: a swap of the region it is in
// would throw away what they typed once they leave the field.
var typed = regexp.MustCompile(`<textarea\b|<select\b|<input\b[^>]*>`)

func typedFields(region string) []string {
	var out []string
	for _, f := range typed.FindAllString(region, -1) {
		if !strings.Contains(f, `type="hidden"`) && !strings.Contains(f, `type="checkbox"`) {
			out = append(out, f)
		}
	}
	return out
}

// Every list and detail page of the console refreshes live: its <body>
// says how often (the fallback poll of app.js, which otherwise follows the
// event stream), and what changes sits in [data-live][id] regions, which
// hold no field a person types into (their text would be lost in a swap).
func TestPagesLiveRegions(t *testing.T) {
	env := newUIEnv(t, ui.Options{}, false)
	ctx := t.Context()
	registerPageWorkers(t, env)
	env.svc.Config.ParseSchedule = parseCron
	if err := env.svc.SetPaused(ctx, "emails", true, "alice"); err != nil {
		t.Fatal(err)
	}
	if _, err := env.svc.CreateWebhook(ctx, app.WebhookInput{Name: "ops", URL: "https://hooks.example.com/q", Secret: "0123456789abcdef0123", Events: []string{"*"}}, "alice"); err != nil {
		t.Fatal(err)
	}
	wf := submitPageDiamond(t, env).ID
	u := newUIClient(t, env.URL)
	for _, tc := range []struct {
		path    string
		refresh int
		regions []string
	}{
		{"/", 5, []string{"live-dashboard"}},
		{"/dlq", 10, []string{"dlq-total", "dlq-count", "dlq-list", "dlq-counts"}},
		{"/dlq?queue=billing", 10, []string{"dlq-count", "dlq-list"}},
		{"/workflows", 10, []string{"live-workflows"}},
		{fmt.Sprintf("/workflows/%d", wf), 5, []string{"live-workflow"}},
		{"/queues", 10, []string{"live-queues"}},
		{"/queues/chart?queue=emails", 15, []string{"live-queue-chart"}},
		{"/queues/keys?queue=emails", 10, []string{"live-keys"}},
		{"/queues/settings?queue=emails", 10, []string{"settings-changed", "effective-concurrency", "source-concurrency"}},
		{"/workers", 5, []string{"live-workers"}},
		{"/periodic", 10, []string{"live-periodic"}},
		{"/webhooks", 10, []string{"live-webhooks"}},
		{"/webhooks/ops", 10, []string{"live-webhook", "live-deliveries"}},
		{"/audit", 15, []string{"live-audit"}},
	} {
		a := u.get(tc.path)
		wantStatus(t, tc.path, a, http.StatusOK)
		if tc.path == "/webhooks/ops" { // its deliveries are jobs of _webhooks: the page follows that queue's events only
			wantBody(t, tc.path, a, `data-events="/api/events?queue=_webhooks"`)
		}
		wantBody(t, tc.path, a, fmt.Sprintf(`data-refresh="%d"`, tc.refresh))
		for _, id := range tc.regions {
			if f := typedFields(liveRegion(t, a.body, id)); len(f) > 0 {
				t.Errorf("%s: live region #%s holds fields a person types into: %q", tc.path, id, f)
			}
		}
	}
}
