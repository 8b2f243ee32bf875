package postgres

import (
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"slices"
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
	im.Reserve("workflows", sum.MaxWorkflowID)
	return sum, rows, im.Commit(t.Context(), sum.MaxJobID)
}

// fillSQLite makes a SQLite database holding jobs in every status, the
// dead-letter queue, queue state, periodic fires, once records and audit.
func fillSQLite(t *testing.T, path string) (maxID int64) {
	t.Helper()
	clock := app.NewFakeClock(time.Date(2026, 1, 2, 3, 4, 5, 123e6, time.UTC))
	s, err := sqlite.Open(t.Context(), path, sqlite.Options{StoreOptions: app.StoreOptions{Clock: clock, Log: zerolog.Nop(),
		KeyLimits: keyedLimits}, Sync: "normal"})
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
		jobs = append(jobs, app.NewJob{Queue: "work", Kind: "k", Payload: json.RawMessage(`{"i":` + string(rune('0'+i%10)) + `}`), MaxAttempts: 2, Timeout: 10 * time.Second,
			Key: "acct-9", // a queue that limits no key: plain jobs, their dead-letter rows keep the key
			// and their integrations (issue 27), which their rows keep too
			CallbackURL: fmt.Sprintf("https://hooks.example.com/%d", i),
			Traceparent: fmt.Sprintf("00-4bf92f3577b34da6a3ce929d0e0e47%02x-00f067aa0ba902b7-01", i+1), Tracestate: "rojo=1"})
	}
	// A queue at key_concurrency 1: one job of the key released, two held;
	// and a unique job, stored under its signature.
	for i := range 3 {
		jobs = append(jobs, app.NewJob{Queue: "keyed", Kind: "k", Payload: json.RawMessage(`{"n":` + string(rune('0'+i)) + `}`), MaxAttempts: 1, Timeout: time.Second, Key: "acct-1"})
	}
	jobs = append(jobs, uniqueJob())
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
	// Runtime settings: a queue's, a periodic entry made through the API,
	// and the paused state of one.
	err = s.Write(ctx, func(tx app.Tx) error {
		for _, r := range []app.SettingsRecord{
			{Kind: "queue", Name: "emails", Value: json.RawMessage(`{"concurrency":3,"retention":"2d"}`)},
			{Kind: "periodic", Name: "tick", Value: json.RawMessage(`{"name":"tick","cron":"@every 1m","queue":"ticks","kind":"tick"}`)},
			{Kind: "periodic_state", Name: "tick", Value: json.RawMessage(`{"paused":true}`)},
		} {
			r.UpdatedAt, r.UpdatedBy = tx.Now(), "ops <b>"
			if err := tx.PutSetting(r); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return top[0].Job.ID
}

// keyedLimits limits the keys of queue keyed (see fillSQLite).
func keyedLimits(q string) app.KeyLimits {
	if q == "keyed" {
		return app.KeyLimits{Concurrency: 1}
	}
	return app.KeyLimits{}
}

// uniqueJob is a job with a unique rule (see fillSQLite).
func uniqueJob() app.NewJob {
	return app.NewJob{Queue: "unique", Kind: "k", Payload: json.RawMessage(`{"u":1}`), MaxAttempts: 1, Timeout: time.Second,
		Unique: &app.UniqueRule{By: []string{"kind", "payload"}, While: []string{"queued", "scheduled", "processing"}}}
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
	dst := mustOpen(t, Options{StoreOptions: app.StoreOptions{Clock: clock, KeyLimits: keyedLimits}})
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
	traced := 0 // the comparisons cover a job's and a row's integrations
	for _, j := range wantJobs {
		if j.CallbackURL != "" && j.Traceparent != "" && j.Tracestate != "" {
			traced++
		}
	}
	for _, d := range wantDead {
		if d.CallbackURL != "" && d.Traceparent != "" && d.Tracestate != "" {
			traced += 100
		}
	}
	if traced%100 == 0 || traced < 100 {
		t.Fatalf("the source lacks a job or a dead-letter row with callback_url, traceparent and tracestate (%d)", traced)
	}
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
		"runtime settings": func(s app.Store) (any, error) {
			rs, err := s.Settings(ctx)
			if len(rs) != 3 {
				return nil, fmt.Errorf("%d runtime settings, want 3", len(rs))
			}
			return rs, err
		},
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
	// Flow control goes on: the key's held jobs stay held until its job
	// ends, and the unique job answers for its signature.
	var keyed []*app.Job
	for _, j := range gotJobs {
		if j.Key == "acct-1" {
			keyed = append(keyed, j)
		}
	}
	if len(keyed) != 3 || keyed[0].Held || !keyed[1].Held || !keyed[2].Held {
		t.Fatalf("the key's jobs after the copy: %s", asJSON(t, keyed))
	}
	for i, k := range keyed {
		got, err := dst.Claim(ctx, app.ClaimRequest{Queue: "keyed", WorkerID: "w", Limit: 3})
		if err != nil || len(got) != 1 || got[0].ID != k.ID {
			t.Fatalf("claim %d of the key after the copy: %s %v, want job %d", i, asJSON(t, got), err, k.ID)
		}
		complete(t, dst, got[0])
	}
	dup, err := app.Submit(ctx, dst, app.SubmitRequest{Jobs: []app.NewJob{uniqueJob()}})
	if err != nil || !dup[0].Duplicate || dup[0].Job.Queue != "unique" || dup[0].Job.Dedupe == "" {
		t.Fatalf("the unique job submitted again after the copy: %s %v", asJSON(t, dup), err)
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
	if n, _ := dst.CountJobs(ctx, app.JobFilter{}); n != len(wantJobs)+1 { // the one submitted since
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

// copiedStep is step name in queue after deps; its payload has spaces, < and
// &, which its job must get byte for byte.
func copiedStep(queue, name string, deps ...app.Dependency) app.StepInput {
	return app.StepInput{SubmitInput: app.SubmitInput{Queue: queue, Kind: "k", Payload: wfPayload(name)}, Step: name, DependsOn: deps}
}

func wfPayload(name string) json.RawMessage {
	return json.RawMessage(`{"step": "` + name + `",  "html": "<b>&"}`)
}

// wfResult is step name's result, kept byte for byte too.
func wfResult(name string) json.RawMessage {
	return json.RawMessage(`{"from": "` + name + `",  "lt": "<"}`)
}

// fillWorkflows adds to the SQLite database at path a running diamond (A
// done; B and C released; D waiting on C and B, in that order), a
// finished workflow (X dead-lettered, replayed and done; Z after Y and
// after X with on_failure continue), a running one whose step Q waits on
// P with on_failure continue, and a workflow with the highest id that
// retention deleted. It returns their ids.
func fillWorkflows(t *testing.T, path string, clock *app.FakeClock) (diamond, etl, cont, gone int64) {
	t.Helper()
	s, err := sqlite.Open(t.Context(), path, sqlite.Options{StoreOptions: app.StoreOptions{Clock: clock, Log: zerolog.Nop(),
		KeyLimits: keyedLimits}, Sync: "normal"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := t.Context()
	svc := app.NewService(s, nil, clock, nil, zerolog.Nop())
	submit := func(in app.WorkflowInput) int64 {
		v, err := svc.SubmitWorkflow(ctx, in)
		if err != nil {
			t.Fatalf("SubmitWorkflow(%s): %v", in.Name, err)
		}
		return v.ID
	}
	dep := func(name string) app.Dependency { return app.Dependency{Step: name} }
	orFail := app.Dependency{Step: "X", OnFailure: app.OnFailureContinue}
	diamond = submit(app.WorkflowInput{Name: "diamond", Tags: []string{"nightly"}, Steps: []app.StepInput{
		copiedStep("wf", "A"), copiedStep("wf", "B", dep("A")), copiedStep("wf", "C", dep("A")), copiedStep("wf", "D", dep("C"), dep("B"))}})
	etl = submit(app.WorkflowInput{Name: "etl", Steps: []app.StepInput{copiedStep("etl", "X"), copiedStep("etl", "Y"),
		copiedStep("etl", "Z", dep("Y"), orFail)}})
	orFail.Step = "P"
	cont = submit(app.WorkflowInput{Name: "cont", Steps: []app.StepInput{copiedStep("cont", "P"), copiedStep("cont", "Q", orFail)}})
	gone = submit(app.WorkflowInput{Name: "gone", Steps: []app.StepInput{copiedStep("gone", "G")}})
	claim := func(queue string, want int) map[string]*app.Job {
		t.Helper()
		jobs, err := svc.Claim(ctx, queue, app.ClaimInput{WorkerID: "w1", Limit: 10})
		if err != nil || len(jobs) != want {
			t.Fatalf("Claim(%s) = %d jobs, %v; want %d", queue, len(jobs), err, want)
		}
		out := map[string]*app.Job{}
		for _, j := range jobs {
			out[j.Step] = j
		}
		return out
	}
	complete := func(jobs map[string]*app.Job) {
		t.Helper()
		for _, j := range jobs {
			if err := svc.Complete(ctx, j.ID, j.Lease, wfResult(j.Step)); err != nil {
				t.Fatalf("Complete(%s): %v", j.Step, err)
			}
		}
	}
	complete(claim("gone", 1))
	clock.Advance(48 * time.Hour)
	xy := claim("etl", 2)
	complete(map[string]*app.Job{"Y": xy["Y"]})
	if r, err := app.Fail(ctx, s, app.FailRequest{ID: xy["X"].ID, Lease: xy["X"].Lease, Error: "boom"}); err != nil || r.Outcome != app.OutcomeDeadLettered {
		t.Fatalf("fail X: %+v %v", r, err)
	}
	if _, err := app.Replay(ctx, s, app.ReplayRequest{Filter: app.DeadFilter{IDs: []int64{xy["X"].ID}}}); err != nil {
		t.Fatal(err)
	}
	complete(claim("etl", 2)) // X again, and Z, released by X's failure
	if n, err := s.DeleteOld(ctx, app.DeleteOldRequest{What: app.OldWorkflows, Before: clock.Now().Add(-24 * time.Hour), Limit: 10}); err != nil || n != 1 {
		t.Fatalf("delete workflow gone: %d, %v", n, err)
	}
	complete(claim("wf", 1))
	return diamond, etl, cont, gone
}

// Moving a SQLite database to PostgreSQL keeps its workflows: each step as
// it was (depends_on in order, on_failure, payload byte for byte), a
// running workflow goes on where it stood (a waiting step is released when
// its last parent completes, with the parents' results, or when a parent
// it depends on with on_failure continue fails), finished ones are found
// by workflow retention with their jobs, and workflow ids go on above the
// highest SQLite ever handed out.
func TestImportFromSQLiteKeepsWorkflows(t *testing.T) {
	testDSN(t)
	path := filepath.Join(t.TempDir(), "queue.db")
	clock := app.NewFakeClock(time.Date(2026, 1, 2, 3, 4, 5, 123e6, time.UTC))
	diamond, etl, cont, gone := fillWorkflows(t, path, clock)
	src, err := sqlite.Open(t.Context(), path, sqlite.Options{ReadOnly: true, StoreOptions: app.StoreOptions{Clock: clock}})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	dst := mustOpen(t, Options{StoreOptions: app.StoreOptions{Clock: clock}})
	// Batches of 3 split the steps of a workflow, and D's edges, between batches.
	sum, rows, err := copyFromSQLite(t, src, dst, 3)
	if err != nil {
		t.Fatalf("copy: %v", err)
	}
	for table, want := range map[string]int64{"workflows": 3, "workflow_steps": 9, "workflow_edges": 7} {
		if sum.Rows[table] != want || rows[table] != want {
			t.Errorf("%s: %d rows exported, %d imported; want %d", table, sum.Rows[table], rows[table], want)
		}
	}
	ctx := t.Context()
	db := adminConn(t, dst)
	lite, err := sql.Open("sqlite", "file:"+path+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer lite.Close()
	failed := 0
	for _, id := range []int64{diamond, etl, cont} {
		ww, ws, err := src.GetWorkflow(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		gw, gs, err := dst.GetWorkflow(ctx, id)
		if err != nil {
			t.Fatalf("GetWorkflow(%d) after the copy: %v", id, err)
		}
		if w, g := asJSON(t, ww), asJSON(t, gw); w != g {
			t.Errorf("workflow %d differs:\nsqlite   %s\npostgres %s", id, w, g)
		}
		if len(gs) != len(ws) {
			t.Fatalf("workflow %d: %d steps copied, want %d", id, len(gs), len(ws))
		}
		for i, w := range ws {
			g := gs[i]
			if a, b := asJSON(t, w), asJSON(t, g); a != b {
				t.Errorf("step %s of workflow %d differs:\nsqlite   %s\npostgres %s", w.Name, id, a, b)
			}
			if a, b := asJSON(t, w.Job), asJSON(t, g.Job); a != b || w.Failed != g.Failed {
				t.Errorf("step %s of workflow %d: job %s failed %v, want %s failed %v", w.Name, id, b, g.Failed, a, w.Failed)
			}
			failed += btoi(g.Failed)
			// A step released at submission keeps no job spec (its job has
			// it); a later one keeps its payload byte for byte.
			if w.Job.Kind != "" && string(g.Job.Payload) != string(wfPayload(w.Name)) {
				t.Errorf("step %s of workflow %d: payload %s, want it byte for byte: %s", w.Name, id, g.Job.Payload, wfPayload(w.Name))
			}
			// As stored: the spec and payload byte for byte, depends_on as
			// the text a PostgreSQL store writes itself.
			var wspec, wpayload, gspec, gpayload, deps string
			if err := lite.QueryRowContext(ctx, `SELECT spec, payload FROM workflow_steps WHERE workflow_id = ? AND name = ?`, id, w.Name).Scan(&wspec, &wpayload); err != nil {
				t.Fatal(err)
			}
			if err := db.QueryRow(ctx, `SELECT spec::text, payload::text, depends_on::text FROM workflow_steps WHERE workflow_id = $1 AND name = $2`,
				id, w.Name).Scan(&gspec, &gpayload, &deps); err != nil {
				t.Fatal(err)
			}
			if gspec != wspec || gpayload != wpayload {
				t.Errorf("step %s of workflow %d stored spec %s payload %s, want %s and %s", w.Name, id, gspec, gpayload, wspec, wpayload)
			}
			if deps != asJSON(t, w.DependsOn) {
				t.Errorf("step %s of workflow %d: depends_on %s, want %s", w.Name, id, deps, asJSON(t, w.DependsOn))
			}
		}
	}
	if failed != 1 {
		t.Errorf("%d steps marked failed after the copy, want 1 (X)", failed)
	}

	// The running workflows go on on PostgreSQL.
	clock.Advance(time.Minute)
	svc := app.NewService(dst, nil, clock, nil, zerolog.Nop())
	claim := func(queue string) map[string]*app.Job {
		t.Helper()
		jobs, err := svc.Claim(ctx, queue, app.ClaimInput{WorkerID: "w2", Limit: 10})
		if err != nil {
			t.Fatalf("Claim(%s): %v", queue, err)
		}
		out := map[string]*app.Job{}
		for _, j := range jobs {
			out[j.Step] = j
		}
		return out
	}
	complete := func(j *app.Job) {
		t.Helper()
		if err := svc.Complete(ctx, j.ID, j.Lease, wfResult(j.Step)); err != nil {
			t.Fatalf("Complete(%s): %v", j.Step, err)
		}
	}
	bc := claim("wf")
	if len(bc) != 2 || bc["B"] == nil || bc["C"] == nil {
		t.Fatalf("claimed %d steps after the copy, want B and C", len(bc))
	}
	if p := bc["B"].Parents; len(p) != 1 || p[0].Step != "A" || string(p[0].Result) != string(wfResult("A")) {
		t.Fatalf("B's parents after the copy: %+v", p)
	}
	complete(bc["B"])
	if got := claim("wf"); len(got) != 0 {
		t.Fatalf("claimed %d steps before C completed", len(got))
	}
	complete(bc["C"])
	d := claim("wf")["D"]
	if d == nil {
		t.Fatal("D was not released when B and C completed")
	}
	if string(d.Payload) != string(wfPayload("D")) {
		t.Errorf("D's payload %s, want it byte for byte: %s", d.Payload, wfPayload("D"))
	}
	var parents []string
	for _, p := range d.Parents {
		parents = append(parents, p.Step+" "+string(p.Result))
	}
	if want := []string{"C " + string(wfResult("C")), "B " + string(wfResult("B"))}; !slices.Equal(parents, want) {
		t.Errorf("D's parents %q, want %q (its depends_on order)", parents, want)
	}
	complete(d)
	if wf, _, err := dst.GetWorkflow(ctx, diamond); err != nil || wf.Status != app.WorkflowDone || wf.DoneCount != 4 || wf.FinishedAt == nil {
		t.Fatalf("diamond after D: %+v %v, want done", wf, err)
	}
	p := claim("cont")["P"]
	if p == nil {
		t.Fatal("P of the running workflow cont was not claimable after the copy")
	}
	if r, err := app.Fail(ctx, dst, app.FailRequest{ID: p.ID, Lease: p.Lease, Error: "boom"}); err != nil || r.Outcome != app.OutcomeDeadLettered {
		t.Fatalf("fail P: %+v %v", r, err)
	}
	if q := claim("cont")["Q"]; q == nil || len(q.Parents) != 1 || q.Parents[0].Status != app.StepDead {
		t.Fatalf("Q after P dead-lettered: %+v, want it released (on_failure continue) with P dead_letter", q)
	}

	// Workflow retention finds the finished copied workflows and takes their jobs.
	if n, err := dst.DeleteOld(ctx, app.DeleteOldRequest{What: app.OldWorkflows, Before: clock.Now().Add(time.Second), Limit: 10}); err != nil || n != 2 {
		t.Fatalf("workflow retention after the copy: %d, %v; want 2", n, err)
	}
	for _, id := range []int64{diamond, etl} {
		if n, err := dst.CountJobs(ctx, app.JobFilter{Workflow: id}); err != nil || n != 0 {
			t.Fatalf("%d jobs of workflow %d left (%v) after it was deleted", n, id, err)
		}
	}
	// New ids start above the highest the source ever used.
	v, err := svc.SubmitWorkflow(ctx, app.WorkflowInput{Name: "next", Steps: []app.StepInput{copiedStep("wf", "N")}})
	if err != nil {
		t.Fatalf("first workflow after the copy: %v", err)
	}
	if v.ID <= gone {
		t.Fatalf("first workflow after the copy got id %d; the source used up to %d", v.ID, gone)
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// Edges of a step that was not copied fail the import: their dependency
// would be lost.
func TestImportRefusesEdgesWithoutTheirStep(t *testing.T) {
	s := mustOpen(t, Options{})
	now := s.now()
	im, err := s.BeginImport(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer im.Rollback(t.Context())
	err = im.Add(t.Context(), app.Rows{
		Workflows: []*app.Workflow{{ID: 1, Name: "w", Status: app.WorkflowRunning, StepCount: 1, CreatedAt: now, UpdatedAt: now}},
		Steps: []app.StepRecord{{Step: &app.WorkflowStep{WorkflowID: 1, Name: "A", Queue: "q", Kind: "k", Status: app.StepReleased,
			JobID: 1, Job: app.StepJob{Queue: "q", Kind: "k", Payload: json.RawMessage(`1`), MaxAttempts: 1}}}},
		Edges: []app.EdgeRecord{{WorkflowID: 1, WorkflowEdge: app.WorkflowEdge{Parent: "A", Child: "B"}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := im.Commit(t.Context(), 0); err == nil {
		t.Fatal("Commit of an edge whose step was not copied succeeded")
	}
	var n int
	if err := adminConn(t, s).QueryRow(t.Context(), `SELECT count(*) FROM workflows`).Scan(&n); err != nil || n != 0 {
		t.Fatalf("%d workflows (%v) after the refused import, want none", n, err)
	}
}

// A copy without Reserve still starts workflow ids above every workflow a
// copied dead-letter row names: a replay of that row must not land in
// another workflow.
func TestImportStartsWorkflowsAboveTheirDeadLetterRows(t *testing.T) {
	s := mustOpen(t, Options{})
	now := s.now()
	im, err := s.BeginImport(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer im.Rollback(t.Context())
	if err := im.Add(t.Context(), app.Rows{Dead: []*app.DeadJob{{ID: 2, Queue: "wf", Kind: "k", Payload: json.RawMessage(`1`),
		Reason: app.ReasonMaxAttempts, OriginalCreatedAt: now, MovedAt: now, WorkflowID: 9, Step: "B"}}}); err != nil {
		t.Fatal(err)
	}
	if err := im.Commit(t.Context(), 2); err != nil {
		t.Fatal(err)
	}
	if v := submitWorkflow(t, s, app.WorkflowInput{Name: "next", Steps: []app.StepInput{wfStep("A")}}); v.ID <= 9 {
		t.Fatalf("first workflow after the copy got id %d; a dead-letter row names workflow 9", v.ID)
	}
}
