package postgres

import (
	"encoding/json"
	"errors"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/queuehq/queue/app"
	"github.com/queuehq/queue/sqlite"
)

// copyFromSQLite copies src into dst as queue migrate-store does, in
// batches of size rows.
func copyFromSQLite(t *testing.T, src *sqlite.Store, dst *Store, size int) (sqlite.ExportSummary, map[string]int64, error) {
	t.Helper()
	im, err := dst.BeginImport(t.Context())
	if err != nil {
		return sqlite.ExportSummary{}, nil, err
	}
	defer im.Rollback(t.Context())
	sum, err := src.Export(t.Context(), size, func(b app.Rows) error {
		return im.Add(t.Context(), b)
	})
	if err != nil {
		return sum, nil, err
	}
	rows := im.Rows()
	return sum, rows, im.Commit(t.Context(), sum.MaxJobID)
}

// fillSQLite makes a SQLite database holding jobs in every status, the
// dead-letter queue, queue state, periodic fires, once records and audit.
func fillSQLite(t *testing.T, path string) (maxID int64) {
	t.Helper()
	clock := app.NewFakeClock(time.Date(2026, 1, 2, 3, 4, 5, 123e6, time.UTC))
	s, err := sqlite.Open(t.Context(), path, sqlite.Options{StoreOptions: app.StoreOptions{Clock: clock, Log: zerolog.Nop()}, Sync: "normal"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := t.Context()
	exp := clock.Now().Add(time.Hour)
	from := int64(3)
	jobs := []app.NewJob{
		{Queue: "mail", Kind: "send", Payload: json.RawMessage(`{"to": "a@example.com",  "n":[1, 2.50, 1e3]}`), Priority: -3,
			MaxAttempts: 4, Timeout: 90 * time.Second, ExpiresAt: &exp, Tags: []string{"t1", "t2"}, IdempotencyKey: "k-1", ReplayedFrom: &from},
		{Queue: "mail", Kind: "send", Payload: json.RawMessage(`"later"`), RunAt: clock.Now().Add(time.Hour), MaxAttempts: 3, Timeout: time.Second},
	}
	for i := 0; i < 12; i++ {
		jobs = append(jobs, app.NewJob{Queue: "work", Kind: "k", Payload: json.RawMessage(`{"i":` + string(rune('0'+i%10)) + `}`), MaxAttempts: 2, Timeout: 10 * time.Second})
	}
	if _, err := app.Submit(ctx, s, app.SubmitRequest{Jobs: jobs}); err != nil {
		t.Fatal(err)
	}
	claim := func(n int) []*app.Job {
		got, err := s.Claim(ctx, app.ClaimRequest{Queue: "work", WorkerID: "worker-1", Limit: n})
		if err != nil || len(got) != n {
			t.Fatalf("claim %d: %d %v", n, len(got), err)
		}
		return got
	}
	c := claim(6)
	clock.Advance(time.Second)
	if _, err := s.Complete(ctx, []app.Completion{{ID: c[0].ID, Lease: c[0].Lease, Result: json.RawMessage(`{"ok":true}`)}, {ID: c[1].ID, Lease: c[1].Lease}}); err != nil {
		t.Fatal(err)
	}
	if _, err := app.Fail(ctx, s, app.FailRequest{ID: c[2].ID, Lease: c[2].Lease, Error: "boom", Retry: true, RetryIn: time.Minute}); err != nil {
		t.Fatal(err)
	}
	if _, err := app.Fail(ctx, s, app.FailRequest{ID: c[3].ID, Lease: c[3].Lease, Error: "fatal", Retry: false}); err != nil {
		t.Fatal(err)
	}
	if _, err := app.Cancel(ctx, s, app.CancelRequest{ID: c[4].ID, Audit: &app.AuditEntry{Actor: "ops", Action: "job.cancel"}}); err != nil {
		t.Fatal(err) // processing, cancel requested
	}
	q := claim(1)[0] // stays processing
	_ = q
	if _, err := app.Cancel(ctx, s, app.CancelRequest{ID: jobs2ID(t, s, "work", app.StatusQueued), Audit: &app.AuditEntry{Actor: "ops", Action: "job.cancel"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := app.MoveToDead(ctx, s, app.JobFilter{Queue: "work", Limit: 2}, "", &app.AuditEntry{Actor: "ops", Action: "dlq.move", Filter: json.RawMessage(`{"queue":"work"}`)}); err != nil {
		t.Fatal(err)
	}
	if _, err := app.Replay(ctx, s, app.ReplayRequest{Filter: app.DeadFilter{IDs: []int64{c[3].ID}}}); err != nil {
		t.Fatal(err)
	}
	if err := app.SetPaused(ctx, s, "mail", true, nil); err != nil {
		t.Fatal(err)
	}
	if _, _, err := app.FirePeriodic(ctx, s, app.PeriodicFire{Entry: "nightly", FireAt: clock.Now().Truncate(time.Minute),
		Job: app.NewJob{Queue: "cron", Kind: "report", MaxAttempts: 1, Timeout: time.Second}}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := app.FirePeriodic(ctx, s, app.PeriodicFire{Entry: "nightly", FireAt: clock.Now().Truncate(time.Minute).Add(time.Minute),
		Job: app.NewJob{Queue: "cron", Kind: "report", MaxAttempts: 1, Timeout: time.Second}, SkipIfPending: true}); err != nil {
		t.Fatal(err)
	}
	r, err := app.OnceAcquire(ctx, s, "charge-1", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := app.OnceDone(ctx, s, "charge-1", r.Token, json.RawMessage(`{"charge":"ch_1"}`)); err != nil {
		t.Fatal(err)
	}
	if _, err := app.OnceAcquire(ctx, s, "charge-2", time.Hour); err != nil {
		t.Fatal(err)
	}
	// The highest id goes away (retention): the copy must never hand it out again.
	top, err := app.Submit(ctx, s, app.SubmitRequest{Jobs: []app.NewJob{{Queue: "gone", Kind: "k", MaxAttempts: 1, Timeout: time.Second, Priority: -1000}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := app.Cancel(ctx, s, app.CancelRequest{ID: top[0].Job.ID}); err != nil {
		t.Fatal(err)
	}
	clock.Advance(48 * time.Hour)
	if n, err := s.DeleteOld(ctx, app.DeleteOldRequest{What: app.OldFinished, Queue: "gone", Before: clock.Now(), Limit: 10}); err != nil || n != 1 {
		t.Fatalf("delete the top job: %d %v", n, err)
	}
	return top[0].Job.ID
}

func jobs2ID(t *testing.T, s *sqlite.Store, queue string, st app.Status) int64 {
	t.Helper()
	got, err := s.List(t.Context(), app.JobFilter{Queue: queue, StatusIn: []app.Status{st}, Limit: 1})
	if err != nil || len(got) == 0 {
		t.Fatalf("no %s job in %s: %v", st, queue, err)
	}
	return got[0].ID
}

func asJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// Moving a SQLite database to PostgreSQL keeps every row: jobs in every
// status with all their fields, dead-letter rows, queue state, periodic
// fires, once records, audit and events; ids go on above the highest ever used.
func TestImportFromSQLiteKeepsEveryRow(t *testing.T) {
	testDSN(t)
	path := filepath.Join(t.TempDir(), "queue.db")
	topID := fillSQLite(t, path)
	// Both clocks stand where charge-2 (held for an hour) is still held.
	clock := app.NewFakeClock(time.Date(2026, 1, 2, 3, 34, 5, 0, time.UTC))
	src, err := sqlite.Open(t.Context(), path, sqlite.Options{ReadOnly: true, StoreOptions: app.StoreOptions{Clock: clock}})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	dst := mustOpen(t, Options{StoreOptions: app.StoreOptions{Clock: clock}})
	sum, rows, err := copyFromSQLite(t, src, dst, 3)
	if err != nil {
		t.Fatalf("copy: %v", err)
	}
	for table, n := range sum.Rows {
		if rows[table] != n {
			t.Errorf("%s: %d rows exported, %d imported", table, n, rows[table])
		}
	}
	ctx := t.Context()
	all := app.JobFilter{Asc: true, Limit: 1000}
	wantJobs, _ := src.List(ctx, all)
	gotJobs, err := dst.List(ctx, all)
	if err != nil {
		t.Fatal(err)
	}
	statuses := map[app.Status]int{}
	for _, j := range wantJobs {
		statuses[j.Status]++
	}
	if len(statuses) != 4 || len(wantJobs) < 10 {
		t.Fatalf("the source lacks a status: %v", statuses)
	}
	if len(gotJobs) != len(wantJobs) {
		t.Fatalf("%d jobs copied, want %d", len(gotJobs), len(wantJobs))
	}
	for i := range wantJobs {
		if w, g := string(wantJobs[i].Payload), string(gotJobs[i].Payload); w != g {
			t.Errorf("job %d payload: %s, want it byte for byte: %s", wantJobs[i].ID, g, w)
		}
		if w, g := asJSON(t, wantJobs[i]), asJSON(t, gotJobs[i]); w != g {
			t.Errorf("job %d differs:\nsqlite   %s\npostgres %s", wantJobs[i].ID, w, g)
		}
		we, _ := src.JobEvents(ctx, wantJobs[i].ID)
		ge, _ := dst.JobEvents(ctx, wantJobs[i].ID)
		if w, g := asJSON(t, we), asJSON(t, ge); w != g {
			t.Errorf("events of job %d differ:\nsqlite   %s\npostgres %s", wantJobs[i].ID, w, g)
		}
	}
	wantDead, _ := src.ListDead(ctx, app.DeadFilter{Asc: true, Limit: 1000})
	gotDead, _ := dst.ListDead(ctx, app.DeadFilter{Asc: true, Limit: 1000})
	if len(wantDead) < 3 || asJSON(t, wantDead) != asJSON(t, gotDead) {
		t.Errorf("dead-letter rows differ:\nsqlite   %s\npostgres %s", asJSON(t, wantDead), asJSON(t, gotDead))
	}
	for name, read := range map[string]func(app.Store) (any, error){
		"queues": func(s app.Store) (any, error) { return s.Queues(ctx) },
		"audit":  func(s app.Store) (any, error) { return s.ListAudit(ctx, app.AuditFilter{Limit: 1000}) },
		"last fire": func(s app.Store) (any, error) {
			return s.LastFire(ctx, "nightly")
		},
		"stats": func(s app.Store) (any, error) { st, err := s.Stats(ctx); return withoutThroughput(st), err },
	} {
		w, werr := read(src)
		g, gerr := read(dst)
		if werr != nil || gerr != nil || !reflect.DeepEqual(asJSON(t, w), asJSON(t, g)) {
			t.Errorf("%s differ:\nsqlite   %s %v\npostgres %s %v", name, asJSON(t, w), werr, asJSON(t, g), gerr)
		}
	}
	// Once records: done keeps its result, a live hold stays held.
	if r, err := app.OnceAcquire(ctx, dst, "charge-1", time.Minute); err != nil || r.Acquired || !r.Done || !app.JSONEqual(r.Result, json.RawMessage(`{"charge":"ch_1"}`)) {
		t.Errorf("once charge-1 after the copy: %+v %v", r, err)
	}
	if _, err := app.OnceAcquire(ctx, dst, "charge-2", time.Minute); err == nil || !errors.Is(err, app.ErrOnceHeld) {
		t.Errorf("once charge-2 after the copy: %v, want ErrOnceHeld", err)
	}
	var fires int
	if err := dst.Pool().QueryRow(ctx, `SELECT count(*) FROM periodic_fires`).Scan(&fires); err != nil || int64(fires) != sum.Rows["periodic_fires"] || fires != 2 {
		t.Errorf("periodic fires: %d (%v), want 2", fires, err)
	}
	// New ids start above the highest the source ever used.
	next := submit(t, dst, newJob("q"))[0]
	if next.ID <= topID {
		t.Fatalf("first job after the copy got id %d; the source used up to %d", next.ID, topID)
	}
	// A second copy into the filled database is refused and changes nothing.
	if _, _, err := copyFromSQLite(t, src, dst, 100); err == nil {
		t.Fatal("a copy into a database holding jobs succeeded")
	}
	if n, _ := dst.CountJobs(ctx, app.JobFilter{}); n != len(wantJobs)+1 {
		t.Fatalf("the refused copy changed jobs: %d", n)
	}
}

// withoutThroughput drops the counts a copy does not carry (throughput
// counters) and queues without rows (whether a store lists those in its
// stats is not part of what is copied).
func withoutThroughput(st []app.QueueStats) []app.QueueStats {
	out := st[:0]
	for _, q := range st {
		q.CompletedLastMinute, q.FailedLastMinute = 0, 0
		if q.Total > 0 {
			out = append(out, q)
		}
	}
	return out
}

// Export refuses while a server holds the database.
func TestExportRefusesWhileServed(t *testing.T) {
	path := filepath.Join(t.TempDir(), "queue.db")
	live, err := sqlite.Open(t.Context(), path, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer live.Close()
	ro, err := sqlite.Open(t.Context(), path, sqlite.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	_, err = ro.Export(t.Context(), 10, func(app.Rows) error { return nil })
	var le *sqlite.LockedError
	if !errors.As(err, &le) {
		t.Fatalf("export while served: %v, want a LockedError", err)
	}
}
