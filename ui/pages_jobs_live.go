package ui

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/queuehq/queue/app"
)

// The jobs page's live filters and bulk actions (issue 26): the list takes
// payload, error and time filters; an admin acts on every job the filter
// finds, or on the rows ticked, through a confirm page that shows the count
// and a sample (a dry run) and carries its bound, so the button acts on
// what was counted.

// liveJobPages adds the confirm page and its action.
func (p *pages) liveJobPages(e *echo.Echo, page func(string, echo.HandlerFunc), mw []echo.MiddlewareFunc) {
	page("/jobs/confirm", p.liveConfirm)
	e.POST("/jobs/bulk", p.liveBulk, mw...)
}

// pageListInput is listInput for the jobs page: besides payload.PATH
// parameters, its form's "payload" field holds PATH=VALUE pairs separated
// by ";" (customer=42; address.city=Oslo).
func pageListInput(c echo.Context) (app.ListInput, error) {
	in, err := listInput(c)
	if err != nil {
		return in, err
	}
	return in, mergePayloadText(&in.JobQuery, c.QueryParam("payload"))
}

// mergePayloadText adds the pairs of a page's payload field to q.
func mergePayloadText(q *app.JobQuery, text string) error {
	for _, part := range strings.Split(text, ";") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		path, value, ok := strings.Cut(part, "=")
		path = strings.TrimPrefix(strings.TrimSpace(path), app.PayloadParam)
		if !ok || path == "" {
			return app.Invalid("payload", "payload takes PATH=VALUE pairs separated by \";\" (customer=42; address.city=Oslo), not %q", app.TruncateString(part, 80))
		}
		if q.Payload == nil {
			q.Payload = app.PayloadValues{}
		}
		q.Payload[path] = strings.TrimSpace(value)
	}
	return nil
}

// payloadText writes q's payload filters as the page's field holds them.
func payloadText(q app.JobQuery) string {
	paths := make([]string, 0, len(q.Payload))
	for p := range q.Payload {
		paths = append(paths, p)
	}
	slices.Sort(paths)
	parts := make([]string, len(paths))
	for i, p := range paths {
		parts[i] = p + "=" + q.Payload[p]
	}
	return strings.Join(parts, "; ")
}

// livePairs are q's filters as page parameters, for links and forms.
func livePairs(q app.JobQuery) []string {
	return []string{"payload", payloadText(q), "error", q.Error, "created_after", q.CreatedAfter, "created_before", q.CreatedBefore,
		"run_after", q.RunAfter, "run_before", q.RunBefore, "finished_after", q.FinishedAfter, "finished_before", q.FinishedBefore}
}

// filterPairs are the filters of a job listing as page parameters.
func filterPairs(in app.ListInput) []string {
	wf, from := "", ""
	if in.Workflow != 0 {
		wf = strconv.FormatInt(in.Workflow, 10)
	}
	if in.ReplayedFrom != 0 {
		from = strconv.FormatInt(in.ReplayedFrom, 10)
	}
	return append([]string{"queue", in.Queue, "kind", in.Kind, "status", in.Status, "tag", in.Tag, "key", in.Key,
		"workflow", wf, "replayed_from", from}, livePairs(in.JobQuery)...)
}

// liveBulkLinks are the jobs page's links to act on every job its filter
// finds; none when the filter picks nothing of its own (a status or a
// time only narrows: the bulk actions' guard).
func liveBulkLinks(in app.ListInput) []formField {
	bi := liveBulkInput(in)
	if in.Status == string(app.StatusDeadLetter) || !(bi.Queue != "" || bi.Kind != "" || bi.Tag != "" || bi.Key != "" ||
		bi.Workflow != 0 || bi.ReplayedFrom != 0 || len(bi.Payload) > 0 || bi.Error != "") {
		return nil
	}
	var out []formField
	for _, op := range app.LiveActions {
		out = append(out, formField{Name: liveVerbs[op].link, Value: link("/jobs/confirm", append([]string{"op", op}, filterPairs(in)...)...)})
	}
	return out
}

// liveVerbs are how the page names each action.
var liveVerbs = map[string]struct{ link, button, done string }{
	app.LiveCancel:     {"Cancel…", "Cancel", "Cancelled"},
	app.LiveRetry:      {"Retry now…", "Retry now", "Retried"},
	app.LiveReschedule: {"Reschedule…", "Reschedule", "Rescheduled"},
	app.LivePrioritize: {"Re-prioritise…", "Re-prioritise", "Re-prioritised"},
}

func liveBulkInput(in app.ListInput) app.LiveBulkInput {
	return app.LiveBulkInput{Queue: in.Queue, Kind: in.Kind, Tag: in.Tag, Status: in.Status, Key: in.Key, Workflow: in.Workflow,
		ReplayedFrom: in.ReplayedFrom, JobQuery: in.JobQuery}
}

// liveConfirmView is the data of jobs_confirm.html.
type liveConfirmView struct {
	base
	Op, Heading, Text, Button string
	Danger                    bool
	Count, Matched, Skipped   int
	More                      int
	Jobs                      []*app.Job
	Fields                    []formField
	Back                      string
	// Reschedule asks when (Delay); Prioritize asks the priority.
	Reschedule, Prioritize bool
	Delay                  string
}

// liveFilterForm reads a listing's filters and the selected ids from a
// page's parameters (the confirm page's query or its form).
func liveFilterForm(c echo.Context, vals url.Values) (app.ListInput, []int64, error) {
	in := app.ListInput{Queue: vals.Get("queue"), Kind: vals.Get("kind"), Status: vals.Get("status"), Tag: vals.Get("tag"), Key: vals.Get("key"),
		JobQuery: app.ParseJobQuery(vals)}
	for name, dst := range map[string]*int64{"workflow": &in.Workflow, "replayed_from": &in.ReplayedFrom} {
		if v := vals.Get(name); v != "" {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil || n <= 0 {
				return in, nil, app.Invalid(name, "%s %q is not an id", name, app.TruncateString(v, 40))
			}
			*dst = n
		}
	}
	if err := mergePayloadText(&in.JobQuery, vals.Get("payload")); err != nil {
		return in, nil, err
	}
	ids, err := parseIDs(vals["id"])
	return in, ids, err
}

// liveConfirm is GET /jobs/confirm?op=cancel|retry|reschedule|prioritize
// and the filters (or ids): a dry run's count, a sample, and the button,
// with the bound of the count. Nothing changes until the button is pressed.
func (p *pages) liveConfirm(c echo.Context) error {
	op := c.QueryParam("op")
	in, ids, err := liveFilterForm(c, c.QueryParams())
	back := link("/jobs", filterPairs(in)...)
	if err != nil {
		return p.actionErr(c, err, back)
	}
	verb, ok := liveVerbs[op]
	if !ok {
		return p.done(c, back, flash{Kind: "error", Text: "Pick an action: cancel, retry now, reschedule or re-prioritise."})
	}
	bi := liveBulkInput(in)
	if len(ids) > 0 { // ticked rows: those, as they are
		bi = app.LiveBulkInput{IDs: ids}
	}
	bi.DryRun = true
	switch op {
	case app.LiveReschedule:
		d := app.Duration(10 * time.Minute)
		bi.Delay = &d
	case app.LivePrioritize:
		zero := 0
		bi.Priority = &zero
	}
	res, err := p.svc.BulkLive(c.Request().Context(), op, bi, actor(c))
	if err != nil {
		return p.actionErr(c, err, back)
	}
	what := describeLive(in, ids)
	if res.Changed == 0 {
		return p.done(c, back, flash{Kind: "error", Text: fmt.Sprintf("No job that %s applies to matches %s (%s matched).",
			strings.ToLower(verb.button), what, plural(res.Matched, "job", "jobs"))})
	}
	v := liveConfirmView{base: p.base(c, "Confirm", "jobs"), Op: op, Back: back, Count: res.Changed, Matched: res.Matched,
		Skipped: res.Skipped, Jobs: res.Sample, More: res.Changed - len(res.Sample), Danger: op == app.LiveCancel,
		Reschedule: op == app.LiveReschedule, Prioritize: op == app.LivePrioritize, Delay: "10m",
		Heading: fmt.Sprintf("%s %s?", verb.button, plural(res.Changed, "job", "jobs")),
		Button:  fmt.Sprintf("%s %s", verb.button, plural(res.Changed, "job", "jobs"))}
	v.Text = map[string]string{
		app.LiveCancel:     "Queued jobs are cancelled; processing ones are asked to stop (their worker sees it at its next heartbeat).",
		app.LiveRetry:      "Queued jobs waiting for a retry or their run_at become due now.",
		app.LiveReschedule: "Queued jobs get the new run_at; held keyed jobs stay held.",
		app.LivePrioritize: "Queued jobs get the new priority (lower runs first); held keyed jobs stay held.",
	}[op] + " This acts on " + what + "."
	if res.Skipped > 0 {
		v.Text += fmt.Sprintf(" %s the action does not apply to %s left alone.", plural(res.Skipped, "matching job", "matching jobs"),
			map[bool]string{true: "is", false: "are"}[res.Skipped == 1])
	}
	v.Fields = []formField{{"op", op}, {"bound", res.Bound}}
	if len(ids) > 0 {
		for _, id := range ids {
			v.Fields = append(v.Fields, formField{"id", strconv.FormatInt(id, 10)})
		}
	} else {
		kv := filterPairs(in)
		for i := 0; i < len(kv); i += 2 {
			if kv[i+1] != "" {
				v.Fields = append(v.Fields, formField{kv[i], kv[i+1]})
			}
		}
	}
	return p.render(c, http.StatusOK, "jobs_confirm", v)
}

// describeLive writes a filter (or a selection) for the confirm page.
func describeLive(in app.ListInput, ids []int64) string {
	if len(ids) > 0 {
		return plural(len(ids), "selected job", "selected jobs")
	}
	var parts []string
	for _, kv := range [][2]string{{"queue", in.Queue}, {"kind", in.Kind}, {"tag", in.Tag}, {"key", in.Key}, {"status", in.Status}} {
		if kv[1] != "" {
			parts = append(parts, kv[0]+" = "+kv[1])
		}
	}
	if in.Workflow != 0 {
		parts = append(parts, "workflow "+strconv.FormatInt(in.Workflow, 10))
	}
	if in.ReplayedFrom != 0 {
		parts = append(parts, "replayed from "+strconv.FormatInt(in.ReplayedFrom, 10))
	}
	return "jobs with " + strings.Join(append(parts, in.JobQuery.Describe()...), ", ")
}

// liveBulk is POST /jobs/bulk, sent by the confirm page: the action on the
// jobs it counted (its bound), or on the selected ids.
func (p *pages) liveBulk(c echo.Context) error {
	form, err := c.FormParams()
	if err != nil {
		return app.Invalid("form", "the form could not be read")
	}
	op := form.Get("op")
	in, ids, err := liveFilterForm(c, form)
	back := link("/jobs", filterPairs(in)...)
	if err != nil {
		return p.actionErr(c, err, back)
	}
	verb, ok := liveVerbs[op]
	if !ok {
		return p.done(c, back, flash{Kind: "error", Text: "Pick an action: cancel, retry now, reschedule or re-prioritise."})
	}
	bi := liveBulkInput(in)
	if len(ids) > 0 {
		bi = app.LiveBulkInput{IDs: ids}
	}
	bi.Bound = form.Get("bound")
	switch op {
	case app.LiveReschedule:
		if at := strings.TrimSpace(form.Get("run_at")); at != "" {
			t, err := parseFormTime("run_at", at)
			if err != nil {
				return p.actionErr(c, err, back)
			}
			bi.RunAt = t
		} else {
			d, err := app.ParseDuration(form.Get("delay"))
			if err != nil {
				return p.actionErr(c, app.Invalid("delay", "delay: %v", err), back)
			}
			ad := app.Duration(d)
			bi.Delay = &ad
		}
	case app.LivePrioritize:
		n, err := strconv.Atoi(strings.TrimSpace(form.Get("priority")))
		if err != nil {
			return p.actionErr(c, app.Invalid("priority", "priority is a whole number, -1000 to 1000"), back)
		}
		bi.Priority = &n
	}
	res, err := p.svc.BulkLive(c.Request().Context(), op, bi, actor(c))
	if err != nil {
		if res != nil && res.Changed > 0 {
			p.log.Error().Err(err).Str("action", op).Int("count", res.Changed).Msg("bulk action stopped")
		}
		return p.actionErr(c, err, back)
	}
	text := fmt.Sprintf("%s %s.", verb.done, plural(res.Changed, "job", "jobs"))
	if res.Skipped > 0 {
		text += fmt.Sprintf(" %s left alone.", plural(res.Skipped, "job", "jobs"))
	}
	return p.done(c, back, flash{Text: text})
}
