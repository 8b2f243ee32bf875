package storetest

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/queuehq/queue/app"
)

// The move is one transaction: a fault between its INSERT and its DELETE
// leaves the job as it was (processing, in jobs, not in the DLQ); stale
// recovery later completes the move; nothing is duplicated or lost.
func testFaultInsideDeadLetterMoveLosesNothing(e *env) {
	j := e.submitOne("q", "k", withMax(1), withTimeout(10*time.Second))
	c := e.claimOne("q")
	var hits atomic.Int32
	e.setFault(func(ctx context.Context, p app.FaultPoint, id int64) error {
		if p == app.FaultDeadLetterInsert && id == j.ID {
			hits.Add(1)
			// Inside the move, the row is already in the DLQ table and still in jobs.
			return errInjected
		}
		return nil
	})
	_, err := app.Fail(e.ctx, e.s, app.FailRequest{ID: c.ID, Lease: c.Lease, Error: "boom", Retry: true, Backoff: fixedBackoff})
	if err == nil {
		e.t.Fatalf("Fail with a fault inside the move succeeded")
	}
	if hits.Load() != 1 {
		e.t.Fatalf("fault hook ran %d times, want 1", hits.Load())
	}
	got := e.get(j.ID) // fails the test if it is in both tables or in the DLQ
	if got.Status != app.StatusProcessing || got.Lease != c.Lease || len(got.Errors) != 0 || got.Attempts != 1 {
		e.t.Fatalf("after the fault: status %s lease %d errors %d attempts %d, want the pre-move state", got.Status, got.Lease, len(got.Errors), got.Attempts)
	}
	if n, _ := e.s.CountDead(e.ctx, app.DeadFilter{}); n != 0 {
		e.t.Fatalf("the DLQ holds %d rows after a failed move", n)
	}
	// Recovery completes the move once the fault is gone.
	e.setFault(nil)
	e.clock.Advance(11 * time.Second)
	if n, err := app.RecoverStale(e.ctx, e.s, 100, fixedBackoff); err != nil || n != 1 {
		e.t.Fatalf("RecoverStale = %d, %v", n, err)
	}
	d := e.dead(j.ID)
	if d.Reason != app.ReasonLeaseExpired || d.Attempts != 1 {
		e.t.Fatalf("after recovery: reason %s attempts %d", d.Reason, d.Attempts)
	}
	if n, _ := e.s.CountDead(e.ctx, app.DeadFilter{}); n != 1 {
		e.t.Fatalf("the DLQ holds %d rows, want 1", n)
	}
	if n, _ := e.s.CountJobs(e.ctx, app.JobFilter{}); n != 0 {
		e.t.Fatalf("jobs holds %d rows, want 0", n)
	}
	// The fault also leaves the admin move whole.
	q := e.submitOne("q", "k")
	e.setFault(func(ctx context.Context, p app.FaultPoint, id int64) error { return errInjected })
	if _, err := app.MoveToDead(e.ctx, e.s, app.JobFilter{Queue: "q"}, "", nil); err == nil {
		e.t.Fatalf("MoveToDead with a fault succeeded")
	}
	if got := e.get(q.ID); got.Status != app.StatusQueued {
		e.t.Fatalf("after a failed admin move: %s", got.Status)
	}
}

// While moves run, a reader never sees a job in both tables or in neither.
func testDeadLetterMoveIsAtomicForReaders(e *env) {
	const n = 60
	jobs := e.submitN(n, "atomic", "k", withMax(1))
	var stop atomic.Bool
	var wg sync.WaitGroup
	var reads atomic.Int64
	for r := 0; r < 4; r++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; !stop.Load(); i++ {
				id := jobs[i%n].ID
				j, d, err := e.s.Lookup(e.ctx, id)
				reads.Add(1)
				switch {
				case err != nil:
					e.t.Errorf("job %d in neither table (%v)", id, err)
					return
				case j != nil && d != nil:
					e.t.Errorf("job %d in both tables", id)
					return
				}
			}
		}()
	}
	wg.Add(1)
	go func() { // and the stats count each job once, in the jobs or in the DLQ
		defer wg.Done()
		for !stop.Load() {
			st, err := e.s.Stats(e.ctx)
			reads.Add(1)
			for _, q := range st {
				if q.Queue == "atomic" && (err != nil || q.Total != n) {
					e.t.Errorf("stats during the moves: %+v %v, want %d jobs in all", q, err, n)
					return
				}
			}
		}
	}()
	for reads.Load() < 10 { // readers are running before the first move
		time.Sleep(time.Millisecond)
	}
	for i := 0; i < n; i++ {
		c := e.claimOne("atomic")
		if i%2 == 0 {
			e.fail(c, true) // max 1: dead-letters
		} else {
			e.fail(c, false)
		}
	}
	stop.Store(true)
	wg.Wait()
	if cnt, _ := e.s.CountDead(e.ctx, app.DeadFilter{Queue: "atomic"}); cnt != n {
		e.t.Fatalf("DLQ holds %d, want %d", cnt, n)
	}
}

func testReplayKeepsRowAndCountsResurrections(e *env) {
	exp := T0.Add(time.Hour)
	j := e.submitOne("q", "k", withPriority(7), withTags("x"), withMax(4), withPayload(`{"p":1}`), func(n *app.NewJob) { n.ExpiresAt = &exp })
	d := e.deadLetter(j)
	e.clock.Advance(time.Minute)
	r1, err := app.Replay(e.ctx, e.s, app.ReplayRequest{Filter: app.DeadFilter{IDs: []int64{d.ID}}})
	if err != nil || len(r1) != 1 {
		e.t.Fatalf("Replay: %v %v", r1, err)
	}
	n := r1[0]
	if n.ID == d.ID || n.ID <= j.ID || n.Status != app.StatusQueued || n.Attempts != 0 || n.Queue != "q" || n.Kind != "k" ||
		n.Priority != 7 || len(n.Tags) != 1 || n.MaxAttempts != 4 || !app.JSONEqual(n.Payload, d.Payload) ||
		n.ReplayedFrom == nil || *n.ReplayedFrom != d.ID || !n.RunAt.Equal(e.clock.Now()) {
		e.t.Fatalf("replayed job %+v", n)
	}
	if got := e.get(n.ID); got.ReplayedFrom == nil || *got.ReplayedFrom != d.ID {
		e.t.Fatalf("stored replayed_from %v", got.ReplayedFrom)
	}
	d1 := e.dead(d.ID)
	if d1.ResurrectionCount != 1 || d1.LastResurrectionAt == nil || !d1.LastResurrectionAt.Equal(e.clock.Now()) {
		e.t.Fatalf("DLQ row after one replay: count %d at %v", d1.ResurrectionCount, d1.LastResurrectionAt)
	}
	e.clock.Advance(time.Minute)
	r2, err := app.Replay(e.ctx, e.s, app.ReplayRequest{Filter: app.DeadFilter{IDs: []int64{d.ID}}, RunAt: e.clock.Now().Add(time.Hour)})
	if err != nil || len(r2) != 1 || r2[0].ID == n.ID {
		e.t.Fatalf("second replay: %v %v", r2, err)
	}
	if !r2[0].Scheduled(e.clock.Now()) {
		e.t.Fatalf("replay with a later run_at is not scheduled: run_at %v", r2[0].RunAt)
	}
	if d2 := e.dead(d.ID); d2.ResurrectionCount != 2 {
		e.t.Fatalf("resurrection_count %d, want 2", d2.ResurrectionCount)
	}
	if _, err := app.Replay(e.ctx, e.s, app.ReplayRequest{Filter: app.DeadFilter{IDs: []int64{999999}}}); !errors.Is(err, app.ErrNotFound) {
		e.t.Fatalf("replay of an unknown row: %v, want ErrNotFound", err)
	}
}

func testReplayedJobFailsIntoDLQUnderItsOwnID(e *env) {
	j := e.submitOne("q", "k")
	d := e.deadLetter(j)
	r, err := app.Replay(e.ctx, e.s, app.ReplayRequest{Filter: app.DeadFilter{IDs: []int64{d.ID}}})
	if err != nil {
		e.t.Fatal(err)
	}
	d2 := e.deadLetter(r[0])
	if d2.ID != r[0].ID || d2.ReplayedFrom == nil || *d2.ReplayedFrom != d.ID {
		e.t.Fatalf("second DLQ row id %d replayed_from %v, want %d from %d", d2.ID, d2.ReplayedFrom, r[0].ID, d.ID)
	}
	if n, _ := e.s.CountDead(e.ctx, app.DeadFilter{}); n != 2 {
		e.t.Fatalf("DLQ holds %d rows, want 2", n)
	}
	if e.dead(d.ID).ResurrectionCount != 1 {
		e.t.Fatalf("first row lost its count")
	}
}

func testReplaySpacesRunAt(e *env) {
	for i := 0; i < 3; i++ {
		e.deadLetter(e.submitOne("q", "k"))
	}
	jobs, err := app.Replay(e.ctx, e.s, app.ReplayRequest{Filter: app.DeadFilter{Queue: "q", Limit: 10}, Spacing: 500 * time.Millisecond})
	if err != nil || len(jobs) != 3 {
		e.t.Fatalf("bulk replay: %d %v", len(jobs), err)
	}
	from := map[int64]bool{}
	for i, j := range jobs {
		if want := T0.Add(time.Duration(i) * 500 * time.Millisecond); !j.RunAt.Equal(want) {
			e.t.Fatalf("job %d run_at %v, want %v", i, j.RunAt, want)
		}
		// Each answer is the row stored under its id, replayed from its own
		// dead-letter row, which counts the replay.
		got := e.get(j.ID)
		if !got.RunAt.Equal(j.RunAt) || got.ReplayedFrom == nil || j.ReplayedFrom == nil || *got.ReplayedFrom != *j.ReplayedFrom || from[*j.ReplayedFrom] {
			e.t.Fatalf("replayed job %d answered %+v, stored %+v", j.ID, j, got)
		}
		from[*j.ReplayedFrom] = true
		if d := e.dead(*j.ReplayedFrom); d.ResurrectionCount != 1 {
			e.t.Fatalf("dead-letter row %d: resurrection_count %d, want 1", d.ID, d.ResurrectionCount)
		}
	}
}

func testPurgeDeletesOnlyMatchingRows(e *env) {
	a := e.deadLetter(e.submitOne("a", "k"))
	b := e.deadLetter(e.submitOne("b", "k"))
	ids, err := app.Purge(e.ctx, e.s, app.DeadFilter{Queue: "a"}, nil)
	if err != nil || len(ids) != 1 || ids[0] != a.ID {
		e.t.Fatalf("purge queue a: %v %v", ids, err)
	}
	if _, _, err := e.s.Lookup(e.ctx, a.ID); !errors.Is(err, app.ErrNotFound) {
		e.t.Fatalf("purged row still there: %v", err)
	}
	e.dead(b.ID)
	if _, err := app.Purge(e.ctx, e.s, app.DeadFilter{IDs: []int64{a.ID}}, nil); !errors.Is(err, app.ErrNotFound) {
		e.t.Fatalf("purge of a missing row: %v, want ErrNotFound", err)
	}
	// older_than
	e.clock.Advance(time.Hour)
	c := e.deadLetter(e.submitOne("b", "k"))
	ids, _ = app.Purge(e.ctx, e.s, app.DeadFilter{OlderThan: e.clock.Now().Add(-30 * time.Minute)}, nil)
	if len(ids) != 1 || ids[0] != b.ID {
		e.t.Fatalf("purge older than 30m: %v, want [%d]", ids, b.ID)
	}
	e.dead(c.ID)
}

func testListDeadFiltersAndPages(e *env) {
	var all []int64
	for i := 0; i < 5; i++ {
		all = append(all, e.deadLetter(e.submitOne("q", "k", withTags("even"))).ID)
	}
	other := e.deadLetter(e.submitOne("r", "other"))
	j := e.submitOne("q", "k", withMax(1))
	c := e.claimOne("q")
	e.fail(c, true) // max_attempts
	check := func(name string, f app.DeadFilter, want int) {
		rows, err := e.s.ListDead(e.ctx, f)
		if err != nil || len(rows) != want {
			e.t.Errorf("%s: %d rows (%v), want %d", name, len(rows), err, want)
		}
		if n, _ := e.s.CountDead(e.ctx, f); f.Limit == 0 && n != want {
			e.t.Errorf("%s: count %d, want %d", name, n, want)
		}
	}
	check("all", app.DeadFilter{}, 7)
	check("queue", app.DeadFilter{Queue: "q"}, 6)
	check("kind", app.DeadFilter{Kind: "other"}, 1)
	check("tag", app.DeadFilter{Tag: "even"}, 5)
	check("reason", app.DeadFilter{Reason: app.ReasonMaxAttempts}, 1)
	check("reason+queue", app.DeadFilter{Reason: app.ReasonPermanentFailure, Queue: "r"}, 1)
	// Newest first, keyset pages.
	p1, _ := e.s.ListDead(e.ctx, app.DeadFilter{Queue: "q", Limit: 4})
	p2, _ := e.s.ListDead(e.ctx, app.DeadFilter{Queue: "q", Limit: 4, AfterID: p1[3].ID})
	if len(p1) != 4 || len(p2) != 2 || p1[0].ID != j.ID || p2[1].ID != all[0] {
		e.t.Fatalf("pages %v / %v", p1, p2)
	}
	_ = other
}

func testMoveToDeadTakesQueuedJobsOnly(e *env) {
	q1 := e.submitOne("m", "k", withTags("t"))
	q2 := e.submitOne("m", "k")
	e.submitOne("m", "k")
	p := e.claimOne("m") // processing: not moved
	keep := e.submitOne("n", "k")
	ids, err := app.MoveToDead(e.ctx, e.s, app.JobFilter{Queue: "m"}, "", nil)
	if err != nil || len(ids) != 2 {
		e.t.Fatalf("move: %v %v", ids, err)
	}
	for _, id := range []int64{q1.ID, q2.ID} {
		if id == p.ID {
			continue
		}
		if d := e.dead(id); d.Reason != app.ReasonAdminMove {
			e.t.Fatalf("moved job reason %s", d.Reason)
		}
	}
	if e.get(p.ID).Status != app.StatusProcessing || e.get(keep.ID).Status != app.StatusQueued {
		e.t.Fatalf("move touched a job outside its filter")
	}
	ids, _ = app.MoveToDead(e.ctx, e.s, app.JobFilter{Tag: "nothing-has-this"}, "", nil)
	if len(ids) != 0 {
		e.t.Fatalf("move by an unused tag moved %d", len(ids))
	}
}

func testDrainCancelsQueuedJobs(e *env) {
	a := e.submitOne("d", "k")
	b := e.submitOne("d", "k")
	p := e.claimOne("d")
	other := e.submitOne("e", "k")
	ids, err := app.Drain(e.ctx, e.s, app.JobFilter{Queue: "d"}, nil)
	if err != nil || len(ids) != 1 {
		e.t.Fatalf("drain: %v %v", ids, err)
	}
	left := a
	if p.ID == a.ID {
		left = b
	}
	if got := e.get(left.ID); got.Status != app.StatusCancelled || got.CancelReason != app.CancelDrained {
		e.t.Fatalf("drained job: %s %q", got.Status, got.CancelReason)
	}
	if e.get(p.ID).Status != app.StatusProcessing || e.get(other.ID).Status != app.StatusQueued {
		e.t.Fatalf("drain touched a running job or another queue")
	}
}

func testListFiltersAndPages(e *env) {
	e.submitOne("a", "x", withTags("t1"))
	e.submitOne("a", "y")
	e.submitOne("b", "x", withRunAt(T0.Add(time.Hour)))
	e.submitOne("a", "x")
	c := e.claimOne("a")
	check := func(name string, f app.JobFilter, want int) {
		jobs, err := e.s.List(e.ctx, f)
		if err != nil || len(jobs) != want {
			e.t.Errorf("%s: %d jobs (%v), want %d", name, len(jobs), err, want)
		}
	}
	check("all", app.JobFilter{}, 4)
	check("queue", app.JobFilter{Queue: "a"}, 3)
	check("kind", app.JobFilter{Kind: "x"}, 3)
	check("tag", app.JobFilter{Tag: "t1"}, 1)
	check("scheduled", app.JobFilter{Status: "scheduled"}, 1)
	check("queued (claimable now)", app.JobFilter{Status: "queued"}, 2)
	check("processing", app.JobFilter{Status: "processing"}, 1)
	jobs, _ := e.s.List(e.ctx, app.JobFilter{Limit: 2})
	rest, _ := e.s.List(e.ctx, app.JobFilter{Limit: 2, AfterID: jobs[1].ID})
	if len(jobs) != 2 || len(rest) != 2 || jobs[0].ID < jobs[1].ID || rest[0].ID >= jobs[1].ID {
		e.t.Fatalf("pages out of order: %v %v", ids(jobs), ids(rest))
	}
	asc, _ := e.s.List(e.ctx, app.JobFilter{Asc: true, Limit: 1})
	if asc[0].ID >= jobs[0].ID {
		e.t.Fatalf("ascending list starts at %d", asc[0].ID)
	}
	_ = c
}

func testStatsCountEveryState(e *env) {
	e.submitOne("s", "k")                                     // queued
	e.submitOne("s", "k", withRunAt(T0.Add(time.Hour)))       // scheduled
	e.submitOne("s", "k", withRunAt(T0.Add(-30*time.Second))) // queued, oldest
	done := e.submitOne("s", "k", withPriority(-9))
	e.complete(e.claimOne("s"), `1`)
	_ = done
	p := e.submitOne("s", "k", withPriority(-9))
	e.claimOne("s")
	_ = p
	c := e.submitOne("s", "k")
	app.Cancel(e.ctx, e.s, app.CancelRequest{ID: c.ID})
	e.deadLetter(e.submitOne("s", "k", withPriority(-9)))
	e.submitOne("t", "k")
	f := e.submitOne("t", "k")
	cf := e.claimOne("t")
	e.fail(cf, true)
	_ = f
	st, err := e.s.Stats(e.ctx)
	if err != nil {
		e.t.Fatal(err)
	}
	var s, tq *app.QueueStats
	for i := range st {
		switch st[i].Queue {
		case "s":
			s = &st[i]
		case "t":
			tq = &st[i]
		}
	}
	if s == nil || tq == nil {
		e.t.Fatalf("stats lack queues: %+v", st)
	}
	want := app.QueueStats{Queue: "s", Queued: 2, Scheduled: 1, Processing: 1, Done: 1, Cancelled: 1, DeadLetter: 1,
		Total: 7, CompletedLastMinute: 1, FailedLastMinute: 1, OldestQueuedAge: 30}
	if *s != want {
		e.t.Fatalf("stats of s:\n got %+v\nwant %+v", *s, want)
	}
	if tq.Queued != 1 || tq.Scheduled != 1 || tq.FailedLastMinute != 1 || tq.Total != 2 {
		e.t.Fatalf("stats of t: %+v", *tq)
	}
	e.clock.Advance(61 * time.Second)
	st, _ = e.s.Stats(e.ctx)
	for _, q := range st {
		if q.CompletedLastMinute != 0 || q.FailedLastMinute != 0 {
			e.t.Fatalf("a minute later, %s still counts %d/%d", q.Queue, q.CompletedLastMinute, q.FailedLastMinute)
		}
	}
}

func testDeleteOldIsBoundedAndScoped(e *env) {
	for i := 0; i < 5; i++ {
		e.submitOne("old", "k")
		e.complete(e.claimOne("old"), `1`)
	}
	e.submitOne("keep", "k")
	e.complete(e.claimOne("keep"), `1`)
	e.deadLetter(e.submitOne("old", "k"))
	for i := 0; i < 3; i++ { // events every store records
		app.SetPaused(e.ctx, e.s, "old", true, nil)
		app.SetPaused(e.ctx, e.s, "old", false, nil)
	}
	e.clock.Advance(2 * time.Hour)
	fresh := e.submitOne("old", "k")
	n, err := e.s.DeleteOld(e.ctx, app.DeleteOldRequest{What: app.OldFinished, Before: e.clock.Now().Add(-time.Hour), Except: []string{"keep"}, Limit: 3})
	if err != nil || n != 3 {
		e.t.Fatalf("DeleteOld limit 3 = %d, %v", n, err)
	}
	n, _ = e.s.DeleteOld(e.ctx, app.DeleteOldRequest{What: app.OldFinished, Before: e.clock.Now().Add(-time.Hour), Except: []string{"keep"}, Limit: 100})
	if n != 2 {
		e.t.Fatalf("second pass deleted %d, want 2", n)
	}
	if cnt, _ := e.s.CountJobs(e.ctx, app.JobFilter{Queue: "keep"}); cnt != 1 {
		e.t.Fatalf("a queue in Except lost jobs")
	}
	e.get(fresh.ID)
	if n, _ := e.s.DeleteOld(e.ctx, app.DeleteOldRequest{What: app.OldDead, Before: e.clock.Now().Add(-3 * time.Hour), Limit: 100}); n != 0 {
		e.t.Fatalf("deleted %d DLQ rows younger than the window", n)
	}
	if n, _ := e.s.DeleteOld(e.ctx, app.DeleteOldRequest{What: app.OldDead, Before: e.clock.Now(), Limit: 100}); n != 1 {
		e.t.Fatalf("deleted %d DLQ rows, want 1", n)
	}
	if n, _ := e.s.DeleteOld(e.ctx, app.DeleteOldRequest{What: app.OldEvents, Before: e.clock.Now().Add(-time.Hour), Limit: 5}); n != 5 {
		e.t.Fatalf("events pass deleted %d, want the limit 5", n)
	}
}

func testPeriodicFireEnqueuesOnce(e *env) {
	at := T0.Add(time.Minute)
	fire := app.PeriodicFire{Entry: "nightly", FireAt: at, Job: e.newJob("cron", "report")}
	j, created, err := app.FirePeriodic(e.ctx, e.s, fire)
	if err != nil || !created || j == nil {
		e.t.Fatalf("first fire: %v %v %v", j, created, err)
	}
	j2, created, err := app.FirePeriodic(e.ctx, e.s, fire)
	if err != nil || created || j2 != nil {
		e.t.Fatalf("same fire again: created=%v err=%v", created, err)
	}
	if n, _ := e.s.CountJobs(e.ctx, app.JobFilter{Queue: "cron"}); n != 1 {
		e.t.Fatalf("%d jobs for one fire", n)
	}
	last, err := e.s.LastFire(e.ctx, "nightly")
	if err != nil || !last.Equal(at) {
		e.t.Fatalf("LastFire = %v, %v; want %v", last, err, at)
	}
	if last, _ := e.s.LastFire(e.ctx, "never"); !last.IsZero() {
		e.t.Fatalf("LastFire of an unknown entry = %v", last)
	}
}

func testPeriodicSkipIfPending(e *env) {
	f1 := app.PeriodicFire{Entry: "e", FireAt: T0, Job: e.newJob("cron", "k"), SkipIfPending: true}
	if _, created, _ := app.FirePeriodic(e.ctx, e.s, f1); !created {
		e.t.Fatalf("first fire not created")
	}
	f2 := f1
	f2.FireAt = T0.Add(time.Minute)
	if _, created, _ := app.FirePeriodic(e.ctx, e.s, f2); created {
		e.t.Fatalf("fire while the last is pending created a job")
	}
	if last, _ := e.s.LastFire(e.ctx, "e"); !last.Equal(f2.FireAt) {
		e.t.Fatalf("a skipped fire is not recorded: last %v", last)
	}
	e.complete(e.claimOne("cron"), `1`)
	f3 := f1
	f3.FireAt = T0.Add(2 * time.Minute)
	if _, created, _ := app.FirePeriodic(e.ctx, e.s, f3); !created {
		e.t.Fatalf("fire after the last finished not created")
	}
}

func testOnceRecordRunsOnce(e *env) {
	r, err := app.OnceAcquire(e.ctx, e.s, "charge-42", time.Minute)
	if err != nil || !r.Acquired || r.Token == "" {
		e.t.Fatalf("first acquire: %+v %v", r, err)
	}
	if _, err := app.OnceAcquire(e.ctx, e.s, "charge-42", time.Minute); !errors.Is(err, app.ErrOnceHeld) {
		e.t.Fatalf("second acquire while held: %v, want ErrOnceHeld", err)
	}
	e.clock.Advance(2 * time.Minute) // the claim lapsed: another run may take it
	r2, err := app.OnceAcquire(e.ctx, e.s, "charge-42", time.Minute)
	if err != nil || !r2.Acquired || r2.Token == r.Token {
		e.t.Fatalf("acquire after lapse: %+v %v", r2, err)
	}
	if _, err := app.OnceDone(e.ctx, e.s, "charge-42", r.Token, []byte(`1`)); !errors.Is(err, app.ErrLeaseLost) {
		e.t.Fatalf("done with the lapsed token: %v, want ErrLeaseLost", err)
	}
	d, err := app.OnceDone(e.ctx, e.s, "charge-42", r2.Token, []byte(`{"charge":"ch_1"}`))
	if err != nil || !d.Done {
		e.t.Fatalf("done: %+v %v", d, err)
	}
	r3, err := app.OnceAcquire(e.ctx, e.s, "charge-42", time.Minute)
	if err != nil || r3.Acquired || !r3.Done || !app.JSONEqual(r3.Result, []byte(`{"charge":"ch_1"}`)) {
		e.t.Fatalf("acquire after done: %+v %v", r3, err)
	}
	for _, token := range []string{"t", ""} {
		if _, err := app.OnceDone(e.ctx, e.s, "nope", token, nil); !errors.Is(err, app.ErrNotFound) {
			e.t.Fatalf("done of an unknown key with token %q: %v", token, err)
		}
	}
	// Runs racing for a new key take it once (on PostgreSQL the racers meet
	// at the row the first insert makes), and so do runs racing for a
	// lapsed one (they meet at its row lock).
	raceOnce(e, "race")
	e.clock.Advance(2 * time.Minute)
	raceOnce(e, "race")
}

// raceOnce has 10 runs acquire key at once and checks that one took it.
func raceOnce(e *env, key string) {
	var wg sync.WaitGroup
	var took, held atomic.Int32
	for range 10 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := app.OnceAcquire(e.ctx, e.s, key, time.Minute)
			switch {
			case err == nil && r.Acquired:
				took.Add(1)
			case errors.Is(err, app.ErrOnceHeld):
				held.Add(1)
			default:
				e.t.Errorf("racing acquire: %+v %v", r, err)
			}
		}()
	}
	wg.Wait()
	if took.Load() != 1 || held.Load() != 9 {
		e.t.Fatalf("10 racing acquires of %s: %d took the record, %d found it held; want 1 and 9", key, took.Load(), held.Load())
	}
}

func testAuditRecordsAdminActions(e *env) {
	j := e.submitOne("q", "k")
	if _, err := app.Cancel(e.ctx, e.s, app.CancelRequest{ID: j.ID, Audit: &app.AuditEntry{Actor: "ops", Action: "job.cancel"}}); err != nil {
		e.t.Fatal(err)
	}
	d := e.deadLetter(e.submitOne("q", "k"))
	app.Replay(e.ctx, e.s, app.ReplayRequest{Filter: app.DeadFilter{IDs: []int64{d.ID}}, Audit: &app.AuditEntry{Actor: "local", Action: "dlq.replay"}})
	app.RecordAudit(e.ctx, e.s, app.AuditEntry{Actor: "ci", Action: "dlq.purge", Filter: []byte(`{"queue":"q"}`), Count: 12})
	got, err := e.s.ListAudit(e.ctx, app.AuditFilter{})
	if err != nil || len(got) != 3 {
		e.t.Fatalf("audit: %+v %v", got, err)
	}
	if got[0].Action != "dlq.purge" || got[0].Count != 12 || got[0].Actor != "ci" || !app.JSONEqual(got[0].Filter, []byte(`{"queue":"q"}`)) ||
		got[1].Action != "dlq.replay" || got[1].Count != 1 || got[2].Actor != "ops" || got[2].At.IsZero() {
		e.t.Fatalf("audit entries %+v", got)
	}
	// A failed action leaves no audit entry.
	if _, err := app.Cancel(e.ctx, e.s, app.CancelRequest{ID: j.ID, Audit: &app.AuditEntry{Actor: "ops", Action: "job.cancel"}}); err == nil {
		e.t.Fatal("second cancel succeeded")
	}
	if got, _ := e.s.ListAudit(e.ctx, app.AuditFilter{}); len(got) != 3 {
		e.t.Fatalf("a refused cancel was audited")
	}
}

func testEventsRecordTheLifecycle(e *env) {
	sub := e.bus.Subscribe(100, nil)
	defer sub.Close()
	j := e.submitOne("q", "k", withMax(2))
	c := e.claimOne("q")
	e.fail(c, true)
	e.clock.Advance(time.Hour)
	c = e.claimOne("q")
	e.complete(c, `1`)
	evs, err := e.service(nil).Events(e.ctx, j.ID) // what the store recorded, completed by app.Timeline
	if err != nil {
		e.t.Fatal(err)
	}
	want := []string{app.EventSubmitted, app.EventStarted, app.EventRetryScheduled, app.EventStarted, app.EventSucceeded}
	if len(evs) != len(want) {
		e.t.Fatalf("events %+v, want %v", evs, want)
	}
	for i := range want {
		if evs[i].Type != want[i] || evs[i].JobID != j.ID || evs[i].Queue != "q" {
			e.t.Fatalf("event %d = %+v, want %s", i, evs[i], want[i])
		}
	}
	timeline := evs
	// A snoozed attempt and a dead-lettered one keep their starts too.
	k := e.submitOne("q2", "k", withMax(1))
	c = e.claimOne("q2")
	e.clock.Advance(time.Second)
	app.Snooze(e.ctx, e.s, c.ID, c.Lease, 0)
	e.clock.Advance(time.Second)
	c = e.claimOne("q2")
	e.clock.Advance(time.Second)
	e.fail(c, false)
	evs, err = e.service(nil).Events(e.ctx, k.ID)
	if err != nil {
		e.t.Fatal(err)
	}
	var types []string
	for _, ev := range evs {
		types = append(types, ev.Type)
	}
	want2 := []string{app.EventSubmitted, app.EventStarted, app.EventSnoozed, app.EventStarted, app.EventDeadLettered}
	if strings.Join(types, " ") != strings.Join(want2, " ") {
		e.t.Fatalf("timeline of a snoozed, then dead-lettered job: %v, want %v", types, want2)
	}
	for i := range want {
		select {
		case ev := <-sub.C:
			if ev.Type != want[i] {
				e.t.Fatalf("bus event %d = %s, want %s", i, ev.Type, want[i])
			}
			// What was published live is what the timeline shows later,
			// whether the store recorded the event or the row tells it.
			if !ev.At.Equal(timeline[i].At) || !app.JSONEqual(ev.Data, timeline[i].Data) {
				e.t.Fatalf("%s: published at %v with %s, timeline says %v with %s", ev.Type, ev.At, ev.Data, timeline[i].At, timeline[i].Data)
			}
		case <-time.After(5 * time.Second):
			e.t.Fatalf("bus event %d (%s) not published", i, want[i])
		}
	}
}

func testWakeFiresOnSubmit(e *env) {
	w := e.s.Wake("wq", 1)
	select {
	case <-w:
		e.t.Fatalf("woken before anything landed")
	default:
	}
	e.submitOne("other", "k")
	select {
	case <-w:
		e.t.Fatalf("woken by another queue")
	default:
	}
	e.submitOne("wq", "k")
	select {
	case <-w:
	case <-time.After(5 * time.Second):
		e.t.Fatalf("not woken by a submission")
	}
}

// A completion frees a concurrency slot: it wakes the claimers of a queue
// with a limit (StoreOptions.Capped), and no one on a queue without, where
// the woken claimer would claim for nothing.
func testCompletionWakesOnlyCappedQueues(e *env) {
	for _, q := range []string{"capped", "uncapped-q"} {
		e.submitOne(q, "k")
		j := e.claimOne(q)
		w := e.s.Wake(q, 1)
		e.complete(j, `{}`)
		select {
		case <-w:
			if !capped(q) {
				e.t.Fatalf("a completion on %s, a queue without a concurrency limit, woke a claimer", q)
			}
		case <-time.After(200 * time.Millisecond):
			if capped(q) {
				e.t.Fatalf("a completion on %s, a queue with a concurrency limit, woke no claimer", q)
			}
		}
		e.s.Unwake(q, w)
	}
}

func testPausedStateSurvivesInStore(e *env) {
	app.SetPaused(e.ctx, e.s, "pq", true, nil)
	qs, err := e.s.Queues(e.ctx)
	if err != nil {
		e.t.Fatal(err)
	}
	found := false
	for _, q := range qs {
		if q.Name == "pq" {
			found = q.Paused && q.PausedAt != nil
		}
	}
	if !found {
		e.t.Fatalf("queues %+v: pq not paused", qs)
	}
	e.submitOne("known", "k")
	qs, _ = e.s.Queues(e.ctx)
	names := map[string]bool{}
	for _, q := range qs {
		names[q.Name] = true
	}
	if !names["known"] {
		e.t.Fatalf("a queue with jobs is not listed: %+v", qs)
	}
}

func testThroughputCountsCompletedAndFailed(e *env) {
	for i := 0; i < 3; i++ {
		e.submitOne("tp", "k")
	}
	e.complete(e.claimOne("tp"), `1`)
	e.complete(e.claimOne("tp"), `1`)
	e.fail(e.claimOne("tp"), true)
	m, err := e.s.Throughput(e.ctx, T0.Add(-time.Hour))
	if err != nil || len(m) != 1 || m[0].Completed != 2 || m[0].Failed != 1 || m[0].Queue != "tp" || !m[0].Minute.Equal(T0.Truncate(time.Minute)) {
		e.t.Fatalf("throughput %+v %v", m, err)
	}
}
