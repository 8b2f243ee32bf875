package ui

import (
	"errors"
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
	page("/jobs/go", p.jumpToJob) // issue 28: the jobs page's "Go to job #"
}

// pageListInput is listInput for the jobs page: besides payload.PATH
// parameters, its form's "payload" field holds PATH=VALUE pairs separated
// by ";" (customer=42; address.city=Oslo), and a kind ending in "*"
// matches the kinds that start with the rest (email.* finds email.welcome
// and email.digest; a lone "*" is any kind).
//
// Of the API's own parameters (listExtras) the page keeps only what its
// links carry, so that a next page reads the list its cursor came from:
// it ignores sort (the page orders by id, and the scheduled and retrying
// views by run time, itself) and count (it always counts), and reads
// kind_prefix as the kind field's "prefix*" when the field is empty.
func pageListInput(c echo.Context) (app.ListInput, error) {
	in, err := listInput(c)
	var inv *app.InvalidError
	if errors.As(err, &inv) && (inv.Field == "sort" || inv.Field == "count") {
		err = nil
	}
	in.Order, in.Count = "", false
	if asc, oerr := queryOrder(c); oerr == nil {
		in.Asc = asc // not sort=run_at's soonest first
	}
	if in.Kind != "" && !strings.HasSuffix(in.Kind, "*") {
		in.KindPrefix = "" // the field's kind, which the links carry
	} else if in.Kind == "" && in.KindPrefix != "" {
		in.Kind = in.KindPrefix + "*"
	}
	if prefix, ok := strings.CutSuffix(in.Kind, "*"); ok {
		in.Kind, in.KindPrefix = "", prefix
		if err == nil && prefix != "" {
			if kerr := app.ValidateKind(prefix); kerr != nil { // in the field's words, not the API's kind_prefix
				err = app.Invalid("kind", "kind prefix %v, followed by *", kerr)
			}
		}
	}
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
	return append([]string{"queue", in.Queue, "kind", kindParam(in), "status", in.Status, "tag", in.Tag, "key", in.Key,
		"workflow", wf, "replayed_from", from}, livePairs(in.JobQuery)...)
}

// liveBulkLinks are the jobs page's links to act on every job its filter
// finds; none when the filter picks nothing of its own (a status or a
// time only narrows: the bulk actions' guard), or matches kinds by prefix
// (the bulk actions take a whole kind).
func liveBulkLinks(in app.ListInput) []formField {
	bi := liveBulkInput(in)
	if in.Status == string(app.StatusDeadLetter) || in.KindPrefix != "" || !realFilter(bi) {
		return nil
	}
	var out []formField
	for _, op := range app.LiveActions {
		out = append(out, formField{Name: liveVerbs[op].link, Value: link("/jobs/confirm", append([]string{"op", op}, filterPairs(in)...)...)})
	}
	return out
}

// realFilter reports whether bi picks jobs by something of their own, as
// the bulk actions need (app's LiveBulkInput.real): ids, a queue, kind,
// tag, key, workflow, replayed_from, payload field or error text.
func realFilter(bi app.LiveBulkInput) bool {
	return len(bi.IDs) > 0 || bi.Queue != "" || bi.Kind != "" || bi.Tag != "" || bi.Key != "" ||
		bi.Workflow != 0 || bi.ReplayedFrom != 0 || len(bi.Payload) > 0 || bi.Error != ""
}

// opRunNow is the pages' name of retry now on a scheduled job (run it now
// instead of at its run_at): the same action, app.LiveRetry, worded for
// a job that has not failed.
const opRunNow = "run"

// liveVerb is how the pages word one action.
type liveVerb struct {
	action       string // the app's action (app.LiveCancel, ...)
	link, button string // "Cancel…" (a link to the confirm page), "Cancel" (its button)
	done         string // "Cancelled" (3 jobs.)
	one          string // "Job #%d cancelled.": the message after acting on one job
	applies      string // the jobs the action acts on
	text         string // what the confirm page says it does
	danger       bool
}

// liveVerbs are the pages' actions on jobs by the op of their forms.
var liveVerbs = map[string]liveVerb{
	app.LiveCancel: {action: app.LiveCancel, link: "Cancel…", button: "Cancel", done: "Cancelled", one: "Job #%d cancelled.",
		applies: "queued and processing jobs", danger: true,
		text: "Queued jobs are cancelled; processing ones are asked to stop (their worker sees it at its next heartbeat)."},
	app.LiveRetry: {action: app.LiveRetry, link: "Retry now…", button: "Retry now", done: "Retried", one: "Job #%d is due now: a worker may claim it.",
		applies: "queued jobs waiting for a retry or their run_at",
		text:    "Queued jobs waiting for a retry or their run_at become due now."},
	opRunNow: {action: app.LiveRetry, link: "Run now…", button: "Run now", done: "Made due now:", one: "Job #%d is due now: a worker may claim it.",
		applies: "queued jobs waiting for their run_at",
		text:    "Scheduled jobs become due now instead of at their run_at."},
	app.LiveReschedule: {action: app.LiveReschedule, link: "Reschedule…", button: "Reschedule", done: "Rescheduled", one: "Job #%d rescheduled.",
		applies: "queued jobs", text: "Queued jobs get the new run_at; held keyed jobs stay held."},
	app.LivePrioritize: {action: app.LivePrioritize, link: "Re-prioritise…", button: "Re-prioritise", done: "Re-prioritised", one: "Job #%d re-prioritised.",
		applies: "queued jobs", text: "Queued jobs get the new priority (lower runs first); held keyed jobs stay held."},
	app.LiveDelete: {action: app.LiveDelete, link: "Delete…", button: "Delete", done: "Deleted", one: "Job #%d deleted.",
		applies: "finished jobs (done or cancelled)", danger: true,
		text: "Finished jobs (done or cancelled) are removed for good; others are left alone."},
}

// pickOp is the message for a form with no known op.
const pickOp = "Pick an action: cancel, retry now, run now, reschedule, re-prioritise or delete."

// noneTicked is the message for a form that names neither rows nor a filter.
const noneTicked = "Tick at least one job in the list first, then press the button (or filter by queue, kind, tag, key, payload or error text to act on every job the filter finds)."

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

// liveFilterForm reads a listing's filters, the selected ids and the page
// to go back to from a page's parameters (the confirm page's query or its
// form). back is a jobs page: the form's "back" when it names one (the
// list the rows were ticked on, a job's page), else the list of the filter.
func liveFilterForm(c echo.Context, vals url.Values) (in app.ListInput, ids []int64, back string, err error) {
	in = app.ListInput{Queue: vals.Get("queue"), Kind: vals.Get("kind"), Status: vals.Get("status"), Tag: vals.Get("tag"), Key: vals.Get("key"),
		JobQuery: app.ParseJobQuery(vals)}
	back = vals.Get("back")
	if !jobsPage(back) {
		back = ""
	}
	defer func() {
		if back == "" {
			back = link("/jobs", filterPairs(in)...)
		}
	}()
	if strings.HasSuffix(in.Kind, "*") {
		return in, nil, back, app.Invalid("kind", "the bulk actions take a whole kind, not a prefix (%s): give the kind, or tick the rows to act on", app.TruncateString(in.Kind, 80))
	}
	for name, dst := range map[string]*int64{"workflow": &in.Workflow, "replayed_from": &in.ReplayedFrom} {
		if v := vals.Get(name); v != "" {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil || n <= 0 {
				return in, nil, back, app.Invalid(name, "%s %q is not an id", name, app.TruncateString(v, 40))
			}
			*dst = n
		}
	}
	if err := mergePayloadText(&in.JobQuery, vals.Get("payload")); err != nil {
		return in, nil, back, err
	}
	ids, err = parseIDs(vals["id"])
	return in, ids, back, err
}

// jobsPage reports whether s is a jobs page to come back to: the list
// (/jobs, /jobs?...) or a job's page (/jobs/123).
func jobsPage(s string) bool {
	if !localPath(s) {
		return false
	}
	if s == "/jobs" || strings.HasPrefix(s, "/jobs?") {
		return true
	}
	_, ok := jobPageID(s)
	return ok
}

// jobPageID is the id of a job's page path (/jobs/123).
func jobPageID(s string) (int64, bool) {
	rest, ok := strings.CutPrefix(s, "/jobs/")
	if !ok {
		return 0, false
	}
	id, err := strconv.ParseInt(rest, 10, 64)
	return id, err == nil && id > 0 && strconv.FormatInt(id, 10) == rest
}

// liveTarget is what a confirm page (or its form) acts on: the ticked ids
// as they are, or the filter.
func liveTarget(in app.ListInput, ids []int64) app.LiveBulkInput {
	if len(ids) > 0 {
		return app.LiveBulkInput{IDs: ids}
	}
	return liveBulkInput(in)
}

// liveConfirm is GET /jobs/confirm?op=cancel|retry|run|reschedule|prioritize|delete
// and the filters (or ids): a dry run's count, a sample, and the button,
// with the bound of the count. Nothing changes until the button is pressed.
// No rows and no filter, an unknown op, or jobs the action does not apply
// to go back with a message.
func (p *pages) liveConfirm(c echo.Context) error {
	op := c.QueryParam("op")
	in, ids, back, err := liveFilterForm(c, c.QueryParams())
	if err != nil {
		return p.actionErr(c, err, back)
	}
	verb, ok := liveVerbs[op]
	if !ok {
		return p.done(c, back, flash{Kind: "error", Text: pickOp})
	}
	bi := liveTarget(in, ids)
	if !realFilter(bi) {
		return p.done(c, back, flash{Kind: "error", Text: noneTicked})
	}
	bi.DryRun = true
	switch verb.action {
	case app.LiveReschedule:
		d := app.Duration(10 * time.Minute)
		bi.Delay = &d
	case app.LivePrioritize:
		zero := 0
		bi.Priority = &zero
	}
	ctx := c.Request().Context()
	res, err := p.svc.BulkLive(ctx, verb.action, bi, actor(c))
	if err != nil {
		return p.actionErr(c, err, back)
	}
	what := describeLive(in, ids)
	if res.Changed == 0 {
		return p.done(c, back, flash{Kind: "error", Text: p.notApplicable(c, verb, in, ids, res)})
	}
	count := plural(res.Changed, "job", "jobs")
	if len(ids) == 1 {
		count = "job #" + strconv.FormatInt(ids[0], 10)
	}
	v := liveConfirmView{base: p.base(c, "Confirm", "jobs"), Op: op, Back: back, Count: res.Changed, Matched: res.Matched,
		Skipped: res.Skipped, Jobs: res.Sample, More: res.Changed - len(res.Sample), Danger: verb.danger,
		Reschedule: verb.action == app.LiveReschedule, Prioritize: verb.action == app.LivePrioritize, Delay: "10m",
		Heading: fmt.Sprintf("%s %s?", verb.button, count), Button: fmt.Sprintf("%s %s", verb.button, count)}
	v.Text = verb.text + " This acts on " + what + "."
	if res.Skipped > 0 {
		v.Text += fmt.Sprintf(" %s the action does not apply to %s left alone.", plural(res.Skipped, "matching job", "matching jobs"),
			map[bool]string{true: "is", false: "are"}[res.Skipped == 1])
	}
	v.Fields = []formField{{"op", op}, {"bound", res.Bound}, {"back", back}}
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

// notApplicable says why an action changes none of the jobs asked for:
// for one job, its state.
func (p *pages) notApplicable(c echo.Context, verb liveVerb, in app.ListInput, ids []int64, res *app.LiveBulkResult) string {
	switch {
	case len(ids) == 1:
		j, err := p.svc.Get(c.Request().Context(), ids[0], 0, false)
		if err != nil {
			return fmt.Sprintf("Job #%d does not exist (any more): nothing to %s.", ids[0], strings.ToLower(verb.button))
		}
		return fmt.Sprintf("%s does not apply to job #%d, which is %s: it acts on %s.", verb.button, ids[0], strings.ReplaceAll(jobStatus(j, p.h.opts.Now()), "_", " "), verb.applies)
	case len(ids) > 1:
		return fmt.Sprintf("%s applies to none of the %s (%s): it acts on %s.", verb.button, plural(len(ids), "selected job", "selected jobs"),
			plural(res.Matched, "still exists", "still exist"), verb.applies)
	}
	return fmt.Sprintf("No job that %s applies to matches %s (%s matched): it acts on %s.",
		strings.ToLower(verb.button), describeLive(in, ids), plural(res.Matched, "job", "jobs"), verb.applies)
}

// describeLive writes a filter (or a selection) for the confirm page.
func describeLive(in app.ListInput, ids []int64) string {
	if len(ids) == 1 {
		return "job #" + strconv.FormatInt(ids[0], 10)
	}
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
// jobs it counted (its bound), or on the selected ids; then back to the
// page the confirm page came from (the jobs list after a job is deleted).
func (p *pages) liveBulk(c echo.Context) error {
	form, err := c.FormParams()
	if err != nil {
		return app.Invalid("form", "the form could not be read")
	}
	op := form.Get("op")
	in, ids, back, err := liveFilterForm(c, form)
	if err != nil {
		return p.actionErr(c, err, back)
	}
	verb, ok := liveVerbs[op]
	if !ok {
		return p.done(c, back, flash{Kind: "error", Text: pickOp})
	}
	bi := liveTarget(in, ids)
	if !realFilter(bi) {
		return p.done(c, back, flash{Kind: "error", Text: noneTicked})
	}
	bi.Bound = form.Get("bound")
	switch verb.action {
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
	ctx := c.Request().Context()
	res, err := p.svc.BulkLive(ctx, verb.action, bi, actor(c))
	if err != nil {
		if res != nil && res.Changed > 0 {
			p.log.Error().Err(err).Str("action", verb.action).Int("count", res.Changed).Msg("bulk action stopped")
		}
		return p.actionErr(c, err, back)
	}
	if res.Changed == 0 {
		return p.done(c, back, flash{Kind: "error", Text: "Nothing changed: " + p.notApplicable(c, verb, in, ids, res)})
	}
	if _, onJob := jobPageID(back); onJob && verb.action == app.LiveDelete {
		back = "/jobs" // its page is gone
	}
	if len(ids) == 1 && res.Changed == 1 {
		text := fmt.Sprintf(verb.one, ids[0])
		if verb.action == app.LiveCancel {
			if j, err := p.svc.Get(ctx, ids[0], 0, false); err == nil && j.Status == app.StatusProcessing {
				text = fmt.Sprintf("Cancel requested: the worker running job #%d is told at its next heartbeat.", ids[0])
			}
		}
		return p.done(c, back, flash{Text: text})
	}
	text := fmt.Sprintf("%s %s.", verb.done, plural(res.Changed, "job", "jobs"))
	if res.Skipped > 0 {
		text += fmt.Sprintf(" %s left alone.", plural(res.Skipped, "job", "jobs"))
	}
	return p.done(c, back, flash{Text: text})
}
