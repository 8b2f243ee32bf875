package storetest

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/queuehq/queue/app"
)

func testSubmitStoresEveryField(e *env) {
	exp := T0.Add(time.Hour)
	from := int64(77)
	nj := e.newJob("mail", "send.welcome", withPriority(-5), withTags("a", "b"), withKey("k1"),
		withPayload(`{"to":"x@example.com","n":[1,2]}`), withMax(7), withTimeout(90*time.Second))
	nj.ExpiresAt = &exp
	nj.ReplayedFrom = &from
	j := e.submit(nj)[0]
	got := e.get(j.ID)
	if got.ID != j.ID || j.ID <= 0 {
		e.t.Fatalf("ids: submit %d, lookup %d", j.ID, got.ID)
	}
	check := func(name string, ok bool, gotv, want any) {
		if !ok {
			e.t.Errorf("%s = %v, want %v", name, gotv, want)
		}
	}
	check("queue", got.Queue == "mail", got.Queue, "mail")
	check("kind", got.Kind == "send.welcome", got.Kind, "send.welcome")
	check("status", got.Status == app.StatusQueued, got.Status, app.StatusQueued)
	check("payload", app.JSONEqual(got.Payload, json.RawMessage(`{"to":"x@example.com","n":[1,2]}`)), string(got.Payload), "the payload")
	check("priority", got.Priority == -5, got.Priority, -5)
	check("max_attempts", got.MaxAttempts == 7, got.MaxAttempts, 7)
	check("timeout", got.Timeout.D() == 90*time.Second, got.Timeout.D(), "90s")
	check("tags", len(got.Tags) == 2 && got.Tags[0] == "a" && got.Tags[1] == "b", got.Tags, "[a b]")
	check("idempotency_key", got.IdempotencyKey == "k1", got.IdempotencyKey, "k1")
	check("expires_at", got.ExpiresAt != nil && got.ExpiresAt.Equal(exp), got.ExpiresAt, exp)
	check("replayed_from", got.ReplayedFrom != nil && *got.ReplayedFrom == 77, got.ReplayedFrom, 77)
	check("run_at", got.RunAt.Equal(T0), got.RunAt, T0)
	check("created_at", got.CreatedAt.Equal(T0), got.CreatedAt, T0)
	check("attempts", got.Attempts == 0, got.Attempts, 0)
	check("lease", got.Lease == 0, got.Lease, 0)
	check("started_at", got.StartedAt == nil, got.StartedAt, nil)
	// What Submit answered is what a read gives.
	check("submit answer run_at", j.RunAt.Equal(got.RunAt), j.RunAt, got.RunAt)
	check("submit answer status", j.Status == got.Status, j.Status, got.Status)
}

func testSubmitBatchIsAllOrNothing(e *env) {
	first := e.submitOne("q", "k", withKey("taken"), withPayload(`1`))
	before, _ := e.s.CountJobs(e.ctx, app.JobFilter{})
	_, err := app.Submit(e.ctx, e.s, app.SubmitRequest{Jobs: []app.NewJob{
		e.newJob("q", "k"), e.newJob("q", "k"), e.newJob("q", "k", withKey("taken"), withPayload(`2`)),
	}})
	if !errors.Is(err, app.ErrIdempotencyConflict) {
		e.t.Fatalf("batch with a conflicting key: err %v, want ErrIdempotencyConflict", err)
	}
	after, _ := e.s.CountJobs(e.ctx, app.JobFilter{})
	if after != before {
		e.t.Fatalf("a failed batch stored %d jobs", after-before)
	}
	// A good batch lands whole, ids increasing in order, each answer the
	// job stored under its id.
	jobs := e.submit(e.newJob("q", "a"), e.newJob("q", "b"), e.newJob("q", "c"))
	for i, j := range jobs {
		if j.ID <= first.ID || (i > 0 && j.ID <= jobs[i-1].ID) {
			e.t.Fatalf("batch ids %v not increasing after %d", ids(jobs), first.ID)
		}
		if want := string(rune('a' + i)); j.Kind != want || e.get(j.ID).Kind != want {
			e.t.Fatalf("batch job %d: answered kind %q, stored kind %q, want %q", j.ID, j.Kind, e.get(j.ID).Kind, want)
		}
	}
}

// testLargeMixedBatchKeepsItsJobs submits more jobs than a store gathers
// into one statement, some with keys (one repeated inside the batch) and
// some in a queue with max_queued, so stores that insert many jobs per
// statement must still answer each job with its own id, in order.
func testLargeMixedBatchKeepsItsJobs(e *env) {
	const n = 2500
	jobs := make([]app.NewJob, n)
	for i := range jobs {
		queue := "big"
		if i%3 == 0 {
			queue = "limited"
		}
		jobs[i] = e.newJob(queue, fmt.Sprintf("k%d", i%7), withPayload(fmt.Sprintf(`{"i":%d}`, i)))
		if i%250 == 5 {
			jobs[i].IdempotencyKey = fmt.Sprintf("key-%d", i)
		}
	}
	jobs[2000] = e.newJob("big", "dup", withKey("twice"), withPayload(`{"same":true}`))
	jobs[100] = e.newJob("big", "dup", withKey("twice"), withPayload(`{"same":true}`))
	res, err := app.Submit(e.ctx, e.s, app.SubmitRequest{Jobs: jobs, MaxQueued: map[string]int{"limited": n}})
	if err != nil {
		e.t.Fatalf("batch of %d: %v", n, err)
	}
	if len(res) != n {
		e.t.Fatalf("batch of %d answered %d jobs", n, len(res))
	}
	if !res[2000].Existing || res[2000].Job.ID != res[100].Job.ID || res[100].Existing {
		e.t.Fatalf("key repeated in the batch: answers %d (existing %v) and %d (existing %v), want the second to be the first",
			res[100].Job.ID, res[100].Existing, res[2000].Job.ID, res[2000].Existing)
	}
	var last int64
	for i, r := range res {
		if r.Existing {
			continue
		}
		if r.Job.ID <= last {
			e.t.Fatalf("job %d of the batch has id %d after %d: ids not increasing in batch order", i, r.Job.ID, last)
		}
		last = r.Job.ID
		got := e.get(r.Job.ID)
		if got.Queue != jobs[i].Queue || got.Kind != jobs[i].Kind || !app.JSONEqual(got.Payload, jobs[i].Payload) ||
			got.IdempotencyKey != jobs[i].IdempotencyKey || r.Job.Kind != jobs[i].Kind {
			e.t.Fatalf("job %d of the batch: answered id %d (kind %q), stored %s/%s %s key %q, want %s/%s %s key %q", i, r.Job.ID, r.Job.Kind,
				got.Queue, got.Kind, got.Payload, got.IdempotencyKey, jobs[i].Queue, jobs[i].Kind, jobs[i].Payload, jobs[i].IdempotencyKey)
		}
	}
	if c, _ := e.s.CountJobs(e.ctx, app.JobFilter{}); c != n-1 {
		e.t.Fatalf("stored %d jobs, want %d", c, n-1)
	}
}

// testKeyGivenTwiceInABatch: a batch that gives one key to two different
// submissions is refused whole, and the error points at the two items,
// not at an id the rollback leaves to no job.
func testKeyGivenTwiceInABatch(e *env) {
	_, err := app.Submit(e.ctx, e.s, app.SubmitRequest{Jobs: []app.NewJob{
		e.newJob("q", "k", withKey("x"), withPayload(`1`)), e.newJob("q", "k"), e.newJob("q", "k", withKey("x"), withPayload(`2`)),
	}})
	if !errors.Is(err, app.ErrIdempotencyConflict) {
		e.t.Fatalf("one key, two payloads in a batch: err %v, want ErrIdempotencyConflict", err)
	}
	if msg := err.Error(); !strings.Contains(msg, "twice in this batch") || !strings.Contains(msg, "items 0 and 2") {
		e.t.Fatalf("one key, two payloads in a batch: message %q does not name the two items", msg)
	}
	if n, _ := e.s.CountJobs(e.ctx, app.JobFilter{}); n != 0 {
		e.t.Fatalf("a refused batch stored %d jobs", n)
	}
	// A key held by an earlier batch still names its job.
	a := e.submitOne("q", "k", withKey("y"), withPayload(`1`))
	_, err = app.Submit(e.ctx, e.s, app.SubmitRequest{Jobs: []app.NewJob{e.newJob("q", "k", withKey("y"), withPayload(`2`))}})
	if !errors.Is(err, app.ErrIdempotencyConflict) || !strings.Contains(err.Error(), fmt.Sprintf("belongs to job %d", a.ID)) {
		e.t.Fatalf("key held by job %d: err %v, want a conflict naming it", a.ID, err)
	}
}

func testIdempotencyKeyReplaysAndConflicts(e *env) {
	a := e.submitOne("q", "k", withKey("order-1"), withPayload(`{"a":1,"b":2}`))
	res, err := app.Submit(e.ctx, e.s, app.SubmitRequest{Jobs: []app.NewJob{e.newJob("q", "k", withKey("order-1"), withPayload(`{"b":2,"a":1}`))}})
	if err != nil {
		e.t.Fatalf("repeat with the same key: %v", err)
	}
	if !res[0].Existing || res[0].Job.ID != a.ID {
		e.t.Fatalf("repeat: existing=%v id=%d, want existing job %d", res[0].Existing, res[0].Job.ID, a.ID)
	}
	if _, err := app.Submit(e.ctx, e.s, app.SubmitRequest{Jobs: []app.NewJob{e.newJob("q", "k", withKey("order-1"), withPayload(`{"a":2}`))}}); !errors.Is(err, app.ErrIdempotencyConflict) {
		e.t.Fatalf("same key, other payload: err %v, want conflict", err)
	}
	if _, err := app.Submit(e.ctx, e.s, app.SubmitRequest{Jobs: []app.NewJob{e.newJob("q", "other", withKey("order-1"), withPayload(`{"a":1,"b":2}`))}}); !errors.Is(err, app.ErrIdempotencyConflict) {
		e.t.Fatalf("same key, other kind: err %v, want conflict", err)
	}
	// The key is per queue.
	b := e.submitOne("q2", "k", withKey("order-1"))
	if b.ID == a.ID {
		e.t.Fatalf("same key in another queue returned the first job")
	}
	if n, _ := e.s.CountJobs(e.ctx, app.JobFilter{}); n != 2 {
		e.t.Fatalf("stored %d jobs, want 2", n)
	}
}

func testIdempotencyKeyHoldsAfterDeadLetter(e *env) {
	a := e.submitOne("q", "k", withKey("once"))
	e.deadLetter(a)
	res, err := app.Submit(e.ctx, e.s, app.SubmitRequest{Jobs: []app.NewJob{e.newJob("q", "k", withKey("once"))}})
	if err != nil {
		e.t.Fatalf("repeat after DLQ move: %v", err)
	}
	if !res[0].Existing || res[0].Job.ID != a.ID || res[0].Job.Status != app.StatusDeadLetter {
		e.t.Fatalf("repeat after DLQ move: existing=%v id=%d status=%s, want the dead-lettered job %d", res[0].Existing, res[0].Job.ID, res[0].Job.Status, a.ID)
	}
}

func testMaxQueuedRefusesAndStoresNothing(e *env) {
	limit := map[string]int{"small": 2}
	if _, err := app.Submit(e.ctx, e.s, app.SubmitRequest{Jobs: []app.NewJob{e.newJob("small", "k"), e.newJob("small", "k")}, MaxQueued: limit}); err != nil {
		e.t.Fatalf("two jobs under max_queued 2: %v", err)
	}
	_, err := app.Submit(e.ctx, e.s, app.SubmitRequest{Jobs: []app.NewJob{e.newJob("other", "k"), e.newJob("small", "k")}, MaxQueued: limit})
	if !errors.Is(err, app.ErrQueueFull) {
		e.t.Fatalf("third job: err %v, want ErrQueueFull", err)
	}
	if n, _ := e.s.CountJobs(e.ctx, app.JobFilter{}); n != 2 {
		e.t.Fatalf("after a refused batch: %d jobs, want 2", n)
	}
	// Claiming one frees a place.
	e.claimOne("small")
	if _, err := app.Submit(e.ctx, e.s, app.SubmitRequest{Jobs: []app.NewJob{e.newJob("small", "k")}, MaxQueued: limit}); err != nil {
		e.t.Fatalf("after a claim: %v", err)
	}
}

func testClaimOrderIsPriorityRunAtID(e *env) {
	early := T0.Add(-time.Minute)
	j1 := e.submitOne("q", "k", withPriority(0))
	j2 := e.submitOne("q", "k", withPriority(-1))
	j3 := e.submitOne("q", "k", withPriority(0), withRunAt(early))
	j4 := e.submitOne("q", "k", withPriority(0))
	j5 := e.submitOne("q", "k", withPriority(5), withRunAt(early.Add(-time.Hour)))
	want := []int64{j2.ID, j3.ID, j1.ID, j4.ID, j5.ID}
	got := e.claim("q", 10)
	if !sameIDs(ids(got), want) {
		e.t.Fatalf("claim order %v, want %v", ids(got), want)
	}
	// One at a time gives the same order.
	e2 := []int64{}
	k1 := e.submitOne("r", "k", withPriority(3))
	k2 := e.submitOne("r", "k", withPriority(-3))
	for i := 0; i < 2; i++ {
		e2 = append(e2, e.claimOne("r").ID)
	}
	if !sameIDs(e2, []int64{k2.ID, k1.ID}) {
		e.t.Fatalf("one-by-one order %v, want %v", e2, []int64{k2.ID, k1.ID})
	}
	// Kinds do not change the order: a claim merges them by priority, run_at, id.
	m1 := e.submitOne("mix", "b", withPriority(2))
	m2 := e.submitOne("mix", "a", withPriority(2))
	m3 := e.submitOne("mix", "c", withPriority(-4))
	m4 := e.submitOne("mix", "a", withPriority(1), withRunAt(early))
	m5 := e.submitOne("mix", "b", withPriority(1))
	got = e.claim("mix", 3)
	if want := []int64{m3.ID, m4.ID, m5.ID}; !sameIDs(ids(got), want) {
		e.t.Fatalf("claim order over kinds %v, want %v", ids(got), want)
	}
	jobs, err := e.s.Claim(e.ctx, app.ClaimRequest{Queue: "mix", Limit: 5, Kinds: []string{"b", "a"}})
	if want := []int64{m1.ID, m2.ID}; err != nil || !sameIDs(ids(jobs), want) {
		e.t.Fatalf("claim of kinds b, a: %v %v, want %v", ids(jobs), err, want)
	}
	// A claim of one kind (a store may take a path of its own for it) keeps
	// the order within the kind, takes at most its limit, and leaves the
	// other kinds queued.
	o1 := e.submitOne("one", "a", withPriority(0))
	o2 := e.submitOne("one", "b", withPriority(-9))
	o3 := e.submitOne("one", "a", withPriority(-1))
	o4 := e.submitOne("one", "a", withPriority(0), withRunAt(early))
	o5 := e.submitOne("one", "a", withPriority(-2)) // the first to take, the last in id order
	jobs, err = e.s.Claim(e.ctx, app.ClaimRequest{Queue: "one", Limit: 3, Kinds: []string{"a"}})
	if want := []int64{o5.ID, o3.ID, o4.ID}; err != nil || !sameIDs(ids(jobs), want) {
		e.t.Fatalf("claim of kind a, limit 3: %v %v, want %v", ids(jobs), err, want)
	}
	for _, j := range jobs {
		if j.Queue != "one" || j.Kind != "a" || j.Status != app.StatusProcessing {
			e.t.Fatalf("claimed job %d is %s/%s %s, want one/a processing", j.ID, j.Queue, j.Kind, j.Status)
		}
	}
	if got := e.claim("one", 10); !sameIDs(ids(got), []int64{o2.ID, o1.ID}) {
		e.t.Fatalf("after the claim of kind a: claim = %v, want %v", ids(got), []int64{o2.ID, o1.ID})
	}
}

func testClaimSkipsScheduledExpiredAndKinds(e *env) {
	later := e.submitOne("q", "k", withRunAt(T0.Add(time.Minute)))
	exp := T0.Add(-time.Second)
	expired := e.submitOne("q", "k", func(n *app.NewJob) { n.ExpiresAt = &exp })
	other := e.submitOne("q", "other")
	if got := e.claim("q", 10); len(got) != 1 || got[0].ID != other.ID {
		e.t.Fatalf("claim = %v, want only %d (not scheduled %d, not expired %d)", ids(got), other.ID, later.ID, expired.ID)
	}
	ready := e.submitOne("q", "k")
	jobs, err := e.s.Claim(e.ctx, app.ClaimRequest{Queue: "q", Limit: 5, Kinds: []string{"nope"}})
	if err != nil || len(jobs) != 0 {
		e.t.Fatalf("claim of another kind = %v, %v; want none", ids(jobs), err)
	}
	jobs, err = e.s.Claim(e.ctx, app.ClaimRequest{Queue: "q", Limit: 5, Kinds: []string{"nope", "k"}})
	if err != nil || len(jobs) != 1 || jobs[0].ID != ready.ID {
		e.t.Fatalf("claim kinds [nope k] = %v, %v; want %d", ids(jobs), err, ready.ID)
	}
	e.clock.Advance(time.Minute)
	if got := e.claim("q", 10); len(got) != 1 || got[0].ID != later.ID {
		e.t.Fatalf("after run_at: claim = %v, want %d", ids(got), later.ID)
	}
	if got := e.claim("other-queue", 10); len(got) != 0 {
		e.t.Fatalf("claim of an empty queue = %v", ids(got))
	}
}

func testClaimSetsLeaseAndAttempts(e *env) {
	j := e.submitOne("q", "k", withTimeout(20*time.Second))
	c := e.claimOne("q")
	if c.Status != app.StatusProcessing || c.Attempts != 1 || c.Lease != 1 || c.WorkerID != "w1" {
		e.t.Fatalf("claimed: status %s attempts %d lease %d worker %q", c.Status, c.Attempts, c.Lease, c.WorkerID)
	}
	if c.LeaseExpiresAt == nil || !c.LeaseExpiresAt.Equal(T0.Add(20*time.Second)) {
		e.t.Fatalf("lease_expires_at %v, want now+timeout %v", c.LeaseExpiresAt, T0.Add(20*time.Second))
	}
	if c.StartedAt == nil || !c.StartedAt.Equal(T0) {
		e.t.Fatalf("started_at %v, want %v", c.StartedAt, T0)
	}
	got := e.get(j.ID)
	if got.Lease != 1 || got.Status != app.StatusProcessing {
		e.t.Fatalf("stored: lease %d status %s", got.Lease, got.Status)
	}
	// A claim timeout overrides the job's.
	e.submitOne("q", "k")
	jobs, err := e.s.Claim(e.ctx, app.ClaimRequest{Queue: "q", Limit: 1, Timeout: 5 * time.Second})
	if err != nil || len(jobs) != 1 || !jobs[0].LeaseExpiresAt.Equal(T0.Add(5*time.Second)) {
		e.t.Fatalf("claim with timeout 5s: %v %v", jobs, err)
	}
	// The retry gets a new lease.
	e.fail(c, true)
	e.clock.Advance(time.Hour)
	c2 := e.claimOne("q")
	if c2.ID != j.ID || c2.Lease != 2 || c2.Attempts != 2 {
		e.t.Fatalf("second claim: id %d lease %d attempts %d, want %d, 2, 2", c2.ID, c2.Lease, c2.Attempts, j.ID)
	}
}

func testClaimHonoursConcurrencyLimit(e *env) {
	for i := 0; i < 5; i++ {
		e.submitOne("lim", "k")
	}
	req := app.ClaimRequest{Queue: "lim", Limit: 10, Concurrency: 2}
	jobs, err := e.s.Claim(e.ctx, req)
	if err != nil || len(jobs) != 2 {
		e.t.Fatalf("claim under concurrency 2 = %d jobs (%v), want 2", len(jobs), err)
	}
	more, _ := e.s.Claim(e.ctx, req)
	if len(more) != 0 {
		e.t.Fatalf("claim while 2 run = %d jobs, want 0", len(more))
	}
	e.complete(jobs[0], `null`)
	more, _ = e.s.Claim(e.ctx, req)
	if len(more) != 1 {
		e.t.Fatalf("claim after one finished = %d jobs, want 1", len(more))
	}
}

func testClaimHonoursRateLimit(e *env) {
	for i := 0; i < 20; i++ {
		e.submitOne("slow", "k")
	}
	req := app.ClaimRequest{Queue: "slow", Limit: 100, Rate: 2, Burst: 2}
	got := 0
	for i := 0; i < 10; i++ {
		jobs, err := e.s.Claim(e.ctx, req)
		if err != nil {
			e.t.Fatal(err)
		}
		got += len(jobs)
	}
	if got != 2 {
		e.t.Fatalf("claims in one instant with burst 2: %d, want 2", got)
	}
	e.clock.Advance(1500 * time.Millisecond) // refills 3, capped at the burst of 2
	jobs, _ := e.s.Claim(e.ctx, req)
	if len(jobs) != 2 {
		e.t.Fatalf("after 1.5s at 2/s: %d claims, want 2 (burst)", len(jobs))
	}
	e.clock.Advance(500 * time.Millisecond)
	jobs, _ = e.s.Claim(e.ctx, req)
	if len(jobs) != 1 {
		e.t.Fatalf("after 0.5s at 2/s: %d claims, want 1", len(jobs))
	}
}

func testPausedQueueHandsOutNothing(e *env) {
	e.submitOne("p", "k")
	if err := app.SetPaused(e.ctx, e.s, "p", true, nil); err != nil {
		e.t.Fatal(err)
	}
	if got := e.claim("p", 5); len(got) != 0 {
		e.t.Fatalf("paused queue handed out %d jobs", len(got))
	}
	for _, kinds := range [][]string{{"k"}, {"k", "other"}} { // nor by kind
		if got, err := e.s.Claim(e.ctx, app.ClaimRequest{Queue: "p", Limit: 5, Kinds: kinds}); err != nil || len(got) != 0 {
			e.t.Fatalf("paused queue handed out %d jobs of kinds %v (%v)", len(got), kinds, err)
		}
	}
	// nor under a concurrency or rate limit (PostgreSQL claims those on a path of its own)
	for _, lim := range []app.ClaimRequest{{Concurrency: 5}, {Rate: 100}, {Concurrency: 5, Rate: 100, Burst: 5}} {
		lim.Queue, lim.Limit = "p", 5
		if got, err := e.s.Claim(e.ctx, lim); err != nil || len(got) != 0 {
			e.t.Fatalf("paused queue handed out %d jobs under limits %+v (%v)", len(got), lim, err)
		}
	}
	e.submitOne("p", "k") // submissions still land
	if n, _ := e.s.CountJobs(e.ctx, app.JobFilter{Queue: "p"}); n != 2 {
		e.t.Fatalf("paused queue holds %d jobs, want 2", n)
	}
	if err := app.SetPaused(e.ctx, e.s, "p", false, nil); err != nil {
		e.t.Fatal(err)
	}
	if got := e.claim("p", 5); len(got) != 2 {
		e.t.Fatalf("resumed queue handed out %d jobs, want 2", len(got))
	}
}

// A claimed job is the row as stored after the claim, field by field:
// with the job's own timeout and with a timeout the claim names, on a
// first attempt and on a retry that carries an error.
func testClaimAnswersTheStoredRow(e *env) {
	exp := T0.Add(time.Hour)
	j := e.newJob("rows", "k", withMax(3))
	j.Payload = json.RawMessage(`{"x":[1,2]}`)
	j.Tags = []string{"a", "b"}
	j.Priority = -2
	j.IdempotencyKey = "row-key"
	j.ExpiresAt = &exp
	e.submit(j, e.newJob("rows", "k2"))
	check := func(what string, claimed []*app.Job) {
		e.t.Helper()
		for _, c := range claimed {
			got, _ := json.Marshal(c)
			want, _ := json.Marshal(e.get(c.ID))
			if string(got) != string(want) {
				e.t.Fatalf("%s: claimed job\n%s\nstored row\n%s", what, got, want)
			}
		}
	}
	e.clock.Advance(time.Second)
	first, err := e.s.Claim(e.ctx, app.ClaimRequest{Queue: "rows", WorkerID: "w1", Limit: 1})
	if err != nil || len(first) != 1 {
		e.t.Fatalf("claim: %v %v", first, err)
	}
	check("first attempt, job's timeout", first)
	if _, err := app.Fail(e.ctx, e.s, app.FailRequest{ID: first[0].ID, Lease: first[0].Lease, Error: "boom", Retry: true, Backoff: fixedBackoff}); err != nil {
		e.t.Fatal(err)
	}
	e.clock.Advance(time.Minute)
	again, err := e.s.Claim(e.ctx, app.ClaimRequest{Queue: "rows", WorkerID: "w2", Limit: 5, Timeout: 7 * time.Second})
	if err != nil || len(again) != 2 {
		e.t.Fatalf("second claim: %d jobs, %v", len(again), err)
	}
	check("retry and a first attempt, claim's timeout", again)
}

// Submissions running at once (a store may write them together) each get
// the ids of their own rows: the job stored under an answered id has the
// payload that was sent with it, no id is answered twice, and a request's
// ids rise in its order.
func testConcurrentSubmitsGetTheirOwnRows(e *env) {
	type sent struct {
		id      int64
		payload string
	}
	var mu sync.Mutex
	var all []sent
	var wg sync.WaitGroup
	for g := 0; g < 16; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 25; i++ {
				var jobs []app.NewJob
				for k := 0; k <= i%3; k++ {
					j := e.newJob(fmt.Sprintf("q%d", g%3), "k")
					j.Payload = json.RawMessage(fmt.Sprintf(`{"g":%d,"i":%d,"k":%d}`, g, i, k))
					jobs = append(jobs, j)
				}
				out, err := app.Submit(e.ctx, e.s, app.SubmitRequest{Jobs: jobs})
				if err != nil {
					e.t.Error(err)
					return
				}
				mu.Lock()
				for k, o := range out {
					if k > 0 && o.Job.ID <= out[k-1].Job.ID {
						e.t.Errorf("ids of one request out of order: %d after %d", o.Job.ID, out[k-1].Job.ID)
					}
					all = append(all, sent{o.Job.ID, string(jobs[k].Payload)})
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	seen := map[int64]bool{}
	for _, s := range all {
		if seen[s.id] {
			e.t.Fatalf("id %d answered twice", s.id)
		}
		seen[s.id] = true
		if got := e.get(s.id); !app.JSONEqual(got.Payload, json.RawMessage(s.payload)) {
			e.t.Fatalf("job %d holds %s, but was answered for %s", s.id, got.Payload, s.payload)
		}
	}
}

func testConcurrentClaimersNeverShareAJob(e *env) {
	const n = 300
	e.submitN(n, "c", "k")
	var mu sync.Mutex
	seen := map[int64]int{}
	var wg sync.WaitGroup
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				jobs, err := e.s.Claim(e.ctx, app.ClaimRequest{Queue: "c", Limit: 7})
				if err != nil {
					e.t.Error(err)
					return
				}
				if len(jobs) == 0 {
					return
				}
				var items []app.Completion
				mu.Lock()
				for _, j := range jobs {
					seen[j.ID]++
					items = append(items, app.Completion{ID: j.ID, Lease: j.Lease})
				}
				mu.Unlock()
				errs, err := e.s.Complete(e.ctx, items)
				if err != nil {
					e.t.Error(err)
					return
				}
				for _, err := range errs {
					if err != nil {
						e.t.Error(err)
					}
				}
			}
		}()
	}
	wg.Wait()
	if len(seen) != n {
		e.t.Fatalf("claimed %d distinct jobs, want %d", len(seen), n)
	}
	for id, c := range seen {
		if c != 1 {
			e.t.Fatalf("job %d claimed %d times", id, c)
		}
	}
	if done, _ := e.s.CountJobs(e.ctx, app.JobFilter{Status: "done"}); done != n {
		e.t.Fatalf("%d done, want %d", done, n)
	}
}

func testHeartbeatExtendsAndIsFenced(e *env) {
	e.submitOne("q", "k", withTimeout(10*time.Second))
	c := e.claimOne("q")
	e.clock.Advance(5 * time.Second)
	j, err := app.Heartbeat(e.ctx, e.s, c.ID, c.Lease, 0)
	if err != nil {
		e.t.Fatalf("Heartbeat: %v", err)
	}
	if !j.LeaseExpiresAt.Equal(T0.Add(15 * time.Second)) {
		e.t.Fatalf("after heartbeat (no extend): lease_expires_at %v, want now+timeout %v", j.LeaseExpiresAt, T0.Add(15*time.Second))
	}
	j, err = app.Heartbeat(e.ctx, e.s, c.ID, c.Lease, time.Minute)
	if err != nil || !j.LeaseExpiresAt.Equal(T0.Add(65*time.Second)) {
		e.t.Fatalf("heartbeat extend 1m: %v %v", j, err)
	}
	if _, err := app.Heartbeat(e.ctx, e.s, c.ID, c.Lease+1, 0); !errors.Is(err, app.ErrLeaseLost) {
		e.t.Fatalf("heartbeat with a wrong lease: %v, want ErrLeaseLost", err)
	}
	if _, err := app.Heartbeat(e.ctx, e.s, 999999, 1, 0); !errors.Is(err, app.ErrNotFound) {
		e.t.Fatalf("heartbeat of an unknown job: %v, want ErrNotFound", err)
	}
	// The cancel request shows on the heartbeat.
	if _, err := app.Cancel(e.ctx, e.s, app.CancelRequest{ID: c.ID}); err != nil {
		e.t.Fatal(err)
	}
	j, err = app.Heartbeat(e.ctx, e.s, c.ID, c.Lease, 0)
	if err != nil || !j.CancelRequested {
		e.t.Fatalf("heartbeat after a cancel request: cancel_requested=%v err=%v", j != nil && j.CancelRequested, err)
	}
}

func testStaleLeaseChangesNothing(e *env) {
	e.submitOne("q", "k", withTimeout(time.Second), withMax(5))
	first := e.claimOne("q")
	e.clock.Advance(2 * time.Second)
	if _, err := app.RecoverStale(e.ctx, e.s, 100, fixedBackoff); err != nil {
		e.t.Fatal(err)
	}
	e.clock.Advance(time.Hour)
	second := e.claimOne("q") // the same job, a new lease
	before := e.get(second.ID)
	stale := first.Lease
	if _, err := app.Heartbeat(e.ctx, e.s, first.ID, stale, 0); !errors.Is(err, app.ErrLeaseLost) {
		e.t.Errorf("stale heartbeat: %v, want ErrLeaseLost", err)
	}
	errs, err := e.s.Complete(e.ctx, []app.Completion{{ID: first.ID, Lease: stale, Result: json.RawMessage(`"x"`)}})
	if err != nil || !errors.Is(errs[0], app.ErrLeaseLost) {
		e.t.Errorf("stale complete: %v %v, want ErrLeaseLost", errs, err)
	}
	if _, err := app.Fail(e.ctx, e.s, app.FailRequest{ID: first.ID, Lease: stale, Error: "x", Retry: true}); !errors.Is(err, app.ErrLeaseLost) {
		e.t.Errorf("stale fail: %v, want ErrLeaseLost", err)
	}
	if _, err := app.Snooze(e.ctx, e.s, first.ID, stale, time.Second); !errors.Is(err, app.ErrLeaseLost) {
		e.t.Errorf("stale snooze: %v, want ErrLeaseLost", err)
	}
	if _, err := app.Cancel(e.ctx, e.s, app.CancelRequest{ID: first.ID, Lease: &stale}); !errors.Is(err, app.ErrLeaseLost) {
		e.t.Errorf("stale cancel ack: %v, want ErrLeaseLost", err)
	}
	after := e.get(second.ID)
	a, _ := json.Marshal(before)
	b, _ := json.Marshal(after)
	if string(a) != string(b) {
		e.t.Fatalf("stale calls changed the row:\nbefore %s\nafter  %s", a, b)
	}
}

func testCompleteStoresResult(e *env) {
	j := e.submitOne("q", "k")
	c := e.claimOne("q")
	e.clock.Advance(time.Second)
	e.complete(c, `{"ok":true}`)
	got := e.get(j.ID)
	if got.Status != app.StatusDone || !app.JSONEqual(got.Result, json.RawMessage(`{"ok":true}`)) {
		e.t.Fatalf("after complete: status %s result %s", got.Status, got.Result)
	}
	if got.FinishedAt == nil || !got.FinishedAt.Equal(T0.Add(time.Second)) {
		e.t.Fatalf("finished_at %v, want %v", got.FinishedAt, T0.Add(time.Second))
	}
	// Complete twice: the second is a lost lease, the row stays.
	errs, err := e.s.Complete(e.ctx, []app.Completion{{ID: c.ID, Lease: c.Lease, Result: json.RawMessage(`2`)}})
	if err != nil || !errors.Is(errs[0], app.ErrLeaseLost) {
		e.t.Fatalf("second complete: %v %v", errs, err)
	}
	if got := e.get(j.ID); !app.JSONEqual(got.Result, json.RawMessage(`{"ok":true}`)) {
		e.t.Fatalf("second complete changed result to %s", got.Result)
	}
}

func testCompleteBatchFencesEachItem(e *env) {
	e.submit(e.newJob("q", "k"), e.newJob("q", "k"), e.newJob("q", "k"))
	jobs := e.claim("q", 3)
	errs, err := e.s.Complete(e.ctx, []app.Completion{
		{ID: jobs[0].ID, Lease: jobs[0].Lease},
		{ID: jobs[1].ID, Lease: jobs[1].Lease + 5},
		{ID: 987654, Lease: 1},
		{ID: jobs[2].ID, Lease: jobs[2].Lease, Result: json.RawMessage(`[1]`)},
	})
	if err != nil {
		e.t.Fatal(err)
	}
	if errs[0] != nil || !errors.Is(errs[1], app.ErrLeaseLost) || !errors.Is(errs[2], app.ErrNotFound) || errs[3] != nil {
		e.t.Fatalf("per-item results %v, want [nil lease_lost not_found nil]", errs)
	}
	if e.get(jobs[0].ID).Status != app.StatusDone || e.get(jobs[1].ID).Status != app.StatusProcessing || e.get(jobs[2].ID).Status != app.StatusDone {
		e.t.Fatalf("statuses after batch: %s %s %s", e.get(jobs[0].ID).Status, e.get(jobs[1].ID).Status, e.get(jobs[2].ID).Status)
	}
	// One job named three times, as if the items ran one by one: a stale
	// lease loses, the lease holder completes it, and its repeat loses.
	j := e.submitOne("q2", "k")
	c := e.claimOne("q2")
	errs, err = e.s.Complete(e.ctx, []app.Completion{
		{ID: j.ID, Lease: c.Lease - 1},
		{ID: j.ID, Lease: c.Lease, Result: json.RawMessage(`"first"`)},
		{ID: j.ID, Lease: c.Lease, Result: json.RawMessage(`"again"`)},
	})
	if err != nil {
		e.t.Fatal(err)
	}
	if !errors.Is(errs[0], app.ErrLeaseLost) || errs[1] != nil || !errors.Is(errs[2], app.ErrLeaseLost) {
		e.t.Fatalf("per-item results for one job named thrice %v, want [lease_lost nil lease_lost]", errs)
	}
	if got := e.get(j.ID); got.Status != app.StatusDone || string(got.Result) != `"first"` {
		e.t.Fatalf("job named thrice: status %s result %s, want done with \"first\"", got.Status, got.Result)
	}
	// One batch over two queues: each queue's last minute counts the jobs
	// the batch completed in it, once each, and not the items that lost.
	e.submit(e.newJob("q", "k"), e.newJob("q2", "k"))
	a, b := e.claimOne("q"), e.claimOne("q2")
	if _, err := e.s.Complete(e.ctx, []app.Completion{
		{ID: a.ID, Lease: a.Lease}, {ID: b.ID, Lease: b.Lease}, {ID: a.ID, Lease: a.Lease}, {ID: jobs[1].ID, Lease: jobs[1].Lease + 5},
	}); err != nil {
		e.t.Fatal(err)
	}
	st, err := e.s.Stats(e.ctx)
	if err != nil {
		e.t.Fatal(err)
	}
	got := map[string]int64{}
	for _, q := range st {
		got[q.Queue] = q.CompletedLastMinute
	}
	if got["q"] != 3 || got["q2"] != 2 {
		e.t.Fatalf("completed in the last minute %v, want q 3 and q2 2", got)
	}
}

// A batch completion as large as a worker sends (stores may split it into
// several statements) stores each job's own result, answers each item in
// order, and counts each job once.
func testLargeCompletionKeepsEachResult(e *env) {
	const n = 700
	e.submitN(n, "big", "k")
	claimed := e.claim("big", n)
	if len(claimed) != n {
		e.t.Fatalf("claimed %d of %d", len(claimed), n)
	}
	var items []app.Completion
	var want []error
	for i, j := range claimed {
		if i%97 == 5 { // a stale item before the job's own
			items = append(items, app.Completion{ID: j.ID, Lease: j.Lease - 1, Result: json.RawMessage(`"stale"`)})
			want = append(want, app.ErrLeaseLost)
		}
		items = append(items, app.Completion{ID: j.ID, Lease: j.Lease, Result: json.RawMessage(fmt.Sprintf(`{"job":%d}`, j.ID))})
		want = append(want, nil)
	}
	errs, err := e.s.Complete(e.ctx, items)
	if err != nil {
		e.t.Fatal(err)
	}
	if len(errs) != len(items) {
		e.t.Fatalf("%d answers for %d items", len(errs), len(items))
	}
	for i := range items {
		if !errors.Is(errs[i], want[i]) || (want[i] == nil) != (errs[i] == nil) {
			e.t.Fatalf("item %d (job %d): %v, want %v", i, items[i].ID, errs[i], want[i])
		}
	}
	for _, j := range claimed {
		got := e.get(j.ID)
		if got.Status != app.StatusDone || !app.JSONEqual(got.Result, json.RawMessage(fmt.Sprintf(`{"job":%d}`, j.ID))) {
			e.t.Fatalf("job %d: status %s result %s, want done with its own result", j.ID, got.Status, got.Result)
		}
	}
	st, err := e.s.Stats(e.ctx)
	if err != nil {
		e.t.Fatal(err)
	}
	for _, q := range st {
		if q.Queue == "big" && (q.CompletedLastMinute != n || q.Done != n) {
			e.t.Fatalf("stats of big: %d completed in the last minute, %d done; want %d each", q.CompletedLastMinute, q.Done, n)
		}
	}
}

// A completion under the lease of a job that has since left processing
// without a new claim (snoozed, failed into a retry) loses, in the same
// batch as one that wins; only the winner counts as completed.
func testCompleteAfterLeavingProcessingLoses(e *env) {
	e.submit(e.newJob("left", "k"), e.newJob("left", "k"), e.newJob("left", "k"))
	jobs := e.claim("left", 3)
	if len(jobs) != 3 {
		e.t.Fatalf("claimed %d of 3", len(jobs))
	}
	if _, err := app.Snooze(e.ctx, e.s, jobs[0].ID, jobs[0].Lease, time.Minute); err != nil {
		e.t.Fatal(err)
	}
	if _, err := app.Fail(e.ctx, e.s, app.FailRequest{ID: jobs[1].ID, Lease: jobs[1].Lease, Error: "boom", Retry: true, Backoff: fixedBackoff}); err != nil {
		e.t.Fatal(err)
	}
	errs, err := e.s.Complete(e.ctx, []app.Completion{
		{ID: jobs[0].ID, Lease: jobs[0].Lease}, {ID: jobs[1].ID, Lease: jobs[1].Lease}, {ID: jobs[2].ID, Lease: jobs[2].Lease},
	})
	if err != nil {
		e.t.Fatal(err)
	}
	if !errors.Is(errs[0], app.ErrLeaseLost) || !errors.Is(errs[1], app.ErrLeaseLost) || errs[2] != nil {
		e.t.Fatalf("per-item results %v, want [lease_lost lease_lost nil]", errs)
	}
	for i, want := range []app.Status{app.StatusQueued, app.StatusQueued, app.StatusDone} {
		if got := e.get(jobs[i].ID).Status; got != want {
			e.t.Fatalf("job %d: %s, want %s", jobs[i].ID, got, want)
		}
	}
	st, err := e.s.Stats(e.ctx)
	if err != nil {
		e.t.Fatal(err)
	}
	for _, q := range st {
		if q.Queue == "left" && (q.CompletedLastMinute != 1 || q.Done != 1) {
			e.t.Fatalf("stats of left: %d completed in the last minute, %d done; want 1 each", q.CompletedLastMinute, q.Done)
		}
	}
}

func testFailRetriesWithBackoff(e *env) {
	j := e.submitOne("q", "k", withMax(3))
	c := e.claimOne("q")
	res := e.fail(c, true)
	if res.Outcome != app.OutcomeRetryScheduled {
		e.t.Fatalf("outcome %s, want retry_scheduled", res.Outcome)
	}
	got := e.get(j.ID)
	if got.Status != app.StatusQueued || got.Attempts != 1 || !got.RunAt.Equal(T0.Add(10*time.Second)) {
		e.t.Fatalf("after fail: status %s attempts %d run_at %v, want queued 1 %v", got.Status, got.Attempts, got.RunAt, T0.Add(10*time.Second))
	}
	if len(got.Errors) != 1 || got.Errors[0].Attempt != 1 || got.Errors[0].Error != "boom" {
		e.t.Fatalf("errors %+v", got.Errors)
	}
	if len(e.claim("q", 1)) != 0 {
		e.t.Fatalf("a job in backoff was claimed")
	}
	e.clock.Advance(10 * time.Second)
	c2 := e.claimOne("q")
	// retry_in overrides the backoff.
	r, err := app.Fail(e.ctx, e.s, app.FailRequest{ID: c2.ID, Lease: c2.Lease, Error: "again", Retry: true, RetryIn: 3 * time.Second, Backoff: fixedBackoff})
	if err != nil || r.Outcome != app.OutcomeRetryScheduled || !r.Job.RunAt.Equal(e.clock.Now().Add(3*time.Second)) {
		e.t.Fatalf("fail with retry_in 3s: %+v %v", r, err)
	}
	if len(r.Job.Errors) != 2 {
		e.t.Fatalf("errors after two failures: %d", len(r.Job.Errors))
	}
}

func testFailOnLastAttemptDeadLetters(e *env) {
	j := e.submitOne("q", "k", withMax(2), withTags("t1"), withPriority(4))
	c := e.claimOne("q")
	e.fail(c, true)
	e.clock.Advance(time.Minute)
	c = e.claimOne("q")
	res := e.fail(c, true)
	if res.Outcome != app.OutcomeDeadLettered || res.Dead == nil {
		e.t.Fatalf("outcome %s, want dead_lettered", res.Outcome)
	}
	d := e.dead(j.ID)
	if d.Reason != app.ReasonMaxAttempts || d.Attempts != 2 || d.MaxAttempts != 2 || len(d.Errors) != 2 ||
		d.LastError != "boom" || d.OriginalLease != 2 || d.Priority != 4 || len(d.Tags) != 1 ||
		!d.OriginalCreatedAt.Equal(T0) || !d.MovedAt.Equal(e.clock.Now()) || d.ResurrectionCount != 0 {
		e.t.Fatalf("dead-letter row %+v", d)
	}
	if n, _ := e.s.CountJobs(e.ctx, app.JobFilter{}); n != 0 {
		e.t.Fatalf("jobs still holds %d rows", n)
	}
}

func testFailWithoutRetryDeadLetters(e *env) {
	j := e.submitOne("q", "k", withMax(5))
	d := e.deadLetter(j)
	if d.Reason != app.ReasonPermanentFailure || d.Attempts != 1 {
		e.t.Fatalf("reason %s attempts %d, want permanent_failure 1", d.Reason, d.Attempts)
	}
}

func testDeadLetterDoesNotReuseIDs(e *env) {
	e.submitOne("q", "k")
	top := e.submitOne("q", "k", withPriority(-10))
	e.deadLetter(top)
	next := e.submitOne("q", "k")
	if next.ID <= top.ID {
		e.t.Fatalf("after moving job %d (the highest id) to the DLQ, the next job got id %d", top.ID, next.ID)
	}
}

func testSnoozeGivesTheAttemptBack(e *env) {
	j := e.submitOne("q", "k")
	c := e.claimOne("q")
	s, err := app.Snooze(e.ctx, e.s, c.ID, c.Lease, 30*time.Second)
	if err != nil {
		e.t.Fatal(err)
	}
	if s.Status != app.StatusQueued || s.Attempts != 0 || !s.RunAt.Equal(T0.Add(30*time.Second)) {
		e.t.Fatalf("snoozed: status %s attempts %d run_at %v", s.Status, s.Attempts, s.RunAt)
	}
	if got := e.get(j.ID); got.Attempts != 0 || got.Status != app.StatusQueued {
		e.t.Fatalf("stored after snooze: %s %d", got.Status, got.Attempts)
	}
	// A zero delay gives the lease back at once (graceful shutdown).
	e.clock.Advance(30 * time.Second)
	c = e.claimOne("q")
	if _, err := app.Snooze(e.ctx, e.s, c.ID, c.Lease, 0); err != nil {
		e.t.Fatal(err)
	}
	c = e.claimOne("q")
	if c.Attempts != 1 || c.Lease != 3 {
		e.t.Fatalf("after two give-backs: attempts %d lease %d, want 1 and 3", c.Attempts, c.Lease)
	}
}

func testCancelQueuedProcessingAndTerminal(e *env) {
	q := e.submitOne("q", "k")
	got, err := app.Cancel(e.ctx, e.s, app.CancelRequest{ID: q.ID})
	if err != nil || got.Status != app.StatusCancelled || got.CancelReason != app.CancelRequested {
		e.t.Fatalf("cancel queued: %+v %v", got, err)
	}
	if _, err := app.Cancel(e.ctx, e.s, app.CancelRequest{ID: q.ID}); !errors.Is(err, app.ErrIllegalTransition) {
		e.t.Fatalf("cancel a cancelled job: %v, want ErrIllegalTransition", err)
	}
	e.submitOne("q", "k")
	p := e.claimOne("q")
	got, err = app.Cancel(e.ctx, e.s, app.CancelRequest{ID: p.ID})
	if err != nil || got.Status != app.StatusProcessing || !got.CancelRequested {
		e.t.Fatalf("cancel processing: %+v %v", got, err)
	}
	e.complete(p, `null`) // the worker finished anyway
	if _, err := app.Cancel(e.ctx, e.s, app.CancelRequest{ID: p.ID}); !errors.Is(err, app.ErrIllegalTransition) {
		e.t.Fatalf("cancel a done job: %v, want ErrIllegalTransition", err)
	}
	d := e.deadLetter(e.submitOne("q", "k"))
	if _, err := app.Cancel(e.ctx, e.s, app.CancelRequest{ID: d.ID}); !errors.Is(err, app.ErrIllegalTransition) {
		e.t.Fatalf("cancel a dead-lettered job: %v, want ErrIllegalTransition", err)
	}
	if _, err := app.Cancel(e.ctx, e.s, app.CancelRequest{ID: 424242}); !errors.Is(err, app.ErrNotFound) {
		e.t.Fatalf("cancel an unknown job: %v, want ErrNotFound", err)
	}
}

func testCancelAcknowledgedWithLease(e *env) {
	e.submitOne("q", "k")
	p := e.claimOne("q")
	if _, err := app.Cancel(e.ctx, e.s, app.CancelRequest{ID: p.ID}); err != nil {
		e.t.Fatal(err)
	}
	lease := p.Lease
	got, err := app.Cancel(e.ctx, e.s, app.CancelRequest{ID: p.ID, Lease: &lease})
	if err != nil || got.Status != app.StatusCancelled || got.CancelReason != app.CancelRequested || got.FinishedAt == nil {
		e.t.Fatalf("cancel ack: %+v %v", got, err)
	}
	// A worker failing a job with a cancel request ends it cancelled, not retried.
	e.submitOne("q", "k")
	p2 := e.claimOne("q")
	app.Cancel(e.ctx, e.s, app.CancelRequest{ID: p2.ID})
	if r := e.fail(p2, true); r.Outcome != app.OutcomeCancelled || r.Job.Status != app.StatusCancelled {
		e.t.Fatalf("fail after cancel request: outcome %s", r.Outcome)
	}
}

func testStaleRecoveryRetriesAndDeadLetters(e *env) {
	j := e.submitOne("q", "k", withMax(2), withTimeout(10*time.Second))
	e.claimOne("q")
	e.clock.Advance(9 * time.Second)
	if n, _ := app.RecoverStale(e.ctx, e.s, 100, fixedBackoff); n != 0 {
		e.t.Fatalf("recovered %d jobs before the lease expired", n)
	}
	e.clock.Advance(time.Second)
	if n, err := app.RecoverStale(e.ctx, e.s, 100, fixedBackoff); n != 1 || err != nil {
		e.t.Fatalf("RecoverStale = %d, %v; want 1", n, err)
	}
	got := e.get(j.ID)
	if got.Status != app.StatusQueued || got.Attempts != 1 || len(got.Errors) != 1 || got.Errors[0].Error != app.LeaseExpiredError {
		e.t.Fatalf("after expiry: status %s attempts %d errors %+v", got.Status, got.Attempts, got.Errors)
	}
	if !got.RunAt.Equal(e.clock.Now().Add(10 * time.Second)) {
		e.t.Fatalf("run_at %v, want now + backoff(1)", got.RunAt)
	}
	e.clock.Advance(time.Minute)
	e.claimOne("q")
	e.clock.Advance(time.Minute)
	app.RecoverStale(e.ctx, e.s, 100, fixedBackoff)
	d := e.dead(j.ID)
	if d.Reason != app.ReasonLeaseExpired || d.Attempts != 2 {
		e.t.Fatalf("last attempt expired: reason %s attempts %d, want lease_expired 2", d.Reason, d.Attempts)
	}
}

func testStaleRecoveryFinishesRequestedCancel(e *env) {
	j := e.submitOne("q", "k", withTimeout(time.Second))
	e.claimOne("q")
	app.Cancel(e.ctx, e.s, app.CancelRequest{ID: j.ID})
	e.clock.Advance(2 * time.Second)
	app.RecoverStale(e.ctx, e.s, 100, fixedBackoff)
	if got := e.get(j.ID); got.Status != app.StatusCancelled {
		e.t.Fatalf("cancel-requested job after lease expiry: %s, want cancelled", got.Status)
	}
}

func testTTLExpiresQueuedJobsEvenWhenPaused(e *env) {
	exp := T0.Add(5 * time.Second)
	j := e.submitOne("p", "k", func(n *app.NewJob) { n.ExpiresAt = &exp })
	keep := e.submitOne("p", "k")
	app.SetPaused(e.ctx, e.s, "p", true, nil)
	e.clock.Advance(4 * time.Second)
	if n, _ := app.ExpireTTL(e.ctx, e.s, 100); n != 0 {
		e.t.Fatalf("expired %d jobs early", n)
	}
	e.clock.Advance(time.Second)
	if n, _ := app.ExpireTTL(e.ctx, e.s, 100); n != 1 {
		e.t.Fatalf("expired %d jobs, want 1", n)
	}
	got := e.get(j.ID)
	if got.Status != app.StatusCancelled || got.CancelReason != app.CancelExpired {
		e.t.Fatalf("expired job: %s %q, want cancelled expired", got.Status, got.CancelReason)
	}
	if e.get(keep.ID).Status != app.StatusQueued {
		e.t.Fatalf("a job without ttl expired")
	}
}
