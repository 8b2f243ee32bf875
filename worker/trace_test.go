package worker

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"go.opentelemetry.io/otel/trace"

	"github.com/queuehq/queue/app"
	"github.com/queuehq/queue/memory"
)

const testTraceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

// A traced job's command gets TRACEPARENT (its attempt's span, as the
// server derives it) and TRACESTATE; an untraced job's gets neither,
// whatever the worker's environment or its configured env say.
func TestCommandTraceEnvironment(t *testing.T) {
	t.Setenv("TRACEPARENT", "00-11111111111111111111111111111111-1111111111111111-01") // the worker's own trace
	t.Setenv("TRACESTATE", "worker=1")
	h := CommandHandler(CommandConfig{
		Command: []string{"sh", "-c", `printf '%s|%s|%s' "${TRACEPARENT-unset}" "${TRACESTATE-unset}" "$OTHER"`},
		Env:     map[string]string{"TRACEPARENT": "00-22222222222222222222222222222222-2222222222222222-01", "OTHER": "x"},
		PassEnv: []string{"TRACESTATE"},
	})
	j := testJob("null")
	j.Lease = 3
	res, err := h(t.Context(), j)
	if err != nil {
		t.Fatal(err)
	}
	if got := string(res.(json.RawMessage)); got != `"unset|unset|x"` {
		t.Errorf("untraced job: %s, want no TRACEPARENT nor TRACESTATE", got)
	}
	j.Traceparent, j.Tracestate = testTraceparent, "vendor=a"
	res, err = h(t.Context(), j)
	if err != nil {
		t.Fatal(err)
	}
	want := app.AttemptTraceparent(testTraceparent, j.ID, j.Lease)
	if got := string(res.(json.RawMessage)); got != `"`+want+`|vendor=a|x"` {
		t.Errorf("traced job: %s, want %s|vendor=a|x", got, want)
	}
}

// A Go handler's context carries the span context of its attempt: the
// job's trace, the derived attempt span as a remote parent.
func TestHandlerContextCarriesTheAttempt(t *testing.T) {
	bus := app.NewBus()
	store := memory.New(app.StoreOptions{Bus: bus})
	t.Cleanup(func() { store.Close() })
	svc := app.NewService(store, nil, nil, bus, zerolog.Nop())
	res, err := svc.Submit(t.Context(), []app.SubmitInput{{Queue: "q", Kind: "k", Traceparent: testTraceparent, Tracestate: "vendor=a"}, {Queue: "q", Kind: "k"}})
	if err != nil {
		t.Fatal(err)
	}
	type seen struct {
		sc    trace.SpanContext
		lease int64
	}
	got := make(chan seen, 2)
	p := &Pool{Backend: LocalBackend(svc), Queue: "q", Concurrency: 2, Log: zerolog.Nop(),
		Handler: func(ctx context.Context, job *app.Job) (any, error) {
			got <- seen{trace.SpanContextFromContext(ctx), job.Lease}
			return nil, nil
		}}
	if err := p.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer p.Stop(time.Second)
	byTrace := map[bool]seen{}
	for range 2 {
		select {
		case s := <-got:
			byTrace[s.sc.IsValid()] = s
		case <-time.After(10 * time.Second):
			t.Fatal("the handler did not run")
		}
	}
	s, ok := byTrace[true]
	if !ok {
		t.Fatal("no handler saw a span context")
	}
	want := app.AttemptTraceparent(testTraceparent, res[0].Job.ID, s.lease)
	if s.sc.TraceID().String() != want[3:35] || s.sc.SpanID().String() != want[36:52] || !s.sc.IsRemote() ||
		!s.sc.IsSampled() || s.sc.TraceState().String() != "vendor=a" {
		t.Errorf("handler's span context %v; want %s, tracestate vendor=a, remote", s.sc, want)
	}
	if _, ok := byTrace[false]; !ok {
		t.Errorf("the untraced job's handler saw a span context: %v", byTrace)
	}
}
