package storetest

import (
	"cmp"
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
	extraCases["SuggestValues"] = testSuggestValues
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
