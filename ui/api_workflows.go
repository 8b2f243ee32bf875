package ui

import (
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/queuehq/queue/app"
)

// workflowBody caps a POST /api/workflows body: 16 MiB, or the server's
// max_body_bytes if lower. A 10,000-step batch with a callback and small
// payloads is about 2 MiB; the cap is well above it, yet the whole graph is
// planned in memory and written in one transaction, so it is not the 64 MiB
// of a job batch. Large data goes by reference (a URL, a key), not in the
// payloads of thousands of steps.
const workflowBody = 16 << 20

// submitWorkflow is POST /api/workflows: the whole graph in one
// transaction, or nothing (app.Plan names the step at fault).
func (h *handler) submitWorkflow(c echo.Context) error {
	// Refused rather than ignored: a client sending one expects a retry to
	// find the first workflow, and would get a second.
	if c.Request().Header.Get("Idempotency-Key") != "" {
		return app.Invalid("Idempotency-Key", "POST /api/workflows takes no Idempotency-Key (nor do its steps take idempotency keys); before submitting again after an error, look for the workflow with GET /api/workflows?name=")
	}
	var in app.WorkflowInput
	if err := bind(c, &in, min(workflowBody, h.opts.MaxBodyBytes), false); err != nil {
		return err
	}
	traceStepHeaders(c, &in) // api_trace.go
	// A token with a queue list may submit a workflow only if it may touch
	// the queue of every step: a step is a job submitted later, in its name.
	if p := who(c); p.restricted() {
		steps := in.Steps
		if in.Callback != nil {
			cb := *in.Callback
			if cb.Step == "" {
				cb.Step = app.DefaultCallbackStep
			}
			steps = append(steps[:len(steps):len(steps)], cb)
		}
		for _, s := range steps {
			q := s.Queue
			if q == "" {
				q = app.DefaultQueue
			}
			if !p.allowsQueue(q) {
				return denied("token %q may not touch queue %q (step %q; its queues: %s)", p.name, clip(q), clip(s.Step), strings.Join(p.queues, ", "))
			}
		}
	}
	view, err := h.svc.SubmitWorkflow(c.Request().Context(), in)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusCreated, view)
}

func (h *handler) listWorkflows(c echo.Context) error {
	limit, err := queryLimit(c)
	if err != nil {
		return err
	}
	page, err := h.svc.ListWorkflows(c.Request().Context(), app.WorkflowListInput{Status: c.QueryParam("status"),
		Name: c.QueryParam("name"), Cursor: c.QueryParam("cursor"), Limit: limit})
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, page)
}

func (h *handler) getWorkflow(c echo.Context) error {
	id, err := pathID(c)
	if err != nil {
		return err
	}
	view, err := h.svc.GetWorkflow(c.Request().Context(), id)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, view)
}

// cancelWorkflow is POST /api/workflows/{id}/cancel: its waiting steps and
// queued jobs are cancelled, its running jobs asked to stop; a finished
// workflow is 409 illegal_transition.
func (h *handler) cancelWorkflow(c echo.Context) error {
	id, err := pathID(c)
	if err != nil {
		return err
	}
	var in struct{}
	if err := bind(c, &in, smallBody, true); err != nil {
		return err
	}
	view, err := h.svc.CancelWorkflow(c.Request().Context(), id, actor(c))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, view)
}
