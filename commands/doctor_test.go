package commands_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/rs/zerolog"

	"github.com/queuehq/queue/app"
	"github.com/queuehq/queue/postgres"
	"github.com/queuehq/queue/sqlite"
)

// doctor finds job counters that differ from the rows, and --repair
// rewrites them, on a SQLite file.
func TestDoctorRepairsCountersSQLite(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "queue.db")
	s, err := sqlite.Open(ctx, path, sqlite.Options{StoreOptions: app.StoreOptions{Log: zerolog.Nop()}, Sync: "normal"})
	if err != nil {
		t.Fatal(err)
	}
	submitFew(t, s)
	s.Close()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`UPDATE job_counts SET n = n + 7 WHERE queue = 'a' AND status = 'queued'`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	doctorRepairs(t, path)
}

// The same on PostgreSQL.
func TestDoctorRepairsCountersPostgres(t *testing.T) {
	dsn := os.Getenv("QUEUE_TEST_POSTGRES_DSN")
	if dsn == "" {
		t.Skip("QUEUE_TEST_POSTGRES_DSN not set")
	}
	ctx := t.Context()
	schema := "doctor_" + strings.ToLower(strings.NewReplacer("/", "_", "-", "_").Replace(t.Name()))
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	drop := func() { conn.Exec(context.Background(), `DROP SCHEMA IF EXISTS `+schema+` CASCADE`) }
	drop()
	t.Cleanup(drop)
	if _, err := conn.Exec(ctx, `CREATE SCHEMA `+schema); err != nil {
		t.Fatal(err)
	}
	sdsn := dsn + "&search_path=" + schema
	if !strings.Contains(dsn, "?") {
		sdsn = dsn + "?search_path=" + schema
	}
	s, err := postgres.Open(ctx, sdsn, postgres.Options{StoreOptions: app.StoreOptions{Log: zerolog.Nop()}})
	if err != nil {
		t.Fatal(err)
	}
	submitFew(t, s)
	if _, err := s.Pool().Exec(ctx, `INSERT INTO job_count_deltas (queue, status, n) VALUES ('a', 'queued', 7)`); err != nil {
		t.Fatal(err)
	}
	s.Close()
	doctorRepairs(t, sdsn)
}

func submitFew(t *testing.T, s app.Store) {
	t.Helper()
	jobs := make([]app.NewJob, 5)
	for i := range jobs {
		jobs[i] = app.NewJob{Queue: "a", Kind: "k", Payload: json.RawMessage(`1`)}
	}
	if _, err := app.Submit(t.Context(), s, app.SubmitRequest{Jobs: jobs}); err != nil {
		t.Fatal(err)
	}
}

// doctorRepairs runs doctor on db, whose queue a has 5 jobs and a
// counter of 12: found, repaired, then clean.
func doctorRepairs(t *testing.T, db string) {
	t.Helper()
	code, out, errs := run(t, "doctor", "--db", db)
	if code != 1 || !strings.Contains(out, "1 differ from the rows") || !strings.Contains(out, "a      queued  12       5") ||
		!strings.Contains(out, "queue doctor --repair") {
		t.Fatalf("doctor on wrong counters: exit %d\n%s%s", code, out, errs)
	}
	code, out, errs = run(t, "doctor", "--db", db, "--repair")
	if code != 0 || !strings.Contains(out, "1 repaired") {
		t.Fatalf("doctor --repair: exit %d\n%s%s", code, out, errs)
	}
	code, out, errs = run(t, "doctor", "--db", db, "--json")
	var rep app.Report
	if err := json.Unmarshal([]byte(out), &rep); code != 0 || err != nil || len(rep.Counts) != 0 || len(rep.Queues) != 1 || rep.Queues[0].Queued != 5 {
		t.Fatalf("doctor after repair: exit %d, %v\n%s%s", code, err, out, errs)
	}
}
