package sqlite_test

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/queuehq/queue/app"
	"github.com/queuehq/queue/sqlite"
)

// The store skips looking up callback_urls while it knows no job has one:
// a database reopened with a job that has one still calls it back, and
// one whose jobs have none starts knowing so.
func TestCallbackOfAJobFromBeforeTheRestart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "q.db")
	open := func() *sqlite.Store {
		s, err := sqlite.Open(t.Context(), path, sqlite.Options{StoreOptions: app.StoreOptions{Log: zerolog.Nop()}})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	s := open()
	nj := app.NewJob{Queue: "q", Kind: "k", RunAt: time.Now(), MaxAttempts: 3, Timeout: time.Minute, CallbackURL: "https://cb.example/x"}
	if _, err := app.Submit(t.Context(), s, app.SubmitRequest{Jobs: []app.NewJob{nj}}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	s = open()
	defer s.Close()
	jobs, err := s.Claim(t.Context(), app.ClaimRequest{Queue: "q", WorkerID: "w", Limit: 1})
	if err != nil || len(jobs) != 1 {
		t.Fatalf("Claim: %v %v", jobs, err)
	}
	if errs, err := s.Complete(t.Context(), []app.Completion{{ID: jobs[0].ID, Lease: jobs[0].Lease}}); err != nil || errs[0] != nil {
		t.Fatalf("Complete: %v %v", err, errs)
	}
	ds, err := s.List(t.Context(), app.JobFilter{Queue: app.WebhookQueue, Limit: 10})
	if err != nil || len(ds) != 1 || ds[0].Tags[0] != app.CallbackTag {
		t.Fatalf("deliveries after a restart: %v %v, want the callback", ds, err)
	}
}
