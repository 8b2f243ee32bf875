package sqlite_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/queuehq/queue/app"
	"github.com/queuehq/queue/app/storetest"
	"github.com/queuehq/queue/sqlite"
)

// MustOpen opens a migrated store under tb.TempDir and closes it at cleanup.
func MustOpen(tb testing.TB, opts sqlite.Options) *sqlite.Store {
	tb.Helper()
	if opts.Log.GetLevel() == zerolog.TraceLevel { // zero Logger: quiet
		opts.Log = zerolog.Nop()
	}
	s, err := sqlite.Open(context.Background(), filepath.Join(tb.TempDir(), "queue.db"), opts)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { s.Close() })
	return s
}

func TestStore(t *testing.T) {
	storetest.Run(t, func(t *testing.T, opts app.StoreOptions) app.Store {
		return MustOpen(t, sqlite.Options{StoreOptions: opts, Sync: "normal"})
	})
}

// The status guard holds for any writer of the file, not only the server.
func TestStatusGuardRejectsThroughSQL(t *testing.T) {
	s := MustOpen(t, sqlite.Options{})
	path := s.Path()
	ctx := t.Context()
	if _, err := app.Submit(ctx, s, app.SubmitRequest{Jobs: []app.NewJob{{Queue: "q", Kind: "k", MaxAttempts: 1}}}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, tc := range []struct {
		name, sql, want string
	}{
		{"update to dead_letter", `UPDATE jobs SET status = 'dead_letter' WHERE id = 1`, "dead_letter is not a job status"},
		{"update to unknown", `UPDATE jobs SET status = 'RUNNING' WHERE id = 1`, "invalid value"},
		{"update to null", `UPDATE jobs SET status = NULL WHERE id = 1`, "invalid value"},
		{"insert done", `INSERT INTO jobs (kind, status) VALUES ('k', 'done')`, "illegal insert"},
		{"insert processing", `INSERT INTO jobs (kind, status) VALUES ('k', 'processing')`, "illegal insert"},
		{"insert dead_letter", `INSERT INTO jobs (kind, status) VALUES ('k', 'dead_letter')`, "dead_letter is not a job status"},
		{"insert unknown", `INSERT INTO jobs (kind, status) VALUES ('k', 'failed')`, "invalid value"},
		{"queued to done", `UPDATE jobs SET status = 'done' WHERE id = 1`, "illegal transition"},
	} {
		if _, err := db.Exec(tc.sql); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err %v, want %q", tc.name, err, tc.want)
		}
	}
	mustExec := func(q string) {
		t.Helper()
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	mustExec(`INSERT INTO jobs (kind) VALUES ('k')`) // queued by default
	mustExec(`UPDATE jobs SET status = 'cancelled' WHERE id = 1`)
	for _, q := range []string{`UPDATE jobs SET status = 'queued' WHERE id = 1`, `UPDATE jobs SET status = 'processing' WHERE id = 1`} {
		if _, err := db.Exec(q); err == nil {
			t.Errorf("%s: cancelled is terminal, but the update passed", q)
		}
	}
	mustExec(`UPDATE jobs SET status = 'processing' WHERE id = 2`)
	mustExec(`UPDATE jobs SET status = 'processing', lease = lease + 1 WHERE id = 2`) // same status: allowed
	mustExec(`UPDATE jobs SET status = 'done' WHERE id = 2`)
	if _, err := db.Exec(`UPDATE jobs SET status = 'queued' WHERE id = 2`); err == nil {
		t.Errorf("done -> queued passed")
	}
}

// The guard agrees with app.Transition on every pair of statuses: each
// legal update passes, each illegal one is refused with the message of its
// kind, and the row keeps its status.
func TestStatusGuardMatchesTransitionRules(t *testing.T) {
	s := MustOpen(t, sqlite.Options{})
	path := s.Path()
	s.Close()
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	reach := map[app.Status][]string{ // legal steps from queued to each status
		app.StatusQueued:     nil,
		app.StatusProcessing: {"processing"},
		app.StatusDone:       {"processing", "done"},
		app.StatusCancelled:  {"cancelled"},
	}
	targets := []any{"queued", "processing", "done", "cancelled", "dead_letter", "failed", nil}
	for from, steps := range reach {
		for _, to := range targets {
			res, err := db.Exec(`INSERT INTO jobs (kind) VALUES ('k')`)
			if err != nil {
				t.Fatal(err)
			}
			id, _ := res.LastInsertId()
			for _, st := range steps {
				if _, err := db.Exec(`UPDATE jobs SET status = ? WHERE id = ?`, st, id); err != nil {
					t.Fatalf("reaching %s: %v", from, err)
				}
			}
			_, err = db.Exec(`UPDATE jobs SET status = ? WHERE id = ?`, to, id)
			toStatus, _ := to.(string)
			rule := app.Transition(from, app.Status(toStatus))
			var want string
			switch {
			case rule == nil:
			case toStatus == "dead_letter":
				want = "dead_letter is not a job status"
			case to == nil || !app.Status(toStatus).Valid():
				want = "invalid value"
			default:
				want = "illegal transition"
			}
			if want == "" && err != nil {
				t.Errorf("%s -> %v: refused (%v), app.Transition allows it", from, to, err)
			}
			if want != "" && (err == nil || !strings.Contains(err.Error(), want)) {
				t.Errorf("%s -> %v: err %v, want %q", from, to, err, want)
			}
			var now string
			if err := db.QueryRow(`SELECT status FROM jobs WHERE id = ?`, id).Scan(&now); err != nil {
				t.Fatal(err)
			}
			if want != "" && now != string(from) {
				t.Errorf("%s -> %v: refused, but the row is now %s", from, to, now)
			}
		}
	}
}

func TestSecondOpenIsRefusedNamingTheHolder(t *testing.T) {
	s := MustOpen(t, sqlite.Options{})
	_, err := sqlite.Open(t.Context(), s.Path(), sqlite.Options{})
	var le *sqlite.LockedError
	if !errors.As(err, &le) || !strings.Contains(err.Error(), "pid") {
		t.Fatalf("second open: %v, want a LockedError naming the pid", err)
	}
	// Readers still work while the writer holds the lock.
	r, err := sqlite.Open(t.Context(), s.Path(), sqlite.Options{ReadOnly: true})
	if err != nil {
		t.Fatalf("read-only open while locked: %v", err)
	}
	defer r.Close()
	if _, err := r.Stats(t.Context()); err != nil {
		t.Fatalf("stats through a read-only store: %v", err)
	}
	if _, err := app.Submit(t.Context(), r, app.SubmitRequest{Jobs: []app.NewJob{{Queue: "q", Kind: "k", MaxAttempts: 1}}}); !errors.Is(err, app.ErrUnavailable) {
		t.Fatalf("write through a read-only store: %v, want ErrUnavailable", err)
	}
}

// Flow control by key looks each key up through its indexes (a seek per
// key): its cost is the keys of a write, not the jobs they hold back.
func TestKeyStatementsSeekPerKey(t *testing.T) {
	s := MustOpen(t, sqlite.Options{})
	db, err := sql.Open("sqlite", "file:"+s.Path()+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for name, q := range map[string]string{"key loads": sqlite.KeyLoadsSQLForTest, "release": sqlite.ReleaseSQLForTest} {
		rows, err := db.Query(`EXPLAIN QUERY PLAN ` + q)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		var plan []string
		for rows.Next() {
			var id, parent, notused int
			var detail string
			rows.Scan(&id, &parent, &notused, &detail)
			plan = append(plan, detail)
		}
		rows.Close()
		text := strings.Join(plan, "\n")
		if strings.Contains(text, "SCAN j") || !strings.Contains(text, "(queue=? AND flow_key=?") {
			t.Errorf("%s: plan\n%s\nwant a seek by queue and key, no scan of jobs", name, text)
		}
	}
}

// The claim walks the claim-order index over claimable rows: no sort, no
// scan, so its cost does not grow with the depth of the queue.
func TestClaimUsesTheClaimIndex(t *testing.T) {
	s := MustOpen(t, sqlite.Options{})
	db, err := sql.Open("sqlite", "file:"+s.Path()+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	plan := func(q string) string {
		rows, err := db.Query(`EXPLAIN QUERY PLAN ` + q)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		var plan []string
		for rows.Next() {
			var id, parent, notused int
			var detail string
			rows.Scan(&id, &parent, &notused, &detail)
			plan = append(plan, detail)
		}
		return strings.Join(plan, "\n")
	}
	// Without kinds: a skip-scan over the queue's kinds, then each kind's
	// range; only the few rows taken are sorted. No scan of jobs.
	if text := plan(sqlite.ClaimSQLForTest); !strings.Contains(text, "USING COVERING INDEX jobs_claim (queue=? AND kind>?)") ||
		!strings.Contains(text, "USING INDEX jobs_claim (queue=? AND kind=?") || strings.Contains(text, "SCAN jobs") {
		t.Fatalf("claim plan:\n%s", text)
	}
	// With one kind: its range of the index, in claim order (no sort).
	if text := plan(sqlite.ClaimKindSQLForTest); !strings.Contains(text, "USING INDEX jobs_claim (queue=? AND kind=?") ||
		strings.Contains(text, "SCAN jobs") || strings.Contains(text, "TEMP B-TREE") {
		t.Fatalf("claim-by-one-kind plan:\n%s", text)
	}
	// With kinds: each kind's range of the index.
	if text := plan(sqlite.ClaimKindsSQLForTest); strings.Count(text, "USING INDEX jobs_claim (queue=? AND kind=?") != 2 || strings.Contains(text, "SCAN jobs") {
		t.Fatalf("claim-by-kind plan:\n%s", text)
	}
}

// Requests that share a transaction fail alone: a batch whose requests
// mostly succeed while some fail on their own commits the successes and
// answers the failures with their own errors.
func TestGroupCommitFailsRequestsAlone(t *testing.T) {
	s := MustOpen(t, sqlite.Options{Sync: "normal"})
	ctx := t.Context()
	const n = 200
	errs := make(chan error, n)
	for i := 0; i < n; i++ {
		go func() {
			if i%2 == 0 {
				_, err := app.Submit(ctx, s, app.SubmitRequest{Jobs: []app.NewJob{{Queue: "g", Kind: "k", MaxAttempts: 1, Timeout: time.Second}}})
				errs <- err
				return
			}
			_, err := app.Heartbeat(ctx, s, int64(1_000_000+i), 1, 0) // no such job
			if !errors.Is(err, app.ErrNotFound) {
				errs <- fmt.Errorf("heartbeat of a missing job: %v", err)
				return
			}
			errs <- nil
		}()
	}
	for i := 0; i < n; i++ {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if c, _ := s.CountJobs(ctx, app.JobFilter{Queue: "g"}); c != n/2 {
		t.Fatalf("%d jobs stored, want %d", c, n/2)
	}
}
