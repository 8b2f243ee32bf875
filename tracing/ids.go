package tracing

import (
	"context"
	"encoding/binary"
	"math/rand/v2"

	"go.opentelemetry.io/otel/trace"
)

// ids gives spans random ids, except a span started in a context from
// withSpanID: that one gets the id the context carries. So the
// queue.attempt span has the id app.AttemptTraceparent derives, the one
// its worker was handed, and nothing about it needs storing.
type ids struct{}

// spanIDKey is the context key of the id withSpanID sets.
type spanIDKey struct{}

// withSpanID is ctx in which the next span started gets id.
func withSpanID(ctx context.Context, id trace.SpanID) context.Context {
	return context.WithValue(ctx, spanIDKey{}, id)
}

// NewIDs returns a random trace id and span id (a root span: queue.submit
// of a job submitted without a traceparent).
func (ids) NewIDs(ctx context.Context) (trace.TraceID, trace.SpanID) {
	var t trace.TraceID
	for !t.IsValid() {
		binary.BigEndian.PutUint64(t[:8], rand.Uint64())
		binary.BigEndian.PutUint64(t[8:], rand.Uint64())
	}
	return t, spanID(ctx)
}

// NewSpanID returns the id ctx carries (withSpanID), or a random one.
func (ids) NewSpanID(ctx context.Context, _ trace.TraceID) trace.SpanID {
	return spanID(ctx)
}

func spanID(ctx context.Context) trace.SpanID {
	if id, ok := ctx.Value(spanIDKey{}).(trace.SpanID); ok && id.IsValid() {
		return id
	}
	var s trace.SpanID
	for !s.IsValid() {
		binary.BigEndian.PutUint64(s[:], rand.Uint64())
	}
	return s
}
