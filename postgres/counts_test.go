package postgres

import (
	"encoding/json"
	"math/rand/v2"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/queuehq/queue/app"
	"github.com/queuehq/queue/sqlite"
)

// The counters Stats reads equal a count of the rows through every kind of
// write, however the deltas were folded.
func TestCountersEqualTheRows(t *testing.T) {
	ctx := t.Context()
	s := mustOpen(t, Options{})
	clock := app.NewFakeClock(time.Now())
	svc := app.NewService(s, nil, clock, nil, zerolog.Nop())
	rng := rand.New(rand.NewPCG(1, 2))
	queues := []string{"a", "b"}
	backoff := func(string, int) time.Duration { return time.Millisecond }
	for step := 0; step < 300; step++ {
		q := queues[rng.IntN(len(queues))]
		switch rng.IntN(8) {
		case 0, 1, 2:
			nj := app.NewJob{Queue: q, Kind: "k", Priority: rng.IntN(3) - 1, Payload: json.RawMessage(`1`), MaxAttempts: 2, Timeout: time.Second}
			app.Submit(ctx, s, app.SubmitRequest{Jobs: []app.NewJob{nj, nj}})
		case 3, 4:
			jobs, _ := s.Claim(ctx, app.ClaimRequest{Queue: q, Limit: 3})
			if len(jobs) > 0 {
				s.Complete(ctx, []app.Completion{{ID: jobs[0].ID, Lease: jobs[0].Lease}})
			}
		case 5:
			jobs, _ := s.Claim(ctx, app.ClaimRequest{Queue: q, Limit: 1})
			if len(jobs) > 0 {
				app.Fail(ctx, s, app.FailRequest{ID: jobs[0].ID, Lease: jobs[0].Lease, Error: "x", Retry: false, Backoff: backoff})
			}
		case 6:
			svc.BulkDead(ctx, app.BulkReplay, app.BulkInput{Queue: q}, "t")
		case 7:
			s.DeleteOld(ctx, app.DeleteOldRequest{What: app.OldFinished, Before: time.Now().Add(time.Hour), Limit: 5})
		}
		if step%50 == 49 {
			if fixes, err := s.RecountJobs(ctx, false); err != nil || len(fixes) != 0 {
				t.Fatalf("step %d: counters differ from the rows: %+v, %v", step, fixes, err)
			}
		}
	}
}

// Counters made wrong behind the store's back are found by a recount and
// repaired by doctor's repair.
func TestRecountRepairsCounters(t *testing.T) {
	ctx := t.Context()
	s := mustOpen(t, Options{})
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
	for _, q := range []string{`INSERT INTO job_count_deltas (queue, status, n) VALUES ('a', 'queued', 7)`,
		`INSERT INTO job_counts (queue, status, n) VALUES ('ghost', 'done', 3)`} {
		if _, err := s.Pool().Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
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
	r := &app.Report{}
	if err := r.Recount(ctx, s, false); err != nil || !reflect.DeepEqual(r.Counts, want) || len(r.Problems) != 1 || r.Repaired {
		t.Fatalf("doctor's recount = %+v, %v; want %+v and a problem", r, err, want)
	}
	r = &app.Report{}
	if err := r.Recount(ctx, s, true); err != nil || !reflect.DeepEqual(r.Counts, want) || !r.Repaired {
		t.Fatalf("doctor's repair = %+v, %v; want %+v repaired", r, err, want)
	}
	if n := queued(); n != 5 {
		t.Fatalf("after repair Stats reads %d queued; want 5", n)
	}
	if fixes, err := s.RecountJobs(ctx, false); err != nil || len(fixes) != 0 {
		t.Fatalf("recount after repair = %v, %v; want nothing", fixes, err)
	}
}

// What the counters' triggers cost a job's way through (a submit of one,
// a claim of one and a completion: three statements that move jobs), with
// them and with them disabled.
func BenchmarkCounterTriggers(b *testing.B) {
	for _, on := range []bool{true, false} {
		name := "triggers"
		if !on {
			name = "none"
		}
		b.Run(name, func(b *testing.B) {
			ctx := b.Context()
			s := mustOpen(b, Options{})
			if !on {
				for _, t := range []string{"jobs", "dead_letter_jobs"} {
					if _, err := s.Pool().Exec(ctx, `ALTER TABLE `+t+` DISABLE TRIGGER USER`); err != nil {
						b.Fatal(err)
					}
				}
			}
			nj := []app.NewJob{{Queue: "a", Kind: "k", Payload: json.RawMessage(`1`)}}
			b.ResetTimer()
			for range b.N {
				if _, err := app.Submit(ctx, s, app.SubmitRequest{Jobs: nj}); err != nil {
					b.Fatal(err)
				}
				jobs, err := s.Claim(ctx, app.ClaimRequest{Queue: "a", Limit: 1})
				if err != nil || len(jobs) != 1 {
					b.Fatal(err, len(jobs))
				}
				if _, err := s.Complete(ctx, []app.Completion{{ID: jobs[0].ID, Lease: jobs[0].Lease}}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// Rows that reach the jobs without the store's writes (queue migrate-store's
// import) are counted too: the counters are triggers on the tables.
func TestImportKeepsTheCounters(t *testing.T) {
	testDSN(t)
	path := filepath.Join(t.TempDir(), "queue.db")
	fillSQLite(t, path)
	clock := app.NewFakeClock(time.Date(2026, 1, 2, 3, 34, 5, 0, time.UTC))
	src, err := sqlite.Open(t.Context(), path, sqlite.Options{ReadOnly: true, StoreOptions: app.StoreOptions{Clock: clock}})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	dst := mustOpen(t, Options{StoreOptions: app.StoreOptions{Clock: clock, KeyLimits: keyedLimits}})
	if _, _, err := copyFromSQLite(t, src, dst, 3); err != nil {
		t.Fatalf("copy: %v", err)
	}
	if fixes, err := dst.RecountJobs(t.Context(), false); err != nil || len(fixes) != 0 {
		t.Fatalf("counters after the import differ from the rows: %+v, %v", fixes, err)
	}
	got, err := dst.Stats(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	want, err := src.Stats(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	total := func(qs []app.QueueStats) int64 {
		var n int64
		for _, q := range qs {
			n += q.Total
		}
		return n
	}
	if total(got) == 0 || total(got) != total(want) {
		t.Fatalf("imported Stats total %d, SQLite's %d", total(got), total(want))
	}
}
