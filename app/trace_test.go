package app_test

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/queuehq/queue/app"
	"github.com/queuehq/queue/memory"
)

const (
	callerTP = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	submitTP = "00-4bf92f3577b34da6a3ce929d0e0e4736-5555555555555555-01" // the fake's queue.submit span
)

// The attempt span's id is derived, not stored: the same for the same
// trace, job and lease (so the server and any worker agree), another for
// another lease, job or trace, in the job's trace with its flags; and
// nothing for what is not a version 00 traceparent.
func TestAttemptTraceparent(t *testing.T) {
	got := app.AttemptTraceparent(callerTP, 7, 1)
	// Pinned: workers of an older or newer server derive the same id.
	if want := "00-4bf92f3577b34da6a3ce929d0e0e4736-2ec59dfc1ee87201-01"; got != want {
		t.Fatalf("AttemptTraceparent(%s, 7, 1) = %s, want %s", callerTP, got, want)
	}
	if again := app.AttemptTraceparent(callerTP, 7, 1); again != got {
		t.Fatalf("not deterministic: %s then %s", got, again)
	}
	if err := app.ValidateTraceparent(got); err != nil {
		t.Fatalf("AttemptTraceparent gave an invalid traceparent %s: %v", got, err)
	}
	seen := map[string]string{got: "job 7 lease 1"}
	for what, tp := range map[string]string{
		"job 7 lease 2":   app.AttemptTraceparent(callerTP, 7, 2),
		"job 8 lease 1":   app.AttemptTraceparent(callerTP, 8, 1),
		"other parent id": app.AttemptTraceparent("00-4bf92f3577b34da6a3ce929d0e0e4736-1111111111111111-01", 7, 1),
		"other trace":     app.AttemptTraceparent("00-0af7651916cd43dd8448eb211c80319c-00f067aa0ba902b7-01", 7, 1),
	} {
		if what == "other parent id" { // the parent (submit) span does not enter the id: any node computes it from the job
			if tp != got {
				t.Errorf("%s: %s, want %s", what, tp, got)
			}
			continue
		}
		if prev, dup := seen[tp[36:52]]; dup {
			t.Errorf("%s and %s share the span id %s", what, prev, tp[36:52])
		}
		seen[tp[36:52]] = what
	}
	if tp := app.AttemptTraceparent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00", 7, 1); !strings.HasSuffix(tp, "-00") || tp[3:35] != callerTP[3:35] {
		t.Errorf("unsampled: %s keeps neither the trace id nor the flags", tp)
	}
	for _, bad := range []string{"", "garbage", "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
		"00-00000000000000000000000000000000-00f067aa0ba902b7-01", "00-4BF92F3577B34DA6A3CE929D0E0E4736-00F067AA0BA902B7-01"} {
		if tp := app.AttemptTraceparent(bad, 7, 1); tp != "" {
			t.Errorf("AttemptTraceparent(%q) = %q, want \"\"", bad, tp)
		}
	}
}

// A job's wait began when it came due, or, after a failed attempt, at the
// failure (a retry).
func TestWaitBegan(t *testing.T) {
	created := time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC)
	j := &app.Job{CreatedAt: created, RunAt: created.Add(-time.Second), Attempts: 1}
	if at, retry := j.WaitBegan(); !at.Equal(created) || retry {
		t.Errorf("fresh job: %v %v, want created_at %v", at, retry, created)
	}
	j.RunAt = created.Add(time.Minute)
	if at, retry := j.WaitBegan(); !at.Equal(j.RunAt) || retry {
		t.Errorf("scheduled job: %v %v, want run_at %v", at, retry, j.RunAt)
	}
	failed := created.Add(2 * time.Minute)
	j.Attempts, j.Errors = 2, []app.AttemptError{{Attempt: 1, At: failed, Error: "boom"}}
	j.RunAt = failed.Add(10 * time.Second) // the backoff
	if at, retry := j.WaitBegan(); !at.Equal(failed) || !retry {
		t.Errorf("retry: %v %v, want the failure %v and retry", at, retry, failed)
	}
}

// fakeTracer records what a Service tells its Tracer.
type fakeTracer struct {
	mu        sync.Mutex
	submitted []app.NewJob
	ended     []string
	claimed   []*app.Job
	attempts  []app.AttemptEnd
}

func (f *fakeTracer) Submit(jobs []app.NewJob) func([]app.Submitted, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.submitted = append(f.submitted, jobs...)
	for i := range jobs {
		if jobs[i].Traceparent != "" {
			jobs[i].Traceparent = submitTP
		}
	}
	return func(out []app.Submitted, err error) {
		f.mu.Lock()
		defer f.mu.Unlock()
		for _, s := range out {
			f.ended = append(f.ended, s.Job.Traceparent)
		}
	}
}

func (f *fakeTracer) Claimed(jobs []*app.Job) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.claimed = append(f.claimed, jobs...)
}

func (f *fakeTracer) AttemptEnded(a app.AttemptEnd) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.attempts = append(f.attempts, a)
}

// last returns the last attempt recorded and how many there are.
func (f *fakeTracer) last() (app.AttemptEnd, int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.attempts) == 0 {
		return app.AttemptEnd{}, 0
	}
	return f.attempts[len(f.attempts)-1], len(f.attempts)
}

// tracedNodes are two Services ("nodes") over one memory store on a fake
// clock; the first has tr as its Tracer, the second its own.
func tracedNodes(t *testing.T) (a, b *app.Service, ta, tb *fakeTracer, clock *app.FakeClock) {
	t.Helper()
	clock = app.NewFakeClock(time.Date(2026, 3, 4, 10, 0, 0, 0, time.UTC))
	bus := app.NewBus()
	store := memory.New(app.StoreOptions{Clock: clock, Bus: bus})
	t.Cleanup(func() { store.Close() })
	a = app.NewService(store, nil, clock, bus, zerolog.Nop())
	b = app.NewService(store, nil, clock, bus, zerolog.Nop())
	ta, tb = &fakeTracer{}, &fakeTracer{}
	a.Tracer, b.Tracer = ta, tb
	return a, b, ta, tb, clock
}

func claimOne(t *testing.T, svc *app.Service, queue string) *app.Job {
	t.Helper()
	jobs, err := svc.Claim(t.Context(), queue, app.ClaimInput{WorkerID: "w1"})
	if err != nil || len(jobs) != 1 {
		t.Fatalf("Claim(%s) = %d jobs, %v; want 1", queue, len(jobs), err)
	}
	return jobs[0]
}

// The Service tells its Tracer each moment of a traced job after it
// committed: the submission (whose span the job stores), the claim, and
// each attempt's end with its outcome, also when the outcome reaches a
// node that did not hand the attempt out.
func TestServiceTracesJobs(t *testing.T) {
	a, b, ta, tb, clock := tracedNodes(t)
	ctx := t.Context()
	res, err := a.Submit(ctx, []app.SubmitInput{{Queue: "q", Kind: "k", Traceparent: callerTP}})
	if err != nil {
		t.Fatal(err)
	}
	if len(ta.submitted) != 1 || ta.submitted[0].Traceparent != callerTP || len(ta.ended) != 1 {
		t.Fatalf("Tracer.Submit saw %+v, ended %v; want the job with the caller's traceparent once, ended once", ta.submitted, ta.ended)
	}
	if got := res[0].Job.Traceparent; got != submitTP {
		t.Fatalf("stored traceparent %s, want the submit span's %s", got, submitTP)
	}

	// Claimed on a, completed on a: no read, span ok.
	j := claimOne(t, a, "q")
	if len(ta.claimed) != 1 || ta.claimed[0].ID != j.ID || ta.claimed[0].StartedAt == nil {
		t.Fatalf("Tracer.Claimed saw %v, want job %d with its start", ta.claimed, j.ID)
	}
	clock.Advance(time.Second)
	if err := a.Complete(ctx, j.ID, j.Lease, nil); err != nil {
		t.Fatal(err)
	}
	got, n := ta.last()
	if n != 1 || got.Outcome != app.EndedOK || got.Job.ID != j.ID || got.Job.Lease != j.Lease || got.Job.Traceparent != submitTP ||
		!got.Job.StartedAt.Equal(*j.StartedAt) || got.At.Sub(*j.StartedAt) != time.Second || got.Job.WorkerID != "w1" {
		t.Fatalf("after complete: %d attempts, last %+v (job %+v); want job %d lease %d ok, 1s long", n, got, got.Job, j.ID, j.Lease)
	}

	// Claimed on a, failed on b (another node): b reads the job and records the span.
	if _, err := a.Submit(ctx, []app.SubmitInput{{Queue: "q", Kind: "k", Traceparent: callerTP}}); err != nil {
		t.Fatal(err)
	}
	j = claimOne(t, a, "q")
	if _, err := b.Fail(ctx, j.ID, app.FailInput{Lease: j.Lease, Error: "boom"}); err != nil {
		t.Fatal(err)
	}
	if got, n := tb.last(); n != 1 || got.Outcome != app.EndedError || got.Error != "boom" || got.Job.ID != j.ID || got.Job.Attempts != 1 {
		t.Fatalf("fail on another node: %d attempts, last %+v; want job %d's attempt 1, error boom", n, got, j.ID)
	}
	// Its retry: the wait began at the failure.
	clock.Advance(time.Hour) // past any backoff
	j = claimOne(t, b, "q")
	if at, retry := tb.claimed[0].WaitBegan(); !retry || at.After(*j.StartedAt) {
		t.Fatalf("the retry's wait: began %v retry %v", at, retry)
	}
	// A stale lease reported: no span (the attempt did not end there).
	if _, err := b.Fail(ctx, j.ID, app.FailInput{Lease: j.Lease - 1, Error: "late"}); err == nil {
		t.Fatal("a stale lease failed the job")
	}
	if _, n := tb.last(); n != 1 {
		t.Fatalf("a refused outcome recorded a span (%d)", n)
	}
	// The lease expires; the leader's maintenance (here a) ends the attempt.
	clock.Advance(time.Hour)
	if err := (&app.Maintainer{Service: a}).Tick(ctx); err != nil {
		t.Fatal(err)
	}
	if got, n := ta.last(); n != 2 || got.Outcome != app.EndedLeaseLost || got.Job.ID != j.ID || got.Job.Lease != j.Lease {
		t.Fatalf("lease lost: %d attempts, last %+v; want job %d lease %d lease_lost", n, got, j.ID, j.Lease)
	}

	// Snoozed, then a cancel acknowledged under a lease.
	clock.Advance(time.Hour)
	j = claimOne(t, a, "q")
	if _, err := a.Snooze(ctx, j.ID, j.Lease, 0); err != nil {
		t.Fatal(err)
	}
	if got, _ := ta.last(); got.Outcome != app.EndedSnoozed || got.Job.Lease != j.Lease {
		t.Fatalf("snooze: %+v", got)
	}
	j = claimOne(t, a, "q")
	if _, err := a.Cancel(ctx, j.ID, &j.Lease, ""); err != nil {
		t.Fatal(err)
	}
	if got, _ := ta.last(); got.Outcome != app.EndedCancelled || got.Job.Lease != j.Lease {
		t.Fatalf("cancel: %+v", got)
	}
}

// A job without a trace has no attempt spans; a Service without a Tracer
// stores the caller's traceparent as given.
func TestUntracedJobs(t *testing.T) {
	a, _, ta, _, _ := tracedNodes(t)
	ctx := t.Context()
	if _, err := a.Submit(ctx, []app.SubmitInput{{Queue: "q", Kind: "k"}}); err != nil {
		t.Fatal(err)
	}
	j := claimOne(t, a, "q")
	if err := a.Complete(ctx, j.ID, j.Lease, nil); err != nil {
		t.Fatal(err)
	}
	if _, n := ta.last(); n != 0 {
		t.Fatalf("an untraced job's attempt recorded %d spans", n)
	}

	a.Tracer = nil
	res, err := a.Submit(ctx, []app.SubmitInput{{Queue: "q", Kind: "k", Traceparent: callerTP, Tracestate: "v=1"}})
	if err != nil {
		t.Fatal(err)
	}
	if res[0].Job.Traceparent != callerTP || res[0].Job.Tracestate != "v=1" {
		t.Fatalf("without a Tracer the job stores %q %q, want the caller's", res[0].Job.Traceparent, res[0].Job.Tracestate)
	}
}

func TestFitTracestate(t *testing.T) {
	long := strings.Repeat("x", 600)
	for _, c := range []struct{ in, want string }{
		{"", ""},
		{"a=1", "a=1"},
		{"a=1, b=2", "a=1,b=2"},
		{"a=" + long, ""},
		{"a=1,b=" + long + ",c=3", "a=1"},
		{"a=1,b=\x01,c=3", "a=1,c=3"},
		{strings.Repeat("x", app.MaxTracestate-2) + "=1", strings.Repeat("x", app.MaxTracestate-2) + "=1"},
	} {
		if got := app.FitTracestate(c.in); got != c.want || len(got) > app.MaxTracestate {
			t.Errorf("FitTracestate(%.40q) = %.40q; want %.40q", c.in, got, c.want)
		}
	}
}
