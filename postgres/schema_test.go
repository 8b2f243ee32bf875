package postgres

import (
	"context"
	"errors"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/queuehq/queue/app"
	assets "github.com/queuehq/queue/embed"
)

// adminConn is a plain connection to the test database with the store's
// schema as its search_path, as a person in psql would have.
func adminConn(t testing.TB, s *Store) *pgx.Conn {
	t.Helper()
	cfg, err := pgx.ParseConfig(testDSN(t))
	if err != nil {
		t.Fatal(err)
	}
	cfg.RuntimeParams["search_path"] = pgx.Identifier{s.Schema()}.Sanitize()
	conn, err := pgx.ConnectConfig(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

func submit(t *testing.T, s *Store, jobs ...app.NewJob) []*app.Job {
	t.Helper()
	res, err := app.Submit(t.Context(), s, app.SubmitRequest{Jobs: jobs})
	if err != nil {
		t.Fatalf("Submit: %v", err)
	}
	out := make([]*app.Job, len(res))
	for i, r := range res {
		out[i] = r.Job
	}
	return out
}

func newJob(queue string) app.NewJob {
	return app.NewJob{Queue: queue, Kind: "k", MaxAttempts: 1, Timeout: 10 * time.Second}
}

// The status guard holds for any writer of the database, not only the
// server: the CHECK constraint and the trigger refuse through plain SQL.
func TestStatusGuardRejectsThroughSQL(t *testing.T) {
	s := mustOpen(t, Options{})
	submit(t, s, newJob("q"))
	db := adminConn(t, s)
	ctx := t.Context()
	for _, tc := range []struct {
		name, sql, want string
	}{
		{"update to dead_letter", `UPDATE jobs SET status = 'dead_letter' WHERE id = 1`, "dead_letter is not a job status; dead-lettered jobs live in dead_letter_jobs"},
		{"update to unknown", `UPDATE jobs SET status = 'RUNNING' WHERE id = 1`, "invalid value"},
		{"update to null", `UPDATE jobs SET status = NULL WHERE id = 1`, "invalid value"},
		{"insert done", `INSERT INTO jobs (kind, status) VALUES ('k', 'done')`, "illegal insert"},
		{"insert processing", `INSERT INTO jobs (kind, status) VALUES ('k', 'processing')`, "illegal insert"},
		{"insert dead_letter", `INSERT INTO jobs (kind, status) VALUES ('k', 'dead_letter')`, "dead_letter is not a job status"},
		{"insert unknown", `INSERT INTO jobs (kind, status) VALUES ('k', 'failed')`, "invalid value"},
		{"queued to done", `UPDATE jobs SET status = 'done' WHERE id = 1`, "illegal transition"},
	} {
		_, err := db.Exec(ctx, tc.sql)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err %v, want %q", tc.name, err, tc.want)
		}
		if err != nil && !errors.Is(mapErr(err), app.ErrInvalidStatus) {
			t.Errorf("%s: mapErr(%v) does not wrap ErrInvalidStatus", tc.name, err)
		}
	}
	mustExec := func(q string, args ...any) {
		t.Helper()
		tag, err := db.Exec(ctx, q, args...)
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		if tag.RowsAffected() != 1 {
			t.Fatalf("%s: %d rows, want 1", q, tag.RowsAffected())
		}
	}
	insert := func() int64 { // failed inserts used up ids: ask which one we got
		t.Helper()
		var id int64
		if err := db.QueryRow(ctx, `INSERT INTO jobs (kind) VALUES ('k') RETURNING id`).Scan(&id); err != nil {
			t.Fatal(err)
		}
		return id
	}
	a := insert() // queued by default
	mustExec(`UPDATE jobs SET status = 'cancelled' WHERE id = $1`, a)
	for _, to := range []string{"queued", "processing", "done"} {
		if _, err := db.Exec(ctx, `UPDATE jobs SET status = $1 WHERE id = $2`, to, a); err == nil || !strings.Contains(err.Error(), "illegal transition") {
			t.Errorf("cancelled -> %s: %v, want an illegal transition (cancelled is terminal)", to, err)
		}
	}
	b := insert()
	mustExec(`UPDATE jobs SET status = 'processing' WHERE id = $1`, b)
	mustExec(`UPDATE jobs SET status = 'processing', lease = lease + 1 WHERE id = $1`, b) // same status: allowed
	mustExec(`UPDATE jobs SET status = 'queued' WHERE id = $1`, b)                        // a retry
	mustExec(`UPDATE jobs SET status = 'processing' WHERE id = $1`, b)
	mustExec(`UPDATE jobs SET status = 'done' WHERE id = $1`, b)
	for _, to := range []string{"queued", "processing", "cancelled", "dead_letter"} {
		if _, err := db.Exec(ctx, `UPDATE jobs SET status = $1 WHERE id = $2`, to, b); err == nil {
			t.Errorf("done -> %s passed", to)
		} else if !errors.Is(mapErr(err), app.ErrInvalidStatus) {
			t.Errorf("done -> %s: mapErr(%v) does not wrap ErrInvalidStatus", to, err)
		}
	}
	c := insert()
	mustExec(`UPDATE jobs SET status = 'processing' WHERE id = $1`, c)
	mustExec(`UPDATE jobs SET status = 'cancelled' WHERE id = $1`, c)
	var st string
	if err := db.QueryRow(ctx, `SELECT string_agg(status, ',' ORDER BY id) FROM jobs WHERE id IN ($1, $2, $3)`, a, b, c).Scan(&st); err != nil || st != "cancelled,done,cancelled" {
		t.Fatalf("statuses after the legal updates: %q %v", st, err)
	}
}

// Where triggers do not fire (a replica's apply, session_replication_role
// = replica), the CHECK constraint still holds the four values.
func TestStatusCheckHoldsWithoutTrigger(t *testing.T) {
	s := mustOpen(t, Options{})
	submit(t, s, newJob("q"))
	db := adminConn(t, s)
	if _, err := db.Exec(t.Context(), `SET session_replication_role = replica`); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI's PostgreSQL role must be a superuser to test the CHECK constraint without triggers: %v", err)
		}
		t.Skipf("cannot switch triggers off here (needs a superuser): %v", err)
	}
	for _, v := range []string{"dead_letter", "RUNNING"} {
		_, err := db.Exec(t.Context(), `UPDATE jobs SET status = $1 WHERE id = 1`, v)
		if err == nil || !strings.Contains(err.Error(), "jobs_status_check") {
			t.Errorf("update to %s without the trigger: %v, want the CHECK constraint to refuse", v, err)
		}
		if !errors.Is(mapErr(err), app.ErrInvalidStatus) {
			t.Errorf("mapErr(%v) does not wrap ErrInvalidStatus", err)
		}
	}
}

// Opening a migrated schema again changes nothing and reinstalls nothing.
func TestOpenTwiceMigratesOnce(t *testing.T) {
	s := mustOpen(t, Options{})
	s2 := mustOpen(t, Options{Schema: s.Schema()})
	var n int
	if err := s2.Pool().QueryRow(t.Context(), `SELECT count(*) FROM schema_migrations`).Scan(&n); err != nil || n != len(assets.Migrations("postgres")) {
		t.Fatalf("schema_migrations: %d rows, %v", n, err)
	}
	all := assets.Migrations("postgres")
	if v, err := s2.SchemaVersion(t.Context()); err != nil || v != all[len(all)-1].Name {
		t.Fatalf("SchemaVersion = %q, %v", v, err)
	}
}

// Nodes starting at once on a new schema create and migrate it once.
func TestConcurrentOpensMigrateOnce(t *testing.T) {
	dsn := testDSN(t)
	schema := tempSchema(t, dsn)
	var wg sync.WaitGroup
	stores := make([]*Store, 3)
	errs := make([]error, 3)
	for i := range stores {
		wg.Add(1)
		go func() {
			defer wg.Done()
			stores[i], errs[i] = Open(t.Context(), dsn, Options{Schema: schema, MaxConns: 2})
		}()
	}
	wg.Wait()
	for i, s := range stores {
		if errs[i] != nil {
			t.Fatalf("open %d: %v", i, errs[i])
		}
		defer s.Close()
	}
	var n int
	if err := stores[0].Pool().QueryRow(t.Context(), `SELECT count(*) FROM schema_migrations`).Scan(&n); err != nil || n != len(assets.Migrations("postgres")) {
		t.Fatalf("schema_migrations: %d rows, %v", n, err)
	}
	submit(t, stores[1], newJob("q"))
	if n, err := stores[2].CountJobs(t.Context(), app.JobFilter{}); err != nil || n != 1 {
		t.Fatalf("a job submitted through one store: the other counts %d (%v)", n, err)
	}
}

// A claim walks its index in claim order (jobs_claim without kinds, each
// kind's range of jobs_claim_kind with kinds), and the rows it updates are
// found by their primary key: its cost grows neither with the depth of the
// queue nor with a backlog of other kinds, nor with the jobs kept after
// they finished, nor with jobs held for their keys (out of the index).
func TestClaimUsesTheClaimIndex(t *testing.T) {
	s := mustOpen(t, Options{})
	db := adminConn(t, s)
	ctx := t.Context()
	if _, err := db.Exec(ctx, `INSERT INTO jobs (queue, kind, priority, run_at)
		SELECT 'q' || (i % 10), 'k' || (i % 40), i % 7, now() - i * interval '1 second' FROM generate_series(1, 20000) i`); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{ // finished jobs, kept until retention removes them
		`INSERT INTO jobs (queue, kind) SELECT 'q3', 'k3' FROM generate_series(1, 20000)`,
		// jobs held for their key, first in claim order: out of the claim indexes
		`INSERT INTO jobs (queue, kind, flow_key, held, priority, run_at)
			SELECT 'q3', 'k3', 'key' || (i % 100), true, -1, now() - interval '1 day' FROM generate_series(1, 20000) i`,
		`UPDATE jobs SET status = 'processing' WHERE kind = 'k3' AND priority = 0 AND run_at > now() - interval '1 second'`,
		`UPDATE jobs SET status = 'done', finished_at = now() WHERE status = 'processing'`,
	} {
		if _, err := db.Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := db.Exec(ctx, `ANALYZE jobs`); err != nil {
		t.Fatal(err)
	}
	plan := func(q string, args ...any) string {
		t.Helper()
		rows, err := db.Query(ctx, `EXPLAIN `+q, args...)
		if err != nil {
			t.Fatal(err)
		}
		var plan []string
		for rows.Next() {
			var line string
			rows.Scan(&line)
			plan = append(plan, line)
		}
		rows.Close()
		return strings.Join(plan, "\n")
	}
	lease := "$1::timestamptz + j.timeout_ms * interval '1 millisecond'"
	for _, c := range []struct {
		name  string
		kind  string
		kinds int
		args  []any
		index string
		sort  bool // the rows taken from each kind's range are merged
	}{
		{"no kinds", "", 0, []any{time.Now(), "w", "q3", 5}, "jobs_claim", false},
		{"one kind", "$5", 1, []any{time.Now(), "w", "q3", 5, "k3"}, "jobs_claim_kind", false},
		{"two kinds", "$5::text[]", 2, []any{time.Now(), "w", "q3", 5, []string{"k3", "k13"}}, "jobs_claim_kind", true},
		{"an absent kind", "$5", 1, []any{time.Now(), "w", "q3", 5, "nope"}, "jobs_claim_kind", false},
	} {
		text := plan(claimSQL("$1::timestamptz", "$1::timestamptz", lease, "$2", "$3", "", c.kind, c.kinds, "$4"), c.args...)
		if !strings.Contains(text, "using "+c.index+" on jobs ") || !strings.Contains(text, "using jobs_pkey on jobs j") ||
			strings.Contains(text, "Seq Scan on jobs") || strings.Contains(text, "Bitmap") || strings.Contains(text, "Sort") != c.sort {
			t.Errorf("claim plan, %s:\n%s", c.name, text)
		}
	}
}

// A fault inside the dead-letter move that kills the transaction's
// connection (the backend is terminated between the INSERT into
// dead_letter_jobs and the DELETE from jobs) loses nothing and duplicates
// nothing; stale recovery completes the move later.
func TestTerminatedBackendInsideDeadLetterMove(t *testing.T) {
	clock := app.NewFakeClock(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	var armed atomic.Bool
	var hits atomic.Int32
	var killErr atomic.Pointer[error]
	dsn := testDSN(t)
	s := mustOpen(t, Options{StoreOptions: app.StoreOptions{Clock: clock,
		Fault: func(ctx context.Context, p app.FaultPoint, id int64) error {
			if p != app.FaultDeadLetterInsert || !armed.Load() {
				return nil
			}
			hits.Add(1)
			pid, ok := BackendPID(ctx)
			if !ok {
				err := errors.New("no backend pid in the fault hook's context")
				killErr.Store(&err)
				return err
			}
			conn, err := pgx.Connect(context.Background(), dsn)
			if err == nil {
				defer conn.Close(context.Background())
				var done bool
				// Wait (up to 5s) until the backend is gone.
				err = conn.QueryRow(context.Background(), `SELECT pg_terminate_backend($1, 5000)`, int64(pid)).Scan(&done)
				if err == nil && !done {
					err = errors.New("backend still alive")
				}
			}
			if err != nil {
				killErr.Store(&err)
			}
			return nil // the store goes on to its DELETE, on a dead connection
		}}})
	ctx := t.Context()
	j := submit(t, s, newJob("q"))[0]
	claimed, err := s.Claim(ctx, app.ClaimRequest{Queue: "q", WorkerID: "w", Limit: 1})
	if err != nil || len(claimed) != 1 {
		t.Fatalf("Claim: %v %v", claimed, err)
	}
	c := claimed[0]
	armed.Store(true)
	_, err = app.Fail(ctx, s, app.FailRequest{ID: c.ID, Lease: c.Lease, Error: "boom", Retry: true})
	armed.Store(false)
	if p := killErr.Load(); p != nil {
		t.Fatalf("terminating the backend: %v", *p)
	}
	if hits.Load() != 1 {
		t.Fatalf("fault hook ran %d times, want 1", hits.Load())
	}
	if err == nil {
		t.Fatalf("Fail succeeded although its connection was terminated inside the move")
	}
	if !errors.Is(err, app.ErrUnavailable) {
		t.Errorf("Fail on a terminated connection: %v, want ErrUnavailable (the API answers 503)", err)
	}
	got, dead, err := s.Lookup(ctx, j.ID)
	if err != nil {
		t.Fatalf("Lookup after the fault: %v", err)
	}
	if dead != nil {
		t.Fatalf("after the fault the job is in dead_letter_jobs (in jobs too: %v)", got != nil)
	}
	if got.Status != app.StatusProcessing || got.Lease != c.Lease || got.Attempts != 1 || len(got.Errors) != 0 {
		t.Fatalf("after the fault: status %s lease %d attempts %d errors %d, want the pre-move state", got.Status, got.Lease, got.Attempts, len(got.Errors))
	}
	if n, _ := s.CountDead(ctx, app.DeadFilter{}); n != 0 {
		t.Fatalf("the DLQ holds %d rows after the failed move", n)
	}
	// The store works on after losing a connection; recovery finishes the move.
	clock.Advance(11 * time.Second)
	if n, err := app.RecoverStale(ctx, s, 100, nil); err != nil || n != 1 {
		t.Fatalf("RecoverStale = %d, %v; want 1", n, err)
	}
	got, dead, err = s.Lookup(ctx, j.ID)
	if err != nil || got != nil || dead == nil {
		t.Fatalf("after recovery: job %v dead %v err %v, want the job in the DLQ only", got, dead, err)
	}
	if dead.Reason != app.ReasonLeaseExpired || dead.Attempts != 1 || dead.LastError != app.LeaseExpiredError {
		t.Fatalf("after recovery: reason %s attempts %d last error %q", dead.Reason, dead.Attempts, dead.LastError)
	}
	if n, _ := s.CountJobs(ctx, app.JobFilter{}); n != 0 {
		t.Fatalf("jobs holds %d rows, want 0", n)
	}
}

// Text PostgreSQL cannot store is refused as bad input, not as a 500.
func TestNULByteIsInvalidInput(t *testing.T) {
	s := mustOpen(t, Options{})
	nj := newJob("q")
	nj.IdempotencyKey = "a\x00b"
	_, err := app.Submit(t.Context(), s, app.SubmitRequest{Jobs: []app.NewJob{nj}})
	var ie *app.InvalidError
	if !errors.As(err, &ie) {
		t.Fatalf("submit with a NUL byte in the key: %v, want an InvalidError", err)
	}
	// JSON may carry \u0000: payloads are json, which keeps it.
	nj = newJob("q")
	nj.Payload = []byte(`{"s":"a\u0000b"}`)
	j := submit(t, s, nj)[0]
	got, _, err := s.Lookup(t.Context(), j.ID)
	if err != nil || string(got.Payload) != `{"s":"a\u0000b"}` {
		t.Fatalf("payload with \\u0000: %s %v", got.Payload, err)
	}
}

// After Close every call answers ErrUnavailable, and Ping says so.
func TestClosedStoreIsUnavailable(t *testing.T) {
	s := mustOpen(t, Options{})
	if err := s.Ping(t.Context()); err != nil {
		t.Fatalf("Ping: %v", err)
	}
	s.Close()
	if err := s.Ping(t.Context()); !errors.Is(err, app.ErrUnavailable) {
		t.Fatalf("Ping after Close: %v, want ErrUnavailable", err)
	}
	if _, err := app.Submit(t.Context(), s, app.SubmitRequest{Jobs: []app.NewJob{newJob("q")}}); !errors.Is(err, app.ErrUnavailable) {
		t.Fatalf("Submit after Close: %v, want ErrUnavailable", err)
	}
}

// Every claim is planned for its own arguments: a plan cached by a
// connection while the table was small (a fresh database) would be kept
// until the next ANALYZE, and the one PostgreSQL makes then reads every
// row to find the ones picked.
func TestClaimIsNeverAGenericPlan(t *testing.T) {
	s := mustOpen(t, Options{MaxConns: 1}) // every statement on one connection
	ctx := t.Context()
	for range 12 { // PostgreSQL considers a generic plan from the sixth run
		submit(t, s, newJob("q"))
		for _, kinds := range [][]string{nil, {"k"}} {
			for _, limit := range []int{0, 100} { // without and with a concurrency limit: a claim of its own
				if _, err := s.Claim(ctx, app.ClaimRequest{Queue: "q", Kinds: kinds, Limit: 10, Concurrency: limit}); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	rows, err := s.pool.Query(ctx, `SELECT generic_plans, custom_plans FROM pg_prepared_statements
		WHERE statement LIKE 'WITH picked%' OR statement LIKE 'WITH claimed AS (WITH picked%'`) // the second: inside the charts' count (countPicked)
	if err != nil {
		t.Fatal(err)
	}
	var statements int
	for rows.Next() {
		var generic, custom int64
		if err := rows.Scan(&generic, &custom); err != nil {
			t.Fatal(err)
		}
		statements++
		if generic != 0 || custom < 12 {
			t.Errorf("a claim statement ran with %d generic and %d custom plans, want 0 and 12", generic, custom)
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if statements != 4 {
		t.Fatalf("%d claim statements prepared on the connection, want 4 (with and without kinds, with and without a limit)", statements)
	}
}
