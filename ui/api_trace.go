package ui

import (
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/queuehq/queue/app"
)

// traceHeaders puts a job without a traceparent of its own in the trace
// of the request's traceparent and tracestate headers (W3C trace context,
// as an instrumented HTTP client sends them): the body's fields win. A
// header that is not a valid version 00 traceparent is ignored, as W3C
// asks of a receiver (the body's field is refused instead: someone wrote
// it on purpose); a tracestate longer than a job keeps is cut as W3C asks
// (app.FitTracestate).
func traceHeaders(c echo.Context, in *app.SubmitInput) {
	if in.Traceparent != "" {
		return
	}
	h := c.Request().Header
	tps := h.Values("traceparent")
	if len(tps) != 1 || app.ValidateTraceparent(tps[0]) != nil {
		return
	}
	in.Traceparent = tps[0]
	in.Tracestate = app.FitTracestate(strings.Join(h.Values("tracestate"), ",")) // W3C: several headers are one list
}

// traceStepHeaders is traceHeaders for each step of a workflow (its
// callback too).
func traceStepHeaders(c echo.Context, in *app.WorkflowInput) {
	for i := range in.Steps {
		traceHeaders(c, &in.Steps[i].SubmitInput)
	}
	if in.Callback != nil {
		traceHeaders(c, &in.Callback.SubmitInput)
	}
}
