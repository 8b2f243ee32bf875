package ui

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"

	"github.com/labstack/echo/v4"

	"github.com/queuehq/queue/app"
)

// queuesView is the data of queues.html.
type queuesView struct {
	base
	Queues   []queueRow
	Periodic []app.PeriodicStatus
	// HasScheduler is false when the server runs no scheduler (tests, embedding).
	HasScheduler bool
}

// queues is GET /queues: each queue's state, counts and config, with
// pause/resume and drain, and the periodic jobs' last and next fire.
func (p *pages) queues(c echo.Context) error {
	ctx := c.Request().Context()
	var (
		wg         sync.WaitGroup
		stats      *app.Stats
		infos      []app.QueueInfo
		periodic   []app.PeriodicStatus
		held       map[string]int
		errS, errQ error
		errP, errH error
	)
	wg.Add(3)
	go func() { defer wg.Done(); stats, errS = p.svc.Stats(ctx) }()
	go func() { defer wg.Done(); infos, errQ = p.svc.Queues(ctx) }()
	go func() { defer wg.Done(); held, errH = p.svc.HeldCounts(ctx) }()
	if p.h.opts.Scheduler != nil {
		wg.Add(1)
		go func() { defer wg.Done(); periodic, errP = p.h.opts.Scheduler.Status(ctx) }()
	}
	wg.Wait()
	if err := errors.Join(errS, errQ, errP, errH); err != nil {
		return err
	}
	v := queuesView{base: p.base(c, "Queues", "queues"), Queues: mergeQueues(stats.Queues, infos),
		Periodic: periodic, HasScheduler: p.h.opts.Scheduler != nil}
	for i := range v.Queues {
		v.Queues[i].Held = held[v.Queues[i].Queue]
		v.Queues[i].Keyed = v.Queues[i].Config.KeyLimits().Keyed()
	}
	v.Refresh = 10
	return p.render(c, http.StatusOK, "queues", v)
}

func (p *pages) pause(c echo.Context) error  { return p.setPaused(c, true) }
func (p *pages) resume(c echo.Context) error { return p.setPaused(c, false) }

// setPaused is POST /queues/pause and /queues/resume (field queue).
func (p *pages) setPaused(c echo.Context, paused bool) error {
	q := c.FormValue("queue")
	if err := p.svc.SetPaused(c.Request().Context(), q, paused, actor(c)); err != nil {
		return p.actionErr(c, err, "/queues")
	}
	text := fmt.Sprintf("Queue %s resumed: workers claim its jobs again.", q)
	if paused {
		text = fmt.Sprintf("Queue %s paused: no claims until it is resumed; submissions still land.", q)
	}
	return p.done(c, "/queues", flash{Text: text})
}

// drainConfirm is GET /queues/drain?queue=: how many waiting jobs (queued
// and scheduled: the drain cancels both) a drain would cancel, split as
// the queues page counts them, and the button that does it.
func (p *pages) drainConfirm(c echo.Context) error {
	ctx := c.Request().Context()
	q := c.QueryParam("queue")
	res, err := p.svc.Drain(ctx, q, true, actor(c))
	if err != nil {
		return p.actionErr(c, err, "/queues")
	}
	if res.Count == 0 {
		return p.done(c, "/queues", flash{Kind: "error", Text: fmt.Sprintf("Queue %s has no waiting jobs (queued or scheduled) to drain.", q)})
	}
	split, err := p.waitingSplit(ctx, q, res.Count)
	if err != nil {
		return err
	}
	v := confirmView{base: p.base(c, "Confirm drain", "queues"), Action: "/queues/drain", Back: "/queues",
		Count: res.Count, Jobs: res.Jobs, More: res.Count - len(res.Jobs), Danger: true,
		Heading: fmt.Sprintf("Drain queue %s: cancel %s%s?", q, plural(res.Count, "waiting job", "waiting jobs"), split),
		Text: "Every job of the queue that waits to run is cancelled (reason “drained”): queued ones, due now, and scheduled ones, " +
			"due later (retries waiting out their backoff among them), counted here a moment ago: jobs that arrive before you press the button go too. " +
			"Running jobs finish. This cannot be undone.",
		Button: "Cancel " + plural(res.Count, "job", "jobs"),
		Fields: []formField{{"queue", q}}}
	return p.render(c, http.StatusOK, "confirm", v)
}

// waitingSplit is " (33 queued, 18 scheduled)": how the queue's stats (the
// numbers of the queues page) split the count of its waiting jobs, or
// " (queued or scheduled)" when the stats, read a moment apart, do not add
// up to it.
func (p *pages) waitingSplit(ctx context.Context, q string, count int) (string, error) {
	st, err := p.svc.Stats(ctx)
	if err != nil {
		return "", err
	}
	for _, s := range st.Queues {
		if s.Queue == q && s.Queued+s.Scheduled == int64(count) {
			return fmt.Sprintf(" (%s queued, %s scheduled)", num(s.Queued), num(s.Scheduled)), nil
		}
	}
	return " (queued or scheduled)", nil
}

// drain is POST /queues/drain (field queue).
func (p *pages) drain(c echo.Context) error {
	q := c.FormValue("queue")
	res, err := p.svc.Drain(c.Request().Context(), q, false, actor(c))
	if err != nil {
		return p.actionErr(c, err, "/queues")
	}
	return p.done(c, "/queues", flash{Text: fmt.Sprintf("Queue %s drained: %s cancelled (queued or scheduled).", q, plural(res.Count, "waiting job", "waiting jobs"))})
}

// keysView is the data of keys.html.
type keysView struct {
	base
	Queue  string
	Limits keyLimits
	Stats  *app.KeyStats
}

// queueKeys is GET /queues/keys?queue=: how the queue limits the jobs of
// one key, how many of its jobs wait for their key, the keys at their
// limit and the busiest keys.
func (p *pages) queueKeys(c echo.Context) error {
	q := c.QueryParam("queue")
	st, err := p.svc.KeyStats(c.Request().Context(), q, 0)
	if err != nil {
		return err
	}
	v := keysView{base: p.base(c, "Keys of queue "+q, "queues"), Queue: q, Limits: keyLimitsOf(p.svc.Config.Queue(q)), Stats: st}
	v.Refresh = 10
	return p.render(c, http.StatusOK, "keys", v)
}
