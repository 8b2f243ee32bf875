package ui

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/queuehq/queue/app"
)

// dashboardView is the data of dashboard.html.
type dashboardView struct {
	base
	Total  app.QueueStats
	Queues []queueRow
	Chart  chart
	// Unclaimed are the kinds whose due jobs waited UnclaimedAfter with no
	// job of the kind started: no worker handles them. Waited says how long.
	Unclaimed []app.UnclaimedKind
	Waited    string
	// ChartQueue is the queue the chart shows (empty: all); ChartQueues the choices.
	ChartQueue  string
	ChartQueues []string
	// ChartRange is the chart's range and its switch (pages_charts.go).
	ChartRange rangeNav
}

// queueRow is one queue with its counts and state.
type queueRow struct {
	app.QueueStats
	Paused   bool
	PausedAt *time.Time
	Config   app.QueueConfig
	// Held counts the jobs waiting for their key to have room; Keyed: the
	// queue limits its keys (the queues page only).
	Held  int
	Keyed bool
}

// dashboard is GET /: counts per queue and the last hour's throughput.
// Its three reads run at once; the counts (Store.Stats) are the costly one.
func (p *pages) dashboard(c echo.Context) error {
	ctx := c.Request().Context()
	now := p.h.opts.Now()
	var (
		wg               sync.WaitGroup
		stats            *app.Stats
		queues           []app.QueueInfo
		counts           []app.MinuteCount
		errS, errQ, errT error
	)
	wg.Add(3)
	go func() { defer wg.Done(); stats, errS = p.svc.Stats(ctx) }()
	go func() { defer wg.Done(); queues, errQ = p.svc.Queues(ctx) }()
	go func() {
		defer wg.Done()
		counts, errT = p.svc.Throughput(ctx, now.UTC().Truncate(time.Minute).Add(-(chartMinutes-1)*time.Minute))
	}()
	wg.Wait()
	if err := errors.Join(errS, errQ, errT); err != nil {
		return err
	}
	v := dashboardView{base: p.base(c, "Dashboard", "dashboard"), Total: stats.Total,
		Queues: mergeQueues(stats.Queues, queues), ChartQueue: c.QueryParam("queue"),
		Unclaimed: inScope(who(c), stats.UnclaimedKinds, func(u app.UnclaimedKind) string { return u.Queue }),
		Waited:    shortDuration(app.UnclaimedAfter)}
	slices.SortFunc(v.Unclaimed, func(a, b app.UnclaimedKind) int {
		return strings.Compare(a.Queue+"\x00"+a.Kind, b.Queue+"\x00"+b.Kind)
	})
	v.Refresh = 5
	for _, q := range v.Queues {
		v.ChartQueues = append(v.ChartQueues, q.Queue)
	}
	if v.ChartQueue != "" {
		mine := counts[:0:0]
		for _, m := range counts {
			if m.Queue == v.ChartQueue {
				mine = append(mine, m)
			}
		}
		counts = mine
	}
	if err := p.dashboardChart(c, &v, counts, now); err != nil {
		return err
	}
	return p.render(c, http.StatusOK, "dashboard", v)
}

// mergeQueues joins the counts of Stats with the state and config of
// Queues: every queue either knows appears once, in name order.
func mergeQueues(stats []app.QueueStats, infos []app.QueueInfo) []queueRow {
	byName := map[string]int{}
	var out []queueRow
	for _, st := range stats {
		byName[st.Queue] = len(out)
		out = append(out, queueRow{QueueStats: st})
	}
	for _, q := range infos {
		i, ok := byName[q.Name]
		if !ok {
			i = len(out)
			byName[q.Name] = i
			out = append(out, queueRow{QueueStats: app.QueueStats{Queue: q.Name}})
		}
		out[i].Paused, out[i].PausedAt, out[i].Config = q.Paused, q.PausedAt, q.Config
	}
	for i := 1; i < len(out); i++ { // both inputs are sorted; keep the union sorted
		for j := i; j > 0 && out[j].Queue < out[j-1].Queue; j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}

// jobsView is the data of jobs.html.
type jobsView struct {
	base
	Filter app.ListInput
	// KindText is the kind field as typed: the kind, or a prefix and "*".
	KindText string
	// MoveURL is the confirm page of moving the jobs matching the filter to
	// the DLQ, when the filter names a queue, kind or tag; ClearReplayed
	// drops the replayed_from filter.
	MoveURL       string
	ClearReplayed string
	Order         string
	// RunOrder: the list is in run order (soonest first), as the scheduled
	// and retrying views are; the order choice does not apply.
	RunOrder   bool
	QueueNames []string
	Statuses   []statusChoice
	Jobs       []*app.Job
	// Total is how many jobs the filter matches, when the store counted
	// (Counted); Capped: more than jobsCountCap match, and Total is the cap.
	Total    int
	Counted  bool
	Capped   bool
	Error    string
	NextURL  string
	FirstURL string
	SortURL  string
	// Here is this list's URL, where the confirm page of ticked rows
	// comes back to.
	Here string
	// PayloadText is the payload filter as the form's field holds it;
	// LiveLinks the bulk actions on the filter's jobs (pages_jobs_live.go).
	PayloadText  string
	TimeFiltered bool
	LiveLinks    []formField
	// Kinds and Tags are the suggestions of the kind and tag fields
	// (a <datalist>: no script needed).
	Kinds, Tags []string
}

// statusChoice is one choice of the status filter.
type statusChoice struct{ Value, Label string }

// jobStatuses are the status filter's choices. "queued" are the jobs due
// now; "scheduled" and "retrying" wait for their run_at ("retrying" takes
// every queued job with a failed attempt, due or not).
var jobStatuses = []statusChoice{{"queued", "queued (due)"}, {"scheduled", "scheduled"}, {"retrying", "retrying (after a failed attempt)"},
	{"processing", "processing"}, {"done", "done"}, {"cancelled", "cancelled"}, {"dead_letter", "dead letter"}}

// runOrdered are the statuses whose list is in run order, soonest first.
func runOrdered(status string) bool { return status == "scheduled" || status == "retrying" }

// suggestLimit is how many kinds or tags a filter field suggests.
const suggestLimit = 100

// jobsCountCap bounds the jobs page's total ("10,000+ jobs match"): the
// page re-reads it on every live update, up to once a second per open tab,
// and an exact count of a million jobs takes a table scan each time.
const jobsCountCap = 10_000

// jobs is GET /jobs: the filtered, keyset-paginated job list, with the
// total it matches. A kind ending in "*" matches the kinds starting with
// the rest; the scheduled and retrying views are in run order.
func (p *pages) jobs(c echo.Context) error {
	ctx := c.Request().Context()
	v := jobsView{base: p.base(c, "Jobs", "jobs"), Statuses: jobStatuses}
	v.Refresh = 5
	in, err := pageListInput(c)
	v.Filter, v.KindText, v.PayloadText, v.LiveLinks = in, kindParam(in), payloadText(in.JobQuery), liveBulkLinks(in)
	v.TimeFiltered = in.CreatedAfter+in.CreatedBefore+in.RunAfter+in.RunBefore+in.FinishedAfter+in.FinishedBefore != ""
	v.Order = "desc"
	if in.Asc {
		v.Order = "asc"
	}
	list := in
	if v.RunOrder = runOrdered(in.Status); v.RunOrder {
		list.Order, list.Asc, v.Order = "run_at", true, "desc"
	}
	list.Count, list.CountCap = true, jobsCountCap
	status := http.StatusOK
	if err == nil {
		var page *app.JobPage
		if page, err = p.svc.List(ctx, list); err == nil {
			v.Jobs = page.Jobs
			if page.Total != nil {
				v.Total, v.Counted, v.Capped = *page.Total, true, page.TotalCapped
			}
			if page.NextCursor != "" {
				v.NextURL = p.jobsURL(in, v.Order, page.NextCursor)
			}
		}
	}
	if err != nil {
		ae, known := toAPIError(err)
		if !known || ae.Status >= 500 {
			return err
		}
		v.Error, status = ae.Message, ae.Status
		v.Jobs = nil
	}
	if in.Cursor != "" {
		v.FirstURL = p.jobsURL(in, v.Order, "")
	}
	flip := "asc"
	if in.Asc {
		flip = "desc"
	}
	v.SortURL = p.jobsURL(in, flip, "")
	v.Here = p.jobsURL(in, v.Order, in.Cursor)
	if in.ReplayedFrom != 0 {
		noFrom := in
		noFrom.ReplayedFrom = 0
		v.ClearReplayed = p.jobsURL(noFrom, v.Order, "")
	} else if mf := (moveFilter{in.Queue, in.Kind, in.Tag}); !mf.empty() && in.Key == "" && in.KindPrefix == "" &&
		(in.Status == "" || in.Status == "queued" || in.Status == "scheduled") {
		v.MoveURL = link("/dlq/confirm", append([]string{"op", opMove}, mf.pairs()...)...)
	}
	if v.QueueNames, err = p.queueNames(ctx, in.Queue); err != nil {
		return err
	}
	if c.Request().Header.Get(liveReadHeader) == "" { // a live re-read swaps only the regions; the datalists are outside them
		v.Kinds, v.Tags = p.suggest(ctx, "kind"), p.suggest(ctx, "tag")
	}
	return p.render(c, status, "jobs", v)
}

// liveReadHeader marks app.js's re-read of a live page: it takes only the
// [data-live] regions, so a page may skip what it shows outside them.
const liveReadHeader = "X-Queue-Live"

// suggest lists values of field for a filter's <datalist>. The list is a
// help, not the page: if it cannot be read the page goes without it.
func (p *pages) suggest(ctx context.Context, field string) []string {
	vals, err := p.svc.Suggest(ctx, field, "", suggestLimit)
	if err != nil {
		p.log.Warn().Err(err).Str("field", field).Msg("jobs page: no suggestions")
		return nil
	}
	return vals
}

// kindParam is the kind filter as the page's field and links hold it: the
// kind, or the prefix followed by "*".
func kindParam(in app.ListInput) string {
	if in.KindPrefix != "" {
		return in.KindPrefix + "*"
	}
	return in.Kind
}

func (p *pages) jobsURL(in app.ListInput, order, cursor string) string {
	if order == "desc" {
		order = ""
	}
	limit := ""
	if in.Limit != 0 {
		limit = strconv.Itoa(in.Limit)
	}
	from := ""
	if in.ReplayedFrom != 0 {
		from = strconv.FormatInt(in.ReplayedFrom, 10)
	}
	return link("/jobs", append([]string{"queue", in.Queue, "kind", kindParam(in), "status", in.Status, "tag", in.Tag, "key", in.Key, "replayed_from", from,
		"order", order, "limit", limit, "cursor", cursor}, livePairs(in.JobQuery)...)...)
}

// jumpToJob is GET /jobs/go?id=N (the jobs page's "Go to job #" form):
// to the job's page, or its dead-letter row's; anything else goes back
// to the list with a message.
func (p *pages) jumpToJob(c echo.Context) error {
	raw := strings.TrimSpace(c.QueryParam("id"))
	digits := strings.TrimSpace(strings.TrimPrefix(raw, "#"))
	if digits == "" {
		return p.done(c, "/jobs", flash{Kind: "error", Text: "Type a job id to go to it, as 1234 or #1234."})
	}
	id, err := strconv.ParseInt(digits, 10, 64)
	if err != nil || id <= 0 {
		return p.done(c, "/jobs", flash{Kind: "error", Text: fmt.Sprintf("%q is not a job id: type its number, as 1234 or #1234.", app.TruncateString(raw, 40))})
	}
	job, err := p.svc.Get(c.Request().Context(), id, 0, false)
	if errors.Is(err, app.ErrNotFound) {
		return p.done(c, "/jobs", flash{Kind: "error", Text: fmt.Sprintf("There is no job #%d: it was never made, or was deleted or removed by retention.", id)})
	}
	if err != nil {
		return p.actionErr(c, err, "/jobs")
	}
	if job.DeadLetter != nil {
		return c.Redirect(http.StatusSeeOther, "/dlq/"+strconv.FormatInt(id, 10))
	}
	return c.Redirect(http.StatusSeeOther, "/jobs/"+strconv.FormatInt(id, 10))
}

// queueNames lists the known queues for a filter's choices, with current
// (the filter's value) among them even if no queue has that name yet.
func (p *pages) queueNames(ctx context.Context, current string) ([]string, error) {
	qs, err := p.svc.Queues(ctx)
	if err != nil {
		return nil, err
	}
	var names []string
	found := current == ""
	for _, q := range qs {
		names = append(names, q.Name)
		found = found || q.Name == current
	}
	if !found && app.ValidateQueue(current) == nil {
		names = append(names, current)
	}
	return names, nil
}

// jobView is the data of job.html, for a job and for a dead-letter row.
type jobView struct {
	base
	Job       *app.Job
	Status    string
	Payload   jsonBlock
	Result    jsonBlock
	Errors    []attemptView
	Dead      *app.DeadLetterInfo
	LastError jsonBlock
	// Actions are the job's actions that apply to it now (retry now, run
	// now, cancel, delete), each a link to the jobs' confirm page.
	Actions []jobAction
	// StatusNote says what a waiting job waits for.
	StatusNote string
	// CanMove: a queued, scheduled or cancelled job may move to the DLQ.
	CanMove bool
	From    string // "jobs" or "dlq": where the replay form returns to
	// Row is the dead-letter row (with the failed attempt) of a dead job.
	Row *app.DeadJob
	// PayloadEdit is the row's payload for the replay form's field, empty
	// when it is too large for a form (PayloadSize says how large).
	PayloadEdit string
	PayloadRows int
	PayloadSize string
	// ReplayedJobs lists the jobs made from the row.
	ReplayedJobs string
	QueueNames   []string
	// Live is the progress bar and the attempts' log (pages_progress.go).
	Live *liveView
}

// jobAction is one of a job page's action links.
type jobAction struct {
	Label, URL string
	Danger     bool
}

// jobActions are the actions that apply to job j at now, as links to the
// confirm page (GET /jobs/confirm, one id), which comes back to the job:
// retry now (queued after a failed attempt, waiting out its backoff), run
// now (scheduled, no failed attempt), cancel (queued, or processing with no
// cancel requested yet) and delete (done or cancelled).
func jobActions(j *app.Job, now time.Time) []jobAction {
	id := strconv.FormatInt(j.ID, 10)
	confirm := func(op string) string { return link("/jobs/confirm", "op", op, "id", id, "back", "/jobs/"+id) }
	var out []jobAction
	switch {
	case j.Scheduled(now) && j.Attempts > 0:
		out = append(out, jobAction{Label: "Retry now…", URL: confirm(app.LiveRetry)})
	case j.Scheduled(now):
		out = append(out, jobAction{Label: "Run now…", URL: confirm(opRunNow)})
	}
	switch {
	case j.Status == app.StatusQueued:
		out = append(out, jobAction{Label: "Cancel…", URL: confirm(app.LiveCancel), Danger: true})
	case j.Status == app.StatusProcessing && !j.CancelRequested:
		out = append(out, jobAction{Label: "Request cancel…", URL: confirm(app.LiveCancel), Danger: true})
	case j.Status == app.StatusDone || j.Status == app.StatusCancelled:
		out = append(out, jobAction{Label: "Delete…", URL: confirm(app.LiveDelete), Danger: true})
	}
	return out
}

// statusNote says when a waiting job runs: a retry's backoff or a
// schedule, with the time as text.
func statusNote(j *app.Job, status string, now time.Time) string {
	when := absTime(j.RunAt) + " (" + relTime(now, j.RunAt) + ")"
	switch status {
	case "retrying":
		return fmt.Sprintf("Attempt %d of %d failed; the job waits out its backoff and runs again at %s.", j.Attempts, j.MaxAttempts, when)
	case "scheduled":
		return "Scheduled: the job runs at " + when + "."
	}
	return ""
}

// maxPayloadEdit is the largest payload (indented) the replay form offers
// to edit: a form may be pageBodyLimit bytes, and URL-encoding JSON can
// nearly triple it.
const maxPayloadEdit = 16 << 10

type attemptView struct {
	app.AttemptError
	Text jsonBlock
}

// job is GET /jobs/{id}: every field, payload, result, errors, events and
// the actions the job's state allows.
func (p *pages) job(c echo.Context) error {
	id, err := pathID(c)
	if err != nil {
		return err
	}
	job, err := p.svc.Get(c.Request().Context(), id, 0, true)
	if err != nil {
		return err
	}
	return p.renderJob(c, job, "jobs")
}

func (p *pages) renderJob(c echo.Context, job *app.Job, from string) error {
	ctx := c.Request().Context()
	title := "Job " + strconv.FormatInt(job.ID, 10)
	if job.DeadLetter != nil && from == "dlq" {
		title = "Dead letter " + strconv.FormatInt(job.ID, 10)
	}
	v := jobView{base: p.base(c, title, from), Job: job, Status: jobStatus(job, p.h.opts.Now()),
		Payload: jsonBlockOf(job.Payload), Result: jsonBlockOf(job.Result), Dead: job.DeadLetter, From: from,
		CanMove: job.Status == app.StatusQueued || job.Status == app.StatusCancelled}
	for _, e := range job.Errors {
		v.Errors = append(v.Errors, attemptView{AttemptError: e, Text: textBlock(e.Error)})
	}
	now := p.h.opts.Now()
	v.Actions, v.StatusNote = jobActions(job, now), statusNote(job, v.Status, now)
	v.Refresh = 5
	var err error
	if v.Live, err = p.jobLive(ctx, c, job); err != nil {
		return err
	}
	if v.Dead != nil {
		v.LastError = textBlock(v.Dead.LastError)
		row, err := p.svc.GetDead(ctx, job.ID)
		if err != nil {
			return err
		}
		v.Row = row
		v.ReplayedJobs = link("/jobs", "replayed_from", strconv.FormatInt(row.ID, 10))
		if text := v.Payload.Text; len(text) <= maxPayloadEdit {
			v.PayloadEdit, v.PayloadRows = text, min(max(strings.Count(text, "\n")+2, 4), 20)
		} else {
			v.PayloadSize = byteSize(len(text))
		}
		if v.Admin {
			if v.QueueNames, err = p.queueNames(ctx, ""); err != nil {
				return err
			}
		}
	}
	return p.render(c, http.StatusOK, "job", v)
}

// move is POST /jobs/{id}/move: an operator moves a queued, scheduled or
// cancelled job into the dead-letter queue (reason admin_move), with the
// reason typed in the form kept on the row as its note.
func (p *pages) move(c echo.Context) error {
	id, err := pathID(c)
	if err != nil {
		return err
	}
	back := "/jobs/" + strconv.FormatInt(id, 10)
	note := strings.TrimSpace(c.FormValue("note"))
	res, err := p.svc.BulkDead(c.Request().Context(), app.BulkMove, app.BulkInput{IDs: []int64{id}, Note: note}, actor(c))
	if err != nil {
		return p.actionErr(c, err, back)
	}
	if res.Count == 0 {
		return p.done(c, back, flash{Kind: "error", Text: fmt.Sprintf("Job #%d was not moved: it is no longer queued, scheduled or cancelled.", id)})
	}
	return p.done(c, "/dlq/"+strconv.FormatInt(id, 10), flash{Text: fmt.Sprintf("Job #%d moved to the dead-letter queue.", id)})
}

// cancel is POST /jobs/{id}/cancel: an operator's cancel, audited as the
// logged-in actor. A processing job gets a cancel request its worker sees.
func (p *pages) cancel(c echo.Context) error {
	id, err := pathID(c)
	if err != nil {
		return err
	}
	back := "/jobs/" + strconv.FormatInt(id, 10)
	job, err := p.svc.Cancel(c.Request().Context(), id, nil, actor(c))
	if err != nil {
		return p.actionErr(c, err, back)
	}
	text := "Job #" + strconv.FormatInt(id, 10) + " cancelled."
	if job.Status == app.StatusProcessing {
		text = "Cancel requested: the worker running job #" + strconv.FormatInt(id, 10) + " is told at its next heartbeat."
	}
	return p.done(c, back, flash{Text: text})
}
