package postgres

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/queuehq/queue/app"
)

// keyedStore opens a store whose queues limit their keys by lims.
func keyedStore(t *testing.T, clock app.Clock, lims map[string]app.KeyLimits) *Store {
	return mustOpen(t, Options{StoreOptions: app.StoreOptions{Clock: clock,
		KeyLimits: func(q string) app.KeyLimits { return lims[q] }}})
}

func keyedJob(queue, key string, n int) app.NewJob {
	nj := newJob(queue)
	nj.Key, nj.Payload = key, json.RawMessage(fmt.Sprint(n))
	return nj
}

func claimN(t *testing.T, s *Store, queue string, n int) []*app.Job {
	t.Helper()
	got, err := s.Claim(t.Context(), app.ClaimRequest{Queue: queue, WorkerID: "w", Limit: n})
	if err != nil {
		t.Fatalf("Claim: %v", err)
	}
	return got
}

func complete(t *testing.T, s *Store, jobs ...*app.Job) {
	t.Helper()
	items := make([]app.Completion, len(jobs))
	for i, j := range jobs {
		items[i] = app.Completion{ID: j.ID, Lease: j.Lease}
	}
	errs, err := s.Complete(t.Context(), items)
	if err != nil {
		t.Fatalf("Complete: %v", err)
	}
	for _, e := range errs {
		if e != nil {
			t.Fatalf("Complete: %v", e)
		}
	}
}

func payloads(jobs []*app.Job) string {
	out := ""
	for _, j := range jobs {
		out += j.Key + string(j.Payload) + " "
	}
	return out
}

// With key_concurrency 1 a key's jobs run one after another in submission
// order, other keys beside them; the batched completion releases the next.
func TestKeyConcurrencyOne(t *testing.T) {
	s := keyedStore(t, nil, map[string]app.KeyLimits{"q": {Concurrency: 1}})
	for i := range 5 {
		submit(t, s, keyedJob("q", "a", i))
	}
	submit(t, s, keyedJob("q", "b", 0))
	for i := range 5 {
		got := claimN(t, s, "q", 10)
		want := fmt.Sprintf("a%d ", i)
		if i == 0 {
			want += "b0 "
		}
		if payloads(got) != want {
			t.Fatalf("round %d: claimed %q, want %q", i, payloads(got), want)
		}
		complete(t, s, got...)
	}
	if got := claimN(t, s, "q", 10); len(got) != 0 {
		t.Fatalf("claimed %q after all", payloads(got))
	}
}

// Round robin: key b's one job starts among the first claims though key a
// has many before it.
func TestKeyRoundRobin(t *testing.T) {
	s := keyedStore(t, nil, map[string]app.KeyLimits{"q": {RoundRobin: true}})
	var many []app.NewJob
	for i := range 200 {
		many = append(many, keyedJob("q", "a", i))
	}
	submit(t, s, many...)
	submit(t, s, keyedJob("q", "b", 0))
	var seen string
	for range 3 {
		seen += payloads(claimN(t, s, "q", 1))
	}
	if seen != "a0 b0 a1 " {
		t.Fatalf("claimed %q", seen)
	}
	if got := claimN(t, s, "q", 5); payloads(got) != "a2 a3 a4 a5 a6 " {
		t.Fatalf("claimed %q", payloads(got))
	}
}

// A rate per key: two jobs per second, the next when the bucket refills.
func TestKeyRate(t *testing.T) {
	clock := app.NewFakeClock(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	s := keyedStore(t, clock, map[string]app.KeyLimits{"q": {Rate: app.KeyRate{N: 2, Per: time.Second}}})
	for i := range 5 {
		submit(t, s, keyedJob("q", "a", i))
	}
	if got := claimN(t, s, "q", 10); payloads(got) != "a0 a1 " {
		t.Fatalf("claimed %q", payloads(got))
	}
	clock.Advance(500 * time.Millisecond)
	if got := claimN(t, s, "q", 10); payloads(got) != "a2 " {
		t.Fatalf("claimed %q", payloads(got))
	}
	clock.Advance(time.Second)
	if got := claimN(t, s, "q", 10); payloads(got) != "a3 a4 " {
		t.Fatalf("claimed %q", payloads(got))
	}
}

// Twenty concurrent submissions of one unique job make one job.
func TestUniqueConcurrent(t *testing.T) {
	s := keyedStore(t, nil, nil)
	var wg sync.WaitGroup
	ids := make([]int64, 20)
	errs := make([]error, 20)
	for i := range 20 {
		wg.Go(func() {
			nj := keyedJob("q", "a", 1)
			nj.Unique = &app.UniqueRule{By: []string{"key"}, While: []string{"queued", "scheduled", "processing"}}
			out, err := app.Submit(t.Context(), s, app.SubmitRequest{Jobs: []app.NewJob{nj}})
			if err == nil {
				ids[i] = out[0].Job.ID
			}
			errs[i] = err
		})
	}
	wg.Wait()
	for i := range 20 {
		if errs[i] != nil || ids[i] != ids[0] {
			t.Fatalf("submission %d: job %d, %v (first: %d)", i, ids[i], errs[i], ids[0])
		}
	}
	if n, err := s.CountJobs(t.Context(), app.JobFilter{Key: "a"}); err != nil || n != 1 {
		t.Fatalf("%d jobs of key a, %v", n, err)
	}
}

// Submissions of one key on many connections at once release no more than
// the key's limit: each release counts the key's load under its lock.
func TestKeyLimitUnderConcurrentSubmissions(t *testing.T) {
	// The transactions overlap: each waits after its insert until eight
	// have inserted (or a second passed).
	var inserted atomic.Int32
	s := mustOpen(t, Options{MaxConns: 16, StoreOptions: app.StoreOptions{
		KeyLimits: func(string) app.KeyLimits { return app.KeyLimits{Concurrency: 1} },
		Fault: func(_ context.Context, p app.FaultPoint, _ int64) error {
			if p == app.FaultJobInsert {
				inserted.Add(1)
				for end := time.Now().Add(time.Second); inserted.Load() < 8 && time.Now().Before(end); {
					time.Sleep(time.Millisecond)
				}
			}
			return nil
		}}})
	submit(t, s, keyedJob("q", "other", 0)) // the queue's row: its insert would serialize the first submissions
	claimN(t, s, "q", 1)
	var wg sync.WaitGroup
	for i := range 40 {
		wg.Go(func() { submit(t, s, keyedJob("q", "a", i)) })
	}
	wg.Wait()
	if got := claimN(t, s, "q", 100); len(got) != 1 {
		t.Fatalf("claimed %d jobs of a key at key_concurrency 1: %q", len(got), payloads(got))
	}
	if held, err := s.HeldCounts(t.Context()); err != nil || held["q"] != 39 {
		t.Fatalf("held: %v %v", held, err)
	}
}

// Workers on many connections claim and complete the jobs of a few keys
// at key_concurrency 2 while more are submitted: no key ever has more than
// two jobs processing, and every job runs (no release is lost).
func TestKeyLimitUnderConcurrentWork(t *testing.T) {
	const keys, perKey, limit = 4, 30, 2
	s := mustOpen(t, Options{MaxConns: 16, StoreOptions: app.StoreOptions{
		KeyLimits: func(string) app.KeyLimits { return app.KeyLimits{Concurrency: limit} }}})
	var mu sync.Mutex
	busy := map[string]int{}
	done := 0
	submit(t, s, newJob("q")) // the queue's row: its insert would serialize the first submissions
	done--
	var wg sync.WaitGroup
	for k := range keys {
		wg.Go(func() {
			for i := range perKey {
				submit(t, s, keyedJob("q", fmt.Sprint("k", k), i))
			}
		})
	}
	deadline := time.Now().Add(60 * time.Second)
	for range 8 {
		wg.Go(func() {
			for time.Now().Before(deadline) {
				got, err := s.Claim(t.Context(), app.ClaimRequest{Queue: "q", WorkerID: "w", Limit: 3})
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				for _, j := range got {
					if busy[j.Key]++; busy[j.Key] > limit {
						t.Errorf("key %s: %d jobs processing", j.Key, busy[j.Key])
					}
				}
				finished := done == keys*perKey
				mu.Unlock()
				if finished {
					return
				}
				if len(got) == 0 {
					time.Sleep(time.Millisecond)
					continue
				}
				mu.Lock()
				for _, j := range got {
					busy[j.Key]--
				}
				done += len(got)
				mu.Unlock()
				items := make([]app.Completion, len(got))
				for i, j := range got {
					items[i] = app.Completion{ID: j.ID, Lease: j.Lease}
				}
				if _, err := s.Complete(t.Context(), items); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if done != keys*perKey {
		t.Fatalf("%d of %d jobs ran", done, keys*perKey)
	}
	if held, err := s.HeldCounts(t.Context()); err != nil || len(held) != 0 {
		t.Fatalf("held: %v %v", held, err)
	}
}

// Every statement of flow control walks its index: a key's load, its
// first held job, the keys and queues holding jobs back, the buckets due,
// a signature's jobs; none reads the table, however many jobs it holds.
func TestKeyQueriesUseTheirIndexes(t *testing.T) {
	s := mustOpen(t, Options{})
	db := adminConn(t, s)
	ctx := t.Context()
	for _, q := range []string{
		`INSERT INTO jobs (queue, kind, flow_key, held, dedupe, priority, run_at)
			SELECT 'q' || (i % 5), 'k' || (i % 7), 'key' || (i % 2000), i > 2000, CASE WHEN i % 3 = 0 THEN 'u:' || (i % 500) END,
				i % 3, now() - i * interval '1 second'
			FROM generate_series(1, 40000) i`,
		`INSERT INTO jobs (queue, kind) SELECT 'q' || (i % 5), 'k' FROM generate_series(1, 20000) i`,
		`UPDATE jobs SET status = 'processing' WHERE NOT held AND id % 4 = 0`,
		`UPDATE jobs SET status = 'done' WHERE status = 'processing' AND id % 8 = 0`,
		`INSERT INTO key_buckets (queue, flow_key, tokens, at, wake)
			SELECT 'q' || (i % 5), 'key' || i, 0.5, now(), CASE WHEN i % 10 = 0 THEN now() + i * interval '1 second' END
			FROM generate_series(1, 20000) i`,
		`ANALYZE jobs`,
		`ANALYZE key_buckets`,
	} {
		if _, err := db.Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	keys := []string{"key1", "key7", "key1999", "nokey"}
	for _, c := range []struct {
		name  string
		sql   string
		args  []any
		index []string
	}{
		{"key loads", keyLoadsSQL, []any{"q1", keys, time.Now()}, []string{"jobs_key_load"}},
		{"release", releaseSQL, []any{"q1", keys, time.Now(), true, 1}, []string{"jobs_held", "jobs_pkey"}},
		{"has held", hasHeldSQL, []any{"q1", keys}, []string{"jobs_held"}},
		{"held queues", heldQueuesSQL, nil, []string{"jobs_held"}},
		{"held keys", heldKeysSQL, []any{"q1", "key5", 1000}, []string{"jobs_held"}},
		{"waiting keys", waitingKeysSQL, []any{"q1", time.Now(), 1000}, []string{"key_buckets_wake"}},
		{"dedupe", dedupeSQL, []any{"q1", "u:3", time.Now().Add(-time.Hour), 20}, []string{"jobs_dedupe"}},
		{"key stats", keyStatsSQL, []any{"q1", 100000}, []string{"jobs_key_load", "jobs_held"}},
	} {
		rows, err := db.Query(ctx, `EXPLAIN `+c.sql, c.args...)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		var lines []string
		for rows.Next() {
			var line string
			rows.Scan(&line)
			lines = append(lines, line)
		}
		rows.Close()
		plan := strings.Join(lines, "\n")
		for _, ix := range c.index {
			if !strings.Contains(plan, "using "+ix+" on ") && !strings.Contains(plan, "Bitmap Index Scan on "+ix+" ") {
				t.Errorf("%s: no %s in the plan:\n%s", c.name, ix, plan)
			}
		}
		if strings.Contains(plan, "Seq Scan") {
			t.Errorf("%s: a sequential scan:\n%s", c.name, plan)
		}
	}
}
