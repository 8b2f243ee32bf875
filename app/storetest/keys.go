package storetest

import (
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/queuehq/queue/app"
)

// The cases of flow control by key (app/keys.go, app/dedupe.go).

// keyed sets a NewJob's key.
func keyed(k string) func(*app.NewJob) {
	return func(nj *app.NewJob) { nj.Key = k }
}

// claimIDs claims up to n jobs of queue and names them in claim order.
func (e *env) claimIDs(queue string, n int) ([]*app.Job, []int64) {
	e.t.Helper()
	jobs := e.claim(queue, n)
	ids := make([]int64, len(jobs))
	for i, j := range jobs {
		ids[i] = j.ID
	}
	return jobs, ids
}

func wantIDs(e *env, what string, got []int64, want ...int64) {
	e.t.Helper()
	if fmt.Sprint(got) != fmt.Sprint(want) {
		e.t.Fatalf("%s: got jobs %v, want %v", what, got, want)
	}
}

// SPEC (issue 25): key_concurrency 1 runs a key's jobs strictly one after
// another, in submission order, while other keys run beside it; a held job
// is queued, waiting for its key, and out of every claim.
func testKeyConcurrencyOneRunsInOrder(e *env) {
	e.setLimits("q", app.KeyLimits{Concurrency: 1})
	var a, b []*app.Job
	for i := range 4 {
		a = append(a, e.submitOne("q", "k", keyed("A")))
		if i < 2 {
			b = append(b, e.submitOne("q", "k", keyed("B")))
		}
	}
	plain := e.submitOne("q", "k")
	if a[0].Held || !a[1].Held || b[0].Held || plain.Held {
		e.t.Fatalf("submit answers: held %v %v %v %v, want false true false false (as stored)", a[0].Held, a[1].Held, b[0].Held, plain.Held)
	}
	if j := e.get(a[1].ID); !j.Held || j.Status != app.StatusQueued || j.Key != "A" {
		e.t.Fatalf("second job of key A: held %v status %s key %q, want held, queued, A", j.Held, j.Status, j.Key)
	}
	if j := e.get(a[0].ID); j.Held {
		e.t.Fatalf("first job of key A is held")
	}
	jobs, ids := e.claimIDs("q", 10)
	wantIDs(e, "first claim", ids, a[0].ID, b[0].ID, plain.ID)
	_, ids = e.claimIDs("q", 10)
	wantIDs(e, "claim while both keys are busy", ids)
	e.complete(jobs[0], `1`) // A's first: its second is released, B stays busy
	jobs2, ids := e.claimIDs("q", 10)
	wantIDs(e, "claim after A's first is done", ids, a[1].ID)
	e.complete(jobs[1], `1`)
	e.complete(jobs2[0], `1`)
	var order []int64
	for range 10 {
		got := e.claim("q", 10)
		if len(got) == 0 {
			break
		}
		if len(got) > 2 {
			e.t.Fatalf("claimed %d jobs of keys A and B at once", len(got))
		}
		for _, j := range got {
			order = append(order, j.ID)
			e.complete(j, `1`)
		}
	}
	wantIDs(e, "the rest, one per key at a time", order, b[1].ID, a[2].ID, a[3].ID)
}

// SPEC: key_concurrency N lets N jobs of a key hold a place at once.
func testKeyConcurrencyN(e *env) {
	e.setLimits("q", app.KeyLimits{Concurrency: 2})
	a := e.submitN(5, "q", "k", keyed("A"))
	jobs, ids := e.claimIDs("q", 10)
	wantIDs(e, "first claim", ids, a[0].ID, a[1].ID)
	e.complete(jobs[0], `1`)
	_, ids = e.claimIDs("q", 10)
	wantIDs(e, "after one is done", ids, a[2].ID)
	st, err := e.s.KeyStats(e.ctx, "q", 10)
	if err != nil || st.Held != 2 || len(st.AtLimit) != 1 || st.AtLimit[0] != (app.KeyCount{Key: "A", Queued: 2, Processing: 2, Held: 2}) {
		e.t.Fatalf("KeyStats = %+v, %v; want 2 held, A at its limit with 2 queued (held) and 2 processing", st, err)
	}
	if len(st.Busiest) != 1 || st.Busiest[0].Key != "A" {
		e.t.Fatalf("busiest keys %+v", st.Busiest)
	}
	held, err := e.s.HeldCounts(e.ctx)
	if err != nil || held["q"] != 2 || len(held) != 1 {
		e.t.Fatalf("HeldCounts = %v, %v; want q: 2", held, err)
	}
	if n, _ := e.s.CountJobs(e.ctx, app.JobFilter{Key: "A", Status: "queued"}); n != 2 {
		e.t.Fatalf("jobs of key A queued: %d, want 2", n)
	}
	// A held job cancelled no longer waits for its key.
	if _, err := app.Drain(e.ctx, e.s, app.JobFilter{IDs: []int64{a[4].ID}}, nil); err != nil {
		e.t.Fatal(err)
	}
	if j := e.get(a[4].ID); j.Status != app.StatusCancelled || j.Held {
		e.t.Fatalf("a held job drained: status %s, waiting for its key %v", j.Status, j.Held)
	}
	// A key with room for several releases them in one step, in claim order.
	e.setLimits("m", app.KeyLimits{Concurrency: 5})
	m := e.submitN(12, "m", "k", keyed("M"))
	_, ids = e.claimIDs("m", 20)
	wantIDs(e, "a batch of 12 at key_concurrency 5", ids, m[0].ID, m[1].ID, m[2].ID, m[3].ID, m[4].ID)
}

// SPEC: every way a job of a key ends frees its place for the key's next
// job, in the same transaction: a dead letter, a cancel, a lease that
// expired on the last attempt, a TTL, a drain, an admin move.
func testKeySlotFreedOnEveryEnd(e *env) {
	e.setLimits("q", app.KeyLimits{Concurrency: 1})
	svc := e.service(nil)
	ends := []struct {
		name string
		end  func(j *app.Job)
	}{
		{"dead letter", func(j *app.Job) { e.fail(j, false) }},
		{"cancel acknowledged", func(j *app.Job) {
			if _, err := app.Cancel(e.ctx, e.s, app.CancelRequest{ID: j.ID, Lease: &j.Lease}); err != nil {
				e.t.Fatal(err)
			}
		}},
		{"lease expired on the last attempt", func(j *app.Job) {
			e.clock.Advance(j.Timeout.D() + time.Second)
			if n, err := app.RecoverStale(e.ctx, e.s, 10, fixedBackoff); err != nil || n != 1 {
				e.t.Fatalf("RecoverStale = %d, %v", n, err)
			}
			if _, d, _ := e.s.Lookup(e.ctx, j.ID); d == nil {
				e.t.Fatalf("job %d not dead-lettered after its last lease expired", j.ID)
			}
		}},
	}
	for i, c := range ends {
		key := fmt.Sprint("key", i)
		first := e.submitOne("q", "k", keyed(key), func(nj *app.NewJob) { nj.MaxAttempts = 1 })
		next := e.submitOne("q", "k", keyed(key))
		j := e.claimOne("q")
		if j.ID != first.ID {
			e.t.Fatalf("%s: claimed %d, want %d", c.name, j.ID, first.ID)
		}
		c.end(j)
		if got := e.get(next.ID); got.Held {
			e.t.Fatalf("%s: the key's next job is still held", c.name)
		}
		if n := e.claimOne("q"); n.ID != next.ID {
			e.t.Fatalf("%s: claimed %d, want the key's next %d", c.name, n.ID, next.ID)
		} else {
			e.complete(n, `1`)
		}
	}
	// Queued (released) jobs that end without running free their place too.
	queuedEnds := []struct {
		name string
		end  func(j *app.Job)
	}{
		{"ttl", func(j *app.Job) {
			e.clock.Advance(2 * time.Minute)
			if n, err := app.ExpireTTL(e.ctx, e.s, 10); err != nil || n != 1 {
				e.t.Fatalf("ExpireTTL = %d, %v", n, err)
			}
		}},
		{"drain", func(j *app.Job) {
			if _, err := app.Drain(e.ctx, e.s, app.JobFilter{IDs: []int64{j.ID}}, nil); err != nil {
				e.t.Fatal(err)
			}
		}},
		{"admin move", func(j *app.Job) {
			if _, err := app.MoveToDead(e.ctx, e.s, app.JobFilter{IDs: []int64{j.ID}}, "", nil); err != nil {
				e.t.Fatal(err)
			}
		}},
		{"cancel", func(j *app.Job) {
			if _, err := svc.Cancel(e.ctx, j.ID, nil, "tester"); err != nil {
				e.t.Fatal(err)
			}
		}},
	}
	for i, c := range queuedEnds {
		key := fmt.Sprint("queued", i)
		ttl := e.clock.Now().Add(time.Minute)
		first := e.submitOne("q", "k", keyed(key), func(nj *app.NewJob) { nj.ExpiresAt = &ttl })
		next := e.submitOne("q", "k", keyed(key))
		c.end(first)
		if got := e.get(next.ID); got.Held {
			e.t.Fatalf("%s of the released job: the key's next job is still held", c.name)
		}
		if n := e.claimOne("q"); n.ID != next.ID {
			e.t.Fatalf("%s: claimed %d, want %d", c.name, n.ID, next.ID)
		} else {
			e.complete(n, `1`)
		}
	}
}

// SPEC: a job waiting for its retry keeps its key's place (the sequence
// stays in order); an expired lease that retries hands the same job out
// again, and the key's next job waits.
func testKeyRetryKeepsItsPlace(e *env) {
	e.setLimits("q", app.KeyLimits{Concurrency: 1})
	a := e.submitN(2, "q", "k", keyed("A"))
	j := e.claimOne("q")
	if r := e.fail(j, true); r.Outcome != app.OutcomeRetryScheduled {
		e.t.Fatalf("fail outcome %s, want a retry", r.Outcome)
	}
	_, ids := e.claimIDs("q", 10)
	wantIDs(e, "claim while the first waits for its retry", ids)
	if got := e.get(a[1].ID); !got.Held {
		e.t.Fatalf("the key's second job was released while the first waits for its retry")
	}
	e.clock.Advance(time.Minute)
	j = e.claimOne("q")
	if j.ID != a[0].ID {
		e.t.Fatalf("after the backoff claimed %d, want the retry of %d", j.ID, a[0].ID)
	}
	e.clock.Advance(j.Timeout.D() + time.Second) // its lease expires: a retry, at once
	if n, err := app.RecoverStale(e.ctx, e.s, 10, func(string, int) time.Duration { return 0 }); err != nil || n != 1 {
		e.t.Fatalf("RecoverStale = %d, %v", n, err)
	}
	j = e.claimOne("q")
	if j.ID != a[0].ID || j.Attempts != 3 {
		e.t.Fatalf("after the lease expired claimed %d (attempt %d), want %d again (attempt 3)", j.ID, j.Attempts, a[0].ID)
	}
	e.complete(j, `1`)
	if j := e.claimOne("q"); j.ID != a[1].ID {
		e.t.Fatalf("claimed %d, want the key's second %d", j.ID, a[1].ID)
	}
}

// SPEC: fairness round_robin hands out keys in turn: a key with a backlog
// does not delay a key with one job (priority still comes first).
func testKeyRoundRobin(e *env) {
	e.setLimits("q", app.KeyLimits{RoundRobin: true})
	a := e.submitN(50, "q", "k", keyed("A"))
	e.clock.Advance(time.Second)
	b := e.submitOne("q", "k", keyed("B"))
	c := e.submitOne("q", "k", keyed("C"))
	_, ids := e.claimIDs("q", 1)
	wantIDs(e, "first claim", ids, a[0].ID)
	_, ids = e.claimIDs("q", 1)
	wantIDs(e, "second claim", ids, b.ID)
	_, ids = e.claimIDs("q", 3)
	wantIDs(e, "third claim: C, then A again", ids, c.ID, a[1].ID, a[2].ID)
	// A bigger claim takes A's backlog in the same claim, one by one.
	jobs, _ := e.claimIDs("q", 20)
	if len(jobs) != 20 {
		e.t.Fatalf("a claim of 20 with one key left took %d", len(jobs))
	}
	for i, j := range jobs {
		if j.ID != a[3+i].ID {
			e.t.Fatalf("claim of 20: job %d is %d, want %d", i, j.ID, a[3+i].ID)
		}
	}
	// A job of a key waiting for its retry does not hold the key's turn.
	for _, j := range e.claim("q", 100) {
		e.complete(j, `1`)
	}
	r := e.submitN(3, "q", "k", keyed("R"))
	j := e.claimOne("q")
	if j.ID != r[0].ID {
		e.t.Fatalf("claimed %d, want %d", j.ID, r[0].ID)
	}
	e.fail(j, true) // back in an hour
	_, ids = e.claimIDs("q", 10)
	wantIDs(e, "while R's first waits for its retry", ids, r[1].ID, r[2].ID)
	// Priority first: a more urgent job of a new key goes before A's turn.
	urgent := e.submitOne("q", "k", keyed("D"), func(nj *app.NewJob) { nj.Priority = -5 })
	_, ids = e.claimIDs("q", 1)
	wantIDs(e, "urgent key", ids, urgent.ID)
}

// SPEC: key_rate N/period releases at most N jobs of a key per period.
func testKeyRate(e *env) {
	e.setLimits("q", app.KeyLimits{Rate: app.KeyRate{N: 2, Per: time.Second}})
	a := e.submitN(6, "q", "k", keyed("A"))
	b := e.submitOne("q", "k", keyed("B"))
	_, ids := e.claimIDs("q", 10)
	wantIDs(e, "first claim: two of A, B's one", ids, a[0].ID, a[1].ID, b.ID)
	_, ids = e.claimIDs("q", 10)
	wantIDs(e, "at once again", ids)
	e.clock.Advance(500 * time.Millisecond)
	_, ids = e.claimIDs("q", 10)
	wantIDs(e, "half a period later", ids, a[2].ID)
	e.clock.Advance(5 * time.Second) // a full bucket, no more
	_, ids = e.claimIDs("q", 10)
	wantIDs(e, "after a long pause", ids, a[3].ID, a[4].ID)

	// With key_concurrency too, a key that has tokens again but no room
	// is not looked at by every claim: its next end looks at it.
	e.setLimits("q", app.KeyLimits{Concurrency: 1, Rate: app.KeyRate{N: 1, Per: time.Second}})
	c := e.submitN(3, "q", "k", keyed("C"))
	_, ids = e.claimIDs("q", 10)
	wantIDs(e, "C's first", ids, c[0].ID)
	e.clock.Advance(2 * time.Second)
	e.claim("q", 10) // C has tokens, but its first runs
	err := e.s.Write(e.ctx, func(tx app.Tx) error {
		keys, err := tx.WaitingKeys("q", 100)
		if err == nil && len(keys) > 0 {
			e.t.Errorf("keys waiting for their bucket after the claim: %v (C has no room: its wake should be cleared)", keys)
		}
		return err
	})
	if err != nil {
		e.t.Fatal(err)
	}
	// Buckets unused for a whole period are full again: the sweep deletes them.
	e.clock.Advance(10 * time.Second)
	if _, err := app.SweepKeys(e.ctx, e.s, 100); err != nil {
		e.t.Fatal(err)
	}
	err = e.s.Write(e.ctx, func(tx app.Tx) error {
		b, err := tx.KeyBuckets("q", []string{"A", "B", "C"})
		if err == nil && len(b) > 0 {
			e.t.Errorf("buckets left after a sweep %s after their last use: %v", 10*time.Second, b)
		}
		return err
	})
	if err != nil {
		e.t.Fatal(err)
	}
}

// SPEC: a limit lifted from the config releases what it held back at the
// next sweep; one lowered applies to what is still held.
func testKeyLimitLiftedBySweep(e *env) {
	e.setLimits("q", app.KeyLimits{Concurrency: 1})
	e.submitN(3, "q", "k", keyed("A"))
	e.submitN(2, "q", "k", keyed("B"))
	e.setLimits("q", app.KeyLimits{Concurrency: 2})
	if _, err := app.SweepKeys(e.ctx, e.s, 1); err != nil {
		e.t.Fatal(err)
	}
	if held, _ := e.s.HeldCounts(e.ctx); held["q"] != 1 {
		e.t.Fatalf("after raising the limit to 2: %d held, want 1", held["q"])
	}
	e.setLimits("q", app.KeyLimits{})
	if _, err := app.SweepKeys(e.ctx, e.s, 1); err != nil {
		e.t.Fatal(err)
	}
	if held, _ := e.s.HeldCounts(e.ctx); len(held) != 0 {
		e.t.Fatalf("after lifting the limit: held %v", held)
	}
	if jobs := e.claim("q", 10); len(jobs) != 5 {
		e.t.Fatalf("claimed %d, want all 5", len(jobs))
	}
}

// SPEC: a replay keeps the job's key, and waits for it like a new job.
func testKeyReplayKeepsItsKey(e *env) {
	e.setLimits("q", app.KeyLimits{Concurrency: 1})
	first := e.submitOne("q", "k", keyed("A"))
	d := e.deadLetter(first)
	if d.Key != "A" {
		e.t.Fatalf("dead-letter row key %q, want A", d.Key)
	}
	busy := e.submitOne("q", "k", keyed("A"))
	e.claimOne("q")
	jobs, err := app.Replay(e.ctx, e.s, app.ReplayRequest{Filter: app.DeadFilter{IDs: []int64{d.ID}}})
	if err != nil {
		e.t.Fatal(err)
	}
	if j := e.get(jobs[0].ID); j.Key != "A" || !j.Held {
		e.t.Fatalf("replayed job key %q held %v, want A and held (job %d of A is running)", j.Key, j.Held, busy.ID)
	}
}

// submitRule submits one job of queue "u" with kind k, payload and mods,
// and says whether it was a duplicate.
func (e *env) submitRule(payload string, mods ...func(*app.NewJob)) (*app.Job, bool) {
	e.t.Helper()
	nj := e.newJob("u", "k", mods...)
	nj.Payload = json.RawMessage(payload)
	res, err := app.Submit(e.ctx, e.s, app.SubmitRequest{Jobs: []app.NewJob{nj}})
	if err != nil {
		e.t.Fatalf("Submit: %v", err)
	}
	return res[0].Job, res[0].Duplicate
}

// SPEC: a submission matching a job under its unique rule answers with
// that job (duplicate) instead of making one; by, while and for decide.
func testUniqueJobs(e *env) {
	byKey := func(while []string, d time.Duration) func(*app.NewJob) {
		return func(nj *app.NewJob) {
			nj.Key = "acct-1"
			nj.Unique = &app.UniqueRule{By: []string{"key"}, While: while, For: app.Duration(d)}
		}
	}
	live := []string{"queued", "scheduled", "processing"}
	first, dup := e.submitRule(`{"a":1}`, byKey(live, 0))
	if dup {
		e.t.Fatal("the first submission is a duplicate")
	}
	again, dup := e.submitRule(`{"a":2}`, byKey(live, 0))
	if !dup || again.ID != first.ID {
		e.t.Fatalf("same key: job %d duplicate %v, want %d, true", again.ID, dup, first.ID)
	}
	j := e.claimOne("u")
	if again, dup = e.submitRule(`{}`, byKey(live, 0)); !dup || again.ID != first.ID {
		e.t.Fatalf("while processing: job %d duplicate %v", again.ID, dup)
	}
	e.complete(j, `1`)
	second, dup := e.submitRule(`{}`, byKey(live, 0))
	if dup || second.ID == first.ID {
		e.t.Fatalf("after the first is done (not in while): duplicate %v job %d", dup, second.ID)
	}
	withDone := []string{"queued", "processing", "done"}
	if again, dup = e.submitRule(`{}`, byKey(withDone, 0)); !dup || again.ID != second.ID {
		e.t.Fatalf("while done: job %d duplicate %v, want the newest %d", again.ID, dup, second.ID)
	}
	// for: only jobs created within the window count.
	e.clock.Advance(11 * time.Minute)
	if again, dup = e.submitRule(`{}`, byKey(live, 10*time.Minute)); dup {
		e.t.Fatalf("for 10m, 11 minutes later: duplicate of %d", again.ID)
	}
	// by kind and payload (the default without a key): another payload is new.
	byPayload := func(nj *app.NewJob) { nj.Unique = &app.UniqueRule{By: []string{"kind", "payload"}, While: live} }
	p1, _ := e.submitRule(`{"x": 1, "y": [1, 2]}`, byPayload)
	if p, dup := e.submitRule(`{"x":1,"y":[1,2]}`, byPayload); !dup || p.ID != p1.ID {
		e.t.Fatalf("same payload, other spacing: job %d duplicate %v, want %d", p.ID, dup, p1.ID)
	}
	if _, dup := e.submitRule(`{"x":2}`, byPayload); dup {
		e.t.Fatal("another payload is a duplicate")
	}
	// scheduled: a job not yet due matches "scheduled" only.
	later := func(nj *app.NewJob) {
		nj.RunAt = e.clock.Now().Add(time.Hour)
		nj.Unique = &app.UniqueRule{By: []string{"kind"}, While: []string{"queued"}}
		nj.Kind = "sched"
	}
	s1, _ := e.submitRule(`1`, later)
	if s, dup := e.submitRule(`1`, later); dup {
		e.t.Fatalf("a scheduled job %d matched while [queued]", s.ID)
	} else if s.ID == s1.ID {
		e.t.Fatal("no new job")
	}
}

// SPEC: 20 concurrent submissions under one unique rule make one job.
func testUniqueUnderConcurrency(e *env) {
	const n = 20
	ids := make([]int64, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			nj := e.newJob("u", "k", keyed("order-7"))
			nj.Unique = &app.UniqueRule{By: []string{"key"}, While: []string{"queued", "scheduled", "processing"}}
			res, err := app.Submit(e.ctx, e.s, app.SubmitRequest{Jobs: []app.NewJob{nj}})
			if errs[i] = err; err == nil {
				ids[i] = res[0].Job.ID
			}
		}()
	}
	wg.Wait()
	for i := range n {
		if errs[i] != nil {
			e.t.Fatalf("submission %d: %v", i, errs[i])
		}
		if ids[i] != ids[0] {
			e.t.Fatalf("submission %d got job %d, submission 0 got %d", i, ids[i], ids[0])
		}
	}
	if c, _ := e.s.CountJobs(e.ctx, app.JobFilter{Queue: "u"}); c != 1 {
		e.t.Fatalf("%d jobs stored, want 1", c)
	}
}

// SPEC: debounce on a key keeps one queued job: each submission replaces
// its payload and pushes its run_at; once it runs, the next makes a new one.
func testDebounce(e *env) {
	deb := func(nj *app.NewJob) {
		nj.Key, nj.Debounce = "hook-9", 30*time.Second
		nj.RunAt = e.clock.Now().Add(30 * time.Second)
	}
	var first *app.Job
	for i := range 10 {
		j, dup := e.submitRule(fmt.Sprintf(`{"n":%d}`, i), deb)
		if i == 0 {
			first = j
		} else if !dup || j.ID != first.ID {
			e.t.Fatalf("update %d: job %d duplicate %v, want %d", i, j.ID, dup, first.ID)
		}
		e.clock.Advance(time.Second)
	}
	if c, _ := e.s.CountJobs(e.ctx, app.JobFilter{Queue: "u"}); c != 1 {
		e.t.Fatalf("%d jobs, want 1", c)
	}
	j := e.get(first.ID)
	if string(j.Payload) != `{"n":9}` || !j.RunAt.Equal(T0.Add(9*time.Second+30*time.Second)) {
		e.t.Fatalf("debounced job payload %s run_at %s, want the last payload and 30s after the last update", j.Payload, j.RunAt)
	}
	if got := e.claim("u", 1); len(got) != 0 {
		e.t.Fatal("claimed a debounced job before its quiet period ended")
	}
	e.clock.Advance(31 * time.Second)
	run := e.claimOne("u")
	if run.ID != first.ID {
		e.t.Fatalf("claimed %d", run.ID)
	}
	if j, dup := e.submitRule(`{"n":10}`, deb); dup || j.ID == first.ID {
		e.t.Fatalf("a submission while the debounced job runs: job %d duplicate %v, want a new job", j.ID, dup)
	}
	evs, err := e.s.JobEvents(e.ctx, first.ID)
	n := 0
	for _, ev := range evs {
		if ev.Type == app.EventDebounced {
			n++
		}
	}
	if err != nil || n != 9 {
		e.t.Fatalf("%d job.debounced events (%v), want 9", n, err)
	}
}

// SPEC: throttle keeps the first job of a key for the period and answers
// the rest with it.
func testThrottle(e *env) {
	thr := func(nj *app.NewJob) { nj.Key, nj.Throttle = "acct", time.Minute }
	first, _ := e.submitRule(`1`, thr)
	e.complete(e.claimOne("u"), `1`) // done or not, it is the period's job
	e.clock.Advance(59 * time.Second)
	if j, dup := e.submitRule(`2`, thr); !dup || j.ID != first.ID {
		e.t.Fatalf("within the period: job %d duplicate %v, want %d", j.ID, dup, first.ID)
	}
	e.clock.Advance(2 * time.Second)
	if j, dup := e.submitRule(`3`, thr); dup || j.ID == first.ID {
		e.t.Fatalf("after the period: job %d duplicate %v, want a new job", j.ID, dup)
	}
}

// SPEC: a weighted claim over several queues hands out work in about the
// weights' ratio; a strict order empties each queue before the next.
func testClaimQueuesWeightedAndStrict(e *env) {
	svc := e.service(nil)
	for _, q := range []string{"critical", "default", "low"} {
		e.submitN(400, q, "k")
	}
	w := &app.QueueChoice{Names: []string{"critical", "default", "low"}, Weights: []int{6, 3, 1}}
	got := map[string]int{}
	for range 40 {
		jobs, err := svc.ClaimQueues(e.ctx, app.ClaimInput{Queues: w, Limit: 1})
		if err != nil || len(jobs) != 1 {
			e.t.Fatalf("weighted claim of 1: %d jobs, %v", len(jobs), err)
		}
		got[jobs[0].Queue]++
	}
	jobs, err := svc.ClaimQueues(e.ctx, app.ClaimInput{Queues: w, Limit: 100})
	if err != nil || len(jobs) != 100 {
		e.t.Fatalf("weighted claim of 100: %d jobs, %v", len(jobs), err)
	}
	for _, j := range jobs {
		got[j.Queue]++
	}
	// 140 jobs at 6:3:1 is 84:42:14; with 40 single draws the spread is wide.
	if got["critical"] < 64 || got["critical"] > 104 || got["default"] < 25 || got["default"] > 60 || got["low"] < 4 || got["low"] > 30 {
		e.t.Fatalf("weighted claims by queue: %v, want about 84:42:14", got)
	}
	strict := &app.QueueChoice{Names: []string{"low", "default"}}
	jobs, err = svc.ClaimQueues(e.ctx, app.ClaimInput{Queues: strict, Limit: 500})
	if err != nil || len(jobs) != 500 {
		e.t.Fatalf("strict claim: %d, %v", len(jobs), err)
	}
	low := 400 - got["low"]
	for i, j := range jobs {
		if want := map[bool]string{true: "low", false: "default"}[i < low]; j.Queue != want {
			e.t.Fatalf("strict claim: job %d from %s, want %s (low had %d left)", i, j.Queue, want, low)
		}
	}
}

// SPEC: on a queue without key limits a key is a label: the job is stored
// with it (a listing by key finds it), never held, and its submission goes
// the plain jobs' way (the Service tells the store which queues limit keys).
func testKeyOnAQueueWithoutLimitsIsALabel(e *env) {
	e.setLimits("limited", app.KeyLimits{Concurrency: 1})
	svc := e.service(&app.Config{Queues: map[string]app.QueueConfig{"limited": {KeyConcurrency: 1}}})
	var ids []int64
	for _, q := range []string{"plain", "plain", "limited", "limited"} {
		res, err := svc.Submit(e.ctx, []app.SubmitInput{{Queue: q, Kind: "k", Key: "acct-1"}})
		if err != nil {
			e.t.Fatal(err)
		}
		ids = append(ids, res[0].Job.ID)
	}
	for i, id := range ids {
		j := e.get(id)
		if j.Key != "acct-1" || j.Held != (i == 3) {
			e.t.Fatalf("job %d in %s: key %q held %v, want acct-1, held only for the second of the limited queue", id, j.Queue, j.Key, j.Held)
		}
	}
	if n, _ := e.s.CountJobs(e.ctx, app.JobFilter{Key: "acct-1", Queue: "plain"}); n != 2 {
		e.t.Fatalf("jobs of key acct-1 in plain: %d, want 2", n)
	}
	if jobs := e.claim("plain", 10); len(jobs) != 2 {
		e.t.Fatalf("claimed %d of the plain queue's keyed jobs, want both", len(jobs))
	}
}
