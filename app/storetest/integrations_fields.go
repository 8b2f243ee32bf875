package storetest

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/queuehq/queue/app"
)

// A job's integrations (issue 27, docs/integrations.md): callback_url,
// traceparent and tracestate are stored on the job by every way a store
// inserts one, shown by every read of it (a lookup, a listing, a claim),
// kept by its dead-letter row and carried to the job a replay makes. A
// job without them shows none.

func init() {
	extraCases["IntegrationsFieldsOnEveryInsertAndRead"] = testIntegrationsFieldsOnEveryInsertAndRead
	extraCases["IntegrationsFieldsFollowDeadLetterAndReplay"] = testIntegrationsFieldsFollowDeadLetterAndReplay
	extraCases["IntegrationsFieldsOnWorkflowSteps"] = testIntegrationsFieldsOnWorkflowSteps
}

// integ is a job's three integration fields, as submitted or as read.
type integ struct{ callback, traceparent, tracestate string }

// integFor is the i-th distinct set of fields: each job of a batch gets
// its own, so a row given another's values shows.
func integFor(i int) integ {
	return integ{
		callback:    fmt.Sprintf("https://hooks.example.com/done?n=%d", i),
		traceparent: fmt.Sprintf("00-4bf92f3577b34da6a3ce929d0e0e%04x-00f067aa0ba9%04x-01", i+1, i+1),
		tracestate:  fmt.Sprintf("rojo=00f067aa0ba902b7,congo=t61rcWkgMzE%d", i),
	}
}

func integOf(j *app.Job) integ         { return integ{j.CallbackURL, j.Traceparent, j.Tracestate} }
func integOfDead(d *app.DeadJob) integ { return integ{d.CallbackURL, d.Traceparent, d.Tracestate} }
func (g integ) input(in *app.SubmitInput) {
	in.CallbackURL, in.Traceparent, in.Tracestate = g.callback, g.traceparent, g.tracestate
}
func (g integ) job(nj *app.NewJob) {
	nj.CallbackURL, nj.Traceparent, nj.Tracestate = g.callback, g.traceparent, g.tracestate
}

// wantInteg fails unless got is want, saying where got was read.
func (e *env) wantInteg(where string, got, want integ) {
	e.t.Helper()
	if got != want {
		e.t.Fatalf("%s: callback_url %q traceparent %q tracestate %q, want %q %q %q",
			where, got.callback, got.traceparent, got.tracestate, want.callback, want.traceparent, want.tracestate)
	}
}

// wantNoIntegJSON fails if v's JSON names one of the three fields: a job
// without them shows none (omitempty), not empty strings.
func (e *env) wantNoIntegJSON(where string, v any) {
	e.t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		e.t.Fatal(err)
	}
	for _, f := range []string{`"callback_url"`, `"traceparent"`, `"tracestate"`} {
		if strings.Contains(string(b), f) {
			e.t.Fatalf("%s shows %s for a job without it: %s", where, f, b)
		}
	}
}

// Through the Service (SubmitInput copies the fields), one job, a batch
// (the SQLite writer's shared INSERT, PostgreSQL's gathered submissions)
// mixing jobs with and without them, and keyed jobs (the insert by key
// rules over the Tx) all store them; Lookup, List and a claim read them.
func testIntegrationsFieldsOnEveryInsertAndRead(e *env) {
	svc := e.service(&app.Config{Queues: map[string]app.QueueConfig{"keyed": {KeyConcurrency: 1}}})
	e.setLimits("keyed", app.KeyLimits{Concurrency: 1})
	submit := func(queue string, n int, mod func(i int, in *app.SubmitInput)) []*app.Job {
		e.t.Helper()
		ins := make([]app.SubmitInput, n)
		for i := range ins {
			ins[i] = app.SubmitInput{Queue: queue, Kind: "k"}
			mod(i, &ins[i])
		}
		res, err := svc.Submit(e.ctx, ins)
		if err != nil {
			e.t.Fatalf("Submit(%d to %s): %v", n, queue, err)
		}
		out := make([]*app.Job, n)
		for i, r := range res {
			out[i] = r.Job
		}
		return out
	}
	// want[id] is what job id was submitted with; a zero integ: none.
	want := map[int64]integ{}
	record := func(jobs []*app.Job, of func(i int) integ) {
		for i, j := range jobs {
			want[j.ID] = of(i)
			e.wantInteg(fmt.Sprintf("submit's answer for job %d", j.ID), integOf(j), of(i))
		}
	}
	with := func(i int) integ { return integFor(i) }
	mixed := func(i int) integ { // every third job has none
		if i%3 == 2 {
			return integ{}
		}
		return integFor(100 + i)
	}
	record(submit("plain", 1, func(i int, in *app.SubmitInput) { with(i).input(in) }), with)
	record(submit("plain", 9, func(i int, in *app.SubmitInput) { mixed(i).input(in) }), mixed)
	keyedOf := func(i int) integ { return integFor(200 + i) }
	record(submit("keyed", 3, func(i int, in *app.SubmitInput) { in.Key = "acct"; keyedOf(i).input(in) }), keyedOf)
	record(submit("keyed", 1, func(i int, in *app.SubmitInput) { in.Key = "other" }), func(int) integ { return integ{} })

	for id, w := range want {
		e.wantInteg(fmt.Sprintf("Lookup(%d)", id), integOf(e.get(id)), w)
	}
	for _, q := range []string{"plain", "keyed"} {
		listed, err := e.s.List(e.ctx, app.JobFilter{Queue: q, Limit: 100})
		if err != nil {
			e.t.Fatal(err)
		}
		for _, j := range listed {
			e.wantInteg(fmt.Sprintf("List(%s) job %d", q, j.ID), integOf(j), want[j.ID])
		}
	}
	claimed := append(e.claim("plain", 100), e.claim("keyed", 100)...)
	if len(claimed) != 12 { // 10 plain, the first of key acct and the one of key other
		e.t.Fatalf("claimed %d jobs, want 12", len(claimed))
	}
	for _, j := range claimed {
		e.wantInteg(fmt.Sprintf("claimed job %d", j.ID), integOf(j), want[j.ID])
		if want[j.ID] == (integ{}) {
			e.wantNoIntegJSON(fmt.Sprintf("claimed job %d", j.ID), j)
		}
	}
	// A retry's requeue, a completion's release of the key's next job.
	for _, j := range claimed {
		if j.Queue == "keyed" && j.Key == "acct" {
			if r := e.fail(j, true); r.Job == nil || integOf(r.Job) != want[j.ID] {
				e.t.Fatalf("the retried job: %+v, want its fields kept", r.Job)
			}
		}
	}
	for id, w := range want {
		e.wantInteg(fmt.Sprintf("Lookup(%d) at the end", id), integOf(e.get(id)), w)
		if w == (integ{}) {
			e.wantNoIntegJSON(fmt.Sprintf("job %d", id), e.get(id))
		}
	}
}

// A dead-lettered job's row keeps its fields (and shows them as a job
// answer does); a replay's new job has them, as stored and as claimed. A
// job without them dead-letters and replays without them.
func testIntegrationsFieldsFollowDeadLetterAndReplay(e *env) {
	svc := e.service(nil)
	w := integFor(7)
	j := e.submitOne("q", "k", w.job)
	bare := e.submitOne("q", "k")
	d := e.deadLetter(j)
	e.wantInteg("the dead-letter row", integOfDead(d), w)
	dead, err := e.s.ListDead(e.ctx, app.DeadFilter{Queue: "q", Limit: 10})
	if err != nil || len(dead) != 1 {
		e.t.Fatalf("ListDead: %d rows %v, want 1", len(dead), err)
	}
	e.wantInteg("ListDead", integOfDead(dead[0]), w)
	shown, err := svc.Get(e.ctx, j.ID, 0, false)
	if err != nil {
		e.t.Fatal(err)
	}
	e.wantInteg("the dead-lettered job as GET /api/jobs/{id} shows it", integOf(shown), w)

	// An admin move of a queued job builds its row the same way.
	moved := e.submitOne("m", "k", integFor(8).job)
	if _, err := app.MoveToDead(e.ctx, e.s, app.JobFilter{IDs: []int64{moved.ID}}, "", nil); err != nil {
		e.t.Fatal(err)
	}
	e.wantInteg("the moved job's row", integOfDead(e.dead(moved.ID)), integFor(8))

	jobs, err := app.Replay(e.ctx, e.s, app.ReplayRequest{Filter: app.DeadFilter{IDs: []int64{d.ID}}})
	if err != nil || len(jobs) != 1 {
		e.t.Fatalf("Replay: %d jobs %v", len(jobs), err)
	}
	e.wantInteg("Replay's answer", integOf(jobs[0]), w)
	e.wantInteg("the replayed job", integOf(e.get(jobs[0].ID)), w)
	e.wantInteg("the dead-letter row after the replay", integOfDead(e.dead(d.ID)), w)

	bareDead := e.deadLetter(bare) // the replay waits behind bare
	e.wantInteg("the row of a job without fields", integOfDead(bareDead), integ{})
	e.wantNoIntegJSON("the row of a job without fields", bareDead)
	c := e.claimOne("q")
	if c.ID != jobs[0].ID {
		e.t.Fatalf("claimed %d, want the replayed job %d", c.ID, jobs[0].ID)
	}
	e.wantInteg("the replayed job as claimed", integOf(c), w)
	again, err := svc.Replay(e.ctx, bare.ID, app.ReplayInput{}, "ops")
	if err != nil {
		e.t.Fatal(err)
	}
	e.wantNoIntegJSON("the replay of a job without fields", e.get(again.ID))
}

// A workflow step's job carries the step's fields, when released at once
// and when released later by its dependency's completion; a step without
// them has none.
func testIntegrationsFieldsOnWorkflowSteps(e *env) {
	a, b, c := step("A"), step("B", "A"), step("C", "A")
	integFor(1).input(&a.SubmitInput)
	integFor(2).input(&b.SubmitInput)
	e.submitWorkflow(app.WorkflowInput{Name: "traced", Steps: []app.StepInput{a, b, c}})
	got := e.wantClaimable("A")
	e.wantInteg("step A's job", integOf(got["A"]), integFor(1))
	e.complete(got["A"], `{}`)
	got = e.wantClaimable("B", "C")
	e.wantInteg("step B's job", integOf(got["B"]), integFor(2))
	e.wantInteg("step B's job as stored", integOf(e.get(got["B"].ID)), integFor(2))
	e.wantNoIntegJSON("step C's job", got["C"])
}
