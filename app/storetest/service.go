package storetest

import (
	"errors"
	"time"

	"github.com/rs/zerolog"

	"github.com/queuehq/queue/app"
)

func (e *env) service(cfg *app.Config) *app.Service {
	return app.NewService(e.s, cfg, e.clock, e.bus, zerolog.Nop())
}

func testServiceBulkActionsBatchAndAudit(e *env) {
	svc := e.service(nil)
	const n = app.BulkBatch + 50 // more than one batch
	e.submitN(n, "bulk", "k")
	e.submitOne("other", "k")
	dry, err := svc.BulkDead(e.ctx, app.BulkMove, app.BulkInput{Queue: "bulk", DryRun: true}, "tester")
	if err != nil || dry.Count != n || len(dry.Jobs) != 10 {
		e.t.Fatalf("dry-run move: %+v %v", dry, err)
	}
	if c, _ := e.s.CountDead(e.ctx, app.DeadFilter{}); c != 0 {
		e.t.Fatalf("dry run moved %d", c)
	}
	res, err := svc.BulkDead(e.ctx, app.BulkMove, app.BulkInput{Queue: "bulk"}, "tester")
	if err != nil || res.Count != n {
		e.t.Fatalf("move: %+v %v", res, err)
	}
	if c, _ := e.s.CountJobs(e.ctx, app.JobFilter{Queue: "other"}); c != 1 {
		e.t.Fatalf("move touched another queue")
	}
	res, err = svc.BulkDead(e.ctx, app.BulkReplay, app.BulkInput{Queue: "bulk", Rate: 100}, "tester")
	if err != nil || res.Count != n {
		e.t.Fatalf("replay: %+v %v", res, err)
	}
	if c, _ := e.s.CountJobs(e.ctx, app.JobFilter{Queue: "bulk", Status: "scheduled"}); c != n-1 {
		e.t.Fatalf("replay at 100/s: %d scheduled, want %d (all but the first)", c, n-1)
	}
	last, _ := e.s.List(e.ctx, app.JobFilter{Queue: "bulk", Limit: 1})
	if want := T0.Add(time.Duration(n-1) * 10 * time.Millisecond); !last[0].RunAt.Equal(want) {
		e.t.Fatalf("last replayed job runs at %v, want %v", last[0].RunAt, want)
	}
	rows, _ := e.s.ListDead(e.ctx, app.DeadFilter{Queue: "bulk", Limit: 1})
	if rows[0].ResurrectionCount != 1 {
		e.t.Fatalf("resurrection count after one bulk replay: %d", rows[0].ResurrectionCount)
	}
	res, err = svc.BulkDead(e.ctx, app.BulkPurge, app.BulkInput{Queue: "bulk"}, "tester")
	if err != nil || res.Count != n {
		e.t.Fatalf("purge: %+v %v", res, err)
	}
	audit, _ := e.s.ListAudit(e.ctx, app.AuditFilter{})
	if len(audit) != 3 || audit[0].Action != "dlq.purge" || audit[0].Count != n || audit[1].Action != "dlq.replay" ||
		audit[2].Action != "dlq.move" || audit[2].Actor != "tester" {
		e.t.Fatalf("audit after bulk actions: %+v", audit)
	}
}

func testServiceBulkRefusesEmptyFilter(e *env) {
	svc := e.service(nil)
	e.deadLetter(e.submitOne("a", "k"))
	e.deadLetter(e.submitOne("b", "k"))
	e.submitOne("a", "k")
	for _, action := range []string{app.BulkReplay, app.BulkPurge, app.BulkMove} {
		if _, err := svc.BulkDead(e.ctx, action, app.BulkInput{}, "t"); !errors.Is(err, app.ErrFilterRequired) {
			e.t.Fatalf("%s without a filter: %v, want ErrFilterRequired", action, err)
		}
	}
	if c, _ := e.s.CountDead(e.ctx, app.DeadFilter{}); c != 2 {
		e.t.Fatalf("refused actions changed the DLQ: %d rows", c)
	}
	if c, _ := e.s.CountJobs(e.ctx, app.JobFilter{}); c != 1 {
		e.t.Fatalf("refused actions changed jobs: %d rows", c)
	}
	res, err := svc.BulkDead(e.ctx, app.BulkPurge, app.BulkInput{Queue: "a"}, "t")
	if err != nil || res.Count != 1 {
		e.t.Fatalf("purge queue a: %+v %v", res, err)
	}
	res, err = svc.BulkDead(e.ctx, app.BulkPurge, app.BulkInput{AllowAll: true}, "t")
	if err != nil || res.Count != 1 {
		e.t.Fatalf("purge allow_all: %+v %v", res, err)
	}
}

func testMaintainerSweepHonoursRetention(e *env) {
	cfg := app.DefaultConfig()
	cfg.Queues["short"] = app.QueueConfig{Retention: app.Duration(2 * time.Second), DLQRetention: app.Duration(time.Hour)}
	svc := e.service(cfg)
	m := &app.Maintainer{Service: svc}
	e.submitOne("short", "k")
	e.complete(e.claimOne("short"), `1`)
	e.submitOne("long", "k")
	e.complete(e.claimOne("long"), `1`)
	ds := e.deadLetter(e.submitOne("short", "k"))
	dl := e.deadLetter(e.submitOne("long", "k"))
	e.clock.Advance(3 * time.Second)
	if _, err := m.Sweep(e.ctx); err != nil {
		e.t.Fatal(err)
	}
	if c, _ := e.s.CountJobs(e.ctx, app.JobFilter{Queue: "short"}); c != 0 {
		e.t.Fatalf("short retention: %d jobs left", c)
	}
	if c, _ := e.s.CountJobs(e.ctx, app.JobFilter{Queue: "long"}); c != 1 {
		e.t.Fatalf("default retention deleted a 3s-old job")
	}
	e.clock.Advance(2 * time.Hour)
	m.Sweep(e.ctx)
	if _, _, err := e.s.Lookup(e.ctx, ds.ID); !errors.Is(err, app.ErrNotFound) {
		e.t.Fatalf("DLQ row past dlq_retention 1h kept")
	}
	e.dead(dl.ID) // 30 days by default
	if c, _ := e.s.CountJobs(e.ctx, app.JobFilter{Queue: "long"}); c != 1 {
		e.t.Fatalf("default retention (24h) deleted a 2h-old job")
	}
	e.clock.Advance(23 * time.Hour)
	m.Sweep(e.ctx)
	if c, _ := e.s.CountJobs(e.ctx, app.JobFilter{Queue: "long"}); c != 0 {
		e.t.Fatalf("a 25h-old done job survived the default retention")
	}
	e.clock.Advance(30 * 24 * time.Hour)
	m.Sweep(e.ctx)
	if _, _, err := e.s.Lookup(e.ctx, dl.ID); !errors.Is(err, app.ErrNotFound) {
		e.t.Fatalf("DLQ row older than 30 days kept")
	}
}

// everySecond is a Schedule firing on every whole second.
type everySecond struct{}

func (everySecond) Next(t time.Time) time.Time { return t.Truncate(time.Second).Add(time.Second) }

func testSchedulerCatchesUpOnceAfterRestart(e *env) {
	cfg := app.DefaultConfig()
	cfg.Periodic = []app.PeriodicConfig{{Name: "tick", Queue: "cron", Kind: "tick", CatchUp: "one", Schedule: everySecond{}, PayloadJSON: []byte(`{}`)}}
	svc := e.service(cfg)
	p := &app.Scheduler{Service: svc}
	if err := p.Start(e.ctx); err != nil {
		e.t.Fatal(err)
	}
	count := func() int {
		n, _ := e.s.CountJobs(e.ctx, app.JobFilter{Queue: "cron"})
		return n
	}
	for i := 1; i <= 3; i++ {
		e.clock.Advance(time.Second)
		p.Due(e.ctx)
		p.Due(e.ctx) // a second look in the same instant adds nothing
		if count() != i {
			e.t.Fatalf("after %d ticks: %d jobs", i, count())
		}
	}
	// A second node (or a restart) with the same config in the same instant doubles nothing.
	p2 := &app.Scheduler{Service: svc}
	p2.Start(e.ctx)
	p2.Due(e.ctx)
	if count() != 3 {
		e.t.Fatalf("a second scheduler doubled a tick: %d jobs", count())
	}
	// Down for 10 seconds: catch_up one enqueues one job, not ten.
	e.clock.Advance(10 * time.Second)
	p3 := &app.Scheduler{Service: svc}
	p3.Start(e.ctx)
	if count() != 4 {
		e.t.Fatalf("after a 10s outage: %d jobs, want 4 (one catch-up)", count())
	}
	e.clock.Advance(time.Second)
	p3.Due(e.ctx)
	if count() != 5 {
		e.t.Fatalf("after the next tick: %d jobs, want 5", count())
	}
	// catch_up none skips the outage.
	cfg.Periodic[0].CatchUp = "none"
	e.clock.Advance(10 * time.Second)
	p4 := &app.Scheduler{Service: svc}
	p4.Start(e.ctx)
	if count() != 5 {
		e.t.Fatalf("catch_up none enqueued a missed fire")
	}
}

func testServiceClaimLongPollWakesOnSubmit(e *env) {
	svc := e.service(nil)
	wait := app.Duration(10 * time.Second)
	got := make(chan []*app.Job, 1)
	start := time.Now()
	go func() {
		jobs, err := svc.Claim(e.ctx, "lp", app.ClaimInput{Wait: &wait})
		if err != nil {
			e.t.Error(err)
		}
		got <- jobs
	}()
	time.Sleep(50 * time.Millisecond) // let the claimer wait
	j := e.submitOne("lp", "k")
	select {
	case jobs := <-got:
		if len(jobs) != 1 || jobs[0].ID != j.ID {
			e.t.Fatalf("long poll got %v, want [%d]", ids(jobs), j.ID)
		}
		// Woken by the submission, not by the 1s safety recheck.
		if el := time.Since(start); el > 900*time.Millisecond {
			e.t.Fatalf("long poll answered after %v", el)
		}
	case <-time.After(5 * time.Second):
		e.t.Fatalf("long poll not woken by a submission")
	}
	short := app.Duration(100 * time.Millisecond)
	jobs, err := svc.Claim(e.ctx, "lp", app.ClaimInput{Wait: &short})
	if err != nil || len(jobs) != 0 {
		e.t.Fatalf("empty long poll: %v %v", jobs, err)
	}
}

func testServiceGetWaitReturnsWhenJobIsTerminal(e *env) {
	svc := e.service(nil)
	j := e.submitOne("gw", "k")
	got := make(chan *app.Job, 1)
	go func() {
		job, err := svc.Get(e.ctx, j.ID, 20*time.Second, false)
		if err != nil {
			e.t.Error(err)
		}
		got <- job
	}()
	time.Sleep(50 * time.Millisecond)
	c := e.claimOne("gw")
	select {
	case <-got:
		e.t.Fatalf("wait returned while the job was processing")
	case <-time.After(50 * time.Millisecond):
	}
	e.complete(c, `"r"`)
	select {
	case job := <-got:
		if job.Status != app.StatusDone {
			e.t.Fatalf("wait returned status %s", job.Status)
		}
	case <-time.After(5 * time.Second):
		e.t.Fatalf("wait did not return after completion")
	}
}

// A claim with a wait hands out at once a job submitted while it waits,
// also when the claimer comes back right after a claim drained the queue
// and skips its first look (app.Notifier.Dry): the store's commit wakes
// it. A job submitted before it comes back is found by its first look.
func testClaimAfterDrainWakesOnSubmit(e *env) {
	svc := e.service(nil)
	wait := app.Duration(5 * time.Second)
	in := app.ClaimInput{WorkerID: "w1", Limit: 10, Wait: &wait}
	claim := func() chan int {
		got := make(chan int, 1)
		go func() {
			jobs, err := svc.Claim(e.ctx, "dq", in)
			if err != nil {
				e.t.Error(err)
			}
			got <- len(jobs)
		}()
		return got
	}
	within := func(got chan int, what string) {
		e.t.Helper()
		select {
		case n := <-got:
			if n != 1 {
				e.t.Fatalf("%s: %d jobs, want 1", what, n)
			}
		case <-time.After(700 * time.Millisecond): // a claimer not woken looks again after 1 s
			e.t.Fatalf("%s: not handed out at once", what)
		}
	}
	e.submitOne("dq", "k")
	within(claim(), "a job waiting before the claim") // takes 1 of 10: the queue is drained
	e.submitOne("dq", "k")
	within(claim(), "a job submitted after a claim drained the queue")
	got := claim()
	for deadline := time.Now().Add(5 * time.Second); svc.Waiting() != 1; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			e.t.Fatal("the claim does not wait")
		}
	}
	e.submitOne("dq", "k")
	within(got, "a job submitted while a claimer waits on a drained queue")
}
