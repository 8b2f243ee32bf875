package storetest

import (
	"context"
	"errors"
	"time"

	"github.com/queuehq/queue/app"
)

func init() {
	extraCases["ChartsPickupLatency"] = testChartsPickupLatency
	extraCases["ChartsRollUp"] = testChartsRollUp
	extraCases["ChartsRetention"] = testChartsRetention
	extraCases["FaultChartsRollUpAllOrNothing"] = testFaultChartsRollUpAllOrNothing
}

// rollUp rolls up every second kept up to the end of the clock's minute,
// with depth, if given, sampled in that minute.
func (e *env) rollUp(depth map[string]int64) {
	e.t.Helper()
	if err := e.s.RollUp(e.ctx, e.rollReq(depth)); err != nil {
		e.t.Fatalf("RollUp: %v", err)
	}
}

func (e *env) rollReq(depth map[string]int64) app.RollUp {
	minute := e.clock.Now().Truncate(time.Minute)
	r := app.RollUp{From: minute.Add(-app.SecondsKept), To: minute.Add(time.Minute)}
	r.HoursFrom = r.From.Truncate(time.Hour)
	if depth != nil {
		r.DepthAt, r.Depth = minute, depth
	}
	return r
}

// series reads queue's rows of step from an hour before T0 on.
func (e *env) series(queue string, step time.Duration) []app.SeriesRow {
	e.t.Helper()
	rows, err := e.s.Series(e.ctx, queue, T0.Add(-time.Hour).Truncate(step), step)
	if err != nil {
		e.t.Fatalf("Series(%q, %s): %v", queue, step, err)
	}
	return rows
}

// oneRow is the single row of rows, at at, or a failure.
func (e *env) oneRow(what string, rows []app.SeriesRow, at time.Time) app.SeriesRow {
	e.t.Helper()
	if len(rows) != 1 || !rows[0].At.Equal(at) {
		e.t.Fatalf("%s: rows %+v, want one at %s", what, rows, at)
	}
	return rows[0]
}

// A claim counts its jobs and each one's wait from due (run_at, or its
// creation if later) to the claim, on every way a store claims: a plain
// claim (PostgreSQL's one statement) and one under a concurrency limit
// (app.Claim over the Tx). A claim that finds nothing counts nothing.
func testChartsPickupLatency(e *env) {
	minute := T0.Truncate(time.Minute)                         // T0 is 03:04:05: all of this is in its minute
	e.submitN(2, "lat", "k")                                   // due at T0
	e.submitOne("lat", "k", withRunAt(T0.Add(10*time.Second))) // due at T0+10s
	e.submitOne("lat", "k", withRunAt(T0.Add(-5*time.Minute))) // created at T0: due then
	e.submitOne("lat", "k", withRunAt(T0.Add(40*time.Second))) // not due in this test
	e.submitOne("other", "k", withRunAt(T0.Add(-time.Minute))) // due at T0 (created)
	e.clock.Advance(3 * time.Second)
	if got := len(e.claim("lat", 2)); got != 2 { // the two of T0 and the one of -5m: 3s each
		e.t.Fatalf("plain claim took %d jobs, want 2", got)
	}
	e.clock.Advance(9 * time.Second) // T0+12s
	limited, err := e.s.Claim(e.ctx, app.ClaimRequest{Queue: "lat", WorkerID: "w", Limit: 5, Concurrency: 10})
	if err != nil || len(limited) != 2 {
		e.t.Fatalf("claim under a concurrency limit: %d jobs, %v; want 2", len(limited), err)
	}
	if got := e.claim("lat", 5); len(got) != 0 { // nothing due: counts nothing
		e.t.Fatalf("claim of nothing due took %d", len(got))
	}
	e.clock.Advance(8 * time.Second) // T0+20s
	e.claimOne("other")
	e.rollUp(nil)
	// lat: at T0+3s the -5m one (due at its creation, T0) and one of T0,
	// 3s each; at T0+12s the other of T0 (12s) and the one of T0+10s (2s):
	// 3+3+12+2 = 20s, the longest 12s.
	r := e.oneRow("lat", e.series("lat", time.Minute), minute)
	if r.Claimed != 4 || r.WaitMS != 20_000 || r.WaitMaxMS != 12_000 {
		e.t.Fatalf("lat minute %+v, want 4 claimed, waits 20000 ms in all, 12000 ms at most", r)
	}
	o := e.oneRow("other", e.series("other", time.Minute), minute)
	if o.Claimed != 1 || o.WaitMS != 20_000 || o.WaitMaxMS != 20_000 {
		e.t.Fatalf("other minute %+v, want 1 claimed after 20000 ms (due at its creation, not its earlier run_at)", o)
	}
	all := e.oneRow("all queues", e.series("", time.Minute), minute)
	if all.Claimed != 5 || all.WaitMS != 40_000 || all.WaitMaxMS != 20_000 {
		e.t.Fatalf("every queue's minute %+v, want the sum of lat and other", all)
	}
	if r.Completed != 0 || r.Failed != 0 {
		e.t.Fatalf("claims counted as ended attempts: %+v", r)
	}
}

// The roll-up keeps the sums of the seconds in each minute and of the
// minutes in each hour, replaces rather than adds when run again (also
// after more counts arrived), keeps a minute's depth sample apart from its
// counts, and a new sample of a minute replaces the old one whole.
func testChartsRollUp(e *env) {
	minute, hour := T0.Truncate(time.Minute), T0.Truncate(time.Hour)
	for i := 0; i < 3; i++ {
		e.submitOne("ru", "k")
	}
	e.clock.Advance(2 * time.Second)
	e.complete(e.claimOne("ru"), `1`)
	e.fail(e.claimOne("ru"), true)
	e.rollUp(map[string]int64{"ru": 7, "idle": 3})
	want := app.SeriesRow{At: minute, Completed: 1, Failed: 1, Claimed: 2, WaitMS: 4000, WaitMaxMS: 2000, Depth: 7, DepthMax: 7}
	if r := e.oneRow("first roll-up", e.series("ru", time.Minute), minute); r != want {
		e.t.Fatalf("minute %+v, want %+v", r, want)
	}
	e.rollUp(nil) // again, nothing new: nothing changes
	if r := e.oneRow("second roll-up", e.series("ru", time.Minute), minute); r != want {
		e.t.Fatalf("rolled up twice: %+v, want %+v (a roll-up replaces, never adds)", r, want)
	}
	// A second minute, in the same hour: the hour sums both.
	e.clock.Advance(time.Minute)
	e.complete(e.claimOne("ru"), `1`)
	e.rollUp(map[string]int64{"ru": 1})
	e.rollUp(map[string]int64{"ru": 2}) // sampled again in its minute: the new sample counts
	rows := e.series("ru", time.Minute)
	if len(rows) != 2 || rows[0] != want || rows[1].Completed != 1 || rows[1].Claimed != 1 || rows[1].WaitMS != 62_000 || rows[1].Depth != 2 {
		e.t.Fatalf("two minutes: %+v", rows)
	}
	h := e.oneRow("hour", e.series("ru", time.Hour), hour)
	wantH := app.SeriesRow{At: hour, Completed: 2, Failed: 1, Claimed: 3, WaitMS: 66_000, WaitMaxMS: 62_000, Depth: 9, DepthMax: 7}
	if h != wantH {
		e.t.Fatalf("hour %+v, want %+v (the sum of its minutes)", h, wantH)
	}
	if idle := e.oneRow("idle", e.series("idle", time.Minute), minute); idle.Depth != 3 || idle.Claimed != 0 {
		e.t.Fatalf("a queue's depth alone: %+v", idle)
	}
	all := e.oneRow("every queue's hour", e.series("", time.Hour), hour)
	if all.Completed != 2 || all.Depth != 12 {
		e.t.Fatalf("every queue's hour %+v, want 2 completed, depth 9+3", all)
	}
	// A sample without the queue (nothing queued any more) clears its
	// earlier sample of the same minute.
	e.rollUp(map[string]int64{})
	if rows := e.series("ru", time.Minute); len(rows) != 2 || rows[1].Depth != 0 || rows[1].Completed != 1 {
		e.t.Fatalf("sample without the queue: %+v", rows)
	}
}

// Retention deletes the minutes and the hours before their cutoffs, each
// its own kind of row, in bounded passes.
func testChartsRetention(e *env) {
	e.submitOne("ret", "k")
	e.complete(e.claimOne("ret"), `1`)
	e.rollUp(map[string]int64{"ret": 1})
	e.clock.Advance(time.Hour)
	e.submitOne("ret", "k")
	e.complete(e.claimOne("ret"), `1`)
	e.rollUp(nil)
	if m, h := len(e.series("ret", time.Minute)), len(e.series("ret", time.Hour)); m != 2 || h != 2 {
		e.t.Fatalf("before retention: %d minutes, %d hours; want 2 and 2", m, h)
	}
	cut := T0.Add(30 * time.Minute)
	n, err := e.s.DeleteOld(e.ctx, app.DeleteOldRequest{What: app.OldMinutes, Before: cut, Limit: 100})
	if err != nil || n != 1 {
		e.t.Fatalf("DeleteOld(minutes) = %d, %v; want 1", n, err)
	}
	if m, h := len(e.series("ret", time.Minute)), len(e.series("ret", time.Hour)); m != 1 || h != 2 {
		e.t.Fatalf("after the minutes' retention: %d minutes, %d hours; want 1 and 2 (hours untouched)", m, h)
	}
	n, err = e.s.DeleteOld(e.ctx, app.DeleteOldRequest{What: app.OldHours, Before: cut, Limit: 100})
	if err != nil || n != 1 {
		e.t.Fatalf("DeleteOld(hours) = %d, %v; want 1", n, err)
	}
	if h := e.series("ret", time.Hour); len(h) != 1 || !h[0].At.Equal(T0.Add(time.Hour).Truncate(time.Hour)) {
		e.t.Fatalf("after the hours' retention: %+v", h)
	}
	// The Maintainer's sweep uses the kept windows: nothing of this hour goes.
	if _, err := (&app.Maintainer{Service: e.service(nil)}).Sweep(e.ctx); err != nil {
		e.t.Fatalf("Sweep: %v", err)
	}
	if m := e.series("ret", time.Minute); len(m) != 1 {
		e.t.Fatalf("the sweep deleted a minute within %s: %+v", app.MinutesKept, m)
	}
}

// A roll-up is one transaction: a fault after its minutes leaves no minute
// and no depth sample; and a claim undone by a fault counts no pickup.
func testFaultChartsRollUpAllOrNothing(e *env) {
	e.submitN(2, "f", "k")
	e.clock.Advance(time.Second)
	e.claimOne("f")
	e.setFault(func(_ context.Context, p app.FaultPoint, _ int64) error {
		if p == app.FaultRollUp || p == app.FaultClaim {
			return errInjected
		}
		return nil
	})
	if err := e.s.RollUp(e.ctx, e.rollReq(map[string]int64{"f": 1})); !errors.Is(err, errInjected) {
		e.t.Fatalf("RollUp with a fault: %v, want the injected fault", err)
	}
	if _, err := e.s.Claim(e.ctx, app.ClaimRequest{Queue: "f", WorkerID: "w", Limit: 1}); err == nil {
		e.t.Fatal("a claim with a fault succeeded")
	}
	if rows := e.series("f", time.Minute); len(rows) != 0 {
		e.t.Fatalf("a failed roll-up left rows: %+v", rows)
	}
	e.setFault(nil)
	e.rollUp(map[string]int64{"f": 1})
	r := e.oneRow("after the fault", e.series("f", time.Minute), T0.Truncate(time.Minute))
	if r.Claimed != 1 || r.WaitMS != 1000 || r.Depth != 1 {
		e.t.Fatalf("minute %+v, want the one claim that committed (1000 ms) and the sample", r)
	}
	if h := e.series("f", time.Hour); len(h) != 1 || h[0].Claimed != 1 {
		e.t.Fatalf("hour %+v", h)
	}
}
