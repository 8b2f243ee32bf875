package storetest

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/queuehq/queue/app"
)

// The workflow cases: a step is released in the transaction that resolves
// its last dependency, never earlier and never twice, whatever ends its
// parents (a completion, a dead letter, a cancel) and on every store.

func init() {
	faultCases = append(faultCases, workflowFaultCases...)
}

// step is a StepInput of kind "k" in queue "wf" named name after deps.
func step(name string, deps ...string) app.StepInput {
	in := app.StepInput{SubmitInput: app.SubmitInput{Queue: "wf", Kind: "k", Payload: stepPayload(name)}, Step: name}
	for _, d := range deps {
		in.DependsOn = append(in.DependsOn, app.Dependency{Step: d})
	}
	return in
}

// stepPayload is step name's payload: with spaces and < >, which a job
// must get byte for byte as submitted.
func stepPayload(name string) json.RawMessage {
	return json.RawMessage(`{"step": "` + name + `",  "html": "<b>&"}`)
}

// diamond is A; B and C after A; D after B and C.
func diamond() app.WorkflowInput {
	return app.WorkflowInput{Name: "diamond", Steps: []app.StepInput{step("A"), step("B", "A"), step("C", "A"), step("D", "B", "C")}}
}

// submitWorkflow stores in through the Service and returns its view.
func (e *env) submitWorkflow(in app.WorkflowInput) *app.WorkflowView {
	e.t.Helper()
	v, err := e.service(nil).SubmitWorkflow(e.ctx, in)
	if err != nil {
		e.t.Fatalf("SubmitWorkflow(%s): %v", in.Name, err)
	}
	return v
}

func (e *env) workflow(id int64) *app.WorkflowView {
	e.t.Helper()
	v, err := e.service(nil).GetWorkflow(e.ctx, id)
	if err != nil {
		e.t.Fatalf("GetWorkflow(%d): %v", id, err)
	}
	return v
}

// stepStates is each step's state, by name.
func stepStates(v *app.WorkflowView) map[string]string {
	out := map[string]string{}
	for _, s := range v.Steps {
		out[s.Name] = string(s.Status)
	}
	return out
}

// claimSteps claims up to n jobs of queue "wf" through the Service (so they
// carry their parents) and returns them by step name.
func (e *env) claimSteps(n int) map[string]*app.Job {
	e.t.Helper()
	jobs, err := e.service(nil).Claim(e.ctx, "wf", app.ClaimInput{WorkerID: "w1", Limit: n})
	if err != nil {
		e.t.Fatalf("Claim: %v", err)
	}
	out := map[string]*app.Job{}
	for _, j := range jobs {
		if j.WorkflowID == 0 || j.Step == "" {
			e.t.Fatalf("claimed job %d has no workflow step (workflow_id %d, step %q)", j.ID, j.WorkflowID, j.Step)
		}
		out[j.Step] = j
	}
	return out
}

func names[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func (e *env) wantClaimable(want ...string) map[string]*app.Job {
	e.t.Helper()
	got := e.claimSteps(100)
	slices.Sort(want)
	if g := names(got); !slices.Equal(g, want) {
		e.t.Fatalf("claimable steps %v, want %v", g, want)
	}
	return got
}

func (e *env) wantWorkflow(id int64, status app.WorkflowStatus, states map[string]string) *app.WorkflowView {
	e.t.Helper()
	v := e.workflow(id)
	if v.Status != status {
		e.t.Fatalf("workflow %d is %s, want %s (steps %v)", id, v.Status, status, stepStates(v))
	}
	for name, want := range states {
		if got := stepStates(v)[name]; got != want {
			e.t.Fatalf("step %s is %s, want %s (steps %v)", name, got, want, stepStates(v))
		}
	}
	return v
}

func testWorkflowDiamondRunsInOrder(e *env) {
	v := e.submitWorkflow(diamond())
	if v.StepCount != 4 || v.Status != app.WorkflowRunning {
		e.t.Fatalf("submitted: %+v", v.Workflow)
	}
	e.wantWorkflow(v.ID, app.WorkflowRunning, map[string]string{"A": "queued", "B": "waiting", "C": "waiting", "D": "waiting"})
	if n, _ := e.s.CountJobs(e.ctx, app.JobFilter{Workflow: v.ID}); n != 1 {
		e.t.Fatalf("%d jobs exist for the workflow, want 1 (waiting steps have no job)", n)
	}
	a := e.wantClaimable("A")["A"]
	if len(a.Parents) != 0 {
		e.t.Fatalf("A has parents %v", a.Parents)
	}
	if got := e.claimSteps(10); len(got) != 0 {
		e.t.Fatalf("claimed %v while A runs", names(got))
	}
	e.complete(a, `{"rows":10}`)
	bc := e.wantClaimable("B", "C")
	if p := bc["B"].Parents; len(p) != 1 || p[0].Step != "A" || p[0].Status != app.StepDone || string(p[0].Result) != `{"rows":10}` {
		e.t.Fatalf("B's parents: %+v", p)
	}
	e.complete(bc["B"], `"b"`)
	e.wantWorkflow(v.ID, app.WorkflowRunning, map[string]string{"A": "done", "B": "done", "C": "processing", "D": "waiting"})
	if got := e.claimSteps(10); len(got) != 0 {
		e.t.Fatalf("claimed %v before C finished", names(got))
	}
	e.complete(bc["C"], `"c"`)
	d := e.wantClaimable("D")["D"]
	if string(d.Payload) != string(stepPayload("D")) {
		e.t.Fatalf("D's payload %s, want %s byte for byte", d.Payload, stepPayload("D"))
	}
	got := map[string]string{}
	for _, p := range d.Parents {
		got[p.Step] = string(p.Result)
	}
	if len(got) != 2 || got["B"] != `"b"` || got["C"] != `"c"` {
		e.t.Fatalf("D's parents: %+v", d.Parents)
	}
	e.complete(d, `null`)
	w := e.wantWorkflow(v.ID, app.WorkflowDone, map[string]string{"D": "done"})
	if w.DoneCount != 4 || w.FailedCount != 0 || w.FinishedAt == nil {
		e.t.Fatalf("done workflow: %+v", w.Workflow)
	}
	if !slices.Equal(w.CriticalPath, []string{"A", "C", "D"}) && !slices.Equal(w.CriticalPath, []string{"A", "B", "D"}) {
		e.t.Fatalf("critical path %v", w.CriticalPath)
	}
}

func testWorkflowParentsInDependsOnOrder(e *env) {
	v := e.submitWorkflow(app.WorkflowInput{Name: "o", Steps: []app.StepInput{step("A"), step("B"), step("C"), step("D", "C", "A", "B"), step("E", "A")}})
	ps, err := e.s.Parents(e.ctx, v.ID, []string{"D", "E", "A", "nope"})
	if err != nil {
		e.t.Fatal(err)
	}
	var got []string
	for _, p := range ps["D"] {
		got = append(got, p.Name)
	}
	if !slices.Equal(got, []string{"C", "A", "B"}) || len(ps["E"]) != 1 || ps["E"][0].Name != "A" || len(ps["A"]) != 0 || len(ps["nope"]) != 0 {
		e.t.Fatalf("Parents(D, E, A, nope): D %v, E %d, A %d, nope %d; want D C, A, B and E A", got, len(ps["E"]), len(ps["A"]), len(ps["nope"]))
	}
	w := e.workflow(v.ID)
	if d := w.Steps[3]; d.Name != "D" || len(d.DependsOn) != 3 || d.DependsOn[0].Step != "C" || d.DependsOn[2].Step != "B" {
		e.t.Fatalf("D as read: %+v", d)
	}
}

func testWorkflowFanOutFanIn(e *env) {
	const n = 300
	in := app.WorkflowInput{Name: "batch", Steps: []app.StepInput{step("root")}}
	for i := range n {
		in.Steps = append(in.Steps, step(fmt.Sprintf("p%d", i), "root"))
	}
	cb := step("")
	cb.Step = ""
	in.Callback = &cb
	v := e.submitWorkflow(in)
	if v.StepCount != n+2 {
		e.t.Fatalf("step count %d, want %d", v.StepCount, n+2)
	}
	last := v.Steps[len(v.Steps)-1]
	if last.Name != app.DefaultCallbackStep || len(last.DependsOn) != n {
		e.t.Fatalf("callback step %q depends on %d steps, want %d", last.Name, len(last.DependsOn), n)
	}
	e.complete(e.wantClaimable("root")["root"], `1`)
	var parallel []*app.Job
	for len(parallel) < n {
		got := e.claimSteps(100)
		if len(got) == 0 {
			e.t.Fatalf("only %d of %d parallel steps were released", len(parallel), n)
		}
		for name, j := range got {
			if name == app.DefaultCallbackStep {
				e.t.Fatalf("the callback ran before its %d parents", n)
			}
			parallel = append(parallel, j)
		}
	}
	// The parents complete from several workers at once: the callback is
	// released once, by whichever completion resolves its last dependency.
	var wg sync.WaitGroup
	for w := range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < len(parallel); i += 6 {
				j := parallel[i]
				errs, err := e.s.Complete(e.ctx, []app.Completion{{ID: j.ID, Lease: j.Lease, Result: json.RawMessage(`"` + j.Step + `"`)}})
				if err != nil || errs[0] != nil {
					e.t.Errorf("Complete(%s): %v %v", j.Step, err, errs)
				}
			}
		}()
	}
	wg.Wait()
	got := e.wantClaimable(app.DefaultCallbackStep)
	if p := got[app.DefaultCallbackStep].Parents; len(p) != n {
		e.t.Fatalf("the callback sees %d parents, want %d", len(p), n)
	}
	if c, _ := e.s.CountJobs(e.ctx, app.JobFilter{Workflow: v.ID}); c != n+2 {
		e.t.Fatalf("%d jobs for the workflow, want %d (each step once)", c, n+2)
	}
	e.complete(got[app.DefaultCallbackStep], `"all"`)
	e.wantWorkflow(v.ID, app.WorkflowDone, nil)
}

func testWorkflowDeadStepBlocksAndReplayResumes(e *env) {
	v := e.submitWorkflow(diamond())
	e.complete(e.wantClaimable("A")["A"], `1`)
	bc := e.wantClaimable("B", "C")
	if r := e.fail(bc["B"], false); r.Outcome != app.OutcomeDeadLettered {
		e.t.Fatalf("B's failure: %s", r.Outcome)
	}
	e.complete(bc["C"], `"c"`)
	w := e.wantWorkflow(v.ID, app.WorkflowBlocked, map[string]string{"B": "dead_letter", "C": "done", "D": "waiting"})
	if w.FailedCount != 1 {
		e.t.Fatalf("failed count %d", w.FailedCount)
	}
	if r, err := app.Diagnose(e.ctx, e.s, e.clock.Now()); err != nil || r.BlockedWorkflows != 1 || len(r.Problems) != 1 {
		e.t.Fatalf("doctor on a blocked workflow: %+v %v, want it named", r, err)
	}
	if got := e.claimSteps(10); len(got) != 0 {
		e.t.Fatalf("claimed %v while B is dead", names(got))
	}
	// Replayed with an override, from the dead-letter queue.
	prio := 5
	jobs, err := app.Replay(e.ctx, e.s, app.ReplayRequest{Filter: app.DeadFilter{IDs: []int64{bc["B"].ID}}, Override: &app.ReplayOverride{Priority: &prio}})
	if err != nil || len(jobs) != 1 {
		e.t.Fatalf("replay B: %v %v", jobs, err)
	}
	if jobs[0].WorkflowID != v.ID || jobs[0].Step != "B" || jobs[0].Priority != 5 {
		e.t.Fatalf("replayed B: workflow %d step %q priority %d", jobs[0].WorkflowID, jobs[0].Step, jobs[0].Priority)
	}
	w = e.wantWorkflow(v.ID, app.WorkflowRunning, map[string]string{"B": "queued"})
	for _, s := range w.Steps {
		if s.Name == "B" && s.JobID != jobs[0].ID {
			e.t.Fatalf("step B points to job %d, want the replay %d", s.JobID, jobs[0].ID)
		}
	}
	e.complete(e.wantClaimable("B")["B"], `"b2"`)
	d := e.wantClaimable("D")["D"]
	for _, p := range d.Parents {
		if p.Step == "B" && (p.Status != app.StepDone || string(p.Result) != `"b2"`) {
			e.t.Fatalf("D sees B as %+v", p)
		}
	}
	e.complete(d, `1`)
	e.wantWorkflow(v.ID, app.WorkflowDone, nil)
}

func testWorkflowContinueOnFailure(e *env) {
	// report runs after B whatever B's outcome, and after X.
	in := app.WorkflowInput{Name: "cleanup", Steps: []app.StepInput{step("A"), step("X"), step("B", "A"), step("report", "X")}}
	in.Steps[3].DependsOn = append(in.Steps[3].DependsOn, app.Dependency{Step: "B", OnFailure: app.OnFailureContinue})
	v := e.submitWorkflow(in)
	ax := e.wantClaimable("A", "X")
	e.complete(ax["A"], `1`)
	b := e.wantClaimable("B")["B"]
	e.fail(b, false)
	e.wantWorkflow(v.ID, app.WorkflowBlocked, map[string]string{"B": "dead_letter", "report": "waiting"})
	// B is replayed and succeeds while X still runs: B's "continue"
	// dependency was resolved by its failure and is not counted again.
	if _, err := app.Replay(e.ctx, e.s, app.ReplayRequest{Filter: app.DeadFilter{IDs: []int64{b.ID}}}); err != nil {
		e.t.Fatal(err)
	}
	e.complete(e.wantClaimable("B")["B"], `"b2"`)
	if got := e.claimSteps(10); len(got) != 0 {
		e.t.Fatalf("claimed %v while X runs", names(got))
	}
	e.complete(ax["X"], `1`)
	r := e.wantClaimable("report")["report"]
	if len(r.Parents) != 2 {
		e.t.Fatalf("report's parents: %+v", r.Parents)
	}
	e.complete(r, `1`)
	e.wantWorkflow(v.ID, app.WorkflowDone, nil)

	// Without a replay: the failure releases the dependant, whose parents
	// show it, and the workflow stays blocked by the dead step.
	in = app.WorkflowInput{Name: "cleanup2", Steps: []app.StepInput{step("A"), step("report")}}
	in.Steps[1].DependsOn = []app.Dependency{{Step: "A", OnFailure: app.OnFailureContinue}}
	v = e.submitWorkflow(in)
	e.fail(e.wantClaimable("A")["A"], false)
	r = e.wantClaimable("report")["report"]
	if len(r.Parents) != 1 || r.Parents[0].Status != app.StepDead || r.Parents[0].Error == "" {
		e.t.Fatalf("report's parents: %+v", r.Parents)
	}
	e.complete(r, `1`)
	e.wantWorkflow(v.ID, app.WorkflowBlocked, map[string]string{"A": "dead_letter", "report": "done"})
}

func testWorkflowCancel(e *env) {
	in := diamond()
	in.Steps = append(in.Steps, step("E"))
	v := e.submitWorkflow(in)
	a := e.wantClaimable("A", "E")["A"] // A processing; E too
	svc := e.service(nil)
	w, err := svc.CancelWorkflow(e.ctx, v.ID, "tester")
	if err != nil {
		e.t.Fatal(err)
	}
	if w.Status != app.WorkflowCancelled {
		e.t.Fatalf("cancelled workflow is %s", w.Status)
	}
	e.wantWorkflow(v.ID, app.WorkflowCancelled, map[string]string{"B": "cancelled", "C": "cancelled", "D": "cancelled", "A": "processing"})
	if j := e.get(a.ID); !j.CancelRequested {
		e.t.Fatalf("A processing without a cancel request")
	}
	// A's worker finishes anyway: nothing is released.
	e.complete(a, `1`)
	if got := e.claimSteps(10); len(got) != 0 {
		e.t.Fatalf("claimed %v from a cancelled workflow", names(got))
	}
	if n, _ := e.s.CountJobs(e.ctx, app.JobFilter{Workflow: v.ID}); n != 2 {
		e.t.Fatalf("%d jobs, want 2 (A and E; nothing released after the cancel)", n)
	}
	if _, err := svc.CancelWorkflow(e.ctx, v.ID, "tester"); !errors.Is(err, app.ErrIllegalTransition) {
		e.t.Fatalf("second cancel: %v, want ErrIllegalTransition", err)
	}
	if _, err := svc.CancelWorkflow(e.ctx, v.ID+100, "tester"); !errors.Is(err, app.ErrNotFound) {
		e.t.Fatalf("cancel of no workflow: %v, want ErrNotFound", err)
	}
	audit, err := e.s.ListAudit(e.ctx, app.AuditFilter{Action: "workflow.cancel"})
	if err != nil || len(audit) != 1 || audit[0].Actor != "tester" {
		e.t.Fatalf("audit: %+v %v", audit, err)
	}
}

func testWorkflowQueuedCancelOnItsOwnBlocks(e *env) {
	in := app.WorkflowInput{Name: "one", Steps: []app.StepInput{step("A"), step("B", "A")}}
	v := e.submitWorkflow(in)
	a := e.workflow(v.ID).Steps[0]
	if _, err := app.Cancel(e.ctx, e.s, app.CancelRequest{ID: a.JobID}); err != nil {
		e.t.Fatal(err)
	}
	e.wantWorkflow(v.ID, app.WorkflowBlocked, map[string]string{"A": "cancelled", "B": "waiting"})
	// An operator moves the cancelled job to the dead-letter queue and
	// replays it: the workflow runs on.
	if _, err := app.MoveToDead(e.ctx, e.s, app.JobFilter{IDs: []int64{a.JobID}, StatusIn: []app.Status{app.StatusCancelled}}, "retry it", nil); err != nil {
		e.t.Fatal(err)
	}
	w := e.wantWorkflow(v.ID, app.WorkflowBlocked, map[string]string{"A": "dead_letter"})
	if w.FailedCount != 1 {
		e.t.Fatalf("a cancelled step moved to the DLQ counts %d failures, want 1", w.FailedCount)
	}
	if _, err := app.Replay(e.ctx, e.s, app.ReplayRequest{Filter: app.DeadFilter{IDs: []int64{a.JobID}}}); err != nil {
		e.t.Fatal(err)
	}
	e.complete(e.wantClaimable("A")["A"], `1`)
	e.complete(e.wantClaimable("B")["B"], `1`)
	e.wantWorkflow(v.ID, app.WorkflowDone, nil)
}

func testWorkflowStepDelayCountsFromRelease(e *env) {
	in := app.WorkflowInput{Name: "later", Steps: []app.StepInput{step("A"), step("B", "A")}}
	d := app.Duration(time.Minute)
	in.Steps[1].Delay = &d
	v := e.submitWorkflow(in)
	e.clock.Advance(10 * time.Minute)
	e.complete(e.wantClaimable("A")["A"], `1`)
	if got := e.claimSteps(10); len(got) != 0 {
		e.t.Fatalf("B ran before its delay from the release")
	}
	e.clock.Advance(time.Minute)
	e.complete(e.wantClaimable("B")["B"], `1`)
	e.wantWorkflow(v.ID, app.WorkflowDone, nil)
}

func testWorkflowListAndRetention(e *env) {
	done := e.submitWorkflow(app.WorkflowInput{Name: "old", Steps: []app.StepInput{step("A")}})
	e.complete(e.wantClaimable("A")["A"], `1`)
	running := e.submitWorkflow(app.WorkflowInput{Name: "new", Steps: []app.StepInput{step("X"), step("Y", "X")}})
	e.complete(e.wantClaimable("X")["X"], `1`) // X is done, its workflow runs on
	list, err := e.s.ListWorkflows(e.ctx, app.WorkflowFilter{Limit: 10})
	if err != nil || len(list) != 2 || list[0].ID != running.ID || list[1].ID != done.ID {
		e.t.Fatalf("list (newest first): %v %v", list, err)
	}
	if l, _ := e.s.ListWorkflows(e.ctx, app.WorkflowFilter{Status: app.WorkflowDone}); len(l) != 1 || l[0].ID != done.ID {
		e.t.Fatalf("list of done: %v", l)
	}
	if l, _ := e.s.ListWorkflows(e.ctx, app.WorkflowFilter{AfterID: running.ID}); len(l) != 1 || l[0].ID != done.ID {
		e.t.Fatalf("list after %d: %v", running.ID, l)
	}
	e.clock.Advance(48 * time.Hour)
	before := e.clock.Now().Add(-24 * time.Hour)
	// The jobs of a workflow are not the plain jobs' retention's to delete.
	if n, err := e.s.DeleteOld(e.ctx, app.DeleteOldRequest{What: app.OldFinished, Before: before, Limit: 100}); err != nil || n != 0 {
		e.t.Fatalf("finished-job retention deleted %d workflow jobs (%v)", n, err)
	}
	n, err := e.s.DeleteOld(e.ctx, app.DeleteOldRequest{What: app.OldWorkflows, Before: before, Limit: 100})
	if err != nil || n != 1 {
		e.t.Fatalf("workflow retention deleted %d (%v), want 1", n, err)
	}
	if _, _, err := e.s.GetWorkflow(e.ctx, done.ID); !errors.Is(err, app.ErrNotFound) {
		e.t.Fatalf("the old workflow is still there: %v", err)
	}
	if c, _ := e.s.CountJobs(e.ctx, app.JobFilter{Workflow: done.ID}); c != 0 {
		e.t.Fatalf("%d jobs of the deleted workflow are left", c)
	}
	if c, _ := e.s.CountJobs(e.ctx, app.JobFilter{Workflow: running.ID}); c != 2 {
		e.t.Fatalf("the running workflow has %d jobs, want 2 (its done X stays)", c)
	}
	if st, _ := e.s.Stats(e.ctx); len(st) > 0 {
		for _, q := range st {
			if q.Queue == "wf" && q.Done != 1 {
				e.t.Fatalf("stats after the deletion count %d done in wf, want 1", q.Done)
			}
		}
	}
}

func testWorkflowReplayAfterItsWorkflowIsGone(e *env) {
	v := e.submitWorkflow(app.WorkflowInput{Name: "gone", Steps: []app.StepInput{step("A"), step("B", "A")}})
	a := e.wantClaimable("A")["A"]
	e.fail(a, false)
	if _, err := app.CancelWorkflow(e.ctx, e.s, v.ID, nil); err != nil {
		e.t.Fatal(err)
	}
	e.clock.Advance(48 * time.Hour)
	if n, err := e.s.DeleteOld(e.ctx, app.DeleteOldRequest{What: app.OldWorkflows, Before: e.clock.Now().Add(-24 * time.Hour), Limit: 10}); err != nil || n != 1 {
		e.t.Fatalf("workflow retention: %d %v", n, err)
	}
	// Its dead-letter row stays for the DLQ's retention; a replay of it is
	// a plain job, which plain retention deletes once done.
	jobs, err := app.Replay(e.ctx, e.s, app.ReplayRequest{Filter: app.DeadFilter{IDs: []int64{a.ID}}})
	if err != nil || len(jobs) != 1 || jobs[0].WorkflowID != 0 || jobs[0].Step != "" {
		e.t.Fatalf("replay after the workflow went: %+v %v, want a plain job", jobs, err)
	}
	e.complete(e.claimOne("wf"), `1`)
	e.clock.Advance(48 * time.Hour)
	if n, err := e.s.DeleteOld(e.ctx, app.DeleteOldRequest{What: app.OldFinished, Before: e.clock.Now().Add(-24 * time.Hour), Limit: 10}); err != nil || n != 1 {
		e.t.Fatalf("plain retention of the replayed job: %d %v, want 1", n, err)
	}
}

func testWorkflowReplayOfAnEarlierFailureIsPlain(e *env) {
	v := e.submitWorkflow(app.WorkflowInput{Name: "twice", Steps: []app.StepInput{step("A"), step("B", "A")}})
	a1 := e.wantClaimable("A")["A"]
	e.fail(a1, false)
	first, err := app.Replay(e.ctx, e.s, app.ReplayRequest{Filter: app.DeadFilter{IDs: []int64{a1.ID}}})
	if err != nil || first[0].WorkflowID != v.ID {
		e.t.Fatalf("replay: %+v %v", first, err)
	}
	// The first failure's row again: the step follows the first replay, so
	// this one is a plain job and cannot run the step a second time.
	again, err := app.Replay(e.ctx, e.s, app.ReplayRequest{Filter: app.DeadFilter{IDs: []int64{a1.ID}, Replayed: new(bool(true))}})
	if err != nil || len(again) != 1 || again[0].WorkflowID != 0 || again[0].Step != "" {
		e.t.Fatalf("second replay of the same row: %+v %v, want a plain job", again, err)
	}
	jobs := e.claim("wf", 10) // the step's job and the plain one
	if len(jobs) != 2 {
		e.t.Fatalf("claimed %d jobs, want 2", len(jobs))
	}
	for _, j := range jobs {
		e.complete(j, `1`)
	}
	e.complete(e.wantClaimable("B")["B"], `1`)
	if w := e.wantWorkflow(v.ID, app.WorkflowDone, nil); w.DoneCount != 2 {
		e.t.Fatalf("done count %d, want 2", w.DoneCount)
	}
}

func testWorkflowRetentionWaitsForItsLastJob(e *env) {
	v := e.submitWorkflow(app.WorkflowInput{Name: "slow", Steps: []app.StepInput{step("A"), step("B", "A")}})
	a := e.wantClaimable("A")["A"]
	if _, err := app.CancelWorkflow(e.ctx, e.s, v.ID, nil); err != nil {
		e.t.Fatal(err)
	}
	e.clock.Advance(48 * time.Hour) // A's worker ignores the cancel and runs on (a long heartbeat)
	old := app.DeleteOldRequest{What: app.OldWorkflows, Before: e.clock.Now().Add(-24 * time.Hour), Limit: 10}
	if n, err := e.s.DeleteOld(e.ctx, old); err != nil || n != 0 {
		e.t.Fatalf("retention deleted %d workflows (%v) while a job of one still runs, want 0", n, err)
	}
	if _, err := app.Cancel(e.ctx, e.s, app.CancelRequest{ID: a.ID, Lease: &a.Lease}); err != nil {
		e.t.Fatal(err)
	}
	if n, err := e.s.DeleteOld(e.ctx, old); err != nil || n != 1 {
		e.t.Fatalf("retention after the last job ended: %d (%v), want 1", n, err)
	}
}

func testWorkflowExpiredStepBlocks(e *env) {
	in := app.WorkflowInput{Name: "ttl", Steps: []app.StepInput{step("A"), step("B", "A")}}
	ttl := app.Duration(time.Minute)
	in.Steps[0].TTL = &ttl
	v := e.submitWorkflow(in)
	e.clock.Advance(2 * time.Minute)
	if n, err := app.ExpireTTL(e.ctx, e.s, 100); err != nil || n != 1 {
		e.t.Fatalf("ExpireTTL: %d %v", n, err)
	}
	e.wantWorkflow(v.ID, app.WorkflowBlocked, map[string]string{"A": "cancelled", "B": "waiting"})
}

func testWorkflowStaleLeaseRetriesTheStep(e *env) {
	v := e.submitWorkflow(app.WorkflowInput{Name: "crash", Steps: []app.StepInput{step("A"), step("B", "A")}})
	e.wantClaimable("A")
	e.clock.Advance(time.Hour) // the worker died: its lease expires
	if n, err := app.RecoverStale(e.ctx, e.s, 100, fixedBackoff); err != nil || n != 1 {
		e.t.Fatalf("RecoverStale: %d %v", n, err)
	}
	e.clock.Advance(time.Minute)
	a := e.wantClaimable("A")["A"]
	if a.Attempts != 2 {
		e.t.Fatalf("A's attempt %d, want 2", a.Attempts)
	}
	e.complete(a, `1`)
	e.complete(e.wantClaimable("B")["B"], `1`)
	e.wantWorkflow(v.ID, app.WorkflowDone, nil)
}

var workflowFaultCases = []faultCase{
	{"workflow submit", app.FaultJobInsert, 0, func(e *env) func() error {
		return func() error {
			_, err := e.service(nil).SubmitWorkflow(e.ctx, diamond())
			return err
		}
	}},
	{"completion that releases steps, at the second release", app.FaultJobInsert, 1, func(e *env) func() error {
		e.submitWorkflow(diamond())
		a := e.claimSteps(1)["A"]
		return func() error {
			errs, err := e.s.Complete(e.ctx, []app.Completion{{ID: a.ID, Lease: a.Lease, Result: json.RawMessage(`1`)}})
			if err == nil {
				err = errs[0]
			}
			return err
		}
	}},
	{"dead letter that releases a continue step", app.FaultJobInsert, 0, func(e *env) func() error {
		in := app.WorkflowInput{Name: "c", Steps: []app.StepInput{step("A"), step("B")}}
		in.Steps[1].DependsOn = []app.Dependency{{Step: "A", OnFailure: app.OnFailureContinue}}
		e.submitWorkflow(in)
		a := e.claimSteps(1)["A"]
		return func() error {
			_, err := app.Fail(e.ctx, e.s, app.FailRequest{ID: a.ID, Lease: a.Lease, Error: "x", Backoff: fixedBackoff})
			return err
		}
	}},
	{"replay that resumes a workflow", app.FaultJobInsert, 0, func(e *env) func() error {
		e.submitWorkflow(diamond())
		a := e.claimSteps(1)["A"]
		e.fail(a, false)
		return func() error {
			_, err := app.Replay(e.ctx, e.s, app.ReplayRequest{Filter: app.DeadFilter{IDs: []int64{a.ID}}})
			return err
		}
	}},
	{"workflow cancel", app.FaultCancel, 0, func(e *env) func() error {
		v := e.submitWorkflow(diamond())
		return func() error {
			_, err := app.CancelWorkflow(e.ctx, e.s, v.ID, nil)
			return err
		}
	}},
	{"workflow retention", app.FaultDelete, 0, func(e *env) func() error {
		e.submitWorkflow(app.WorkflowInput{Name: "old", Steps: []app.StepInput{step("A")}})
		e.complete(e.claimSteps(1)["A"], `1`)
		e.clock.Advance(time.Hour)
		return func() error {
			_, err := e.s.DeleteOld(e.ctx, app.DeleteOldRequest{What: app.OldWorkflows, Before: e.clock.Now(), Limit: 10})
			return err
		}
	}},
}

// workflowSnapshot is every workflow with its steps, for the fault cases.
func (e *env) workflowSnapshot() []*app.WorkflowView {
	e.t.Helper()
	list, err := e.s.ListWorkflows(e.ctx, app.WorkflowFilter{Limit: 1000})
	if err != nil {
		e.t.Fatalf("snapshot: workflows: %v", err)
	}
	out := make([]*app.WorkflowView, len(list))
	for i, w := range list {
		wf, steps, err := e.s.GetWorkflow(e.ctx, w.ID)
		if err != nil {
			e.t.Fatalf("snapshot: workflow %d: %v", w.ID, err)
		}
		out[i] = &app.WorkflowView{Workflow: wf, Steps: steps}
	}
	return out
}
