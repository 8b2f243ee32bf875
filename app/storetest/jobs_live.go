package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/queuehq/queue/app"
)

// Finding and acting on live jobs (issue 26): the filters of GET /api/jobs
// (payload fields, error text, time ranges) and the bulk cancel, retry
// now, reschedule and re-prioritise, the same on every store.

func init() {
	extraCases["LiveFilterPayload"] = testLiveFilterPayload
	extraCases["LiveFilterPayloadDuplicateKeysAndBigNumbers"] = testLiveFilterPayloadDuplicates
	extraCases["LiveFilterErrorText"] = testLiveFilterErrorText
	extraCases["LiveFilterTimes"] = testLiveFilterTimes
	extraCases["LiveBulkCancel"] = testLiveBulkCancel
	extraCases["LiveBulkGuardAndScope"] = testLiveBulkGuard
	extraCases["LiveBulkRetryRescheduleAndPrioritize"] = testLiveBulkRetryReschedulePrioritize
	extraCases["LiveBulkKeyedJobs"] = testLiveBulkKeyedJobs
	extraCases["LiveBulkInBatches"] = testLiveBulkInBatches
	extraCases["LiveBulkRateSaturates"] = testLiveBulkRateSaturates
	extraCases["FaultLiveBulkAuditsCommittedBatches"] = testFaultLiveBulkAuditsCommittedBatches

	faultCases = append(faultCases,
		faultCase{"bulk cancel of live jobs", app.FaultCancel, 1, func(e *env) func() error {
			e.submitN(3, "q", "k", withPayload(`{"customer":42}`))
			return func() error {
				_, err := e.service(nil).BulkLive(e.ctx, app.LiveCancel, app.LiveBulkInput{JobQuery: payloadIs("customer", "42")}, "tester")
				return err
			}
		}},
		faultCase{"bulk retry now", app.FaultReschedule, 0, func(e *env) func() error {
			e.submitOne("q", "k", func(nj *app.NewJob) { nj.RunAt = e.clock.Now().Add(time.Hour) })
			return func() error {
				_, err := e.service(nil).BulkLive(e.ctx, app.LiveRetry, app.LiveBulkInput{Queue: "q"}, "tester")
				return err
			}
		}},
		faultCase{"bulk reschedule", app.FaultReschedule, 1, func(e *env) func() error {
			e.submitN(2, "q", "k")
			return func() error {
				d := app.Duration(time.Minute)
				_, err := e.service(nil).BulkLive(e.ctx, app.LiveReschedule, app.LiveBulkInput{Queue: "q", Delay: &d}, "tester")
				return err
			}
		}},
		faultCase{"bulk re-prioritise", app.FaultReprioritize, 0, func(e *env) func() error {
			e.submitOne("q", "k")
			return func() error {
				p := 7
				_, err := e.service(nil).BulkLive(e.ctx, app.LivePrioritize, app.LiveBulkInput{Queue: "q", Priority: &p}, "tester")
				return err
			}
		}},
	)
}

func payloadIs(kv ...string) app.JobQuery {
	q := app.JobQuery{Payload: app.PayloadValues{}}
	for i := 0; i < len(kv); i += 2 {
		q.Payload[kv[i]] = kv[i+1]
	}
	return q
}

// liveIDs lists, in id order, the ids of the jobs q finds (with f's other
// fields), and checks that CountJobs agrees.
func (e *env) liveIDs(f app.JobFilter, q app.JobQuery) []int64 {
	e.t.Helper()
	m, err := q.Match(e.clock.Now())
	if err != nil {
		e.t.Fatalf("Match(%+v): %v", q, err)
	}
	f.JobMatch, f.Asc, f.Limit = m, true, 1000
	jobs, err := e.s.List(e.ctx, f)
	if err != nil {
		e.t.Fatalf("List(%+v): %v", q, err)
	}
	n, err := e.s.CountJobs(e.ctx, f)
	if err != nil || n != len(jobs) {
		e.t.Fatalf("CountJobs(%+v) = %d, %v; List found %d", q, n, err, len(jobs))
	}
	ids := []int64{}
	for _, j := range jobs {
		ids = append(ids, j.ID)
	}
	return ids
}

func testLiveFilterPayload(e *env) {
	docs := []string{
		`{"customer":42}`,                           // 0
		`{"customer":42.0}`,                         // 1
		`{"customer":"42"}`,                         // 2
		`{"customer":43}`,                           // 3
		`{"customer":{"id":42}}`,                    // 4
		`{"other":42}`,                              // 5
		`{"address":{"city":"Oslo"}}`,               // 6
		`{"items":[{"sku":"A1"},{"sku":"B2"}]}`,     // 7
		`{"items":{"0":{"sku":"A1"}}}`,              // 8: a key "0" is not an index
		`{"flag":true}`,                             // 9
		`{"flag":"true"}`,                           // 10
		`{"flag":null}`,                             // 11
		`{}`,                                        // 12
		`{"customer":4.2e1,"region":"eu"}`,          // 13
		`{"items":[1,2],"name":"\u00c9cole \"x\""}`, // 14
		`42`,                                     // 15
		`{"customer":"4\u00002","big":1e999999}`, // 16: NUL in a string, a number no store casts
		`{"customer":9007199254740993,"dash-key":1}`, // 17
	}
	var ids []int64
	for _, d := range docs {
		ids = append(ids, e.submitOne("p", "k", withPayload(d)).ID)
	}
	e.submitOne("other-queue", "k", withPayload(`{"customer":42}`))
	pick := func(idx ...int) []int64 {
		out := []int64{}
		for _, i := range idx {
			out = append(out, ids[i])
		}
		return out
	}
	for _, c := range []struct {
		q    app.JobQuery
		want []int64
	}{
		{payloadIs("customer", "42"), pick(0, 1, 2, 13)},
		{payloadIs("customer", "42.0"), pick(0, 1, 13)},
		{payloadIs("customer", "4.2e1"), pick(0, 1, 13)},
		{payloadIs("customer", "042"), pick()}, // not a JSON number, no string "042"
		{payloadIs("customer.id", "42"), pick(4)},
		{payloadIs("address.city", "Oslo"), pick(6)},
		{payloadIs("address.city", "oslo"), pick()},
		{payloadIs("items.0.sku", "A1"), pick(7)},
		{payloadIs("items.1.sku", "B2"), pick(7)},
		{payloadIs("items.5.sku", "A1"), pick()},
		{payloadIs("items.-1", "2"), pick()}, // "-1" is a key, never "the last element"
		{payloadIs("items.1", "2"), pick(14)},
		{payloadIs("flag", "true"), pick(9, 10)},
		{payloadIs("flag", "null"), pick(11)},
		{payloadIs("flag", "false"), pick()},
		{payloadIs("missing", "null"), pick()},
		{payloadIs("customer", "42", "region", "eu"), pick(13)},
		{payloadIs("name", `École "x"`), pick(14)},
		{payloadIs("customer", "42"), pick(0, 1, 2, 13)}, // not 16: its NUL matches nothing
		{payloadIs("big", "1e999999"), pick()},
		{payloadIs("customer", "9007199254740993"), pick(17)},
		{payloadIs("dash-key", "1"), pick(17)},
		{payloadIs("customer", "1e400"), pick()}, // not a float64: compared as a string only
	} {
		got := e.liveIDs(app.JobFilter{Queue: "p"}, c.q)
		if !slices.Equal(got, c.want) {
			e.t.Errorf("payload %v: jobs %v, want %v", c.q.Payload, got, c.want)
		}
	}
	// Bad paths and values are errors naming their parameter.
	for _, q := range []app.JobQuery{payloadIs("a..b", "1"), payloadIs("a b", "1"), payloadIs("items.01", "1"), payloadIs("x", "a\x00b"), payloadIs("x", "a\uFFFDb"),
		payloadIs("a.b.c.d.e.f.g.h.i", "1")} {
		var ie *app.InvalidError
		if _, err := q.Match(e.clock.Now()); !errors.As(err, &ie) || !strings.HasPrefix(ie.Field, "payload.") {
			e.t.Errorf("Match(%v) = %v, want an invalid payload.* field", q.Payload, err)
		}
	}
}

// failWith claims j and fails its attempt with msg (retried).
// A key given twice is its last value, and numbers compare exactly (not as
// float64), on every store: a bulk action with the same filter takes the
// same jobs wherever it runs.
func testLiveFilterPayloadDuplicates(e *env) {
	docs := []string{
		`{"c":1,"c":2}`,                // 0
		`{"a":{"c":1},"a":{"c":2}}`,    // 1
		`{"n":9007199254740993.0}`,     // 2
		`{"n":9007199254740992}`,       // 3
		`{"n":0.10000000000000001}`,    // 4
		`{"n":0.1}`,                    // 5
		`{"n":18446744073709551616}`,   // 6
		`{"n":18446744073709551615}`,   // 7
		`{"n":1,"n":9007199254740993}`, // 8
	}
	var ids []int64
	for _, d := range docs {
		ids = append(ids, e.submitOne("pd", "k", withPayload(d)).ID)
	}
	pick := func(idx ...int) []int64 {
		out := []int64{}
		for _, i := range idx {
			out = append(out, ids[i])
		}
		return out
	}
	for _, c := range []struct {
		q    app.JobQuery
		want []int64
	}{
		{payloadIs("c", "2"), pick(0)},
		{payloadIs("c", "1"), pick()},
		{payloadIs("a.c", "2"), pick(1)},
		{payloadIs("a.c", "1"), pick()},
		{payloadIs("n", "9007199254740993"), pick(2, 8)},
		{payloadIs("n", "9007199254740992"), pick(3)},
		{payloadIs("n", "0.10000000000000001"), pick(4)},
		{payloadIs("n", "0.1"), pick(5)},
		{payloadIs("n", "18446744073709551616"), pick(6)},
		{payloadIs("n", "18446744073709551615"), pick(7)},
		{payloadIs("n", "1"), pick()},
	} {
		got := e.liveIDs(app.JobFilter{Queue: "pd"}, c.q)
		if !slices.Equal(got, c.want) {
			e.t.Errorf("payload %v: jobs %v, want %v", c.q.Payload, got, c.want)
		}
	}
}

func (e *env) failWith(queue, msg string) *app.Job {
	e.t.Helper()
	j := e.claimOne(queue)
	if _, err := app.Fail(e.ctx, e.s, app.FailRequest{ID: j.ID, Lease: j.Lease, Error: msg, Retry: true, Backoff: fixedBackoff}); err != nil {
		e.t.Fatalf("Fail(%d): %v", j.ID, err)
	}
	return j
}

func testLiveFilterErrorText(e *env) {
	msgs := []string{"Connection TIMEOUT after 30s", "disk 50% full", "disk 50x full", "bad_key", "badxkey", "nul\x00byte here"}
	var ids []int64
	for _, m := range msgs {
		e.submitOne("e", "k")
		ids = append(ids, e.failWith("e", m).ID)
	}
	// A second attempt of the first job fails otherwise: its first error
	// still counts.
	e.clock.Advance(time.Minute)
	if j := e.failWith("e", "other"); j.ID != ids[0] {
		e.t.Fatalf("claimed %d, want %d", j.ID, ids[0])
	}
	e.submitOne("e", "k") // never failed
	for _, c := range []struct {
		text string
		want []int64
	}{
		{"timeout", []int64{ids[0]}},
		{"TimeOut After", []int64{ids[0]}},
		{"50%", []int64{ids[1]}},  // a LIKE pattern would take "50x" too
		{"d_k", []int64{ids[3]}},  // and "dxk"
		{"%", []int64{ids[1]}},    // a plain character
		{"_", []int64{ids[3]}},    //
		{"byte", []int64{ids[5]}}, // past a NUL
		{"nothing like it", []int64{}},
	} {
		got := e.liveIDs(app.JobFilter{Queue: "e"}, app.JobQuery{Error: c.text})
		if !slices.Equal(got, c.want) {
			e.t.Errorf("error %q: jobs %v, want %v", c.text, got, c.want)
		}
	}
	if got := e.liveIDs(app.JobFilter{Queue: "e", Status: "scheduled"}, app.JobQuery{Error: "TIMEOUT"}); len(got) != 1 {
		e.t.Errorf("error with status scheduled: %v, want the one job", got)
	}
}

func testLiveFilterTimes(e *env) {
	t0 := e.clock.Now()
	a := e.submitOne("t", "k")                        // created t0, run t0
	e.clock.Advance(time.Hour)                        // t0+1h
	b := e.submitOne("t", "k", func(nj *app.NewJob) { // created t0+1h, runs t0+3h
		nj.RunAt = e.clock.Now().Add(2 * time.Hour)
	})
	e.clock.Advance(time.Hour) // t0+2h
	c := e.submitOne("t", "k")
	done := e.claimOne("t") // a (the oldest due)
	e.complete(done, `1`)
	e.clock.Advance(time.Hour) // t0+3h
	at := func(d time.Duration) string { return t0.Add(d).Format(time.RFC3339Nano) }
	for _, cs := range []struct {
		q    app.JobQuery
		want []int64
	}{
		{app.JobQuery{CreatedAfter: at(time.Hour)}, []int64{b.ID, c.ID}}, // at or after
		{app.JobQuery{CreatedBefore: at(time.Hour)}, []int64{a.ID}},      // strictly before
		{app.JobQuery{CreatedAfter: at(30 * time.Minute), CreatedBefore: at(90 * time.Minute)}, []int64{b.ID}},
		{app.JobQuery{CreatedAfter: "90m"}, []int64{c.ID}}, // a duration: back from now (t0+3h)
		{app.JobQuery{RunAfter: at(150 * time.Minute)}, []int64{b.ID}},
		{app.JobQuery{RunBefore: at(time.Hour)}, []int64{a.ID}},
		{app.JobQuery{FinishedAfter: at(0)}, []int64{a.ID}}, // unfinished jobs match no finished bound
		{app.JobQuery{FinishedBefore: at(10 * time.Hour)}, []int64{a.ID}},
		{app.JobQuery{FinishedBefore: at(time.Hour)}, []int64{}},
	} {
		if got := e.liveIDs(app.JobFilter{Queue: "t"}, cs.q); !slices.Equal(got, cs.want) {
			e.t.Errorf("%+v: jobs %v, want %v", cs.q, got, cs.want)
		}
	}
	for name, q := range map[string]app.JobQuery{
		"created_after": {CreatedAfter: "yesterday"}, "run_before": {RunBefore: "-1h"}, "finished_after": {FinishedAfter: "2026-13-01T00:00:00Z"},
	} {
		var ie *app.InvalidError
		if _, err := q.Match(e.clock.Now()); !errors.As(err, &ie) || ie.Field != name {
			e.t.Errorf("Match(%+v) = %v, want invalid %s", q, err, name)
		}
	}
}

func testLiveBulkCancel(e *env) {
	svc := e.service(nil)
	c42 := withPayload(`{"customer":42}`)
	queued := e.submitN(3, "c", "k", c42)
	e.submitOne("c", "k", withPayload(`{"customer":7}`))
	running := e.claimOne("c") // queued[0]
	doneJob := e.submitOne("d", "k", c42)
	e.complete(e.claimOne("d"), `1`)
	q := payloadIs("customer", "42")

	before := e.snapshot()
	dry, err := svc.BulkLive(e.ctx, app.LiveCancel, app.LiveBulkInput{JobQuery: q, DryRun: true}, "tester")
	if err != nil {
		e.t.Fatal(err)
	}
	if dry.Matched != 4 || dry.Changed != 3 || dry.Skipped != 1 || dry.Count != 3 || len(dry.Sample) != 3 || dry.Bound == "" || !dry.DryRun {
		e.t.Fatalf("dry run = %+v, want 4 matched, 3 changed (2 queued, 1 processing), 1 skipped (done), a sample and a bound", dry)
	}
	if e.snapshot() != before {
		e.t.Fatal("the dry run changed the store")
	}
	late := e.submitOne("c", "k", c42) // after the count: the bound leaves it alone
	res, err := svc.BulkLive(e.ctx, app.LiveCancel, app.LiveBulkInput{JobQuery: q, Bound: dry.Bound}, "tester")
	if err != nil {
		e.t.Fatal(err)
	}
	if res.Matched != 4 || res.Changed != 3 || res.Skipped != 1 || res.DryRun || res.Sample != nil {
		e.t.Fatalf("cancel = %+v, want 4 matched, 3 changed, 1 skipped", res)
	}
	for _, j := range queued[1:] {
		if got := e.get(j.ID); got.Status != app.StatusCancelled || got.CancelReason != app.CancelRequested {
			e.t.Errorf("queued job %d: %s (%q), want cancelled", j.ID, got.Status, got.CancelReason)
		}
	}
	if got := e.get(running.ID); got.Status != app.StatusProcessing || !got.CancelRequested {
		e.t.Errorf("processing job: %s, cancel_requested %v; want asked to stop", got.Status, got.CancelRequested)
	}
	if got := e.get(doneJob.ID); got.Status != app.StatusDone {
		e.t.Errorf("done job: %s", got.Status)
	}
	if got := e.get(late.ID); got.Status != app.StatusQueued {
		e.t.Errorf("job submitted after the dry run: %s, want left queued", got.Status)
	}
	if n, _ := e.s.CountJobs(e.ctx, app.JobFilter{Status: "queued"}); n != 2 { // customer 7, and late
		e.t.Errorf("%d queued jobs left, want 2", n)
	}
	audit, err := e.s.ListAudit(e.ctx, app.AuditFilter{Action: "jobs.cancel", Limit: 10})
	if err != nil || len(audit) != 1 || audit[0].Count != 3 || audit[0].Actor != "tester" {
		e.t.Fatalf("audit = %+v, %v; want one jobs.cancel entry by tester, count 3", audit, err)
	}
	var filter map[string]any
	if err := json.Unmarshal(audit[0].Filter, &filter); err != nil || fmt.Sprint(filter["payload"]) != "map[customer:42]" || filter["bound"] != dry.Bound {
		e.t.Errorf("audit filter %s, want the payload filter and the bound", audit[0].Filter)
	}
	// Again: the queued ones are gone, the processing one is asked again
	// (nothing new), the rest skipped.
	again, err := svc.BulkLive(e.ctx, app.LiveCancel, app.LiveBulkInput{JobQuery: q, IDs: []int64{queued[1].ID, running.ID}}, "tester")
	if err != nil || again.Matched != 2 || again.Changed != 1 || again.Skipped != 1 {
		e.t.Fatalf("cancel by ids = %+v, %v; want 2 matched, 1 changed (the processing one), 1 skipped", again, err)
	}
}

func testLiveBulkGuard(e *env) {
	svc := e.service(nil)
	e.submitN(2, "g", "k")
	for name, in := range map[string]app.LiveBulkInput{
		"nothing":      {},
		"status alone": {Status: "queued"},
		"a time alone": {JobQuery: app.JobQuery{CreatedBefore: "1h"}},
	} {
		if _, err := svc.BulkLive(e.ctx, app.LiveCancel, in, "tester"); !errors.Is(err, app.ErrLiveFilterRequired) || !errors.Is(err, app.ErrFilterRequired) {
			e.t.Errorf("%s: %v, want ErrLiveFilterRequired (an ErrFilterRequired)", name, err)
		}
	}
	d := app.Duration(time.Minute)
	p := 1
	for name, c := range map[string]struct {
		action, field string
		in            app.LiveBulkInput
	}{
		"unknown action":          {"explode", "action", app.LiveBulkInput{Queue: "g"}},
		"reschedule without time": {app.LiveReschedule, "run_at", app.LiveBulkInput{Queue: "g"}},
		"delay for cancel":        {app.LiveCancel, "run_at", app.LiveBulkInput{Queue: "g", Delay: &d}},
		"rate for cancel":         {app.LiveCancel, "rate", app.LiveBulkInput{Queue: "g", Rate: 5}},
		"priority for retry":      {app.LiveRetry, "priority", app.LiveBulkInput{Queue: "g", Priority: &p}},
		"prioritize without one":  {app.LivePrioritize, "priority", app.LiveBulkInput{Queue: "g"}},
		"dead_letter status":      {app.LiveCancel, "status", app.LiveBulkInput{Queue: "g", Status: "dead_letter"}},
		"bad bound":               {app.LiveCancel, "bound", app.LiveBulkInput{Queue: "g", Bound: "nope"}},
		"bad time":                {app.LiveCancel, "run_after", app.LiveBulkInput{Queue: "g", JobQuery: app.JobQuery{RunAfter: "soon"}}},
	} {
		var ie *app.InvalidError
		if _, err := svc.BulkLive(e.ctx, c.action, c.in, "tester"); !errors.As(err, &ie) || ie.Field != c.field {
			e.t.Errorf("%s: %v, want invalid %s", name, err, c.field)
		}
	}
	if n, _ := e.s.CountJobs(e.ctx, app.JobFilter{Status: "queued"}); n != 2 {
		e.t.Fatalf("refused actions changed jobs: %d queued", n)
	}
	if a, _ := e.s.ListAudit(e.ctx, app.AuditFilter{Limit: 10}); len(a) != 0 {
		e.t.Fatalf("refused actions were audited: %+v", a)
	}
	// allow_all stands for a filter.
	res, err := svc.BulkLive(e.ctx, app.LiveCancel, app.LiveBulkInput{AllowAll: true, DryRun: true}, "tester")
	if err != nil || res.Changed != 2 {
		e.t.Fatalf("allow_all dry run = %+v, %v", res, err)
	}
}

func testLiveBulkRetryReschedulePrioritize(e *env) {
	svc := e.service(nil)
	now := e.clock.Now()
	later := e.submitOne("r", "k", func(nj *app.NewJob) { nj.RunAt = now.Add(time.Hour) })
	due := e.submitOne("r", "k")
	retried := e.submitOne("r2", "k")
	e.failWith("r2", "boom") // queued again, run_at = now + 10s
	running := e.submitOne("r", "k", func(nj *app.NewJob) { nj.Priority = -5 })
	e.claimOne("r") // the priority -5 job goes first

	res, err := svc.BulkLive(e.ctx, app.LiveRetry, app.LiveBulkInput{AllowAll: true}, "tester")
	if err != nil || res.Matched != 4 || res.Changed != 2 || res.Skipped != 2 {
		e.t.Fatalf("retry = %+v, %v; want 4 matched, 2 changed (the scheduled ones), 2 skipped", res, err)
	}
	for _, id := range []int64{later.ID, retried.ID} {
		if j := e.get(id); !j.RunAt.Equal(now) || j.Status != app.StatusQueued {
			e.t.Errorf("retried job %d: run_at %v, status %s; want now (%v), queued", id, j.RunAt, j.Status, now)
		}
	}
	evs, _ := e.s.JobEvents(e.ctx, later.ID)
	if !slices.ContainsFunc(evs, func(ev app.Event) bool { return ev.Type == app.EventRescheduled }) {
		e.t.Errorf("no %s event: %+v", app.EventRescheduled, evs)
	}

	d := app.Duration(10 * time.Minute)
	res, err = svc.BulkLive(e.ctx, app.LiveReschedule, app.LiveBulkInput{Queue: "r", Delay: &d, Rate: 1}, "tester")
	if err != nil || res.Changed != 2 || res.Skipped != 1 {
		e.t.Fatalf("reschedule = %+v, %v; want 2 changed, 1 skipped (processing)", res, err)
	}
	if a, b := e.get(later.ID).RunAt, e.get(due.ID).RunAt; !a.Equal(now.Add(10*time.Minute)) || !b.Equal(now.Add(10*time.Minute+time.Second)) {
		e.t.Errorf("rescheduled at 1/s: run_at %v and %v, want now+10m and a second later", a, b)
	}
	if j := e.get(running.ID); j.Status != app.StatusProcessing {
		e.t.Errorf("the processing job: %s", j.Status)
	}

	p := 9
	res, err = svc.BulkLive(e.ctx, app.LivePrioritize, app.LiveBulkInput{Queue: "r", Priority: &p}, "tester")
	if err != nil || res.Changed != 2 || res.Skipped != 1 {
		e.t.Fatalf("prioritize = %+v, %v", res, err)
	}
	if e.get(later.ID).Priority != 9 || e.get(due.ID).Priority != 9 || e.get(running.ID).Priority != -5 {
		e.t.Errorf("priorities after prioritize: %d %d %d, want 9 9 -5", e.get(later.ID).Priority, e.get(due.ID).Priority, e.get(running.ID).Priority)
	}
	for _, action := range []string{"jobs.retry", "jobs.reschedule", "jobs.prioritize"} {
		if a, _ := e.s.ListAudit(e.ctx, app.AuditFilter{Action: action, Limit: 10}); len(a) != 1 {
			e.t.Errorf("audit of %s: %+v, want one entry", action, a)
		}
	}
}

func testLiveBulkKeyedJobs(e *env) {
	svc := e.service(nil)
	e.setLimits("kq", app.KeyLimits{Concurrency: 1})
	jobs := e.submitN(3, "kq", "k", keyed("A"))
	if e.get(jobs[0].ID).Held || !e.get(jobs[1].ID).Held {
		e.t.Fatalf("key A: want the first released and the others held")
	}
	p := 3
	if _, err := svc.BulkLive(e.ctx, app.LivePrioritize, app.LiveBulkInput{Key: "A", Priority: &p}, "tester"); err != nil {
		e.t.Fatal(err)
	}
	if j := e.get(jobs[2].ID); !j.Held || j.Priority != 3 {
		e.t.Fatalf("held job after prioritize: held %v, priority %d; want still held, 3", j.Held, j.Priority)
	}
	// Cancelling the released job frees its key: the next one is released.
	if _, err := svc.BulkLive(e.ctx, app.LiveCancel, app.LiveBulkInput{IDs: []int64{jobs[0].ID}}, "tester"); err != nil {
		e.t.Fatal(err)
	}
	if j := e.get(jobs[1].ID); j.Held {
		e.t.Fatalf("after the cancel of the key's running job the next is still held")
	}
	if j := e.get(jobs[2].ID); !j.Held {
		e.t.Fatalf("the third job of the key was released too (key_concurrency 1)")
	}
}

func testLiveBulkInBatches(e *env) {
	svc := e.service(nil)
	n := app.BulkBatch + 20
	e.submitN(n, "b", "k", withPayload(`{"tenant":"t1"}`))
	e.submitOne("b", "k", withPayload(`{"tenant":"t2"}`))
	res, err := svc.BulkLive(e.ctx, app.LiveCancel, app.LiveBulkInput{JobQuery: payloadIs("tenant", "t1")}, "tester")
	if err != nil || res.Changed != n {
		e.t.Fatalf("cancel = %+v, %v; want %d changed", res, err, n)
	}
	if c, _ := e.s.CountJobs(e.ctx, app.JobFilter{Status: "cancelled"}); c != n {
		e.t.Fatalf("%d cancelled, want %d", c, n)
	}
	if a, _ := e.s.ListAudit(e.ctx, app.AuditFilter{Action: "jobs.cancel", Limit: 10}); len(a) != 1 || a[0].Count != n {
		e.t.Fatalf("audit = %+v, want one entry of %d", a, n)
	}
}

// A rate spreads run_at from the first job, at most 1000 s apart (rate
// 0.001/s), and saturates at MaxDelay from now: the live retry and
// reschedule and the DLQ's replay alike, never overflowing.
func testLiveBulkRateSaturates(e *env) {
	svc := e.service(nil)
	now := e.clock.Now()
	last := now.Add(app.MaxDelay)
	d := app.Duration(app.MaxDelay - 1500*time.Second)
	for name, c := range map[string]struct {
		action string
		rate   float64
	}{
		"live reschedule, 1e-10": {app.LiveReschedule, 1e-10},
		"live retry, 0.0009":     {app.LiveRetry, 0.0009},
		"live reschedule, 2e6":   {app.LiveReschedule, 2e6},
		"live reschedule, -1":    {app.LiveReschedule, -1},
	} {
		in := app.LiveBulkInput{Queue: "s", Rate: c.rate}
		if c.action == app.LiveReschedule {
			in.Delay = &d
		}
		var ie *app.InvalidError
		if _, err := svc.BulkLive(e.ctx, c.action, in, "tester"); !errors.As(err, &ie) || ie.Field != "rate" {
			e.t.Errorf("%s: %v, want invalid rate", name, err)
		}
	}
	for _, rate := range []float64{1e-10, 0.0009, 2e6} {
		var ie *app.InvalidError
		if _, err := svc.BulkDead(e.ctx, app.BulkReplay, app.BulkInput{Queue: "s", Rate: rate}, "tester"); !errors.As(err, &ie) || ie.Field != "rate" {
			e.t.Errorf("DLQ replay at %g/s: %v, want invalid rate", rate, err)
		}
	}
	want := []time.Time{last.Add(-1500 * time.Second), last.Add(-500 * time.Second), last, last}

	jobs := e.submitN(4, "s", "k")
	if _, err := svc.BulkLive(e.ctx, app.LiveReschedule, app.LiveBulkInput{Queue: "s", Delay: &d, Rate: app.MinRate}, "tester"); err != nil {
		e.t.Fatal(err)
	}
	for i, j := range jobs {
		if at := e.get(j.ID).RunAt; !at.Equal(want[i]) {
			e.t.Errorf("live reschedule at 0.001/s, job %d: run_at %v, want %v", i, at, want[i])
		}
	}

	if _, err := svc.BulkDead(e.ctx, app.BulkMove, app.BulkInput{Queue: "s"}, "tester"); err != nil {
		e.t.Fatal(err)
	}
	res, err := svc.BulkDead(e.ctx, app.BulkReplay, app.BulkInput{Queue: "s", Delay: &d, Rate: app.MinRate}, "tester")
	if err != nil || res.Count != 4 {
		e.t.Fatalf("DLQ replay at 0.001/s = %+v, %v; want 4", res, err)
	}
	replayed, err := e.s.List(e.ctx, app.JobFilter{Queue: "s", StatusIn: []app.Status{app.StatusQueued}, Asc: true, Limit: 10})
	if err != nil || len(replayed) != 4 {
		e.t.Fatalf("replayed jobs: %d, %v; want 4", len(replayed), err)
	}
	for i, j := range replayed {
		if !j.RunAt.Equal(want[i]) {
			e.t.Errorf("DLQ replay at 0.001/s, job %d: run_at %v, want %v", i, j.RunAt, want[i])
		}
	}
}

// A bulk action that stops part-way has the batches it committed on
// record: one audit entry whose count is the jobs changed. The live
// cancel and the DLQ's move follow the same rule.
func testFaultLiveBulkAuditsCommittedBatches(e *env) {
	svc := e.service(nil)
	for _, c := range []struct {
		queue, audit string
		run          func(queue string) error
		changed      func(queue string) int
	}{
		{"lc", "jobs.cancel", func(q string) error {
			_, err := svc.BulkLive(e.ctx, app.LiveCancel, app.LiveBulkInput{Queue: q}, "tester")
			return err
		}, func(q string) int {
			n, _ := e.s.CountJobs(e.ctx, app.JobFilter{Queue: q, Status: "cancelled"})
			return n
		}},
		{"dm", "dlq.move", func(q string) error {
			_, err := svc.BulkDead(e.ctx, app.BulkMove, app.BulkInput{Queue: q}, "tester")
			return err
		}, func(q string) int {
			n, _ := e.s.CountDead(e.ctx, app.DeadFilter{Queue: q})
			return n
		}},
	} {
		jobs := e.submitN(app.BulkBatch+5, c.queue, "k")
		stop := jobs[app.BulkBatch+2].ID // in the second batch
		e.setFault(func(_ context.Context, _ app.FaultPoint, id int64) error {
			if id == stop {
				return errInjected
			}
			return nil
		})
		err := c.run(c.queue)
		e.setFault(nil)
		if !errors.Is(err, errInjected) {
			e.t.Fatalf("%s with a fault in the second batch: %v, want the fault", c.audit, err)
		}
		n := c.changed(c.queue)
		if n != app.BulkBatch {
			e.t.Fatalf("%s: %d changed, want the first batch (%d)", c.audit, n, app.BulkBatch)
		}
		if a, _ := e.s.ListAudit(e.ctx, app.AuditFilter{Action: c.audit, Limit: 10}); len(a) != 1 || a[0].Count != n || !strings.Contains(string(a[0].Filter), c.queue) {
			e.t.Fatalf("%s audit after the fault = %+v, want one entry of %d with the filter", c.audit, a, n)
		}
	}
}
