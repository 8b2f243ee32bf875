package sqlite_test

import (
	"database/sql"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/queuehq/queue/app"
	"github.com/queuehq/queue/sqlite"
)

// A database made before 0014_integrations.sql takes it when a new
// version opens it: its jobs and dead-letter rows read without the new
// fields, new jobs store them, and the partial index holds the jobs that
// have a callback to make.
func TestMigrateIntegrationsUpgradesOldRows(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "queue.db")
	clock := app.NewFakeClock(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	open := func() *sqlite.Store {
		t.Helper()
		s, err := sqlite.Open(ctx, path, sqlite.Options{StoreOptions: app.StoreOptions{Clock: clock, Log: zerolog.Nop()}, Sync: "normal"})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	nj := app.NewJob{Queue: "q", Kind: "k", Payload: json.RawMessage(`{}`), MaxAttempts: 1, Timeout: time.Minute}
	s := open()
	res, err := app.Submit(ctx, s, app.SubmitRequest{Jobs: []app.NewJob{nj, nj}})
	if err != nil {
		t.Fatal(err)
	}
	old, oldDead := res[0].Job.ID, res[1].Job.ID
	if _, err := app.MoveToDead(ctx, s, app.JobFilter{IDs: []int64{oldDead}}, "", nil); err != nil {
		t.Fatal(err)
	}
	s.Close()

	// Back to the schema before the migration, the rows kept.
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		`DROP INDEX jobs_callback`,
		`ALTER TABLE jobs DROP COLUMN callback_url`, `ALTER TABLE jobs DROP COLUMN traceparent`, `ALTER TABLE jobs DROP COLUMN tracestate`,
		`ALTER TABLE dead_letter_jobs DROP COLUMN callback_url`, `ALTER TABLE dead_letter_jobs DROP COLUMN traceparent`,
		`ALTER TABLE dead_letter_jobs DROP COLUMN tracestate`,
		`DELETE FROM schema_migrations WHERE name = '0014_integrations.sql'`,
	} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	db.Close()

	s = open()
	defer s.Close()
	j, _, err := s.Lookup(ctx, old)
	if err != nil || j == nil || j.CallbackURL != "" || j.Traceparent != "" || j.Tracestate != "" {
		t.Fatalf("the job from before the migration: %+v %v", j, err)
	}
	_, d, err := s.Lookup(ctx, oldDead)
	if err != nil || d == nil || d.CallbackURL != "" || d.Traceparent != "" || d.Tracestate != "" {
		t.Fatalf("the dead-letter row from before the migration: %+v %v", d, err)
	}
	nj.CallbackURL, nj.Traceparent, nj.Tracestate = "https://hooks.example.com/x", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", "rojo=1"
	res, err = app.Submit(ctx, s, app.SubmitRequest{Jobs: []app.NewJob{nj}})
	if err != nil {
		t.Fatal(err)
	}
	if j, _, err = s.Lookup(ctx, res[0].Job.ID); err != nil || j.CallbackURL != nj.CallbackURL || j.Traceparent != nj.Traceparent || j.Tracestate != nj.Tracestate {
		t.Fatalf("a job submitted after the migration: %+v %v", j, err)
	}

	// The jobs with a callback are found through the partial index.
	db, err = sql.Open("sqlite", path+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var def string
	if err := db.QueryRowContext(ctx, `SELECT sql FROM sqlite_master WHERE name = 'jobs_callback'`).Scan(&def); err != nil || !strings.Contains(def, "WHERE callback_url IS NOT NULL") {
		t.Fatalf("jobs_callback: %q %v", def, err)
	}
	var id, parent, notused int
	var plan string
	if err := db.QueryRowContext(ctx, `EXPLAIN QUERY PLAN SELECT id FROM jobs WHERE callback_url IS NOT NULL ORDER BY id`).
		Scan(&id, &parent, &notused, &plan); err != nil || !strings.Contains(plan, "jobs_callback") {
		t.Fatalf("the plan for a job's callback: %q %v, want the partial index", plan, err)
	}
}
