package ui

import (
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/queuehq/queue/app"
)

// workflowsView is the data of workflows.html.
type workflowsView struct {
	base
	Status    string
	Name      string
	Statuses  []string
	Workflows []*app.Workflow
	Error     string
	NextURL   string
	FirstURL  string
}

var workflowStatuses = []string{"running", "blocked", "done", "cancelled"}

// workflows is GET /workflows: workflows newest first, filtered by status
// and name, a page at a time (the cursor of ListWorkflows).
func (p *pages) workflows(c echo.Context) error {
	v := workflowsView{base: p.base(c, "Workflows", "workflows"), Status: c.QueryParam("status"),
		Name: c.QueryParam("name"), Statuses: workflowStatuses}
	v.Refresh = 10
	cursor := c.QueryParam("cursor")
	limit, err := queryInt(c, "limit")
	status := http.StatusOK
	if err == nil {
		var page *app.WorkflowPage
		in := app.WorkflowListInput{Status: v.Status, Name: v.Name, Cursor: cursor, Limit: limit}
		if page, err = p.svc.ListWorkflows(c.Request().Context(), in); err == nil {
			v.Workflows = page.Workflows
			if page.NextCursor != "" {
				v.NextURL = workflowsURL(v.Status, v.Name, limit, page.NextCursor)
			}
		}
	}
	if err != nil {
		ae, known := toAPIError(err)
		if !known || ae.Status >= 500 {
			return err
		}
		v.Error, status, v.Workflows = ae.Message, ae.Status, nil
	}
	if cursor != "" {
		v.FirstURL = workflowsURL(v.Status, v.Name, limit, "")
	}
	return p.render(c, status, "workflows", v)
}

func workflowsURL(status, name string, limit int, cursor string) string {
	l := ""
	if limit != 0 {
		l = strconv.Itoa(limit)
	}
	return link("/workflows", "status", status, "name", name, "limit", l, "cursor", cursor)
}

// workflowView is the data of workflow.html.
type workflowView struct {
	base
	WF *app.WorkflowView
	// Elapsed is from submission to the end, or to now while unfinished.
	Elapsed   string
	CanCancel bool
	// Critical is the critical path's steps, first to last.
	Critical []stepRow
	// Graph is nil for a workflow of more than GraphMax steps.
	Graph    *graph
	GraphMax int
	// States counts the steps in each state, for the table's filter;
	// State is the filter ("" for all).
	States []stateChip
	State  string
	// Steps is this page of the table: rows From+1 to From+len(Steps) of
	// Matching.
	Steps    []stepRow
	From     int
	FirstRow int // From+1, as the heading counts
	Matching int
	Error    string
	FirstURL string
	NextURL  string
}

// stepRow is a step with the page of its job (stepHref).
type stepRow struct {
	*app.WorkflowStep
	Href string
}

func stepRows(steps []*app.WorkflowStep) []stepRow {
	rows := make([]stepRow, len(steps))
	for i, s := range steps {
		rows[i] = stepRow{WorkflowStep: s}
		if s.JobID != 0 {
			rows[i].Href = stepHref(s)
		}
	}
	return rows
}

type stateChip struct {
	State   string
	Text    string
	Count   int
	Href    string
	Current bool
}

// stepsPage is how many steps the table shows at a time.
const stepsPage = 200

// workflow is GET /workflows/{id}: the workflow's counts and timings, its
// critical path, its graph (up to graphMaxSteps steps) and its steps, a
// page at a time, filtered by state.
func (p *pages) workflow(c echo.Context) error {
	id, err := pathID(c)
	if err != nil {
		return err
	}
	wf, err := p.svc.GetWorkflow(c.Request().Context(), id)
	if err != nil {
		return err
	}
	now := p.h.opts.Now()
	v := workflowView{base: p.base(c, "Workflow #"+strconv.FormatInt(id, 10), "workflows"), WF: wf,
		CanCancel: !wf.Status.Finished(), GraphMax: graphMaxSteps, State: c.QueryParam("state")}
	if wf.FinishedAt != nil {
		v.Elapsed = shortDuration(wf.FinishedAt.Sub(wf.CreatedAt))
	} else {
		v.Elapsed = shortDuration(now.Sub(wf.CreatedAt))
		v.Refresh = 5
		if len(wf.Steps) > graphMaxSteps { // each refresh reads every step
			v.Refresh = 30
		}
	}
	byName := make(map[string]*app.WorkflowStep, len(wf.Steps))
	counts := map[string]int{}
	for _, s := range wf.Steps {
		byName[s.Name] = s
		counts[string(s.Status)]++
	}
	var critical []*app.WorkflowStep
	for _, name := range wf.CriticalPath {
		if s := byName[name]; s != nil {
			critical = append(critical, s)
		}
	}
	v.Critical = stepRows(critical)
	v.Graph = layoutGraph(wf.Steps, wf.CriticalPath)

	base := "/workflows/" + strconv.FormatInt(id, 10)
	v.States = append(v.States, stateChip{Text: "all", Count: len(wf.Steps), Href: base + "#steps", Current: v.State == ""})
	for _, st := range stepStates {
		if counts[st] > 0 || st == v.State {
			v.States = append(v.States, stateChip{State: st, Text: stateText(st), Count: counts[st],
				Href: link(base, "state", st) + "#steps", Current: st == v.State})
		}
	}
	status := http.StatusOK
	v.From, err = queryInt(c, "from")
	switch {
	case err != nil:
	case v.State != "" && !slices.Contains(stepStates, v.State):
		err = app.Invalid("state", "state %q is not one of %s", clip(v.State), strings.Join(stepStates, ", "))
	case v.From < 0:
		err = app.Invalid("from", "from must be 0 or more")
	}
	if err != nil {
		ae, _ := toAPIError(err)
		v.Error, status, v.From = ae.Message, ae.Status, 0
		return p.render(c, status, "workflow", v)
	}
	rows := wf.Steps
	if v.State != "" {
		rows = make([]*app.WorkflowStep, 0, counts[v.State])
		for _, s := range wf.Steps {
			if string(s.Status) == v.State {
				rows = append(rows, s)
			}
		}
	}
	v.Matching = len(rows)
	v.From = min(v.From, len(rows))
	v.Steps = stepRows(rows[v.From:min(v.From+stepsPage, len(rows))])
	v.FirstRow = v.From + 1
	pageURL := func(from int) string {
		f := ""
		if from > 0 {
			f = strconv.Itoa(from)
		}
		return link(base, "state", v.State, "from", f) + "#steps"
	}
	if v.From+len(v.Steps) < len(rows) {
		v.NextURL = pageURL(v.From + stepsPage)
	}
	if v.From > 0 {
		v.FirstURL = pageURL(0)
	}
	return p.render(c, status, "workflow", v)
}

// workflowCancelConfirm is GET /workflows/{id}/cancel: what cancelling the
// workflow does to its unfinished steps, and the button that does it.
func (p *pages) workflowCancelConfirm(c echo.Context) error {
	id, err := pathID(c)
	if err != nil {
		return err
	}
	wf, err := p.svc.GetWorkflow(c.Request().Context(), id)
	if err != nil {
		return err
	}
	back := "/workflows/" + strconv.FormatInt(id, 10)
	if wf.Status.Finished() {
		return p.done(c, back, flash{Kind: "error", Text: fmt.Sprintf("Workflow #%d is %s: there is nothing to cancel.", id, wf.Status)})
	}
	n := map[app.StepStatus]int{}
	for _, s := range wf.Steps {
		n[s.Status]++
	}
	var parts []string
	if k := n[app.StepWaiting]; k > 0 {
		parts = append(parts, plural(k, "waiting step is", "waiting steps are")+" cancelled")
	}
	if k := n[app.StepStatus(app.StatusQueued)]; k > 0 {
		parts = append(parts, plural(k, "queued job is", "queued jobs are")+" cancelled")
	}
	if k := n[app.StepStatus(app.StatusProcessing)]; k > 0 {
		parts = append(parts, askedToStop(k, "asked to stop at"))
	}
	text := "Nothing is released afterwards."
	if len(parts) > 0 {
		text = upperFirst(strings.Join(parts, "; ")) + ". " + text
	}
	v := confirmView{base: p.base(c, "Confirm cancel", "workflows"), Action: back + "/cancel", Back: back, Danger: true,
		Heading: fmt.Sprintf("Cancel workflow #%d “%s”?", id, wf.Name),
		Text:    text + " Finished steps keep their results. This cannot be undone.",
		Button:  "Cancel workflow",
		Fields:  []formField{{"confirm", "yes"}}}
	return p.render(c, http.StatusOK, "confirm", v)
}

// workflowCancel is POST /workflows/{id}/cancel, sent by the confirm page:
// Service.CancelWorkflow, audited as the logged-in actor. A post that did
// not come from the confirm page is sent there.
func (p *pages) workflowCancel(c echo.Context) error {
	id, err := pathID(c)
	if err != nil {
		return err
	}
	back := "/workflows/" + strconv.FormatInt(id, 10)
	if c.FormValue("confirm") != "yes" {
		return c.Redirect(http.StatusSeeOther, back+"/cancel")
	}
	wf, err := p.svc.CancelWorkflow(c.Request().Context(), id, actor(c))
	if err != nil {
		return p.actionErr(c, err, back)
	}
	text := fmt.Sprintf("Workflow #%d cancelled.", id)
	running := 0
	for _, s := range wf.Steps {
		if s.Status == app.StepStatus(app.StatusProcessing) {
			running++
		}
	}
	if running > 0 {
		text += " " + upperFirst(askedToStop(running, "told at")) + "."
	}
	return p.done(c, back, flash{Text: text})
}

// askedToStop says that the workers of n processing jobs are told to stop:
// "the worker of 1 processing job is told at its next heartbeat".
func askedToStop(n int, verb string) string {
	if n == 1 {
		return "the worker of 1 processing job is " + verb + " its next heartbeat"
	}
	return "the workers of " + num(n) + " processing jobs are " + verb + " their next heartbeat"
}

func upperFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}
