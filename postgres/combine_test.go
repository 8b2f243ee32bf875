package postgres

import (
	"errors"
	"testing"

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
	if !combinable(app.SubmitRequest{Jobs: calls[1].jobs}) {
		t.Fatal("the refused submission would not be gathered; the test proves nothing")
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
