package ui

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/queuehq/queue/app"
)

// settingsPages adds the pages of runtime settings (issue 26): a queue's
// settings with an edit form, and the periodic jobs with run now, pause,
// resume, delete and a create/edit form. The forms post straight to their
// action (CSRF, admin, audited): a setting is undone by setting it back,
// so no confirm page stands in between.
func (p *pages) settingsPages(e *echo.Echo, page func(string, echo.HandlerFunc), mw []echo.MiddlewareFunc) {
	page("/queues/settings", p.queueSettings)
	e.POST("/queues/settings", p.saveQueueSettings, mw...)
	e.POST("/queues/settings/reset", p.resetQueueSettings, mw...)
	page("/periodic", p.periodic)
	page("/periodic/edit", p.periodicEdit)
	e.POST("/periodic/save", p.periodicSave, mw...)
	e.POST("/periodic/run", p.periodicRun, mw...)
	e.POST("/periodic/pause", func(c echo.Context) error { return p.periodicPause(c, true) }, mw...)
	e.POST("/periodic/resume", func(c echo.Context) error { return p.periodicPause(c, false) }, mw...)
	e.POST("/periodic/delete", p.periodicDelete, mw...)
}

// settingsView is the data of settings.html.
type settingsView struct {
	base
	Queue      string
	Rows       []settingRow
	Precedence string
	UpdatedAt  any // *time.Time, for the "time" partial
	UpdatedBy  string
	HasRuntime bool
}

// settingRow is one setting of a queue: the value in effect, its source,
// the config file's value, and the runtime value (the form's).
type settingRow struct {
	Name, Effective, Source, File, Runtime, Hint string
}

// settingHints say what a setting does and what its zero means.
var settingHints = map[string]string{
	"max_attempts":    "attempts before the dead-letter queue (1–1000)",
	"timeout":         "lease of one attempt, e.g. 30s",
	"backoff_base":    "first retry delay, e.g. 1s",
	"backoff_max":     "longest retry delay, e.g. 1h",
	"retention":       "keep done and cancelled jobs, e.g. 24h, 7d",
	"dlq_retention":   "keep dead-letter rows, e.g. 30d",
	"concurrency":     "jobs processing at once, all workers; 0: no limit",
	"rate":            "claims per second; 0: no limit",
	"burst":           "claims at once under rate; 0: max(1, rate)",
	"max_queued":      "submissions beyond it are refused; 0: no limit",
	"key_concurrency": "jobs of one key at once; 0: no limit",
	"key_rate":        "jobs of one key per period, e.g. 10/1m; 0: no limit",
	"fairness":        "round_robin: keys take turns; empty: claim order",
	"log_kib":         "KiB of each attempt's log kept (1–1024)",
}

// settingValue writes v (a setting's value) as the forms and the CLI take it.
func settingValue(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case app.Duration:
		return x.String()
	case app.KeyRate:
		return x.String()
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	}
	return fmt.Sprint(v)
}

// effectiveText is a setting's value in effect, in words where its zero
// means something.
func effectiveText(name, v string) string {
	if v == "" || v == "0" {
		switch name {
		case "concurrency", "rate", "max_queued", "key_concurrency", "key_rate":
			return "no limit"
		case "burst":
			return "auto"
		case "fairness":
			return "claim order"
		}
	}
	return v
}

var sourceText = map[string]string{
	app.SourceRuntime:      "runtime",
	app.SourceFile:         "config file",
	app.SourceFileDefaults: "config [defaults]",
	app.SourceBuiltin:      "built-in",
}

// queueSettings is GET /queues/settings?queue=: each setting's value in
// effect and source, and (for admins) the form that changes them.
func (p *pages) queueSettings(c echo.Context) error {
	q := c.QueryParam("queue")
	v, err := p.svc.QueueSettings(c.Request().Context(), q)
	if err != nil {
		return err
	}
	eff := effectiveValues(v.Effective)
	out := settingsView{base: p.base(c, "Settings of "+q, "queues"), Queue: q, Precedence: app.Precedence, HasRuntime: len(v.Runtime) > 0}
	for _, name := range app.SettingNames() {
		out.Rows = append(out.Rows, settingRow{Name: name, Effective: effectiveText(name, eff[name]), Source: sourceText[v.Sources[name]],
			File: settingValue(v.File[name]), Runtime: settingValue(v.Runtime[name]), Hint: settingHints[name]})
	}
	if v.UpdatedAt != nil {
		out.UpdatedAt = v.UpdatedAt
	}
	if v.UpdatedBy != nil {
		out.UpdatedBy = *v.UpdatedBy
	}
	out.Refresh = 10 // the values in effect and their sources are live regions; the inputs are not
	return p.render(c, http.StatusOK, "settings", out)
}

// effectiveValues are the fields of q by json name, as text.
func effectiveValues(q app.QueueConfig) map[string]string {
	vals := map[string]any{
		"max_attempts": q.MaxAttempts, "timeout": q.Timeout, "backoff_base": q.BackoffBase, "backoff_max": q.BackoffMax,
		"retention": q.Retention, "dlq_retention": q.DLQRetention, "concurrency": q.Concurrency, "rate": q.Rate,
		"burst": q.Burst, "max_queued": q.MaxQueued, "key_concurrency": q.KeyConcurrency, "key_rate": q.KeyRate,
		"fairness": q.Fairness, "log_kib": q.LogKiB,
	}
	out := map[string]string{}
	for k, v := range vals {
		out[k] = settingValue(v)
	}
	return out
}

// saveQueueSettings is POST /queues/settings: each field of the form is
// the runtime value of a setting (empty: unset, the file's applies); only
// the fields that differ from the stored ones are changed (and audited).
func (p *pages) saveQueueSettings(c echo.Context) error {
	q := c.FormValue("queue")
	back := link("/queues/settings", "queue", q)
	ctx := c.Request().Context()
	cur, err := p.svc.QueueSettings(ctx, q)
	if err != nil {
		return p.actionErr(c, err, "/queues")
	}
	form, err := c.FormParams()
	if err != nil {
		return err
	}
	kv := map[string]string{}
	for _, name := range app.SettingNames() {
		vals, ok := form[name]
		if !ok {
			continue
		}
		if nv := strings.TrimSpace(vals[0]); nv != settingValue(cur.Runtime[name]) {
			kv[name] = nv
		}
	}
	if len(kv) == 0 {
		return p.done(c, back, flash{Text: "Nothing changed."})
	}
	patch, err := app.SettingsPatchFromText(kv)
	if err == nil {
		_, err = p.svc.PatchQueueSettings(ctx, q, patch, actor(c))
	}
	if err != nil {
		return p.actionErr(c, err, back)
	}
	names := make([]string, 0, len(kv))
	for _, n := range app.SettingNames() {
		if _, ok := kv[n]; ok {
			names = append(names, n)
		}
	}
	return p.done(c, back, flash{Text: fmt.Sprintf("Queue %s: %s changed; in effect at the next claim, on every node within a second.", q, strings.Join(names, ", "))})
}

// resetQueueSettings is POST /queues/settings/reset: the file's policy again.
func (p *pages) resetQueueSettings(c echo.Context) error {
	q := c.FormValue("queue")
	back := link("/queues/settings", "queue", q)
	if _, err := p.svc.ResetQueueSettings(c.Request().Context(), q, actor(c)); err != nil {
		return p.actionErr(c, err, back)
	}
	return p.done(c, back, flash{Text: fmt.Sprintf("Queue %s: runtime settings reset; the config file's apply.", q)})
}

// periodicView is the data of periodic.html.
type periodicView struct {
	base
	Entries []app.PeriodicStatus
	Form    periodicForm // the create form (empty) or the edit form
	Editing string       // the name of the entry edited, if any
}

// periodicForm is the create/edit form's fields, as text.
type periodicForm struct {
	Name, Cron, Timezone, Queue, Kind, Payload, Priority, MaxAttempts, Timeout, Tags, Key, CatchUp string
	SkipIfPending                                                                                  bool
}

func formOf(st *app.PeriodicStatus) periodicForm {
	f := periodicForm{Name: st.Name, Cron: st.Cron, Timezone: st.Timezone, Queue: st.Queue, Kind: st.Kind,
		Tags: strings.Join(st.Tags, ", "), Key: st.Key, CatchUp: st.CatchUp, SkipIfPending: st.SkipIfPending}
	if st.Payload != nil {
		b, _ := json.Marshal(st.Payload)
		f.Payload = string(b)
	}
	if st.Priority != 0 {
		f.Priority = strconv.Itoa(st.Priority)
	}
	if st.MaxAttempts != 0 {
		f.MaxAttempts = strconv.Itoa(st.MaxAttempts)
	}
	if st.Timeout != 0 {
		f.Timeout = st.Timeout.String()
	}
	return f
}

// periodic is GET /periodic: every periodic job with its actions, and the
// form that makes one.
func (p *pages) periodic(c echo.Context) error {
	list, err := p.svc.PeriodicStatus(c.Request().Context())
	if err != nil {
		return err
	}
	v := periodicView{base: p.base(c, "Periodic jobs", "periodic"), Entries: list, Form: periodicForm{CatchUp: "one"}}
	v.Refresh = 10
	return p.render(c, http.StatusOK, "periodic", v)
}

// periodicEdit is GET /periodic/edit?name=: the form filled with an entry
// made through the API.
func (p *pages) periodicEdit(c echo.Context) error {
	st, err := p.svc.GetPeriodic(c.Request().Context(), c.QueryParam("name"))
	if err != nil {
		return err
	}
	if st.Source != app.PeriodicFromAPI {
		return p.done(c, "/periodic", flash{Kind: "error", Text: fmt.Sprintf("Periodic job %s is declared in the config file: change it there (it can be paused, resumed and run here).", st.Name)})
	}
	list, err := p.svc.PeriodicStatus(c.Request().Context())
	if err != nil {
		return err
	}
	v := periodicView{base: p.base(c, "Edit "+st.Name, "periodic"), Entries: list, Form: formOf(st), Editing: st.Name}
	v.Refresh = 10 // the list above the form is live; the form is outside its region
	return p.render(c, http.StatusOK, "periodic", v)
}

// periodicSave is POST /periodic/save: create (no field editing) or
// replace the entry named in editing.
func (p *pages) periodicSave(c echo.Context) error {
	in, err := periodicFormInput(c)
	editing := c.FormValue("editing")
	back := "/periodic"
	if editing != "" {
		back = link("/periodic/edit", "name", editing)
	}
	if err != nil {
		return p.actionErr(c, err, back)
	}
	var st *app.PeriodicStatus
	if editing != "" {
		st, err = p.svc.UpdatePeriodic(c.Request().Context(), editing, in, actor(c))
	} else {
		st, err = p.svc.CreatePeriodic(c.Request().Context(), in, actor(c))
	}
	if err != nil {
		return p.actionErr(c, periodicErr(err), back)
	}
	what := "created"
	if editing != "" {
		what = "saved"
	}
	return p.done(c, "/periodic", flash{Text: fmt.Sprintf("Periodic job %s %s (%s → %s/%s).", st.Name, what, st.Cron, st.Queue, st.Kind)})
}

// periodicFormInput reads the create/edit form.
func periodicFormInput(c echo.Context) (app.PeriodicInput, error) {
	in := app.PeriodicInput{Name: strings.TrimSpace(c.FormValue("name")), Cron: strings.TrimSpace(c.FormValue("cron")),
		Timezone: strings.TrimSpace(c.FormValue("timezone")), Queue: strings.TrimSpace(c.FormValue("queue")),
		Kind: strings.TrimSpace(c.FormValue("kind")), Key: c.FormValue("key"), CatchUp: c.FormValue("catch_up"),
		SkipIfPending: c.FormValue("skip_if_pending") != ""}
	if pl := strings.TrimSpace(c.FormValue("payload")); pl != "" {
		if !json.Valid([]byte(pl)) {
			return in, app.Invalid("payload", "the payload is not JSON (quote strings: \"text\")")
		}
		in.Payload = json.RawMessage(pl)
	}
	num := func(field string, into *int) error {
		if s := strings.TrimSpace(c.FormValue(field)); s != "" {
			n, err := strconv.Atoi(s)
			if err != nil {
				return app.Invalid(field, "%s %q is not a whole number", field, clip(s))
			}
			*into = n
		}
		return nil
	}
	if err := errors.Join(num("priority", &in.Priority), num("max_attempts", &in.MaxAttempts)); err != nil {
		return in, err
	}
	if s := strings.TrimSpace(c.FormValue("timeout")); s != "" {
		d, err := app.ParseDuration(s)
		if err != nil {
			return in, app.Invalid("timeout", "%v", err)
		}
		in.Timeout = app.Duration(d)
	}
	for _, t := range strings.Split(c.FormValue("tags"), ",") {
		if t = strings.TrimSpace(t); t != "" {
			in.Tags = append(in.Tags, t)
		}
	}
	return in, nil
}

// periodicRun is POST /periodic/run (field name): one job now.
func (p *pages) periodicRun(c echo.Context) error {
	name := c.FormValue("name")
	job, err := p.svc.RunPeriodic(c.Request().Context(), name, actor(c))
	if err != nil {
		return p.actionErr(c, err, "/periodic")
	}
	return p.done(c, "/periodic", flash{Text: fmt.Sprintf("Periodic job %s run now: job %d enqueued.", name, job.ID),
		Href: "/jobs/" + strconv.FormatInt(job.ID, 10), Link: "Open job"})
}

// periodicPause is POST /periodic/pause and /periodic/resume (field name).
func (p *pages) periodicPause(c echo.Context, paused bool) error {
	name := c.FormValue("name")
	if _, err := p.svc.SetPeriodicPaused(c.Request().Context(), name, paused, actor(c)); err != nil {
		return p.actionErr(c, err, "/periodic")
	}
	text := fmt.Sprintf("Periodic job %s resumed: it fires next at its first fire time from now.", name)
	if paused {
		text = fmt.Sprintf("Periodic job %s paused: it fires nothing until resumed (run now still works).", name)
	}
	return p.done(c, "/periodic", flash{Text: text})
}

// periodicDelete is POST /periodic/delete (field name).
func (p *pages) periodicDelete(c echo.Context) error {
	name := c.FormValue("name")
	if err := p.svc.DeletePeriodic(c.Request().Context(), name, actor(c)); err != nil {
		return p.actionErr(c, periodicErr(err), "/periodic")
	}
	return p.done(c, "/periodic", flash{Text: fmt.Sprintf("Periodic job %s deleted.", name)})
}
