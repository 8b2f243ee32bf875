package client

import (
	"context"

	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/queuehq/queue/app"
)

// Traces (docs/integrations.md): Submit, SubmitBatch and SubmitWorkflow
// put a job that carries no Traceparent of its own in the trace of the
// caller's context (the span context trace.SpanContextFromContext finds,
// as any OpenTelemetry instrumentation leaves it), so the job's spans and
// the code that runs it join the caller's trace. A Worker's handlers get a
// context carrying the span context of the job's attempt (package worker),
// so the spans they start are its children.

// traced is in with the span context of ctx as its Traceparent and
// Tracestate, unless in has a Traceparent or ctx carries no valid span
// context.
func traced(ctx context.Context, in app.SubmitInput) app.SubmitInput {
	if in.Traceparent != "" {
		return in
	}
	sc := trace.SpanContextFromContext(ctx)
	if !sc.IsValid() {
		return in
	}
	carrier := propagation.MapCarrier{}
	propagation.TraceContext{}.Inject(trace.ContextWithSpanContext(context.Background(), sc), carrier)
	// A tracestate longer than a job keeps is cut as W3C asks, not sent
	// whole to be refused: the job would not be submitted at all.
	in.Traceparent, in.Tracestate = carrier["traceparent"], app.FitTracestate(carrier["tracestate"])
	return in
}

// tracedAll is traced for each of ins, in a new slice when one changes
// (the caller's is left as it was).
func tracedAll(ctx context.Context, ins []app.SubmitInput) []app.SubmitInput {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return ins
	}
	out := make([]app.SubmitInput, len(ins))
	for i, in := range ins {
		out[i] = traced(ctx, in)
	}
	return out
}

// tracedWorkflow is traced for each step of in (its callback too), in
// copies.
func tracedWorkflow(ctx context.Context, in WorkflowInput) WorkflowInput {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return in
	}
	steps := make([]app.StepInput, len(in.Steps))
	for i, s := range in.Steps {
		s.SubmitInput = traced(ctx, s.SubmitInput)
		steps[i] = s
	}
	in.Steps = steps
	if in.Callback != nil {
		cb := *in.Callback
		cb.SubmitInput = traced(ctx, cb.SubmitInput)
		in.Callback = &cb
	}
	return in
}
