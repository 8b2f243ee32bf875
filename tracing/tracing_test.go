package tracing

import (
	"context"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"go.opentelemetry.io/otel/trace"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"

	"github.com/queuehq/queue/app"
	"github.com/queuehq/queue/internal/otlptest"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

// Nothing configured: no Tracer, so the Service has none and nothing of
// the SDK runs; OTEL_SDK_DISABLED and OTEL_TRACES_EXPORTER=none turn an
// endpoint off.
func TestNothingConfiguredIsOff(t *testing.T) {
	for name, cfg := range map[string]Config{
		"nothing":  {Getenv: env(nil)},
		"disabled": {Endpoint: "http://127.0.0.1:4318", Getenv: env(map[string]string{"OTEL_SDK_DISABLED": "true"})},
		"none":     {Getenv: env(map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_TRACES_EXPORTER": "none"})},
	} {
		tr, err := New(cfg, zerolog.Nop())
		if tr != nil || err != nil {
			t.Errorf("%s: New = %v, %v; want nil, nil", name, tr, err)
		}
	}
}

// Where spans go: [tracing] endpoint first (a base URL), then the traces
// endpoint of the environment (as is), then its base endpoint.
func TestURL(t *testing.T) {
	for _, c := range []struct {
		cfg     Config
		want    string
		wantErr bool
	}{
		{cfg: Config{Endpoint: "http://127.0.0.1:4318"}, want: "http://127.0.0.1:4318/v1/traces"},
		{cfg: Config{Endpoint: "https://otel.example.com/"}, want: "https://otel.example.com/v1/traces"},
		{cfg: Config{Endpoint: "http://c:4318/v1/traces"}, want: "http://c:4318/v1/traces"},
		{cfg: Config{Endpoint: "http://c:4318/prefix"}, want: "http://c:4318/prefix/v1/traces"},
		{cfg: Config{Endpoint: "http://file:4318", Getenv: env(map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://env:1/x"})},
			want: "http://file:4318/v1/traces"},
		{cfg: Config{Getenv: env(map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://env:1/x", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://base:2"})},
			want: "http://env:1/x"},
		{cfg: Config{Getenv: env(map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://base:2"})}, want: "http://base:2/v1/traces"},
		{cfg: Config{Endpoint: "127.0.0.1:4318"}, wantErr: true},
		{cfg: Config{Endpoint: "ftp://c"}, wantErr: true},
		{cfg: Config{Endpoint: "http://user:pw@c:4318"}, wantErr: true},
		{cfg: Config{Getenv: env(map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "c:4318"})}, wantErr: true},
	} {
		if c.cfg.Getenv == nil {
			c.cfg.Getenv = env(nil)
		}
		got, err := c.cfg.URL()
		if got != c.want || (err != nil) != c.wantErr {
			t.Errorf("URL(%+v) = %q, %v; want %q, error %v", c.cfg, got, err, c.want, c.wantErr)
		}
	}
}

// The spans of a traced job as the collector gets them: submit a child
// of the caller, wait and attempt children of submit, the attempt with the
// id app.AttemptTraceparent derives, attributes and statuses; the job
// stores the submit span's context.
func TestSpans(t *testing.T) {
	col := otlptest.New(t)
	tr, err := New(Config{Endpoint: col.URL, ServiceName: "svc", Version: "v9",
		Getenv: env(map[string]string{"OTEL_EXPORTER_OTLP_HEADERS": "x-token=a%20b"})}, zerolog.Nop())
	if err != nil || tr == nil {
		t.Fatalf("New = %v, %v", tr, err)
	}
	const caller = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	jobs := []app.NewJob{{Queue: "q", Kind: "k", Traceparent: caller, Tracestate: "vendor=1"}, {Queue: "q", Kind: "k"}}
	end := tr.Submit(jobs)
	if jobs[0].Traceparent[:36] != caller[:36] || jobs[0].Traceparent == caller || jobs[0].Tracestate != "vendor=1" {
		t.Fatalf("the job stores %q %q; want the submit span in the caller's trace", jobs[0].Traceparent, jobs[0].Tracestate)
	}
	if app.ValidateTraceparent(jobs[1].Traceparent) != nil {
		t.Fatalf("a job without a trace got %q; want a new trace", jobs[1].Traceparent)
	}
	end([]app.Submitted{{Job: &app.Job{ID: 7}}, {Job: &app.Job{ID: 8}}}, nil)

	due := time.Now().Add(-3 * time.Second)
	claimed := due.Add(2 * time.Second)
	j := &app.Job{ID: 7, Queue: "q", Kind: "k", Attempts: 2, Lease: 2, WorkerID: "w1", StartedAt: &claimed, RunAt: due.Add(time.Second), CreatedAt: due,
		Errors:      []app.AttemptError{{Attempt: 1, At: due, Error: "boom"}},
		Traceparent: jobs[0].Traceparent, Tracestate: jobs[0].Tracestate}
	tr.Claimed([]*app.Job{j})
	tr.AttemptEnded(app.AttemptEnd{Job: j, Outcome: app.EndedError, Error: "exit status 1", At: claimed.Add(time.Second)})
	if err := tr.Shutdown(t.Context()); err != nil {
		t.Fatal(err)
	}

	spans := col.Wait(t, 5*time.Second, func(s []otlptest.Span) bool { return len(s) >= 4 })
	submits, waits, attempts := otlptest.Named(spans, "queue.submit"), otlptest.Named(spans, "queue.wait"), otlptest.Named(spans, "queue.attempt")
	if len(submits) != 2 || len(waits) != 1 || len(attempts) != 1 {
		t.Fatalf("spans:\n%s", otlptest.Describe(spans))
	}
	submit := submits[0]
	if submit.TraceID != caller[3:35] || submit.ParentID != caller[36:52] || "00-"+submit.TraceID+"-"+submit.SpanID+"-01" != jobs[0].Traceparent ||
		submit.Attrs["queue.job_id"] != int64(7) || submit.Kind != tracepb.Span_SPAN_KIND_PRODUCER || submit.TraceState != "vendor=1" {
		t.Errorf("submit span %+v; want a child of %s, the job's stored context, job 7", submit, caller)
	}
	if submits[1].ParentID != "" || submits[1].TraceID == submit.TraceID {
		t.Errorf("the untraced job's submit span %+v; want a root of its own trace", submits[1])
	}
	w := waits[0]
	if w.TraceID != submit.TraceID || w.ParentID != submit.SpanID || !w.Start.Equal(due) || !w.End.Equal(claimed) || w.Attrs["queue.retry"] != true ||
		w.Attrs["queue.attempt"] != int64(2) || w.Attrs["queue.worker_id"] != "w1" {
		t.Errorf("wait span %+v; want a child of submit from the failure (%v) to the claim (%v), retry", w, due, claimed)
	}
	a := attempts[0]
	want := app.AttemptTraceparent(jobs[0].Traceparent, 7, 2)
	if a.TraceID != submit.TraceID || a.ParentID != submit.SpanID || a.SpanID != want[36:52] {
		t.Errorf("attempt span %s parent %s; want the derived id %s, a child of submit %s", a.SpanID, a.ParentID, want[36:52], submit.SpanID)
	}
	if a.Attrs["queue.outcome"] != "error" || a.Status.GetCode() != tracepb.Status_STATUS_CODE_ERROR || a.Status.GetMessage() != "exit status 1" ||
		a.Attrs["queue.job_id"] != int64(7) || a.Attrs["queue.name"] != "q" || a.Attrs["queue.kind"] != "k" || !a.Start.Equal(claimed) {
		t.Errorf("attempt span %+v (status %v); want outcome error with its text, from the claim", a.Attrs, a.Status)
	}
	if a.Resource["service.name"] != "svc" || a.Resource["service.version"] != "v9" {
		t.Errorf("resource %v", a.Resource)
	}
	if got := col.Header("X-Token"); got != "a b" {
		t.Errorf("header from OTEL_EXPORTER_OTLP_HEADERS: %q, want \"a b\"", got)
	}
}

// A span started in a context from withSpanID gets that id; others a
// random one.
func TestIDGenerator(t *testing.T) {
	want := trace.SpanID{1, 2, 3, 4, 5, 6, 7, 8}
	g := ids{}
	if got := g.NewSpanID(withSpanID(context.Background(), want), trace.TraceID{1}); got != want {
		t.Errorf("NewSpanID = %s, want %s", got, want)
	}
	a, b := g.NewSpanID(context.Background(), trace.TraceID{1}), g.NewSpanID(context.Background(), trace.TraceID{1})
	if !a.IsValid() || a == b || a == want {
		t.Errorf("random ids %s %s", a, b)
	}
	if tid, sid := g.NewIDs(context.Background()); !tid.IsValid() || !sid.IsValid() {
		t.Errorf("NewIDs = %s %s", tid, sid)
	}
}
