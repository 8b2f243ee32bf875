package postgres

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/queuehq/queue/app"
)

// A schema made before 0013_integrations.sql takes it when a new version
// opens it: its jobs and dead-letter rows read without the new fields, new
// jobs store them, and the partial index holds the jobs that have a
// callback to make.
func TestMigrateIntegrationsUpgradesOldRows(t *testing.T) {
	ctx := t.Context()
	s := mustOpen(t, Options{})
	nj := app.NewJob{Queue: "q", Kind: "k", Payload: json.RawMessage(`{}`), MaxAttempts: 1, Timeout: time.Minute}
	res, err := app.Submit(ctx, s, app.SubmitRequest{Jobs: []app.NewJob{nj, nj}})
	if err != nil {
		t.Fatal(err)
	}
	old, oldDead := res[0].Job.ID, res[1].Job.ID
	if _, err := app.MoveToDead(ctx, s, app.JobFilter{IDs: []int64{oldDead}}, "", nil); err != nil {
		t.Fatal(err)
	}
	// Back to the schema before the migration, the rows kept.
	if _, err := s.Pool().Exec(ctx, `DROP INDEX jobs_callback;
		ALTER TABLE jobs DROP COLUMN callback_url, DROP COLUMN traceparent, DROP COLUMN tracestate;
		ALTER TABLE dead_letter_jobs DROP COLUMN callback_url, DROP COLUMN traceparent, DROP COLUMN tracestate;
		DELETE FROM schema_migrations WHERE name = '0013_integrations.sql'`); err != nil {
		t.Fatal(err)
	}
	s.Close()

	s = mustOpen(t, Options{Schema: s.Schema()})
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
	var def string
	if err := s.Pool().QueryRow(ctx, `SELECT indexdef FROM pg_indexes WHERE schemaname = $1 AND indexname = 'jobs_callback'`, s.Schema()).
		Scan(&def); err != nil || !strings.Contains(def, "(id) WHERE (callback_url IS NOT NULL)") {
		t.Fatalf("jobs_callback: %q %v", def, err)
	}
}
