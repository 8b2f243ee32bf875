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
	// MoveURL is the confirm page of moving the jobs matching the filter to
	// the DLQ, when the filter names a queue, kind or tag; ClearReplayed
	// drops the replayed_from filter.
	MoveURL       string
	ClearReplayed string
	Order         string
	QueueNames    []string
	Statuses      []string
	Jobs          []*app.Job
	Error         string
	NextURL       string
	FirstURL      string
	SortURL       string
	// PayloadText is the payload filter as the form's field holds it;
	// LiveLinks the bulk actions on the filter's jobs (pages_jobs_live.go).
	PayloadText  string
	TimeFiltered bool
	LiveLinks    []formField
}

var jobStatuses = []string{"queued", "scheduled", "processing", "done", "cancelled", "dead_letter"}

// jobs is GET /jobs: the filtered, keyset-paginated job list.
func (p *pages) jobs(c echo.Context) error {
	ctx := c.Request().Context()
	v := jobsView{base: p.base(c, "Jobs", "jobs"), Statuses: jobStatuses}
	in, err := pageListInput(c)
	v.Filter, v.PayloadText, v.LiveLinks = in, payloadText(in.JobQuery), liveBulkLinks(in)
	v.TimeFiltered = in.CreatedAfter+in.CreatedBefore+in.RunAfter+in.RunBefore+in.FinishedAfter+in.FinishedBefore != ""
	v.Order = "desc"
	if in.Asc {
		v.Order = "asc"
	}
	status := http.StatusOK
	if err == nil {
		var page *app.JobPage
		if page, err = p.svc.List(ctx, in); err == nil {
			v.Jobs = page.Jobs
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
	if in.ReplayedFrom != 0 {
		noFrom := in
		noFrom.ReplayedFrom = 0
		v.ClearReplayed = p.jobsURL(noFrom, v.Order, "")
	} else if mf := (moveFilter{in.Queue, in.Kind, in.Tag}); !mf.empty() && in.Key == "" && (in.Status == "" || in.Status == "queued" || in.Status == "scheduled") {
		v.MoveURL = link("/dlq/confirm", append([]string{"op", opMove}, mf.pairs()...)...)
	}
	if v.QueueNames, err = p.queueNames(ctx, in.Queue); err != nil {
		return err
	}
	return p.render(c, status, "jobs", v)
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
	return link("/jobs", append([]string{"queue", in.Queue, "kind", in.Kind, "status", in.Status, "tag", in.Tag, "key", in.Key, "replayed_from", from,
		"order", order, "limit", limit, "cursor", cursor}, livePairs(in.JobQuery)...)...)
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
	CanCancel bool
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
		CanCancel: job.Status == app.StatusQueued || (job.Status == app.StatusProcessing && !job.CancelRequested),
		CanMove:   job.Status == app.StatusQueued || job.Status == app.StatusCancelled}
	for _, e := range job.Errors {
		v.Errors = append(v.Errors, attemptView{AttemptError: e, Text: textBlock(e.Error)})
	}
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
