package client_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"go.opentelemetry.io/otel/trace"

	"github.com/queuehq/queue/app"
	"github.com/queuehq/queue/client"
	"github.com/queuehq/queue/memory"
	"github.com/queuehq/queue/ui"
)

// Submit, SubmitBatch and SubmitWorkflow put jobs without a traceparent
// in the trace of the caller's context (a job's own wins, the caller's
// inputs are left as they were); a Worker's handler gets its attempt's
// span context.
func TestSubmitCarriesTheCallersTrace(t *testing.T) {
	svc := app.NewService(memory.New(app.StoreOptions{}), nil, app.SystemClock{}, app.NewBus(), zerolog.Nop())
	srv := httptest.NewServer(ui.New(ui.Options{Service: svc, Log: zerolog.Nop()}))
	defer srv.Close()
	cl := client.New(srv.URL)

	ts, _ := trace.ParseTraceState("vendor=a")
	sc := trace.NewSpanContext(trace.SpanContextConfig{TraceID: trace.TraceID{0x4b, 0xf9, 1}, SpanID: trace.SpanID{0xf0, 7},
		TraceFlags: trace.FlagsSampled, TraceState: ts})
	ctx := trace.ContextWithSpanContext(t.Context(), sc)
	want := "00-" + sc.TraceID().String() + "-" + sc.SpanID().String() + "-01"
	const own = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00"

	s, err := cl.Submit(ctx, client.SubmitInput{Queue: "q", Kind: "k"})
	if err != nil {
		t.Fatal(err)
	}
	if s.Job.Traceparent != want || s.Job.Tracestate != "vendor=a" {
		t.Fatalf("Submit stored %q %q; want %q vendor=a", s.Job.Traceparent, s.Job.Tracestate, want)
	}
	if s, err := cl.Submit(t.Context(), client.SubmitInput{Queue: "q", Kind: "k"}); err != nil || s.Job.Traceparent != "" {
		t.Fatalf("Submit without a span: %v %v", s, err)
	}
	ins := []client.SubmitInput{{Queue: "q", Kind: "k"}, {Queue: "q", Kind: "k", Traceparent: own}}
	jobs, err := cl.SubmitBatch(ctx, ins)
	if err != nil {
		t.Fatal(err)
	}
	if jobs[0].Traceparent != want || jobs[1].Traceparent != own || ins[0].Traceparent != "" {
		t.Fatalf("SubmitBatch stored %q and %q (inputs now %q); want %q and the job's own", jobs[0].Traceparent, jobs[1].Traceparent, ins[0].Traceparent, want)
	}
	wf, err := cl.SubmitWorkflow(ctx, client.WorkflowInput{Name: "w", Steps: []client.StepInput{{SubmitInput: app.SubmitInput{Queue: "q", Kind: "k"}, Step: "a"}}})
	if err != nil {
		t.Fatal(err)
	}
	if j, err := cl.Get(t.Context(), wf.Steps[0].JobID, client.GetOptions{}); err != nil || j.Traceparent != want {
		t.Fatalf("the workflow step's job: %v, %v; want traceparent %q", j, err, want)
	}

	// The worker's handler: the attempt's span, in the job's trace.
	got := make(chan trace.SpanContext, 10)
	w := client.NewWorker(cl, "q", client.WithPollWait(time.Second))
	w.Handle("k", func(ctx context.Context, job *client.Job) (any, error) {
		if job.ID == s.Job.ID {
			got <- trace.SpanContextFromContext(ctx)
		}
		return nil, nil
	})
	runCtx, cancel := context.WithCancel(t.Context())
	defer cancel()
	go w.Run(runCtx)
	select {
	case hsc := <-got:
		attempt := app.AttemptTraceparent(want, s.Job.ID, 1)
		if hsc.TraceID() != sc.TraceID() || hsc.SpanID().String() != attempt[36:52] || !hsc.IsRemote() {
			t.Fatalf("handler's span context %v; want the attempt's %s", hsc, attempt)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the handler did not run")
	}
}

// A caller's tracestate longer than a job keeps (W3C allows 32 members of
// up to 256 characters) is cut from the right, not sent whole to be
// refused: the submission must not fail because of the trace it is in.
func TestSubmitCutsALongTracestate(t *testing.T) {
	svc := app.NewService(memory.New(app.StoreOptions{}), nil, app.SystemClock{}, app.NewBus(), zerolog.Nop())
	srv := httptest.NewServer(ui.New(ui.Options{Service: svc, Log: zerolog.Nop()}))
	defer srv.Close()
	cl := client.New(srv.URL)

	var members []string
	for i := range 20 {
		members = append(members, fmt.Sprintf("v%02d=%s", i, strings.Repeat("x", 36)))
	}
	ts, err := trace.ParseTraceState(strings.Join(members, ","))
	if err != nil {
		t.Fatal(err)
	}
	sc := trace.NewSpanContext(trace.SpanContextConfig{TraceID: trace.TraceID{0x4b, 1}, SpanID: trace.SpanID{0xf0, 1}, TraceState: ts})
	s, err := cl.Submit(trace.ContextWithSpanContext(t.Context(), sc), client.SubmitInput{Queue: "q", Kind: "k"})
	if err != nil {
		t.Fatalf("Submit in a trace with a %d-character tracestate: %v", len(ts.String()), err)
	}
	want := strings.Join(members[:12], ",") // 12 members of 40 characters and 11 commas fit in 512
	if s.Job.Tracestate != want {
		t.Fatalf("stored tracestate %q; want the first 12 members", s.Job.Tracestate)
	}
}
