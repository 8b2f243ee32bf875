package ui

import (
	"context"
	"fmt"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/queuehq/queue/app"
)

// workerPages adds the workers page (issue 26): the registry of worker
// processes with their counts and state, and, for an admin, quiet and
// stop through a confirm page (GET /workers/confirm, then a POST with
// CSRF), as the dead-letter queue's bulk actions and a workflow's cancel go.
func (p *pages) workerPages(e *echo.Echo, page func(string, echo.HandlerFunc), mw []echo.MiddlewareFunc) {
	page("/workers", p.workers)
	page("/workers/confirm", p.workerConfirm)
	e.POST("/workers/command", p.workerCommand, mw...)
}

// workersView is the data of workers.html.
type workersView struct {
	base
	Workers []workerRow
	Counts  map[string]int // workers per state
}

// workerRow is one worker as the page shows it.
type workerRow struct {
	*app.Worker
	QueueText string // the command line's form, weights included
	CanQuiet  bool
	CanStop   bool
	// Jobs are the processing jobs that name it, oldest first, among the
	// inFlightRead processing jobs due last (so a busy server may list
	// fewer than InFlight); MoreJobs counts those found but not listed.
	Jobs     []*app.Job
	MoreJobs int
}

// Bounds of the in-flight jobs the workers page lists.
const (
	inFlightRead = 500 // processing jobs read, latest run time first
	inFlightShow = 5   // listed per worker
)

// inFlight groups the processing jobs due last by the worker that claimed
// them: one listing, bounded, for the whole page. It lists in run order,
// not by id: SQLite serves "status = 'processing' ORDER BY id DESC LIMIT
// 500" by walking the whole table backwards by id (no statistics tell it
// how few jobs run; 200 ms at a million jobs, on every refresh), while the
// run order, which no index of all jobs holds, it reads from the partial
// index of processing jobs (jobs_processing) and sorts those few.
func (p *pages) inFlight(ctx context.Context) (map[string][]*app.Job, error) {
	page, err := p.svc.List(ctx, app.ListInput{Status: string(app.StatusProcessing), Order: app.OrderRunAt, Limit: inFlightRead})
	if err != nil {
		return nil, err
	}
	by := map[string][]*app.Job{}
	for i := len(page.Jobs) - 1; i >= 0; i-- { // oldest first
		if j := page.Jobs[i]; j.WorkerID != "" {
			by[j.WorkerID] = append(by[j.WorkerID], j)
		}
	}
	return by, nil
}

// workers is GET /workers: the registered workers the token may see
// (all of its queues in the token's list), the first app.MaxWorkersListed
// in id order with a note when there are more, refreshed live.
func (p *pages) workers(c echo.Context) error {
	ws, truncated, err := p.svc.Workers(c.Request().Context())
	if err != nil {
		return err
	}
	jobs, err := p.inFlight(c.Request().Context())
	if err != nil {
		return err
	}
	v := workersView{base: p.base(c, "Workers", "workers"), Counts: map[string]int{}}
	v.Refresh = 5
	if truncated && v.Flash == nil {
		v.Flash = &flash{Kind: "ok", Text: fmt.Sprintf("Only the first %d workers in id order are listed; more are registered.", app.MaxWorkersListed)}
	}
	for _, w := range visibleWorkers(who(c), ws) {
		v.Counts[w.State]++
		row := workerRow{Worker: w, QueueText: w.Queues.String(),
			CanQuiet: w.Command == app.WorkerRun && w.State != app.WorkerGone,
			CanStop:  w.Command != app.WorkerStop && w.State != app.WorkerGone}
		row.Jobs = jobs[w.ID]
		if len(row.Jobs) > inFlightShow {
			row.Jobs, row.MoreJobs = row.Jobs[:inFlightShow], len(row.Jobs)-inFlightShow
		}
		v.Workers = append(v.Workers, row)
	}
	return p.render(c, http.StatusOK, "workers", v)
}

// commandText says what a command does, for the confirm page.
var commandText = map[string]struct{ heading, text, button, done string }{
	app.WorkerQuiet: {"Quiet worker %s?",
		"It claims no more jobs and finishes the %s it runs, then stays up, idle. Claims under its id get nothing from now on; it hears the command at its next heartbeat (within 5 seconds) or claim. Restarting the worker makes it run again.",
		"Quiet worker", "Worker %s told to quiet: it finishes what it runs and claims nothing more."},
	app.WorkerStop: {"Stop worker %s?",
		"It claims no more jobs, stops the %s it runs and gives them back to their queue without using up their attempt, then exits (a built-in worker stops; the server runs on). It hears the command at its next heartbeat (within 5 seconds) or claim.",
		"Stop worker", "Worker %s told to stop: its running jobs go back to their queue and it exits."},
}

// workerConfirm is GET /workers/confirm?id=&command=quiet|stop: what the
// command does to the worker, and the button that gives it.
func (p *pages) workerConfirm(c echo.Context) error {
	id, command := c.QueryParam("id"), c.QueryParam("command")
	txt, ok := commandText[command]
	if !ok {
		return p.done(c, "/workers", flash{Kind: "error", Text: "Choose quiet or stop for a worker."})
	}
	w, err := p.svc.Worker(c.Request().Context(), id)
	if err == nil {
		err = checkWorkerQueues(c, w.QueueNames())
	}
	if err != nil {
		return p.actionErr(c, workerErr(err), "/workers")
	}
	jobs := plural(w.InFlight, "job", "jobs")
	v := confirmView{base: p.base(c, "Confirm "+command, "workers"), Action: "/workers/command", Back: "/workers",
		Danger:  command == app.WorkerStop,
		Heading: fmt.Sprintf(txt.heading, w.ID),
		Text:    fmt.Sprintf(txt.text, jobs),
		Button:  txt.button,
		Fields:  []formField{{"id", w.ID}, {"command", command}, {"confirm", "yes"}}}
	return p.render(c, http.StatusOK, "confirm", v)
}

// workerCommand is POST /workers/command (fields id, command, confirm),
// sent by the confirm page: Service.SetWorkerCommand, audited as the
// logged-in actor. A post that did not come from the confirm page is sent
// there.
func (p *pages) workerCommand(c echo.Context) error {
	id, command := c.FormValue("id"), c.FormValue("command")
	txt, ok := commandText[command]
	if !ok {
		return p.done(c, "/workers", flash{Kind: "error", Text: "Choose quiet or stop for a worker."})
	}
	if c.FormValue("confirm") != "yes" {
		return c.Redirect(http.StatusSeeOther, link("/workers/confirm", "id", id, "command", command))
	}
	w, err := p.svc.Worker(c.Request().Context(), id)
	if err == nil {
		err = checkWorkerQueues(c, w.QueueNames())
	}
	if err == nil {
		_, err = p.svc.SetWorkerCommand(c.Request().Context(), id, command, actor(c))
	}
	if err != nil {
		return p.actionErr(c, workerErr(err), "/workers")
	}
	return p.done(c, "/workers", flash{Text: fmt.Sprintf(txt.done, id)})
}
