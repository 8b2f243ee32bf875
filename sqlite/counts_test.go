package sqlite_test

import (
	"encoding/json"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/queuehq/queue/app"
	"github.com/queuehq/queue/sqlite"
)

// The counters Stats reads stay equal to a count of the rows through every
// kind of write, and survive a reopen.
func TestMaintainedCountsEqualTheRows(t *testing.T) {
	clock := app.NewFakeClock(time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC))
	s := MustOpen(t, sqlite.Options{StoreOptions: app.StoreOptions{Clock: clock}, Sync: "normal"})
	svc := app.NewService(s, nil, clock, nil, zerolog.Nop())
	ctx := t.Context()
	rng := rand.New(rand.NewPCG(1, 2))
	queues := []string{"a", "b", "c"}
	backoff := func(string, int) time.Duration { return time.Second }
	check := func(step int, what string) {
		t.Helper()
		got, err := s.Stats(ctx)
		if err != nil {
			t.Fatal(err)
		}
		want, err := s.CountStats(ctx)
		if err != nil {
			t.Fatal(err)
		}
		strip := func(qs []app.QueueStats) map[string]app.QueueStats {
			m := map[string]app.QueueStats{}
			for _, q := range qs {
				if q.Total > 0 {
					m[q.Queue] = q
				}
			}
			return m
		}
		if g, w := strip(got), strip(want); !reflect.DeepEqual(g, w) {
			t.Fatalf("step %d (%s): counters\n %+v\nrows\n %+v", step, what, g, w)
		}
	}
	for step := 0; step < 600; step++ {
		q := queues[rng.IntN(len(queues))]
		var what string
		switch n := rng.IntN(14); n {
		case 0, 1, 2:
			what = "submit"
			nj := app.NewJob{Queue: q, Kind: []string{"k", "m", "z"}[rng.IntN(3)], Priority: rng.IntN(3) - 1, Payload: json.RawMessage(`1`), MaxAttempts: 2, Timeout: time.Second, RunAt: clock.Now().Add(time.Duration(rng.IntN(3)) * time.Second)}
			if rng.IntN(4) == 0 {
				exp := clock.Now().Add(2 * time.Second)
				nj.ExpiresAt = &exp
			}
			app.Submit(ctx, s, app.SubmitRequest{Jobs: []app.NewJob{nj, nj}})
		case 3, 4:
			what = "claim+complete"
			jobs, _ := s.Claim(ctx, app.ClaimRequest{Queue: q, Limit: 3})
			if len(jobs) > 0 && rng.IntN(2) == 0 {
				s.Complete(ctx, []app.Completion{{ID: jobs[0].ID, Lease: jobs[0].Lease}})
			}
		case 5:
			what = "claim+fail"
			jobs, _ := s.Claim(ctx, app.ClaimRequest{Queue: q, Limit: 1})
			if len(jobs) > 0 {
				app.Fail(ctx, s, app.FailRequest{ID: jobs[0].ID, Lease: jobs[0].Lease, Error: "x", Retry: rng.IntN(3) > 0, Backoff: backoff})
			}
		case 6:
			what = "claim+snooze"
			jobs, _ := s.Claim(ctx, app.ClaimRequest{Queue: q, Limit: 1})
			if len(jobs) > 0 {
				app.Snooze(ctx, s, jobs[0].ID, jobs[0].Lease, time.Second)
			}
		case 7:
			what = "cancel"
			for _, j := range mustList(t, s, q) {
				if rng.IntN(3) == 0 {
					app.Cancel(ctx, s, app.CancelRequest{ID: j.ID})
				}
			}
		case 8:
			what = "time passes"
			clock.Advance(time.Duration(rng.IntN(3000)) * time.Millisecond)
			app.RecoverStale(ctx, s, 100, backoff)
			app.ExpireTTL(ctx, s, 100)
		case 9:
			what = "move"
			svc.BulkDead(ctx, app.BulkMove, app.BulkInput{Queue: q}, "t")
		case 10:
			what = "replay"
			svc.BulkDead(ctx, app.BulkReplay, app.BulkInput{Queue: q}, "t")
		case 11:
			what = "purge"
			svc.BulkDead(ctx, app.BulkPurge, app.BulkInput{Queue: q}, "t")
		case 12:
			what = "drain"
			svc.Drain(ctx, q, false, "t")
		case 13:
			what = "retention"
			s.DeleteOld(ctx, app.DeleteOldRequest{What: app.OldFinished, Before: clock.Now(), Limit: 5})
			s.DeleteOld(ctx, app.DeleteOldRequest{What: app.OldDead, Before: clock.Now(), Limit: 5})
		}
		check(step, what)
	}
	// Reopen: the counts are loaded from the rows.
	path := s.Path()
	s.Close()
	s2, err := sqlite.Open(ctx, path, sqlite.Options{StoreOptions: app.StoreOptions{Clock: clock}})
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	s = s2
	check(-1, "reopen")
}

func mustList(t *testing.T, s *sqlite.Store, q string) []*app.Job {
	jobs, err := s.List(t.Context(), app.JobFilter{Queue: q, Limit: 20})
	if err != nil {
		t.Fatal(err)
	}
	return jobs
}
