package storetest

import (
	"cmp"
	"encoding/json"
	"errors"
	"slices"
	"time"

	"github.com/queuehq/queue/app"
)

// The operations console's listings (issue 28): the retrying status, the
// run_at order with its cursor, kind prefixes and totals, the same on
// every store.

func init() {
	extraCases["ListRetrying"] = testListRetrying
	extraCases["ListByRunAtPages"] = testListByRunAtPages
	extraCases["ListKindPrefix"] = testListKindPrefix
	extraCases["ListCountsTotal"] = testListCountsTotal
	extraCases["ListCountCap"] = testListCountCap
	extraCases["SuggestValues"] = testSuggestValues
	extraCases["LiveBulkDelete"] = testLiveBulkDelete
	extraCases["LiveDeleteOfAWorkflowStep"] = testLiveDeleteOfAWorkflowStep

	faultCases = append(faultCases,
		faultCase{"bulk delete of finished jobs, at its second job", app.FaultDelete, 1, func(e *env) func() error {
			e.submitN(3, "q", "k")
			for range 2 {
				e.complete(e.claimOne("q"), `1`)
			}
			c := e.claimOne("q")
			e.appendLog(c, 1000, "a line that goes with its job")
			e.complete(c, `1`)
			return func() error {
				_, err := e.service(nil).BulkLive(e.ctx, app.LiveDelete, app.LiveBulkInput{Queue: "q"}, "tester")
				return err
			}
		}},
	)
}

// listIDs is the ids List finds with f (ascending, up to 1000), after
// checking that CountJobs agrees.
func (e *env) listIDs(f app.JobFilter) []int64 {
	e.t.Helper()
	f.Asc, f.Limit = true, 1000
	jobs, err := e.s.List(e.ctx, f)
	if err != nil {
		e.t.Fatalf("List(%+v): %v", f, err)
	}
	if n, err := e.s.CountJobs(e.ctx, f); err != nil || n != len(jobs) {
		e.t.Fatalf("CountJobs(%+v) = %d, %v; List found %d", f, n, err, len(jobs))
	}
	return ids(jobs)
}

func testListRetrying(e *env) {
	due := e.submitOne("r1", "k")
	e.fail(e.claimOne("r1"), true) // back in 10 s
	running := e.submitOne("r5", "k")
	e.fail(e.claimOne("r5"), true)
	e.clock.Advance(11 * time.Second)
	e.claimOne("r5") // processing again, with an attempt behind it
	waiting := e.submitOne("r2", "k")
	e.fail(e.claimOne("r2"), true) // back in 10 s from now
	fresh := e.submitOne("r1", "k")
	later := e.submitOne("r3", "k", withRunAt(e.clock.Now().Add(time.Hour)))
	finished := e.submitOne("r4", "k")
	e.complete(e.claimOne("r4"), `1`)

	if got, want := e.listIDs(app.JobFilter{Status: app.StatusRetrying}), []int64{due.ID, waiting.ID}; !slices.Equal(got, want) {
		e.t.Fatalf("retrying = %v, want %v (the due one and the one backing off; not fresh %d, scheduled %d, done %d, processing %d)",
			got, want, fresh.ID, later.ID, finished.ID, running.ID)
	}
	if got, want := e.listIDs(app.JobFilter{Status: app.StatusRetrying, Queue: "r2"}), []int64{waiting.ID}; !slices.Equal(got, want) {
		e.t.Errorf("retrying in r2 = %v, want %v", got, want)
	}
	if got, want := e.listIDs(app.JobFilter{Status: "scheduled", Retried: true}), []int64{waiting.ID}; !slices.Equal(got, want) {
		e.t.Errorf("scheduled and retried = %v, want %v", got, want)
	}
	// Retry now on the retrying view runs the one backing off; the due
	// one has nothing to wait for.
	res, err := e.service(nil).BulkLive(e.ctx, app.LiveRetry, app.LiveBulkInput{Status: app.StatusRetrying, AllowAll: true}, "tester")
	if err != nil || res.Matched != 2 || res.Changed != 1 || res.Skipped != 1 {
		e.t.Fatalf("retry now of the retrying jobs = %+v, %v; want 2 matched, 1 changed", res, err)
	}
	if got := e.get(waiting.ID); got.RunAt.After(e.clock.Now()) || got.Attempts != 1 {
		e.t.Errorf("retried job: run_at %v (now %v), attempts %d; want due now, its attempt kept", got.RunAt, e.clock.Now(), got.Attempts)
	}
	page, err := e.service(nil).List(e.ctx, app.ListInput{Status: app.StatusRetrying, Count: true})
	if err != nil || len(page.Jobs) != 2 || page.Total == nil || *page.Total != 2 {
		e.t.Fatalf("Service.List(retrying, count) = %+v, %v", page, err)
	}
}

func testListByRunAtPages(e *env) {
	now := e.clock.Now()
	// Run times out of id order, with ties that straddle the pages.
	offsets := []time.Duration{5, 1, 3, 1, 1, 5, 2, 3, 1, 4, 5}
	var jobs []*app.Job
	for _, o := range offsets {
		jobs = append(jobs, e.submitOne("ra", "k", withRunAt(now.Add(o*time.Minute))))
	}
	e.submitOne("other", "k", withRunAt(now.Add(-time.Hour))) // filtered out by the queue
	want := slices.Clone(jobs)
	slices.SortFunc(want, func(a, b *app.Job) int { return cmp.Or(a.RunAt.Compare(b.RunAt), cmp.Compare(a.ID, b.ID)) })
	svc := e.service(nil)
	for _, asc := range []bool{true, false} {
		for _, limit := range []int{1, 2, 3, 4} {
			var got []int64
			cursor := ""
			for pages := 0; ; pages++ {
				if pages > len(jobs)+1 {
					e.t.Fatalf("limit %d asc %v: the pages never end", limit, asc)
				}
				page, err := svc.List(e.ctx, app.ListInput{Queue: "ra", Order: app.OrderRunAt, Asc: asc, Limit: limit, Cursor: cursor})
				if err != nil {
					e.t.Fatalf("List(run_at, limit %d, asc %v, cursor %q): %v", limit, asc, cursor, err)
				}
				got = append(got, ids(page.Jobs)...)
				if page.NextCursor == "" {
					break
				}
				cursor = page.NextCursor
			}
			w := ids(want)
			if !asc {
				slices.Reverse(w)
			}
			if !slices.Equal(got, w) {
				e.t.Fatalf("run_at order, limit %d, asc %v: %v, want %v", limit, asc, got, w)
			}
		}
	}
	// With a status: the scheduled ones, soonest first.
	e.clock.Advance(90 * time.Second) // the 1-minute ones are due now
	page, err := svc.List(e.ctx, app.ListInput{Queue: "ra", Status: "scheduled", Order: app.OrderRunAt, Asc: true, Limit: 2})
	if err != nil || len(page.Jobs) != 2 || page.Jobs[0].ID != jobs[6].ID || page.Jobs[1].ID != jobs[2].ID {
		e.t.Fatalf("scheduled by run_at = %v, %v; want [%d %d] (2 and 3 minutes)", ids(page.Jobs), err, jobs[6].ID, jobs[2].ID)
	}
	// A cursor of the other order, or of nothing, is refused.
	idCursor := app.EncodeCursor(jobs[3].ID, true)
	var inv *app.InvalidError
	if _, err := svc.List(e.ctx, app.ListInput{Queue: "ra", Order: app.OrderRunAt, Cursor: idCursor}); !errors.As(err, &inv) || inv.Field != "cursor" {
		e.t.Errorf("run_at listing with an id cursor: %v, want invalid cursor", err)
	}
	if _, err := svc.List(e.ctx, app.ListInput{Queue: "ra", Cursor: page.NextCursor}); !errors.As(err, &inv) || inv.Field != "cursor" {
		e.t.Errorf("id listing with a run_at cursor: %v, want invalid cursor", err)
	}
	for _, bad := range []string{"cmEx", "%27;--", "cmE1LjA", "cmF4LjE"} {
		if _, err := svc.List(e.ctx, app.ListInput{Order: app.OrderRunAt, Cursor: bad}); !errors.As(err, &inv) || inv.Field != "cursor" {
			e.t.Errorf("cursor %q: %v, want invalid cursor", bad, err)
		}
	}
	if _, err := svc.List(e.ctx, app.ListInput{Order: "priority"}); !errors.As(err, &inv) || inv.Field != "sort" {
		e.t.Errorf("order priority: %v, want invalid sort", err)
	}
	if _, err := svc.List(e.ctx, app.ListInput{Order: app.OrderRunAt, Status: "dead_letter"}); !errors.As(err, &inv) || inv.Field != "sort" {
		e.t.Errorf("run_at order of the dead letters: %v, want invalid sort", err)
	}
}

func testListKindPrefix(e *env) {
	kinds := []string{"email.send", "email.bounce", "email", "emailx", "sms.send", "a%b", "axb", "a_b", "a%", "A%b", "b"}
	byKind := map[string]int64{}
	for _, k := range kinds {
		byKind[k] = e.submitOne("kp", k).ID
	}
	pick := func(ks ...string) []int64 {
		var out []int64
		for _, k := range ks {
			out = append(out, byKind[k])
		}
		slices.Sort(out)
		return out
	}
	for _, c := range []struct {
		prefix string
		want   []int64
	}{
		{"email.", pick("email.send", "email.bounce")},
		{"email", pick("email.send", "email.bounce", "email", "emailx")},
		{"email.send", pick("email.send")},
		{"a%", pick("a%b", "a%")}, // % is a plain character, no wildcard
		{"a_", pick("a_b")},       // as is _
		{"a", pick("a%b", "axb", "a_b", "a%")},
		{"A", pick("A%b")}, // case counts
		{"c", nil},
	} {
		if got := e.listIDs(app.JobFilter{KindPrefix: c.prefix}); !slices.Equal(got, c.want) {
			e.t.Errorf("kind prefix %q = %v, want %v", c.prefix, got, c.want)
		}
	}
	if got, want := e.listIDs(app.JobFilter{KindPrefix: "email", Kind: "emailx"}), pick("emailx"); !slices.Equal(got, want) {
		e.t.Errorf("prefix with kind = %v, want %v", got, want)
	}
	// The dead-letter rows take a prefix too.
	d := e.deadLetter(e.submitOne("kpd", "email.dead"))
	e.deadLetter(e.submitOne("kpd", "sms.dead"))
	rows, err := e.s.ListDead(e.ctx, app.DeadFilter{KindPrefix: "email.", Limit: 10})
	if err != nil || len(rows) != 1 || rows[0].ID != d.ID {
		e.t.Fatalf("dead rows with prefix email. = %v, %v; want [%d]", rows, err, d.ID)
	}
	page, err := e.service(nil).List(e.ctx, app.ListInput{Status: "dead_letter", KindPrefix: "email.", Count: true})
	if err != nil || len(page.Jobs) != 1 || page.Total == nil || *page.Total != 1 {
		e.t.Fatalf("Service.List(dead_letter, prefix, count) = %+v, %v", page, err)
	}
	var inv *app.InvalidError
	if _, err := e.service(nil).List(e.ctx, app.ListInput{KindPrefix: "a%"}); !errors.As(err, &inv) || inv.Field != "kind_prefix" {
		e.t.Errorf("kind_prefix a%%: %v, want invalid kind_prefix (not a kind's characters)", err)
	}
}

func testListCountsTotal(e *env) {
	svc := e.service(nil)
	e.submitN(7, "ct", "k")
	e.submitN(2, "other", "k")
	page, err := svc.List(e.ctx, app.ListInput{Queue: "ct", Limit: 3})
	if err != nil || page.Total != nil {
		e.t.Fatalf("without count: total %v, %v; want none", page.Total, err)
	}
	page, err = svc.List(e.ctx, app.ListInput{Queue: "ct", Limit: 3, Count: true})
	if err != nil || page.Total == nil || *page.Total != 7 || len(page.Jobs) != 3 {
		e.t.Fatalf("count: %+v, %v; want 3 jobs of a total of 7", page, err)
	}
	// The total is the filter's, not what is left after the cursor.
	page, err = svc.List(e.ctx, app.ListInput{Queue: "ct", Limit: 3, Count: true, Cursor: page.NextCursor})
	if err != nil || page.Total == nil || *page.Total != 7 {
		e.t.Fatalf("count on the second page: %+v, %v; want 7", page, err)
	}
	page, err = svc.List(e.ctx, app.ListInput{Queue: "ct", Limit: 3, Count: true, Order: app.OrderRunAt, Asc: true})
	if err == nil {
		page, err = svc.List(e.ctx, app.ListInput{Queue: "ct", Limit: 3, Count: true, Order: app.OrderRunAt, Asc: true, Cursor: page.NextCursor})
	}
	if err != nil || page.Total == nil || *page.Total != 7 {
		e.t.Fatalf("count on a run_at page: %+v, %v; want 7", page, err)
	}
	e.deadLetter(e.submitOne("ctd", "k"))
	e.deadLetter(e.submitOne("ctd", "k"))
	page, err = svc.List(e.ctx, app.ListInput{Status: "dead_letter", Queue: "ctd", Limit: 1, Count: true})
	if err != nil || page.Total == nil || *page.Total != 2 || len(page.Jobs) != 1 {
		e.t.Fatalf("dead-letter count: %+v, %v; want 1 row of 2", page, err)
	}
}

// A capped count stops at the cap's next job: CountJobs answers at most
// CountCap+1; List says Total is the cap and that it was reached.
func testListCountCap(e *env) {
	e.submitN(7, "cc", "k")
	e.submitN(3, "other", "k")
	for _, c := range []struct{ cap, want int }{{0, 7}, {1, 2}, {3, 4}, {6, 7}, {7, 7}, {100, 7}} {
		if n, err := e.s.CountJobs(e.ctx, app.JobFilter{Queue: "cc", CountCap: c.cap}); err != nil || n != c.want {
			e.t.Errorf("CountJobs(queue cc, cap %d) = %d, %v; want %d", c.cap, n, err, c.want)
		}
	}
	if n, err := e.s.CountJobs(e.ctx, app.JobFilter{Status: "queued", Kind: "k", CountCap: 8}); err != nil || n != 9 {
		e.t.Errorf("CountJobs(queued, cap 8) of 10 = %d, %v; want 9", n, err)
	}
	svc := e.service(nil)
	for _, c := range []struct {
		cap, total int
		capped     bool
	}{{0, 7, false}, {5, 5, true}, {6, 6, true}, {7, 7, false}, {10_000, 7, false}} {
		page, err := svc.List(e.ctx, app.ListInput{Queue: "cc", Limit: 2, Count: true, CountCap: c.cap})
		if err != nil || page.Total == nil || *page.Total != c.total || page.TotalCapped != c.capped || len(page.Jobs) != 2 {
			e.t.Errorf("List(cc, count, cap %d) = %+v, %v; want total %d, capped %v", c.cap, page, err, c.total, c.capped)
		}
	}
	// In the run order too (its own cursor, the same count).
	page, err := svc.List(e.ctx, app.ListInput{Queue: "cc", Limit: 2, Count: true, CountCap: 3, Order: app.OrderRunAt, Asc: true})
	if err != nil || page.Total == nil || *page.Total != 3 || !page.TotalCapped {
		e.t.Errorf("List(cc, run_at, cap 3) = %+v, %v; want total 3, capped", page, err)
	}
}

func testSuggestValues(e *env) {
	for _, k := range []string{"email.send", "email.send", "email.bounce", "sms.send", "a%b", "a_b", "axb", "emailx"} {
		e.submitOne("sg.one", k, withTags("vip", "vip.gold"))
	}
	e.submitOne("sg.two", "email.send", withTags("bulk", "a%z"))
	e.complete(e.claimOne("sg.two"), `1`) // a finished job's kind and tags count too
	e.submitOne("other", "zzz", withTags("a_z"))
	values := func(field, prefix string, limit int) []string {
		e.t.Helper()
		v, err := e.s.Values(e.ctx, field, prefix, limit)
		if err != nil {
			e.t.Fatalf("Values(%s, %q, %d): %v", field, prefix, limit, err)
		}
		return v
	}
	for _, c := range []struct {
		field, prefix string
		limit         int
		want          []string
	}{
		{"kind", "email.", 20, []string{"email.bounce", "email.send"}},
		{"kind", "email", 20, []string{"email.bounce", "email.send", "emailx"}},
		{"kind", "", 20, []string{"a%b", "a_b", "axb", "email.bounce", "email.send", "emailx", "sms.send", "zzz"}},
		{"kind", "", 3, []string{"a%b", "a_b", "axb"}},
		{"kind", "a%", 20, []string{"a%b"}},
		{"kind", "a_", 20, []string{"a_b"}},
		{"kind", "nothing", 20, nil},
		{"tag", "vip", 20, []string{"vip", "vip.gold"}},
		{"tag", "", 20, []string{"a%z", "a_z", "bulk", "vip", "vip.gold"}},
		{"tag", "a_", 20, []string{"a_z"}},
		{"tag", "", 1, []string{"a%z"}},
	} {
		if got := values(c.field, c.prefix, c.limit); !slices.Equal(got, c.want) {
			e.t.Errorf("Values(%s, %q, %d) = %q, want %q", c.field, c.prefix, c.limit, got, c.want)
		}
	}
	svc := e.service(nil)
	if got, err := svc.Suggest(e.ctx, "queue", "sg.", 0); err != nil || !slices.Equal(got, []string{"sg.one", "sg.two"}) {
		e.t.Errorf("Suggest(queue, sg.) = %q, %v", got, err)
	}
	if got, err := svc.Suggest(e.ctx, "queue", "", 1); err != nil || !slices.Equal(got, []string{"other"}) {
		e.t.Errorf("Suggest(queue, \"\", 1) = %q, %v; want [other]", got, err)
	}
	if got, err := svc.Suggest(e.ctx, "kind", "sms", 0); err != nil || !slices.Equal(got, []string{"sms.send"}) {
		e.t.Errorf("Suggest(kind, sms) = %q, %v", got, err)
	}
	if got, err := svc.Suggest(e.ctx, "tag", "none", 0); err != nil || got == nil || len(got) != 0 {
		e.t.Errorf("Suggest(tag, none) = %#v, %v; want an empty list", got, err)
	}
	var inv *app.InvalidError
	for _, c := range []struct {
		field, prefix string
		limit         int
		bad           string
	}{
		{"payload", "", 0, "field"}, {"kind", "a%", 0, "prefix"}, {"kind", "", 101, "limit"}, {"tag", "", -1, "limit"},
	} {
		if _, err := svc.Suggest(e.ctx, c.field, c.prefix, c.limit); !errors.As(err, &inv) || inv.Field != c.bad {
			e.t.Errorf("Suggest(%q, %q, %d): %v, want invalid %s", c.field, c.prefix, c.limit, err, c.bad)
		}
	}
}

// statsOf is queue's counts as Stats gives them (zero if it has none).
func (e *env) statsOf(queue string) app.QueueStats {
	e.t.Helper()
	st, err := e.s.Stats(e.ctx)
	if err != nil {
		e.t.Fatalf("Stats: %v", err)
	}
	for _, q := range st {
		if q.Queue == queue {
			return q
		}
	}
	return app.QueueStats{Queue: queue}
}

func testLiveBulkDelete(e *env) {
	svc := e.service(nil)
	dead := e.deadLetter(e.submitOne("dq", "k"))
	queued := e.submitOne("dq", "k")
	later := e.submitOne("dq", "k", withRunAt(e.clock.Now().Add(time.Hour)))
	finished := e.submitN(4, "dq", "k", withRunAt(e.clock.Now().Add(-time.Minute)))
	var done []*app.Job
	for range 2 {
		done = append(done, e.claimOne("dq"))
	}
	e.complete(done[0], `1`)
	logged := done[1]
	e.appendLog(logged, 1000, "first", "second")
	e.complete(logged, `2`)
	if _, err := app.Cancel(e.ctx, e.s, app.CancelRequest{ID: finished[2].ID}); err != nil {
		e.t.Fatal(err)
	}
	running := e.claimOne("dq") // finished[3]
	other := e.submitOne("keep", "k")
	e.complete(e.claimOne("keep"), `1`)
	gone := []int64{finished[0].ID, finished[1].ID, finished[2].ID}

	before := e.snapshot()
	dry, err := svc.BulkLive(e.ctx, app.LiveDelete, app.LiveBulkInput{Queue: "dq", DryRun: true}, "tester")
	if err != nil {
		e.t.Fatal(err)
	}
	if dry.Matched != 6 || dry.Changed != 3 || dry.Skipped != 3 || len(dry.Sample) != 3 || dry.Bound == "" {
		e.t.Fatalf("dry run = %+v, want 6 matched (not the dead-letter row), 3 changed (done, done, cancelled), 3 skipped", dry)
	}
	if e.snapshot() != before {
		e.t.Fatal("the dry run changed the store")
	}
	was := e.statsOf("dq")
	res, err := svc.BulkLive(e.ctx, app.LiveDelete, app.LiveBulkInput{Queue: "dq", Bound: dry.Bound}, "tester")
	if err != nil || res.Matched != 6 || res.Changed != 3 || res.Skipped != 3 {
		e.t.Fatalf("delete = %+v, %v; want 6 matched, 3 changed, 3 skipped", res, err)
	}
	for _, id := range gone {
		if j, d, err := e.s.Lookup(e.ctx, id); !errors.Is(err, app.ErrNotFound) {
			e.t.Errorf("deleted job %d: %v %v %v, want not found", id, j, d, err)
		}
	}
	for _, id := range []int64{queued.ID, later.ID, running.ID, other.ID} {
		e.get(id)
	}
	e.dead(dead.ID)
	if l := e.jobLog(logged.ID, 0); len(l.Lines) != 0 && l.Attempt != 0 {
		// The log goes with its job, as retention takes it (the memory
		// store's sweep takes it later): it must not outlive the sweep.
		if _, err := e.s.DeleteOld(e.ctx, app.DeleteOldRequest{What: app.OldLogs, Before: e.clock.Now().Add(time.Hour), Limit: 1000}); err != nil {
			e.t.Fatal(err)
		}
		if l := e.jobLog(logged.ID, 0); len(l.Lines) != 0 {
			e.t.Errorf("the deleted job's log is still there after retention: %+v", l)
		}
	}
	st := e.statsOf("dq")
	if st.Done != 0 || st.Cancelled != 0 || st.Queued != was.Queued || st.Scheduled != was.Scheduled || st.Processing != 1 ||
		st.DeadLetter != 1 || st.Total != was.Total-3 {
		e.t.Errorf("stats after the delete: %+v (before %+v), want done and cancelled 0, the rest as they were", st, was)
	}
	if n, _ := e.s.CountJobs(e.ctx, app.JobFilter{Queue: "dq"}); n != 3 {
		e.t.Errorf("%d jobs left in dq, want 3", n)
	}
	audit, err := e.s.ListAudit(e.ctx, app.AuditFilter{Action: "jobs.delete", Limit: 10})
	if err != nil || len(audit) != 1 || audit[0].Count != 3 || audit[0].Actor != "tester" {
		e.t.Fatalf("audit = %+v, %v; want one jobs.delete entry by tester, count 3", audit, err)
	}
	var filter map[string]any
	if err := json.Unmarshal(audit[0].Filter, &filter); err != nil || filter["queue"] != "dq" {
		e.t.Errorf("audit filter %s, want queue dq", audit[0].Filter)
	}
	// A status that is not finished deletes nothing; nor do ids of live jobs.
	for _, in := range []app.LiveBulkInput{{Queue: "dq", Status: "queued"}, {IDs: []int64{queued.ID, running.ID}}} {
		res, err := svc.BulkLive(e.ctx, app.LiveDelete, in, "tester")
		if err != nil || res.Changed != 0 {
			e.t.Errorf("delete of %+v = %+v, %v; want nothing changed", in, res, err)
		}
	}
	if n, _ := e.s.CountJobs(e.ctx, app.JobFilter{}); n != 4 {
		e.t.Errorf("%d jobs in all, want 4", n)
	}
	// The rule itself refuses a job that is not finished, whoever calls it.
	err = e.s.Write(e.ctx, func(tx app.Tx) error {
		j, err := tx.Job(queued.ID)
		if err != nil {
			return err
		}
		return app.DeleteFinished(tx, j)
	})
	if !errors.Is(err, app.ErrIllegalTransition) {
		e.t.Errorf("DeleteFinished of a queued job: %v, want illegal transition", err)
	}
	e.get(queued.ID)
}

func testLiveDeleteOfAWorkflowStep(e *env) {
	v := e.submitWorkflow(app.WorkflowInput{Name: "del", Steps: []app.StepInput{step("A"), step("B", "A")}})
	a := e.wantClaimable("A")["A"]
	e.complete(a, `1`)
	res, err := e.service(nil).BulkLive(e.ctx, app.LiveDelete, app.LiveBulkInput{IDs: []int64{a.ID}}, "tester")
	if err != nil || res.Changed != 1 {
		e.t.Fatalf("delete of step A's job = %+v, %v", res, err)
	}
	// The workflow reads on, its step A done without its job, and runs on.
	e.wantWorkflow(v.ID, app.WorkflowRunning, map[string]string{"A": "done"})
	e.complete(e.wantClaimable("B")["B"], `1`)
	e.wantWorkflow(v.ID, app.WorkflowDone, map[string]string{"A": "done", "B": "done"})
	e.clock.Advance(48 * time.Hour)
	if n, err := e.s.DeleteOld(e.ctx, app.DeleteOldRequest{What: app.OldWorkflows, Before: e.clock.Now(), Limit: 100}); err != nil || n != 1 {
		e.t.Fatalf("workflow retention after a step's job was deleted: %d, %v; want 1", n, err)
	}
	if st := e.statsOf("wf"); st.Done != 0 || st.Total != 0 {
		e.t.Errorf("stats of wf after all: %+v, want nothing", st)
	}
}
