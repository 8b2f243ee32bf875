package postgres

import (
	"errors"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/queuehq/queue/app"
)

// A piped write (BEGIN, its statements and COMMIT in one round trip) is
// all or nothing: when a statement fails, the ones before it are undone,
// and the connection goes back to the pool out of the failed transaction,
// ready for the next write (one connection, so the next write gets it).
func TestPipedWriteFailsWhole(t *testing.T) {
	s := mustOpen(t, Options{MaxConns: 1})
	bad := newJob("q")
	bad.Kind = "k\x00" // PostgreSQL refuses the NUL byte
	err := s.writePiped(t.Context(), func(w *wtx, p *pipe) {
		w.insertJobs(p, []*app.NewJob{&[]app.NewJob{newJob("q")}[0]})
		w.insertJobs(p, []*app.NewJob{&bad})
		w.insertJobs(p, []*app.NewJob{&[]app.NewJob{newJob("q")}[0]})
	})
	if err == nil {
		t.Fatal("piped write with a refused statement succeeded")
	}
	stats, err := s.Stats(t.Context())
	if err != nil || len(stats) != 0 {
		t.Fatalf("after the failed write: stats %+v %v, want no queue and no job", stats, err)
	}
	out, err := app.Submit(t.Context(), s, app.SubmitRequest{Jobs: []app.NewJob{newJob("q")}})
	if err != nil || len(out) != 1 {
		t.Fatalf("submit after the failed write: %v %v", out, err)
	}
	jobs, err := s.Claim(t.Context(), app.ClaimRequest{Queue: "q", WorkerID: "w", Limit: 10})
	if err != nil || len(jobs) != 1 || jobs[0].ID != out[0].Job.ID || jobs[0].Status != app.StatusProcessing {
		t.Fatalf("claim after the failed write: %+v %v, want job %d processing", jobs, err, out[0].Job.ID)
	}
}

// A result that fails to be read in this process does not undo a piped
// write the server committed: the error says so (errCommittedUnread, an
// ErrUnavailable), so the combiner does not write the submissions again.
func TestPipedWriteCommittedButUnread(t *testing.T) {
	s := mustOpen(t, Options{MaxConns: 1})
	err := s.writePiped(t.Context(), func(w *wtx, p *pipe) {
		p.queryRow(func(row pgx.Row) error {
			var name string
			row.Scan(&name)
			return errors.New("the result could not be used")
		}, `INSERT INTO queues (name) VALUES ('written') RETURNING name`)
	})
	if !errors.Is(err, errCommittedUnread) || !errors.Is(err, app.ErrUnavailable) {
		t.Fatalf("got %v, want errCommittedUnread", err)
	}
	var n int
	if err := s.pool.QueryRow(t.Context(), `SELECT count(*) FROM queues WHERE name = 'written'`).Scan(&n); err != nil || n != 1 {
		t.Fatalf("queue row count %d %v, want the committed row", n, err)
	}
	// The one connection is usable again.
	if _, err := app.Submit(t.Context(), s, app.SubmitRequest{Jobs: []app.NewJob{newJob("q")}}); err != nil {
		t.Fatal(err)
	}
}

// Completions and failures counted from many connections at once (each
// into its connection's shard of the second) add up exactly in the stats.
func TestThroughputCountsAddUpAcrossConnections(t *testing.T) {
	s := mustOpen(t, Options{MaxConns: 4})
	const n = 40
	for range n {
		if _, err := app.Submit(t.Context(), s, app.SubmitRequest{Jobs: []app.NewJob{newJob("q")}}); err != nil {
			t.Fatal(err)
		}
	}
	jobs, err := s.Claim(t.Context(), app.ClaimRequest{Queue: "q", WorkerID: "w", Limit: n})
	if err != nil || len(jobs) != n {
		t.Fatalf("claim: %d jobs, %v", len(jobs), err)
	}
	var wg sync.WaitGroup
	for i, j := range jobs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var err error
			if i%4 == 0 {
				_, err = app.Fail(t.Context(), s, app.FailRequest{ID: j.ID, Lease: j.Lease, Error: "e", Retry: false})
			} else {
				var errs []error
				errs, err = s.Complete(t.Context(), []app.Completion{{ID: j.ID, Lease: j.Lease}})
				if err == nil && errs[0] != nil {
					err = errs[0]
				}
			}
			if err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	stats, err := s.Stats(t.Context())
	if err != nil || len(stats) != 1 {
		t.Fatalf("stats %+v %v", stats, err)
	}
	if got := stats[0]; got.CompletedLastMinute != n-n/4 || got.FailedLastMinute != n/4 {
		t.Fatalf("last minute: %d completed, %d failed; want %d and %d", got.CompletedLastMinute, got.FailedLastMinute, n-n/4, n/4)
	}
}
