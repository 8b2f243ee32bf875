package worker

import (
	"context"

	"go.opentelemetry.io/otel/propagation"

	"github.com/queuehq/queue/app"
)

// The trace a job's code runs in (docs/integrations.md): a traced job's
// attempt is a span whose id app.AttemptTraceparent derives from the
// claimed job, so the worker hands it on without asking the server. A
// command gets it as TRACEPARENT and TRACESTATE (OpenTelemetry's
// environment-variable propagation), a Go handler in its context; a job
// without a traceparent gets neither.

// traceEnv is the TRACEPARENT and TRACESTATE of job's attempt, none if the
// job has no traceparent.
func traceEnv(job *app.Job) []string {
	tp := app.AttemptTraceparent(job.Traceparent, job.ID, job.Lease)
	if tp == "" {
		return nil
	}
	env := []string{"TRACEPARENT=" + tp}
	if job.Tracestate != "" {
		env = append(env, "TRACESTATE="+job.Tracestate)
	}
	return env
}

// traceContext is ctx carrying the span context of job's attempt as a
// remote parent (trace.SpanContextFromContext reads it), so the spans a
// handler starts are children of the queue.attempt span; ctx itself if
// the job has no traceparent.
func traceContext(ctx context.Context, job *app.Job) context.Context {
	tp := app.AttemptTraceparent(job.Traceparent, job.ID, job.Lease)
	if tp == "" {
		return ctx
	}
	return propagation.TraceContext{}.Extract(ctx, propagation.MapCarrier{"traceparent": tp, "tracestate": job.Tracestate})
}
