package ui

import (
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/queuehq/queue/app"
)

// A token may carry a list of queues (config `queues`); then every route
// checks the queue it touches here. The route's role is checked before,
// in auth. Tokens without a list, and servers without tokens, pay nothing:
// each check returns at once for them.

// checkQueue refuses queue q (empty: the default queue) to a token whose
// list does not hold it.
func checkQueue(c echo.Context, q string) error {
	p := who(c)
	if q == "" {
		q = app.DefaultQueue
	}
	if p.allowsQueue(q) {
		return nil
	}
	return denied("token %q may not touch queue %q (its queues: %s)", p.name, clip(q), strings.Join(p.queues, ", "))
}

// checkJob refuses job id to a token that may not touch its queue. A token
// with a queue list pays one read for it; an unknown id answers 404.
func (h *handler) checkJob(c echo.Context, id int64) error {
	if !who(c).restricted() {
		return nil
	}
	j, err := h.svc.Get(c.Request().Context(), id, 0, false)
	if err != nil {
		return err
	}
	return checkQueue(c, j.Queue)
}

// checkJobs is checkJob for a batch of completions, in one read.
func (h *handler) checkJobs(c echo.Context, items []app.Completion) error {
	if !who(c).restricted() || len(items) == 0 {
		return nil
	}
	ids := make([]int64, len(items))
	for i, it := range items {
		ids[i] = it.ID
	}
	queues, err := h.svc.JobQueues(c.Request().Context(), ids)
	if err != nil {
		return err
	}
	for _, q := range queues {
		if err := checkQueue(c, q); err != nil {
			return err
		}
	}
	return nil
}

// checkDead is checkJob for a row of the dead-letter queue.
func (h *handler) checkDead(c echo.Context, id int64) error {
	if !who(c).restricted() {
		return nil
	}
	d, err := h.svc.GetDead(c.Request().Context(), id)
	if err != nil {
		return err
	}
	return checkQueue(c, d.Queue)
}

// scopedQueueParam wraps a route filtered by ?queue=: a token with a queue
// list must name one of its queues (a token of one queue gets it by default).
func scopedQueueParam(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		p := who(c)
		if !p.restricted() {
			return next(c)
		}
		q := c.QueryParam("queue")
		if q == "" {
			if len(p.queues) != 1 {
				return denied("token %q is limited to queues %s: name one with ?queue=", p.name, strings.Join(p.queues, ", "))
			}
			c.QueryParams().Set("queue", p.queues[0])
			return next(c)
		}
		if err := checkQueue(c, q); err != nil {
			return err
		}
		return next(c)
	}
}

// everyQueue wraps a route whose answer spans every queue (the audit
// trail, /metrics): a token with a queue list may not use it.
func everyQueue(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if p := who(c); p.restricted() {
			return denied("token %q is limited to queues %s; this answer spans every queue", p.name, strings.Join(p.queues, ", "))
		}
		return next(c)
	}
}

// inScope keeps the items of xs whose queue the token may see.
func inScope[T any](p *principal, xs []T, queue func(T) string) []T {
	if !p.restricted() {
		return xs
	}
	kept := []T{}
	for _, x := range xs {
		if p.allowsQueue(queue(x)) {
			kept = append(kept, x)
		}
	}
	return kept
}

// scopedStats keeps only the queues the token may see, and totals them again.
func scopedStats(p *principal, st *app.Stats) {
	if p.restricted() {
		st.Queues = inScope(p, st.Queues, func(q app.QueueStats) string { return q.Queue })
		st.Total = app.TotalStats(st.Queues)
		st.UnclaimedKinds = inScope(p, st.UnclaimedKinds, func(u app.UnclaimedKind) string { return u.Queue })
	}
}
