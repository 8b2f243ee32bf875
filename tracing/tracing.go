// Package tracing sends the spans of traced jobs (queue.submit, queue.wait,
// queue.attempt: see app/trace.go and docs/integrations.md) to an
// OpenTelemetry collector over OTLP/HTTP. It is the one package that
// imports the OpenTelemetry SDK: app decides when a span begins and ends
// and what it says, and sees only the small app.Tracer this package
// implements. With no endpoint configured ([tracing] endpoint, or the
// standard OTEL_EXPORTER_OTLP_TRACES_ENDPOINT / OTEL_EXPORTER_OTLP_ENDPOINT)
// New returns nil: no SDK, no exporter, no goroutine; jobs still store and
// pass on their traceparent.
//
// The exporter is this package's own (export.go), not the SDK's
// otlptracehttp: that one links gRPC (through its shared configuration
// package), 2 MB of a binary that speaks OTLP/HTTP only.
package tracing

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/queuehq/queue/app"
)

// Config says where spans go. Its zero value, with no OTEL_* variable
// set, turns tracing off.
type Config struct {
	// Endpoint is the collector's OTLP/HTTP base URL ([tracing] endpoint),
	// e.g. http://127.0.0.1:4318; /v1/traces is added when it has no path.
	// If empty, OTEL_EXPORTER_OTLP_TRACES_ENDPOINT (used as is) or
	// OTEL_EXPORTER_OTLP_ENDPOINT (a base URL) is used.
	Endpoint string
	// ServiceName is the service.name of the spans ([tracing]
	// service_name). If empty, OTEL_SERVICE_NAME, else "queue".
	ServiceName string
	// Version is the service.version of the spans.
	Version string
	// Getenv reads the environment. If nil, os.Getenv.
	Getenv func(string) string
}

func (c Config) getenv(k string) string {
	if c.Getenv == nil {
		return os.Getenv(k)
	}
	return c.Getenv(k)
}

// URL is where spans are sent (an OTLP/HTTP traces URL), or "" when
// tracing is off: no endpoint in the config or the environment, or
// OTEL_SDK_DISABLED=true, or OTEL_TRACES_EXPORTER=none.
func (c Config) URL() (string, error) {
	if strings.EqualFold(c.getenv("OTEL_SDK_DISABLED"), "true") || strings.EqualFold(c.getenv("OTEL_TRACES_EXPORTER"), "none") {
		return "", nil
	}
	switch {
	case c.Endpoint != "":
		return signalURL(c.Endpoint, "[tracing] endpoint")
	case c.getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != "":
		u := c.getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
		if err := CheckEndpoint(u); err != nil {
			return "", fmt.Errorf("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: %w", err)
		}
		return u, nil
	case c.getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "":
		return signalURL(c.getenv("OTEL_EXPORTER_OTLP_ENDPOINT"), "OTEL_EXPORTER_OTLP_ENDPOINT")
	}
	return "", nil
}

// signalURL is the traces URL of base, an OTLP/HTTP base URL: base with
// v1/traces added to its path (the spec's rule for
// OTEL_EXPORTER_OTLP_ENDPOINT), or base itself if its path already ends so.
func signalURL(base, name string) (string, error) {
	if err := CheckEndpoint(base); err != nil {
		return "", fmt.Errorf("%s: %w", name, err)
	}
	u, _ := url.Parse(base)
	if strings.HasSuffix(strings.TrimSuffix(u.Path, "/"), "/v1/traces") {
		return base, nil
	}
	u.Path = strings.TrimSuffix(u.Path, "/") + "/v1/traces"
	return u.String(), nil
}

// CheckEndpoint checks a collector URL: http or https, with a host, no
// user or password (put those in OTEL_EXPORTER_OTLP_HEADERS, which no log
// shows).
func CheckEndpoint(s string) error {
	u, err := url.Parse(s)
	switch {
	case err != nil:
		return fmt.Errorf("%q is not a URL", s)
	case u.Scheme != "http" && u.Scheme != "https":
		return fmt.Errorf("%q: give an http:// or https:// URL of the collector's OTLP/HTTP port (4318), e.g. http://127.0.0.1:4318", s)
	case u.Host == "":
		return fmt.Errorf("%q has no host", s)
	case u.User != nil:
		return errors.New("the endpoint holds a user or password: give credentials as headers in OTEL_EXPORTER_OTLP_HEADERS")
	}
	return nil
}

// Tracer records the spans of traced jobs through the OpenTelemetry SDK
// and sends them in batches to the collector; it implements app.Tracer.
type Tracer struct {
	provider *sdktrace.TracerProvider
	tracer   trace.Tracer
}

var _ app.Tracer = (*Tracer)(nil)

// New starts tracing as cfg says, or returns nil (and no error) when
// nothing is configured (see Config.URL). The Tracer sends spans in the
// background until Shutdown.
func New(cfg Config, log zerolog.Logger) (*Tracer, error) {
	target, err := cfg.URL()
	if err != nil || target == "" {
		return nil, err
	}
	name := cfg.ServiceName
	if name == "" {
		name = cfg.getenv("OTEL_SERVICE_NAME")
	}
	if name == "" {
		name = "queue"
	}
	attrs := []attribute.KeyValue{attribute.String("service.name", name)}
	if cfg.Version != "" {
		attrs = append(attrs, attribute.String("service.version", cfg.Version))
	}
	// The SDK's defaults (telemetry.sdk.*, OTEL_RESOURCE_ATTRIBUTES), then ours.
	res, err := resource.Merge(resource.Default(), resource.NewSchemaless(attrs...))
	if err != nil {
		return nil, fmt.Errorf("tracing resource: %w", err)
	}
	exp := newExporter(target, headers(cfg))
	otel.SetErrorHandler(errorLog(log))
	tp := sdktrace.NewTracerProvider(
		sdktrace.WithBatcher(exp), // OTEL_BSP_* tune it; OTEL_TRACES_SAMPLER picks the sampler
		sdktrace.WithResource(res),
		sdktrace.WithIDGenerator(ids{}),
	)
	log.Info().Str("endpoint", target).Str("service_name", name).Msg("tracing: spans go to the collector")
	return &Tracer{provider: tp, tracer: tp.Tracer("github.com/queuehq/queue")}, nil
}

// headers are the request headers OTEL_EXPORTER_OTLP_TRACES_HEADERS (or
// else OTEL_EXPORTER_OTLP_HEADERS) give: "k1=v1,k2=v2", values
// URL-encoded.
func headers(cfg Config) map[string]string {
	raw := cfg.getenv("OTEL_EXPORTER_OTLP_TRACES_HEADERS")
	if raw == "" {
		raw = cfg.getenv("OTEL_EXPORTER_OTLP_HEADERS")
	}
	out := map[string]string{}
	for _, kv := range strings.Split(raw, ",") {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || strings.TrimSpace(k) == "" {
			continue
		}
		if dv, err := url.QueryUnescape(strings.TrimSpace(v)); err == nil {
			v = dv
		}
		out[strings.TrimSpace(k)] = strings.TrimSpace(v)
	}
	return out
}

// errorLog logs the SDK's errors (a batch the collector refused, a full
// queue), at most one a minute: a collector that is down must not flood
// the log.
func errorLog(log zerolog.Logger) otel.ErrorHandlerFunc {
	var mu sync.Mutex
	var last time.Time
	return func(err error) {
		mu.Lock()
		defer mu.Unlock()
		if time.Since(last) < time.Minute {
			return
		}
		last = time.Now()
		log.Warn().Err(err).Msg("tracing: spans not sent (further errors this minute are not logged)")
	}
}

// Shutdown sends the spans still held and stops; ctx bounds the wait.
func (t *Tracer) Shutdown(ctx context.Context) error {
	if err := t.provider.Shutdown(ctx); err != nil {
		return fmt.Errorf("tracing: flush spans: %w", err)
	}
	return nil
}

// Span names and attributes: docs/integrations.md lists them.
const (
	spanSubmit  = "queue.submit"
	spanWait    = "queue.wait"
	spanAttempt = "queue.attempt"
)

// Submit implements app.Tracer: one queue.submit span per job, a child of
// the job's traceparent (a new trace without one), whose context the job
// stores.
func (t *Tracer) Submit(jobs []app.NewJob) func([]app.Submitted, error) {
	now := time.Now()
	spans := make([]trace.Span, len(jobs))
	for i := range jobs {
		nj := &jobs[i]
		ctx := parent(context.Background(), nj.Traceparent, nj.Tracestate)
		attrs := []attribute.KeyValue{attribute.String("queue.name", nj.Queue), attribute.String("queue.kind", nj.Kind)}
		if nj.WorkflowID != 0 || nj.Step != "" {
			attrs = append(attrs, attribute.String("queue.step", nj.Step))
		}
		_, sp := t.tracer.Start(ctx, spanSubmit, trace.WithSpanKind(trace.SpanKindProducer), trace.WithTimestamp(now),
			trace.WithAttributes(attrs...))
		nj.Traceparent, nj.Tracestate = traceparent(sp.SpanContext()), sp.SpanContext().TraceState().String()
		spans[i] = sp
	}
	return func(out []app.Submitted, err error) {
		end := time.Now()
		for i, sp := range spans {
			switch {
			case err != nil:
				sp.SetStatus(codes.Error, err.Error())
			case i < len(out) && out[i].Job != nil:
				sp.SetAttributes(attribute.Int64("queue.job_id", out[i].Job.ID))
				if out[i].Existing || out[i].Duplicate { // the job stored before keeps its own trace
					sp.SetAttributes(attribute.Bool("queue.existing", true))
				}
			}
			sp.End(trace.WithTimestamp(end))
		}
	}
}

// Claimed implements app.Tracer: a queue.wait span per traced job, from
// when it was due (or its last failure) to its claim.
func (t *Tracer) Claimed(jobs []*app.Job) {
	for _, j := range jobs {
		if j.Traceparent == "" || j.StartedAt == nil {
			continue
		}
		ctx := parent(context.Background(), j.Traceparent, j.Tracestate)
		if !trace.SpanContextFromContext(ctx).IsValid() {
			continue
		}
		began, retry := j.WaitBegan()
		if began.After(*j.StartedAt) {
			began = *j.StartedAt
		}
		attrs := append(jobAttrs(j), attribute.Bool("queue.retry", retry))
		_, sp := t.tracer.Start(ctx, spanWait, trace.WithTimestamp(began), trace.WithAttributes(attrs...))
		sp.End(trace.WithTimestamp(*j.StartedAt))
	}
}

// AttemptEnded implements app.Tracer: the queue.attempt span, from the
// claim to the outcome, with the id app.AttemptTraceparent derives, the
// parent id of the TRACEPARENT its worker was given.
func (t *Tracer) AttemptEnded(a app.AttemptEnd) {
	j := a.Job
	ctx := parent(context.Background(), j.Traceparent, j.Tracestate)
	mine := spanContext(app.AttemptTraceparent(j.Traceparent, j.ID, j.Lease), "")
	if !trace.SpanContextFromContext(ctx).IsValid() || !mine.IsValid() || j.StartedAt == nil {
		return
	}
	ctx = withSpanID(ctx, mine.SpanID())
	attrs := append(jobAttrs(j), attribute.String("queue.outcome", a.Outcome))
	_, sp := t.tracer.Start(ctx, spanAttempt, trace.WithSpanKind(trace.SpanKindConsumer), trace.WithTimestamp(*j.StartedAt),
		trace.WithAttributes(attrs...))
	switch a.Outcome {
	case app.EndedError, app.EndedLeaseLost:
		sp.SetStatus(codes.Error, app.TruncateString(a.Error, 1024))
	case app.EndedOK:
		sp.SetStatus(codes.Ok, "")
	}
	end := a.At
	if end.Before(*j.StartedAt) {
		end = *j.StartedAt
	}
	sp.End(trace.WithTimestamp(end))
}

// jobAttrs are the attributes of a claimed job's wait and attempt spans.
func jobAttrs(j *app.Job) []attribute.KeyValue {
	attrs := []attribute.KeyValue{
		attribute.Int64("queue.job_id", j.ID),
		attribute.String("queue.name", j.Queue),
		attribute.String("queue.kind", j.Kind),
		attribute.Int("queue.attempt", j.Attempts),
		attribute.Int64("queue.lease", j.Lease),
	}
	if j.WorkerID != "" {
		attrs = append(attrs, attribute.String("queue.worker_id", j.WorkerID))
	}
	return attrs
}

// parent is ctx with the remote span context of traceparent and
// tracestate as the parent of the spans started in it (ctx as it is if
// traceparent is not valid).
func parent(ctx context.Context, traceparent, tracestate string) context.Context {
	if sc := spanContext(traceparent, tracestate); sc.IsValid() {
		return trace.ContextWithRemoteSpanContext(ctx, sc)
	}
	return ctx
}

// spanContext reads a W3C traceparent and tracestate (invalid: the zero
// SpanContext).
func spanContext(traceparent, tracestate string) trace.SpanContext {
	carrier := propagation.MapCarrier{"traceparent": traceparent, "tracestate": tracestate}
	return trace.SpanContextFromContext(propagation.TraceContext{}.Extract(context.Background(), carrier))
}

// traceparent writes sc as a W3C traceparent.
func traceparent(sc trace.SpanContext) string {
	if !sc.IsValid() {
		return ""
	}
	return "00-" + sc.TraceID().String() + "-" + sc.SpanID().String() + "-" + sc.TraceFlags().String()
}
