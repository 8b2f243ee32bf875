package sqlite_test

import (
	"database/sql"
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
		want, err := s.RowStats(ctx)
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
	// Reopen: the counts are read from the counters saved with every commit.
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

// Counters made wrong behind the store's back (a hand-edited database, a
// bug) are found by a recount and repaired by doctor's repair, in the
// file and in the open store's memory.
func TestRecountRepairsCounters(t *testing.T) {
	ctx := t.Context()
	s := MustOpen(t, sqlite.Options{Sync: "normal"})
	jobs := make([]app.NewJob, 5)
	for i := range jobs {
		jobs[i] = app.NewJob{Queue: "a", Kind: "k", Payload: json.RawMessage(`1`)}
	}
	if _, err := app.Submit(ctx, s, app.SubmitRequest{Jobs: jobs}); err != nil {
		t.Fatal(err)
	}
	if fixes, err := s.RecountJobs(ctx, false); err != nil || len(fixes) != 0 {
		t.Fatalf("recount of right counters = %v, %v; want nothing", fixes, err)
	}
	path := s.Path()
	s.Close()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{`UPDATE job_counts SET n = n + 7 WHERE queue = 'a' AND status = 'queued'`,
		`INSERT INTO job_counts (queue, status, n) VALUES ('ghost', 'done', 3)`} {
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()
	s, err = sqlite.Open(ctx, path, sqlite.Options{Sync: "normal"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	queued := func() int64 {
		t.Helper()
		st, err := s.Stats(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, q := range st {
			if q.Queue == "a" {
				return q.Queued
			}
		}
		return 0
	}
	if n := queued(); n != 12 {
		t.Fatalf("corrupted counter reads %d queued; want 12", n)
	}
	want := []app.CountFix{{Queue: "a", Status: "queued", Counter: 12, Rows: 5}, {Queue: "ghost", Status: "done", Counter: 3}}
	if fixes, err := s.RecountJobs(ctx, false); err != nil || !reflect.DeepEqual(fixes, want) {
		t.Fatalf("recount = %+v, %v; want %+v", fixes, err, want)
	}
	if n := queued(); n != 12 {
		t.Fatalf("a recount without repair changed the counter to %d", n)
	}
	if fixes, err := s.RecountJobs(ctx, true); err != nil || !reflect.DeepEqual(fixes, want) {
		t.Fatalf("repair = %+v, %v; want %+v", fixes, err, want)
	}
	if n := queued(); n != 5 {
		t.Fatalf("after repair the store reads %d queued; want 5", n)
	}
	if fixes, err := s.RecountJobs(ctx, false); err != nil || len(fixes) != 0 {
		t.Fatalf("recount after repair = %v, %v; want nothing", fixes, err)
	}
	// A report of doctor's says what it found and fixed.
	r := &app.Report{}
	if err := r.Recount(ctx, s, false); err != nil || len(r.Counts) != 0 || len(r.Problems) != 0 {
		t.Fatalf("doctor's recount after repair: %+v, %v", r, err)
	}
}
