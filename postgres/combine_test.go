package postgres

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/queuehq/queue/app"
)

// Submissions gathered into one transaction stay independent: one the
// database refuses fails alone, the others are stored and answered with
// their jobs (SPEC: a submission is all or nothing, and only its own).
func TestGatheredSubmissionFailsAlone(t *testing.T) {
	s := mustOpen(t, Options{})
	bad := newJob("q")
	bad.Kind = "k\x00" // passes the store's own checks; PostgreSQL refuses the NUL byte
	calls := []*submitCall{
		{jobs: []app.NewJob{newJob("q"), newJob("q")}, done: make(chan struct{})},
		{jobs: []app.NewJob{bad}, done: make(chan struct{})},
		{jobs: []app.NewJob{newJob("q")}, done: make(chan struct{})},
	}
	s.writeSubmissions(calls)
	var ie *app.InvalidError
	if !errors.As(calls[1].err, &ie) || calls[1].out != nil {
		t.Fatalf("refused submission: %v %v, want an InvalidError and no jobs", calls[1].out, calls[1].err)
	}
	for _, i := range []int{0, 2} {
		c := calls[i]
		if c.err != nil || len(c.out) != len(c.jobs) {
			t.Fatalf("submission %d: %v %v, want its %d jobs", i, c.out, c.err, len(c.jobs))
		}
		for _, r := range c.out {
			if got, _, err := s.Lookup(t.Context(), r.Job.ID); err != nil || got.Status != app.StatusQueued {
				t.Fatalf("job %d of submission %d: %+v %v, want it stored queued", r.Job.ID, i, got, err)
			}
		}
	}
	stats, err := s.Stats(t.Context())
	if err != nil || len(stats) != 1 || stats[0].Queued != 3 {
		t.Fatalf("stats %+v %v, want 3 queued jobs", stats, err)
	}
}

// Gathered submissions are inserted by one statement; each caller gets its
// own jobs back, in its order, with the ids the rows were stored under.
func TestGatheredSubmissionsKeepTheirJobs(t *testing.T) {
	s := mustOpen(t, Options{})
	at := time.Now().Add(time.Hour).UTC().Truncate(time.Millisecond)
	from := int64(7)
	job := func(queue, kind, payload string, tags []string) app.NewJob {
		nj := newJob(queue)
		nj.Kind, nj.Payload, nj.Tags = kind, json.RawMessage(payload), tags
		return nj
	}
	a := job("q1", "a", `{"n":1}`, []string{"x", `quote " and , comma`, "ü"})
	b := job("q2", "b", `[1, 2]`, nil)
	b.Priority, b.RunAt, b.ExpiresAt, b.ReplayedFrom, b.MaxAttempts = -3, at, &at, &from, 9
	c := job("q1", "c", `"s"`, []string{})
	calls := []*submitCall{
		{jobs: []app.NewJob{a, b}, done: make(chan struct{})},
		{jobs: []app.NewJob{c}, done: make(chan struct{})},
	}
	s.writeSubmissions(calls)
	for _, call := range calls {
		if call.err != nil || len(call.out) != len(call.jobs) {
			t.Fatalf("submission: %v %v", call.out, call.err)
		}
		for i, r := range call.out {
			want := call.jobs[i]
			got, _, err := s.Lookup(t.Context(), r.Job.ID)
			if err != nil {
				t.Fatal(err)
			}
			if got.Kind != want.Kind || got.Queue != want.Queue || string(got.Payload) != string(want.Payload) ||
				strings.Join(got.Tags, "|") != strings.Join(want.Tags, "|") || got.Priority != want.Priority ||
				got.MaxAttempts != want.MaxAttempts || r.Job.Kind != want.Kind {
				t.Fatalf("job %d stored as %+v, want %+v (answered %+v)", r.Job.ID, got, want, r.Job)
			}
			if want.Kind == "b" && (!got.RunAt.Equal(at) || got.ExpiresAt == nil || !got.ExpiresAt.Equal(at) ||
				got.ReplayedFrom == nil || *got.ReplayedFrom != from) {
				t.Fatalf("job b stored as %+v: run_at, expires_at or replayed_from lost", got)
			}
		}
	}
	if !(calls[0].out[0].Job.ID < calls[0].out[1].Job.ID && calls[0].out[1].Job.ID < calls[1].out[0].Job.ID) {
		t.Fatalf("ids %d %d %d: not in submission order", calls[0].out[0].Job.ID, calls[0].out[1].Job.ID, calls[1].out[0].Job.ID)
	}
}
