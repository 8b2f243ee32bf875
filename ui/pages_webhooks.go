package ui

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/queuehq/queue/app"
)

// webhookPages adds the pages of webhook subscriptions (issue 27): the
// list with a form that adds one, and one subscription with its settings,
// its edit form (those made here), its delivery history, and buttons that
// send a test and delete it (through a confirm page). Subscriptions can
// hold a URL with a token in it, so, as on the API, every page and form
// needs an admin; the forms are CSRF-guarded like every other.
func (p *pages) webhookPages(e *echo.Echo, page func(string, echo.HandlerFunc), mw []echo.MiddlewareFunc) {
	page("/webhooks", p.webhooks)
	e.POST("/webhooks", p.webhookCreate, mw...)
	page("/webhooks/:name", p.webhook)
	e.POST("/webhooks/:name", p.webhookSave, mw...)
	e.POST("/webhooks/:name/test", p.webhookTest, mw...)
	page("/webhooks/:name/delete", p.webhookDeleteConfirm)
	e.POST("/webhooks/:name/delete", p.webhookDelete, mw...)
}

// webhooksView is the data of webhooks.html.
type webhooksView struct {
	base
	Subscriptions []app.WebhookSubscription
	Form          webhookFields
}

// webhookView is the data of webhook.html.
type webhookView struct {
	base
	Sub        *app.WebhookSubscription
	SecretSet  bool
	Deliveries []app.WebhookDeliveryInfo
	Older      string // the link to the next page of deliveries, if any
	Newest     bool   // the first page
	Form       webhookFields
}

// webhookFields is the create/edit form's fields.
type webhookFields struct {
	Name, URL, Queues string
	Events            map[string]bool
	Disabled          bool
	All               []string // the events one can pick, in the docs' order
}

func newWebhookFields() webhookFields {
	return webhookFields{Events: map[string]bool{}, All: app.WebhookEvents}
}

func webhookFieldsOf(w *app.WebhookSubscription) webhookFields {
	f := newWebhookFields()
	f.Name, f.URL, f.Queues, f.Disabled = w.Name, w.URL, strings.Join(w.Queues, ", "), w.Disabled
	for _, e := range w.Events {
		f.Events[e] = true
	}
	return f
}

// adminOnly refuses a page to a token that is not admin, as the API
// refuses GET /api/webhooks.
func adminOnly(c echo.Context) error {
	if p := who(c); !p.allows(RoleAdmin) {
		return forbidden(p, RoleAdmin)
	}
	return nil
}

// webhooks is GET /webhooks: every subscription, and the form that adds one.
func (p *pages) webhooks(c echo.Context) error {
	if err := adminOnly(c); err != nil {
		return err
	}
	subs, err := p.svc.Webhooks(c.Request().Context())
	if err != nil {
		return err
	}
	v := webhooksView{base: p.base(c, "Webhooks", "webhooks"), Subscriptions: subs, Form: newWebhookFields()}
	v.Refresh = 10
	return p.render(c, http.StatusOK, "webhooks", v)
}

// webhook is GET /webhooks/{name}: its settings, the edit form (for one
// made here), and a page of its deliveries, newest first (?cursor=).
func (p *pages) webhook(c echo.Context) error {
	if err := adminOnly(c); err != nil {
		return err
	}
	ctx := c.Request().Context()
	name := c.Param("name")
	w, err := p.svc.Webhook(ctx, name)
	if err != nil {
		return err
	}
	cursor := c.QueryParam("cursor")
	page, err := p.svc.WebhookDeliveries(ctx, name, 50, cursor)
	if err != nil {
		return p.actionErr(c, err, webhookPath(name))
	}
	v := webhookView{base: p.base(c, "Webhook "+name, "webhooks"), Sub: w, SecretSet: w.Secret != "", Deliveries: page.Deliveries,
		Newest: cursor == "", Form: webhookFieldsOf(w)}
	if page.NextCursor != "" {
		v.Older = link(webhookPath(name), "cursor", page.NextCursor)
	}
	v.Refresh = 10
	return p.render(c, http.StatusOK, "webhook", v)
}

// webhookPath is the page of the subscription called name.
func webhookPath(name string) string { return "/webhooks/" + url.PathEscape(name) }

// webhookCreate is POST /webhooks: a new subscription from the form.
func (p *pages) webhookCreate(c echo.Context) error {
	in, err := webhookFormInput(c)
	if err != nil {
		return p.actionErr(c, err, "/webhooks")
	}
	in.Name = strings.TrimSpace(c.FormValue("name"))
	w, err := p.svc.CreateWebhook(c.Request().Context(), in, actor(c))
	if err != nil {
		return p.actionErr(c, webhookErr(err), "/webhooks")
	}
	return p.done(c, webhookPath(w.Name), flash{Text: fmt.Sprintf("Webhook %s created: %s gets %s, within a second on every node.",
		w.Name, w.URL, strings.Join(w.Events, ", "))})
}

// webhookSave is POST /webhooks/{name}: the subscription replaced by the
// edit form; an empty secret keeps the stored one.
func (p *pages) webhookSave(c echo.Context) error {
	name := c.Param("name")
	back := webhookPath(name)
	in, err := webhookFormInput(c)
	if err != nil {
		return p.actionErr(c, err, back)
	}
	if _, err := p.svc.PutWebhook(c.Request().Context(), name, in, actor(c)); err != nil {
		return p.actionErr(c, webhookErr(err), back)
	}
	return p.done(c, back, flash{Text: fmt.Sprintf("Webhook %s saved; in effect within a second on every node.", name)})
}

// webhookFormInput reads the create/edit form (all but the name).
func webhookFormInput(c echo.Context) (app.WebhookInput, error) {
	form, err := c.FormParams()
	if err != nil {
		return app.WebhookInput{}, err
	}
	in := app.WebhookInput{URL: strings.TrimSpace(form.Get("url")), Secret: form.Get("secret"), Disabled: form.Get("disabled") != ""}
	for _, e := range form["events"] {
		if e == app.WebhookAllEvents {
			in.Events = []string{app.WebhookAllEvents}
			break
		}
		in.Events = append(in.Events, e)
	}
	for _, q := range strings.Split(form.Get("queues"), ",") {
		if q = strings.TrimSpace(q); q != "" {
			in.Queues = append(in.Queues, q)
		}
	}
	return in, nil
}

// webhookTest is POST /webhooks/{name}/test: a webhook.test delivery.
func (p *pages) webhookTest(c echo.Context) error {
	name := c.Param("name")
	id, err := p.svc.TestWebhook(c.Request().Context(), name, actor(c))
	if err != nil {
		return p.actionErr(c, err, webhookPath(name))
	}
	return p.done(c, webhookPath(name), flash{Text: fmt.Sprintf("Test delivery %d of webhook %s queued; it shows below once sent.", id, name),
		Href: "/jobs/" + strconv.FormatInt(id, 10), Link: "Open its job"})
}

// webhookDeleteConfirm is GET /webhooks/{name}/delete: what deleting does,
// and the button that does it.
func (p *pages) webhookDeleteConfirm(c echo.Context) error {
	if err := adminOnly(c); err != nil {
		return err
	}
	name := c.Param("name")
	w, err := p.svc.Webhook(c.Request().Context(), name)
	if err != nil {
		return p.actionErr(c, err, "/webhooks")
	}
	back := webhookPath(name)
	if w.Source == app.WebhookFromConfig {
		return p.done(c, back, flash{Kind: "error", Text: fmt.Sprintf("Webhook %s is declared in the config file: remove it there.", name)})
	}
	v := confirmView{base: p.base(c, "Confirm delete", "webhooks"), Action: back + "/delete", Back: back, Danger: true,
		Heading: fmt.Sprintf("Delete webhook %s?", name),
		Text: fmt.Sprintf("Events from now on are no longer sent to %s; deliveries not yet sent can no longer be signed, so they fail to the dead-letter queue. Those sent stay jobs until retention. This cannot be undone.",
			w.URL),
		Button: "Delete webhook",
		Fields: []formField{{"confirm", "yes"}}}
	return p.render(c, http.StatusOK, "confirm", v)
}

// webhookDelete is POST /webhooks/{name}/delete, sent by the confirm page;
// a post that did not come from it is sent there.
func (p *pages) webhookDelete(c echo.Context) error {
	name := c.Param("name")
	if c.FormValue("confirm") != "yes" {
		return c.Redirect(http.StatusSeeOther, webhookPath(name)+"/delete")
	}
	if err := p.svc.DeleteWebhook(c.Request().Context(), name, actor(c)); err != nil {
		return p.actionErr(c, webhookErr(err), webhookPath(name))
	}
	return p.done(c, "/webhooks", flash{Text: fmt.Sprintf("Webhook %s deleted.", name)})
}
