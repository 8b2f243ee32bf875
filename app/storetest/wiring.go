package storetest

import (
	"errors"
	"strings"
	"time"

	"github.com/queuehq/queue/app"
)

// The cases here pin how the Service and the Maintainer hand the config's
// policy to a store: each broke unnoticed by the store-level cases when the
// wiring was cut on purpose (backoff without jitter, per-queue backoff
// ignored, max_queued not passed, the maintainer's backoff not used).

func ptr[T any](v T) *T { return &v }

// svcClaimed submits n jobs of queue through svc and claims them all.
func (e *env) svcClaimed(svc *app.Service, queue string, n int, mods ...func(*app.SubmitInput)) []*app.Job {
	e.t.Helper()
	ins := make([]app.SubmitInput, n)
	for i := range ins {
		ins[i] = app.SubmitInput{Queue: queue, Kind: "k", MaxAttempts: ptr(5)}
		for _, m := range mods {
			m(&ins[i])
		}
	}
	if _, err := svc.Submit(e.ctx, ins); err != nil {
		e.t.Fatalf("submit to %s: %v", queue, err)
	}
	jobs, err := svc.Claim(e.ctx, queue, app.ClaimInput{WorkerID: "w", Limit: n})
	if err != nil || len(jobs) != n {
		e.t.Fatalf("claim %d of %s: %d jobs, %v", n, queue, len(jobs), err)
	}
	return jobs
}

// Backoff after a failure is the queue's own (backoff_base, backoff_max),
// doubling per attempt up to the max, with ±20% jitter: the delays of a
// batch failed at the same instant spread over the band.
func testServiceBackoffIsJitteredPerQueue(e *env) {
	cfg := app.DefaultConfig()
	cfg.Queues["slow"] = app.QueueConfig{BackoffBase: app.Duration(10 * time.Second), BackoffMax: app.Duration(11 * time.Second)}
	svc := e.service(cfg)
	failAll := func(queue string, jobs []*app.Job, lo, hi time.Duration) []*app.Job {
		e.t.Helper()
		delays := map[time.Duration]bool{}
		for _, j := range jobs {
			if _, err := svc.Fail(e.ctx, j.ID, app.FailInput{Lease: j.Lease, Error: "x"}); err != nil {
				e.t.Fatal(err)
			}
			d := e.get(j.ID).RunAt.Sub(e.clock.Now())
			if d < lo || d > hi {
				e.t.Fatalf("%s attempt %d: backoff %v, want %v..%v", queue, j.Attempts, d, lo, hi)
			}
			delays[d] = true
		}
		if len(delays) < len(jobs)/2 {
			e.t.Fatalf("%s: %d failures at one instant got only %d distinct delays: no jitter", queue, len(jobs), len(delays))
		}
		return jobs
	}
	const n = 16
	failAll("slow", e.svcClaimed(svc, "slow", n), 8*time.Second, 12*time.Second)               // base 10s
	failAll("fast", e.svcClaimed(svc, "fast", n), 800*time.Millisecond, 1200*time.Millisecond) // default base 1s
	e.clock.Advance(time.Minute)
	again, err := svc.Claim(e.ctx, "slow", app.ClaimInput{WorkerID: "w", Limit: n})
	if err != nil || len(again) != n {
		e.t.Fatalf("second claim of slow: %d, %v", len(again), err)
	}
	failAll("slow", again, 8800*time.Millisecond, 13200*time.Millisecond) // 20s capped at max 11s
}

// The Service passes each queue's max_queued to the store.
func testServiceMaxQueuedIsWired(e *env) {
	cfg := app.DefaultConfig()
	cfg.Queues["capped"] = app.QueueConfig{MaxQueued: 2}
	svc := e.service(cfg)
	for i := 0; i < 2; i++ {
		if _, err := svc.Submit(e.ctx, []app.SubmitInput{{Queue: "capped", Kind: "k"}}); err != nil {
			e.t.Fatalf("submit %d: %v", i, err)
		}
	}
	if _, err := svc.Submit(e.ctx, []app.SubmitInput{{Queue: "capped", Kind: "k"}}); !errors.Is(err, app.ErrQueueFull) {
		e.t.Fatalf("third submit to a queue of max_queued 2: %v, want ErrQueueFull", err)
	}
	if _, err := svc.Submit(e.ctx, []app.SubmitInput{{Queue: "other", Kind: "k"}}); err != nil {
		e.t.Fatalf("another queue is not capped: %v", err)
	}
	if n, _ := e.s.CountJobs(e.ctx, app.JobFilter{Queue: "capped"}); n != 2 {
		e.t.Fatalf("capped holds %d jobs, want 2", n)
	}
}

// One Maintainer tick recovers an expired lease with the queue's backoff
// and expires a job past its TTL.
func testMaintainerTickRecoversAndExpires(e *env) {
	cfg := app.DefaultConfig()
	cfg.Queues["m"] = app.QueueConfig{BackoffBase: app.Duration(30 * time.Second)}
	svc := e.service(cfg)
	lost := e.svcClaimed(svc, "m", 1, func(in *app.SubmitInput) { in.Timeout = ptr(app.Duration(5 * time.Second)) })[0]
	res, err := svc.Submit(e.ctx, []app.SubmitInput{{Queue: "m", Kind: "ttl", TTL: ptr(app.Duration(10 * time.Second)), Delay: ptr(app.Duration(time.Minute))}})
	if err != nil {
		e.t.Fatal(err)
	}
	ttl := res[0].Job
	e.clock.Advance(11 * time.Second)
	if err := (&app.Maintainer{Service: svc}).Tick(e.ctx); err != nil {
		e.t.Fatal(err)
	}
	got := e.get(lost.ID)
	d := got.RunAt.Sub(e.clock.Now())
	if got.Status != app.StatusQueued || len(got.Errors) != 1 || d < 24*time.Second || d > 36*time.Second {
		e.t.Fatalf("after a tick the lost job is %s with %d errors and backoff %v, want queued, 1 error, 24s..36s (the queue's base)", got.Status, len(got.Errors), d)
	}
	if got := e.get(ttl.ID); got.Status != app.StatusCancelled || got.CancelReason != "expired" {
		e.t.Fatalf("after a tick the expired job is %s (%q), want cancelled (expired)", got.Status, got.CancelReason)
	}
}

// A failed attempt of a job whose cancel was requested ends the attempt
// once: its events hold one job.started, then job.cancelled.
func testFailAfterCancelRequestEndsTheAttemptOnce(e *env) {
	j := e.submitOne("q", "k", withMax(3))
	c := e.claimOne("q")
	if _, err := app.Cancel(e.ctx, e.s, app.CancelRequest{ID: j.ID}); err != nil {
		e.t.Fatal(err)
	}
	res := e.fail(c, true)
	if res.Outcome != app.OutcomeCancelled || res.Job.Status != app.StatusCancelled {
		e.t.Fatalf("fail after a cancel request: %s, job %+v", res.Outcome, res.Job)
	}
	evs, err := e.service(nil).Events(e.ctx, j.ID)
	if err != nil {
		e.t.Fatal(err)
	}
	var types []string
	started := 0
	for _, ev := range evs {
		types = append(types, ev.Type)
		if ev.Type == app.EventStarted {
			started++
		}
	}
	if started != 1 || types[len(types)-1] != app.EventCancelled {
		e.t.Fatalf("events %v: want one job.started and job.cancelled last", types)
	}
}

// Diagnose (queue doctor) counts a lease that expired over a minute ago
// as stuck, and the rows moved to the DLQ in the last day and the day
// before.
func testDiagnoseFindsStuckLeasesAndDLQGrowth(e *env) {
	e.submitOne("s", "k", func(nj *app.NewJob) { nj.Timeout = time.Second })
	e.claimOne("s")
	e.deadLetter(e.submitOne("q", "k"))
	e.deadLetter(e.submitOne("q", "k"))
	r, err := app.Diagnose(e.ctx, e.s, e.clock.Now().Add(30*time.Second))
	if err != nil || r.StuckLeases != 0 || r.DLQLastDay != 2 || r.DLQDayBefore != 0 || len(r.Problems) != 0 {
		e.t.Fatalf("diagnose at +30s: %+v %v, want no stuck lease, 2 rows dead-lettered today, no problem", r, err)
	}
	r, err = app.Diagnose(e.ctx, e.s, e.clock.Now().Add(25*time.Hour))
	if err != nil || r.StuckLeases != 1 || r.DLQLastDay != 0 || r.DLQDayBefore != 2 || len(r.Problems) != 1 ||
		!strings.Contains(r.Problems[0], "1 jobs hold leases") {
		e.t.Fatalf("diagnose at +25h: %+v %v, want 1 stuck lease (a problem), 2 rows dead-lettered the day before", r, err)
	}
}

// app.Complete, the lifecycle's completion step by step over a Tx, answers
// and counts as the store's own Complete does: each item fenced on its own,
// the job done with its result, the stats and the throughput counted.
func testCompleteStepByStepAsTheStore(e *env) {
	e.submitN(2, "q", "k")
	jobs := e.claim("q", 2)
	errs, err := app.Complete(e.ctx, e.s, []app.Completion{
		{ID: jobs[0].ID, Lease: jobs[0].Lease, Result: []byte(`{"ok":1}`)},
		{ID: jobs[1].ID, Lease: jobs[1].Lease + 1},
		{ID: 999999, Lease: 1},
		{ID: jobs[0].ID, Lease: jobs[0].Lease},
	})
	if err != nil || errs[0] != nil || !errors.Is(errs[1], app.ErrLeaseLost) || !errors.Is(errs[2], app.ErrNotFound) ||
		!errors.Is(errs[3], app.ErrLeaseLost) {
		e.t.Fatalf("complete: %v %v, want ok, lease lost, not found, lease lost", errs, err)
	}
	if j := e.get(jobs[0].ID); j.Status != app.StatusDone || !app.JSONEqual(j.Result, []byte(`{"ok":1}`)) || j.FinishedAt == nil {
		e.t.Fatalf("completed job: %+v", j)
	}
	if j := e.get(jobs[1].ID); j.Status != app.StatusProcessing {
		e.t.Fatalf("job completed under a stale lease: %+v", j)
	}
	st, err := e.s.Stats(e.ctx)
	if err != nil || len(st) != 1 || st[0].Done != 1 || st[0].Processing != 1 || st[0].CompletedLastMinute != 1 {
		e.t.Fatalf("stats %+v %v, want 1 done (counted in the last minute), 1 processing", st, err)
	}
}
