package storetest

import (
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"time"

	"github.com/queuehq/queue/app"
)

// The DLQ's second pass (issue 22): what a replay carries, what a bulk
// action needs and acts on, how the DLQ is listed and counted.

// A replay carries the job's idempotency key to the new job: the key finds
// the live job, the row points to it, and the job can fail into the DLQ
// again under the same key.
func testReplayCarriesIdempotencyKey(e *env) {
	svc := e.service(nil)
	j := e.submitOne("q", "k", withKey("k-imp"))
	d := e.deadLetter(j)
	nj, err := svc.Replay(e.ctx, d.ID, app.ReplayInput{}, "ops")
	if err != nil || nj.IdempotencyKey != "k-imp" {
		e.t.Fatalf("replay: %+v %v, want a job with key k-imp", nj, err)
	}
	res, err := app.Submit(e.ctx, e.s, app.SubmitRequest{Jobs: []app.NewJob{e.newJob("q", "k", withKey("k-imp"))}})
	if err != nil || !res[0].Existing || res[0].Job.ID != nj.ID || res[0].Job.Status != app.StatusQueued {
		e.t.Fatalf("submit with the key after the replay: %+v %v, want the live job %d", res, err, nj.ID)
	}
	if made, _ := e.s.List(e.ctx, app.JobFilter{ReplayedFrom: d.ID}); len(made) != 1 || made[0].ID != nj.ID {
		e.t.Fatalf("jobs replayed from row %d: %+v, want job %d", d.ID, made, nj.ID)
	}
	row := e.dead(d.ID)
	if row.IdempotencyKey != "" || row.ReplayedJobID == nil || *row.ReplayedJobID != nj.ID || row.ResurrectionCount != 1 {
		e.t.Fatalf("the row after the replay: %+v, want no key and a pointer to job %d", row, nj.ID)
	}
	again := e.deadLetter(nj)
	if again.IdempotencyKey != "k-imp" {
		e.t.Fatalf("the replayed job dead-lettered again: %+v, want its key kept", again)
	}
	// A replay whose key another job holds in the target queue is refused.
	e.submitOne("other", "k", withKey("k-imp"))
	if _, err := svc.Replay(e.ctx, again.ID, app.ReplayInput{ReplayOverride: app.ReplayOverride{Queue: "other"}}, "ops"); !errors.Is(err, app.ErrIdempotencyConflict) {
		e.t.Fatalf("replay into a queue where the key is taken: %v, want ErrIdempotencyConflict", err)
	}
}

// A replay retried with the same Idempotency-Key answers with the job the
// first one made.
func testReplayRequestIsIdempotent(e *env) {
	svc := e.service(nil)
	d := e.deadLetter(e.submitOne("q", "k"))
	in := app.ReplayInput{IdempotencyKey: "req-1"}
	first, err := svc.Replay(e.ctx, d.ID, in, "ops")
	if err != nil {
		e.t.Fatal(err)
	}
	second, err := svc.Replay(e.ctx, d.ID, in, "ops")
	if err != nil || second.ID != first.ID {
		e.t.Fatalf("retried replay: %+v %v, want job %d again", second, err, first.ID)
	}
	if n, _ := e.s.CountJobs(e.ctx, app.JobFilter{Queue: "q"}); n != 1 {
		e.t.Fatalf("a retried replay made %d jobs, want 1", n)
	}
}

// Overrides change the replayed job, and the audit entry names them.
func testReplayOverrides(e *env) {
	svc := e.service(nil)
	d := e.deadLetter(e.submitOne("q", "k", withPayload(`{"a":1,"b":2}`)))
	prio, attempts := 7, 9
	nj, err := svc.Replay(e.ctx, d.ID, app.ReplayInput{ReplayOverride: app.ReplayOverride{Queue: "fixed", Priority: &prio,
		MaxAttempts: &attempts, PayloadPatch: json.RawMessage(`{"b":null,"c":3}`)}}, "ops")
	if err != nil || nj.Queue != "fixed" || nj.Priority != 7 || nj.MaxAttempts != 9 || !app.JSONEqual(nj.Payload, []byte(`{"a":1,"c":3}`)) {
		e.t.Fatalf("replay with overrides: %+v %v", nj, err)
	}
	audit, _ := e.s.ListAudit(e.ctx, app.AuditFilter{Action: "dlq.replay"})
	if len(audit) != 1 || !strings.Contains(string(audit[0].Filter), `"queue":"fixed"`) || !strings.Contains(string(audit[0].Filter), `"max_attempts":9`) {
		e.t.Fatalf("audit of the replay: %+v, want the overrides", audit)
	}
	bad := -5000
	if _, err := svc.Replay(e.ctx, d.ID, app.ReplayInput{ReplayOverride: app.ReplayOverride{Priority: &bad}}, "ops"); err == nil {
		e.t.Fatal("a priority out of range was taken")
	}
	if _, err := svc.BulkDead(e.ctx, app.BulkReplay, app.BulkInput{Queue: "q", Set: &app.ReplayOverride{Payload: json.RawMessage(`1`)}}, "ops"); err == nil {
		e.t.Fatal("a bulk replay took a payload")
	}
}

// Bulk replay, purge and move need ids, a queue, kind or tag, or
// allow_all; reason and the move dates only narrow, and refused alone
// change nothing.
func testBulkNeedsARealFilter(e *env) {
	svc := e.service(nil)
	e.deadLetter(e.submitOne("q", "k"))
	e.submitOne("q", "k")
	day := app.Duration(0)
	for _, action := range []string{app.BulkReplay, app.BulkPurge, app.BulkMove} {
		for _, in := range []app.BulkInput{{Reason: app.ReasonPermanentFailure}, {OlderThan: &day}, {Reason: "max_attempts", DryRun: true}} {
			if action == app.BulkMove && in.OlderThan != nil {
				continue // not a move filter at all: invalid_field
			}
			if _, err := svc.BulkDead(e.ctx, action, in, "ops"); !errors.Is(err, app.ErrFilterRequired) {
				e.t.Fatalf("%s %+v: %v, want ErrFilterRequired", action, in, err)
			}
		}
	}
	if d, _ := e.s.CountDead(e.ctx, app.DeadFilter{}); d != 1 {
		e.t.Fatalf("refused actions changed the DLQ: %d rows", d)
	}
	if n, _ := e.s.CountJobs(e.ctx, app.JobFilter{}); n != 1 {
		e.t.Fatalf("refused actions changed the jobs: %d", n)
	}
}

// The DLQ is listed by the time of the move, newest first, and its cursor
// visits every row once; the filters by move time and replayed hold.
func testDLQListsByMoveTime(e *env) {
	svc := e.service(nil)
	var jobs []*app.Job
	for i := range 7 { // a queue each, so each is the one claimed in its queue
		jobs = append(jobs, e.submitOne("q"+string(rune('a'+i)), "k"))
	}
	var order []int64                     // in move order
	for i := len(jobs) - 1; i >= 0; i-- { // the highest id moves first
		e.deadLetter(jobs[i])
		order = append(order, jobs[i].ID)
		e.clock.Advance(time.Second)
	}
	seen := map[int64]bool{}
	var listed []int64
	cursor := ""
	for page := 0; page < 10; page++ {
		p, err := svc.ListDead(e.ctx, app.DeadListInput{Limit: 3, Cursor: cursor})
		if err != nil {
			e.t.Fatal(err)
		}
		for _, d := range p.Jobs {
			if seen[d.ID] {
				e.t.Fatalf("row %d listed twice", d.ID)
			}
			seen[d.ID] = true
			listed = append(listed, d.ID)
		}
		if cursor = p.NextCursor; cursor == "" {
			break
		}
	}
	for i, id := range listed {
		if want := order[len(order)-1-i]; id != want {
			e.t.Fatalf("listed %v, want the newest move first: %v reversed", listed, order)
		}
	}
	if len(listed) != 7 {
		e.t.Fatalf("paging listed %d rows, want 7", len(listed))
	}
	if _, err := svc.Replay(e.ctx, order[0], app.ReplayInput{}, "ops"); err != nil {
		e.t.Fatal(err)
	}
	yes, no := true, false
	after := e.clock.Now().Add(-3 * time.Second)
	for _, c := range []struct {
		in   app.DeadListInput
		want int
	}{{app.DeadListInput{Replayed: &yes}, 1}, {app.DeadListInput{Replayed: &no}, 6}, {app.DeadListInput{MovedAfter: &after}, 3}} {
		if n, err := svc.CountDead(e.ctx, c.in); err != nil || n != c.want {
			e.t.Fatalf("count %+v: %d %v, want %d", c.in, n, err, c.want)
		}
	}
}

// A dry run's bound holds the confirmed purge to the rows it counted:
// rows that arrive between the two are left alone. A bulk replay skips
// rows replayed before unless asked.
func testBulkActsOnWhatWasConfirmed(e *env) {
	svc := e.service(nil)
	for range 3 {
		e.deadLetter(e.submitOne("q", "k"))
	}
	dry, err := svc.BulkDead(e.ctx, app.BulkPurge, app.BulkInput{Queue: "q", DryRun: true}, "ops")
	if err != nil || dry.Count != 3 || dry.Bound == "" {
		e.t.Fatalf("dry run: %+v %v, want 3 rows and a bound", dry, err)
	}
	e.clock.Advance(time.Second)
	late := e.deadLetter(e.submitOne("q", "k"))
	res, err := svc.BulkDead(e.ctx, app.BulkPurge, app.BulkInput{Queue: "q", Bound: dry.Bound}, "ops")
	if err != nil || res.Count != 3 {
		e.t.Fatalf("confirmed purge: %+v %v, want the 3 counted", res, err)
	}
	if rows, _ := e.s.ListDead(e.ctx, app.DeadFilter{}); len(rows) != 1 || rows[0].ID != late.ID {
		e.t.Fatalf("after the purge: %+v, want only row %d, which came after the dry run", rows, late.ID)
	}
	if _, err := svc.BulkDead(e.ctx, app.BulkPurge, app.BulkInput{Queue: "q", Bound: "bogus"}, "ops"); err == nil {
		e.t.Fatal("a bound this server did not make was taken")
	}
	for i := 0; i < 2; i++ {
		res, err = svc.BulkDead(e.ctx, app.BulkReplay, app.BulkInput{Queue: "q"}, "ops")
		if want := 1 - i; err != nil || res.Count != want {
			e.t.Fatalf("replay all, time %d: %+v %v, want %d (replayed rows are skipped)", i+1, res, err, want)
		}
	}
	res, err = svc.BulkDead(e.ctx, app.BulkReplay, app.BulkInput{Queue: "q", IncludeReplayed: true}, "ops")
	if err != nil || res.Count != 1 {
		e.t.Fatalf("replay all with include_replayed: %+v %v, want 1", res, err)
	}
}

// An admin move takes a job by id from queued, scheduled or cancelled,
// with the operator's note on the row; a processing job stays.
func testMoveByIDWithNote(e *env) {
	svc := e.service(nil)
	j := e.submitOne("q", "k")
	if _, err := app.Cancel(e.ctx, e.s, app.CancelRequest{ID: j.ID}); err != nil {
		e.t.Fatal(err)
	}
	res, err := svc.BulkDead(e.ctx, app.BulkMove, app.BulkInput{IDs: []int64{j.ID}, Reason: "bad customer data"}, "ops")
	if err != nil || res.Count != 1 {
		e.t.Fatalf("move of cancelled job %d: %+v %v", j.ID, res, err)
	}
	d := e.dead(j.ID)
	if d.Note != "bad customer data" || d.Reason != app.ReasonAdminMove {
		e.t.Fatalf("the moved row: %+v, want the note and reason admin_move", d)
	}
	p := e.submitOne("p", "k")
	e.claimOne("p")
	if _, err := svc.BulkDead(e.ctx, app.BulkMove, app.BulkInput{IDs: []int64{p.ID}}, "ops"); !errors.Is(err, app.ErrIllegalTransition) {
		e.t.Fatalf("move of a processing job: %v, want ErrIllegalTransition", err)
	}
	if got := e.get(p.ID); got.Status != app.StatusProcessing {
		e.t.Fatalf("the processing job after a refused move: %+v", got)
	}
}

// A dead-letter row keeps the failed attempt: when it started, when the
// job was due, the worker.
func testDeadRowKeepsTheAttempt(e *env) {
	j := e.submitOne("q", "k")
	c := e.claimOne("q")
	e.fail(c, false)
	d := e.dead(j.ID)
	if d.StartedAt == nil || !d.StartedAt.Equal(*c.StartedAt) || d.RunAt == nil || !d.RunAt.Equal(c.RunAt) || d.WorkerID != c.WorkerID {
		e.t.Fatalf("dead row %+v, want started_at %v, run_at %v, worker %q of the attempt", d, c.StartedAt, c.RunAt, c.WorkerID)
	}
	if got := d.AsJob(); got.StartedAt == nil || got.WorkerID == "" {
		e.t.Fatalf("the job's view of its row: %+v, want its start and worker", got)
	}
}

// DLQ stats add up to the row count by queue, kind and reason.
func testDeadStatsAddUp(e *env) {
	svc := e.service(nil)
	e.deadLetter(e.submitOne("a", "x"))
	e.deadLetter(e.submitOne("a", "y"))
	e.deadLetter(e.submitOne("b", "x"))
	if _, err := app.MoveToDead(e.ctx, e.s, app.JobFilter{IDs: []int64{e.submitOne("b", "z").ID}}, "", nil); err != nil {
		e.t.Fatal(err)
	}
	d, _ := e.s.ListDead(e.ctx, app.DeadFilter{Queue: "a", Kind: "x"})
	if _, err := svc.Replay(e.ctx, d[0].ID, app.ReplayInput{}, "ops"); err != nil {
		e.t.Fatal(err)
	}
	st, err := svc.DeadStats(e.ctx, nil)
	if err != nil {
		e.t.Fatal(err)
	}
	sum := func(m map[string]int64) (n int64) {
		for _, v := range m {
			n += v
		}
		return n
	}
	if st.Total != 4 || sum(st.ByQueue) != 4 || sum(st.ByKind) != 4 || sum(st.ByReason) != 4 || sum(st.ByDay) != 4 ||
		st.ByQueue["a"] != 2 || st.ByKind["x"] != 2 || st.ByReason[app.ReasonAdminMove] != 1 || st.Replayed != 1 || st.Replays != 1 {
		e.t.Fatalf("dead stats %+v", st)
	}
	st, _ = svc.DeadStats(e.ctx, func(q string) bool { return q == "b" })
	if st.Total != 2 || len(st.ByQueue) != 1 {
		e.t.Fatalf("dead stats of queue b: %+v", st)
	}
}

// Twenty submissions racing with one key make one job, and every one of
// them answers with it.
func testConcurrentSubmissionsWithOneKey(e *env) {
	var wg sync.WaitGroup
	ids := make([]int64, 20)
	for i := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := app.Submit(e.ctx, e.s, app.SubmitRequest{Jobs: []app.NewJob{e.newJob("q", "k", withKey("same"))}})
			if err != nil {
				e.t.Errorf("submission %d: %v", i, err)
				return
			}
			ids[i] = res[0].Job.ID
		}()
	}
	wg.Wait()
	for _, id := range ids {
		if id != ids[0] {
			e.t.Fatalf("racing submissions with one key answered %v, want one id", ids)
		}
	}
	if n, _ := e.s.CountJobs(e.ctx, app.JobFilter{}); n != 1 {
		e.t.Fatalf("%d jobs, want 1", n)
	}
}

// A DLQ move racing a retry and a cancel of the same attempt leaves one
// outcome, and the stats add up to one job.
func testDeadLetterRacingRetryAndCancel(e *env) {
	for round := range 5 {
		e.submitOne("race", "k")
		j := e.claimOne("race")
		var wg sync.WaitGroup
		wg.Add(3)
		go func() {
			defer wg.Done()
			app.Fail(e.ctx, e.s, app.FailRequest{ID: j.ID, Lease: j.Lease, Error: "boom", Retry: false})
		}()
		go func() {
			defer wg.Done()
			app.Fail(e.ctx, e.s, app.FailRequest{ID: j.ID, Lease: j.Lease, Error: "boom", Retry: true})
		}()
		go func() { defer wg.Done(); app.Cancel(e.ctx, e.s, app.CancelRequest{ID: j.ID}) }()
		wg.Wait()
		job, dead, err := e.s.Lookup(e.ctx, j.ID)
		if err != nil || (job == nil) == (dead == nil) {
			e.t.Fatalf("round %d: job %+v, dead row %+v, %v: want exactly one", round, job, dead, err)
		}
		st, err := e.s.Stats(e.ctx)
		var total int64
		for _, q := range st {
			if q.Queue == "race" {
				total = q.Total
			}
		}
		if err != nil || total != int64(round+1) {
			e.t.Fatalf("round %d: stats %+v %v, want %d jobs in all", round, st, err, round+1)
		}
		if job != nil && job.Status == app.StatusQueued { // retried: leave it out of the next claims
			app.Cancel(e.ctx, e.s, app.CancelRequest{ID: j.ID})
		}
	}
}

// A kind whose due jobs waited UnclaimedAfter with no job of it started
// meanwhile shows in the stats; a kind a worker claims, slowly, does not.
func testStatsFlagUnclaimedKinds(e *env) {
	svc := e.service(nil)
	// "re": the job claimed lately (1) is not the newest done one (2).
	for _, p := range []int{0, -1, 1} {
		e.submitOne("r", "re", func(nj *app.NewJob) { nj.Priority = p })
	}
	e.complete(e.claimOne("r"), `1`) // job 2, now
	e.submitOne("q", "tpyo")
	e.submitN(2, "q", "slow")
	e.clock.Advance(app.UnclaimedAfter - time.Minute)
	slow, err := e.s.Claim(e.ctx, app.ClaimRequest{Queue: "q", WorkerID: "w1", Limit: 1, Kinds: []string{"slow"}})
	if err != nil || len(slow) != 1 {
		e.t.Fatalf("claim of a slow job: %v %v", slow, err)
	}
	e.complete(slow[0], `1`) // claimed a minute before the wait is long
	e.clock.Advance(2 * time.Minute)
	e.complete(e.claimOne("r"), `1`) // job 1, after the wait grew long; job 3 still waits
	e.submitOne("q", "fresh")
	// Stats waits a bounded time for its look at the unclaimed kinds (a
	// deep unclaimed kind takes seconds to count) and the look goes on
	// behind it, so on a busy machine a later Stats has it.
	st, err := svc.Stats(e.ctx)
	for deadline := time.Now().Add(5 * time.Second); err == nil && len(st.UnclaimedKinds) == 0 && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
		st, err = svc.Stats(e.ctx)
	}
	if err != nil || len(st.UnclaimedKinds) != 1 {
		e.t.Fatalf("unclaimed kinds %+v %v, want tpyo alone", st, err)
	}
	if u := st.UnclaimedKinds[0]; u.Queue != "q" || u.Kind != "tpyo" || u.Queued != 1 || u.OldestAge < app.UnclaimedAfter.Seconds() {
		e.t.Fatalf("unclaimed kind %+v, want q/tpyo with 1 job waiting over %v", u, app.UnclaimedAfter)
	}
}

// The DLQ alert hook submits one job to its queue when a queue's
// dead-letter rows reach the threshold, and no second one while it stays
// over.
func testDLQAlertHook(e *env) {
	svc := e.service(&app.Config{DLQAlert: app.DLQAlert{Queue: "alerts", Threshold: 2}})
	m := &app.Maintainer{Service: svc}
	e.deadLetter(e.submitOne("q", "k"))
	if err := m.AlertDLQ(e.ctx); err != nil {
		e.t.Fatal(err)
	}
	if n, _ := e.s.CountJobs(e.ctx, app.JobFilter{Queue: "alerts"}); n != 0 {
		e.t.Fatalf("%d alerts under the threshold", n)
	}
	e.deadLetter(e.submitOne("q", "k"))
	e.clock.Advance(time.Minute)
	m.AlertDLQ(e.ctx)
	e.deadLetter(e.submitOne("q", "k"))
	e.clock.Advance(time.Minute)
	m.AlertDLQ(e.ctx)
	alerts, _ := e.s.List(e.ctx, app.JobFilter{Queue: "alerts"})
	if len(alerts) != 1 || alerts[0].Kind != app.AlertKind || !strings.Contains(string(alerts[0].Payload), `"queue":"q"`) {
		e.t.Fatalf("alerts %+v, want one dlq.alert for queue q", alerts)
	}
}

// A dead-letter row is never overwritten: inserting one for an id that has
// a row fails, on every store, and the row stays as it was.
func testDeadLetterRowIsNeverOverwritten(e *env) {
	d := e.deadLetter(e.submitOne("q", "k"))
	again := *d
	again.Reason, again.LastError = app.ReasonAdminMove, "overwritten"
	err := e.s.Write(e.ctx, func(tx app.Tx) error { return tx.InsertDead(&again) })
	if err == nil {
		e.t.Fatal("a second dead-letter row for the same id was stored")
	}
	if got := e.dead(d.ID); got.Reason != d.Reason || got.LastError != d.LastError {
		e.t.Fatalf("the row after a refused insert: %+v, want it as it was", got)
	}
}
