package app_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/queuehq/queue/app"
	"github.com/queuehq/queue/memory"
)

const (
	goodTraceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	goodTracestate  = "rojo=00f067aa0ba902b7,congo=t61rcWkgMzE"
)

// wantInvalid fails unless err is a 400 invalid_field naming field whose
// message holds each of says.
func wantInvalid(t *testing.T, what string, err error, field string, says ...string) {
	t.Helper()
	var ie *app.InvalidError
	if !errors.As(err, &ie) || ie.Field != field || ie.TooLarge {
		t.Fatalf("%s: %v (%#v), want invalid_field on %s", what, err, ie, field)
	}
	for _, s := range says {
		if !strings.Contains(ie.Message, s) {
			t.Fatalf("%s: message %q does not say %q", what, ie.Message, s)
		}
	}
}

// A traceparent is taken in W3C's version-00 form only: lowercase hex, a
// trace id and a parent id not all zero; any other is refused naming the
// field and the form.
func TestSubmitValidatesTraceparent(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	in := app.SubmitInput{Kind: "k", Traceparent: goodTraceparent, Tracestate: goodTracestate}
	nj, err := in.NewJob(app.DefaultConfig(), now)
	if err != nil || nj.Traceparent != goodTraceparent || nj.Tracestate != goodTracestate {
		t.Fatalf("a valid traceparent: %+v %v, want it and its tracestate copied", nj, err)
	}
	for _, tp := range []string{
		"00-4BF92F3577B34DA6A3CE929D0E0E4736-00F067AA0BA902B7-01", // uppercase
		"00-4bf92f3577b34da6a3ce929d0e0e473A-00f067aa0ba902b7-01", // uppercase in the trace id
		"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902bB-01", // in the parent id
		"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0A",
		"00-00000000000000000000000000000000-00f067aa0ba902b7-01", // trace id all zero
		"00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01", // parent id all zero
		"01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", // another version
		"ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
		"00-4bf92f3577b34da6a3ce929d0e0e473-00f067aa0ba902b7-01",    // 31 hex
		"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b-01",    // 15 hex
		"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",      // no flags
		"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-001",  // 3 hex flags
		"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-x", // more after the flags
		"00-4bf92f3577b34da6a3ce929d0e0e473g-00f067aa0ba902b7-01",   // not hex
		"00_4bf92f3577b34da6a3ce929d0e0e4736_00f067aa0ba902b7_01",
		" " + goodTraceparent,
		goodTraceparent + "\n",
		"garbage",
	} {
		in := app.SubmitInput{Kind: "k", Traceparent: tp}
		_, err := in.NewJob(app.DefaultConfig(), now)
		wantInvalid(t, "traceparent "+tp, err, "traceparent", "00-<32 lowercase hex trace id, not all zero>-<16 lowercase hex parent id, not all zero>-<2 lowercase hex flags>")
	}
}

// A tracestate is at most 512 characters of printable ASCII; without a
// traceparent it is not stored (W3C: it qualifies the traceparent's trace).
func TestSubmitValidatesTracestate(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	longest := strings.Repeat("a", app.MaxTracestate)
	in := app.SubmitInput{Kind: "k", Traceparent: goodTraceparent, Tracestate: longest}
	if nj, err := in.NewJob(app.DefaultConfig(), now); err != nil || nj.Tracestate != longest {
		t.Fatalf("a tracestate of 512 characters: %v", err)
	}
	for what, ts := range map[string]string{
		"513 characters": longest + "a",
		"a newline":      "rojo=1\ncongo=2",
		"a NUL":          "rojo=1\x00",
		"non-ASCII":      "rojo=é",
		"a tab":          "rojo=1,\tcongo=2",
	} {
		in := app.SubmitInput{Kind: "k", Traceparent: goodTraceparent, Tracestate: ts}
		_, err := in.NewJob(app.DefaultConfig(), now)
		wantInvalid(t, "tracestate with "+what, err, "tracestate")
	}
	in = app.SubmitInput{Kind: "k", Tracestate: goodTracestate}
	if nj, err := in.NewJob(app.DefaultConfig(), now); err != nil || nj.Tracestate != "" {
		t.Fatalf("a tracestate without a traceparent: %+v %v, want it accepted and not stored", nj, err)
	}
}

// A callback_url is an absolute http or https URL with a host, at most
// 2048 bytes, without credentials; a relative URL, another scheme, a URL
// without a host or an over-long one is refused naming the field.
func TestSubmitValidatesCallbackURL(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	longest := "https://hooks.example.com/" + strings.Repeat("a", app.MaxCallbackURL-len("https://hooks.example.com/"))
	for _, u := range []string{
		"https://hooks.example.com/done",
		"http://hooks.example.com:8080/a/b?job=1&x=%20#frag",
		"HTTPS://Hooks.Example.com/",
		"http://[2001:db8::1]:9000/hook",
		"http://203.0.113.7/hook",
		longest,
	} {
		in := app.SubmitInput{Kind: "k", CallbackURL: u}
		if nj, err := in.NewJob(app.DefaultConfig(), now); err != nil || nj.CallbackURL != u {
			t.Fatalf("callback_url %q: %+v %v, want it stored as given", u, nj.CallbackURL, err)
		}
	}
	for u, says := range map[string]string{
		"/relative/hook":                  "absolute http:// or https://",
		"hooks.example.com/done":          "absolute http:// or https://",
		"ftp://hooks.example.com/done":    "absolute http:// or https://",
		"mailto:ops@example.com":          "absolute http:// or https://",
		"javascript:alert(1)":             "absolute http:// or https://",
		"https://":                        "no host",
		"https:///path":                   "no host",
		"http://:8080/path":               "no host",
		"http:hooks.example.com":          "no host",
		"https://user:pw@example.com/":    "credentials",
		"https://exa mple.com/":           "not a URL",
		"https://example.com/\x00":        "not a URL",
		"https://example.com/\xff":        "UTF-8",
		longest + "a":                     "at most 2048",
		"https://example.com/a\r\nX-A: b": "not a URL",
	} {
		in := app.SubmitInput{Kind: "k", CallbackURL: u}
		_, err := in.NewJob(app.DefaultConfig(), now)
		wantInvalid(t, "callback_url "+u, err, "callback_url", says)
	}
}

// A batch with one bad job is refused whole, naming the job, and stores
// nothing; a good batch stores each job's fields as given.
func TestSubmitBatchIntegrationsFields(t *testing.T) {
	clock := app.NewFakeClock(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	bus := app.NewBus()
	store := memory.New(app.StoreOptions{Clock: clock, Bus: bus})
	svc := app.NewService(store, nil, clock, bus, zerolog.Nop())
	ins := []app.SubmitInput{
		{Kind: "k", CallbackURL: "https://hooks.example.com/1", Traceparent: goodTraceparent, Tracestate: goodTracestate},
		{Kind: "k", CallbackURL: "ftp://hooks.example.com/2"},
	}
	_, err := svc.Submit(t.Context(), ins)
	wantInvalid(t, "a batch with an ftp callback_url", err, "jobs[1].callback_url")
	if n, _ := store.CountJobs(t.Context(), app.JobFilter{}); n != 0 {
		t.Fatalf("the refused batch stored %d jobs", n)
	}
	ins[1] = app.SubmitInput{Kind: "k"}
	res, err := svc.Submit(t.Context(), ins)
	if err != nil {
		t.Fatal(err)
	}
	if j := res[0].Job; j.CallbackURL != ins[0].CallbackURL || j.Traceparent != goodTraceparent || j.Tracestate != goodTracestate {
		t.Fatalf("job 0: %+v, want its fields", j)
	}
	if j := res[1].Job; j.CallbackURL != "" || j.Traceparent != "" || j.Tracestate != "" {
		t.Fatalf("job 1: %+v, want no fields", j)
	}
}

// A workflow's step is checked like a job, its field named by the step.
func TestWorkflowStepIntegrationsFields(t *testing.T) {
	clock := app.NewFakeClock(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	bus := app.NewBus()
	svc := app.NewService(memory.New(app.StoreOptions{Clock: clock, Bus: bus}), nil, clock, bus, zerolog.Nop())
	in := app.WorkflowInput{Name: "w", Steps: []app.StepInput{
		{SubmitInput: app.SubmitInput{Kind: "k"}, Step: "a"},
		{SubmitInput: app.SubmitInput{Kind: "k", Traceparent: "00-abc"}, Step: "b"},
	}}
	_, err := svc.SubmitWorkflow(t.Context(), in)
	var ie *app.InvalidError
	if !errors.As(err, &ie) || !strings.HasSuffix(ie.Field, "traceparent") || !strings.Contains(ie.Message, `step "b"`) {
		t.Fatalf("a step with a bad traceparent: %v, want invalid_field naming step b's traceparent", err)
	}
}
