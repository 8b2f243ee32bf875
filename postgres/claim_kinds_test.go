package postgres

import (
	"slices"
	"testing"

	"github.com/queuehq/queue/app"
)

// A claim naming several kinds locks only the rows it takes: while one
// takes 4 of 3 kinds' 30 jobs in an open transaction, a concurrent claim
// skips those 4 alone and takes 4 from the front (each kind its share of
// the first 4, the rows after the held ones), not 12-15 after the 12 rows
// that locking 4 in each kind's range held.
func TestClaimOfKindsLocksWhatItTakes(t *testing.T) {
	s := mustOpen(t, Options{})
	ctx := t.Context()
	var jobs []app.NewJob
	for i := range 30 {
		jobs = append(jobs, app.NewJob{Queue: "q", Kind: []string{"a", "b", "c"}[i%3], Priority: i, MaxAttempts: 1})
	}
	if _, err := s.InsertJobs(ctx, jobs); err != nil {
		t.Fatal(err)
	}
	req := app.ClaimRequest{Queue: "q", WorkerID: "w", Limit: 4, Kinds: []string{"a", "b", "c"}}
	err := s.Write(ctx, func(tx app.Tx) error {
		first, err := tx.Take(req, 4)
		if err != nil {
			return err
		}
		second, err := s.Claim(ctx, req) // its own transaction, beside the open one
		if err != nil {
			return err
		}
		if got := prios(first); !slices.Equal(got, []int{0, 1, 2, 3}) {
			t.Errorf("the first claim took priorities %v, want 0-3", got)
		}
		if got := prios(second); !slices.Equal(got, []int{4, 5, 6, 9}) {
			t.Errorf("a concurrent claim took priorities %v, want 4, 5, 6, 9: the first held rows it did not take", got)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func prios(jobs []*app.Job) []int {
	out := make([]int, len(jobs))
	for i, j := range jobs {
		out[i] = j.Priority
	}
	return out
}
