package postgres

import (
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/queuehq/queue/app"
)

func wfStep(name string, deps ...string) app.StepInput {
	in := app.StepInput{SubmitInput: app.SubmitInput{Queue: "wf", Kind: "k"}, Step: name}
	for _, d := range deps {
		in.DependsOn = append(in.DependsOn, app.Dependency{Step: d})
	}
	return in
}

func submitWorkflow(t *testing.T, s *Store, in app.WorkflowInput) *app.WorkflowView {
	t.Helper()
	v, err := app.NewService(s, nil, app.SystemClock{}, nil, zerolog.Nop()).SubmitWorkflow(t.Context(), in)
	if err != nil {
		t.Fatalf("SubmitWorkflow(%s): %v", in.Name, err)
	}
	return v
}

func claimWF(t *testing.T, s *Store, n int) map[string]*app.Job {
	t.Helper()
	jobs, err := s.Claim(t.Context(), app.ClaimRequest{Queue: "wf", WorkerID: "w", Limit: n})
	if err != nil {
		t.Fatalf("Claim: %v", err)
	}
	out := map[string]*app.Job{}
	for _, j := range jobs {
		out[j.Step] = j
	}
	return out
}

// A workflow of the largest size is one statement to store, and reads
// back whole, in the order given.
func TestWorkflowOfMaxSizeInsertsAtOnce(t *testing.T) {
	s := mustOpen(t, Options{})
	in := app.WorkflowInput{Name: "big", Steps: []app.StepInput{wfStep("root")}}
	for i := range app.MaxWorkflowSteps - 1 {
		in.Steps = append(in.Steps, wfStep(fmt.Sprintf("p%05d", i), "root"))
	}
	in.Steps[2].DependsOn = append(in.Steps[2].DependsOn, app.Dependency{Step: "p00000", OnFailure: app.OnFailureContinue})
	start := time.Now()
	v := submitWorkflow(t, s, in)
	t.Logf("%d steps, 20000 edges stored in %v", v.StepCount, time.Since(start))
	var edges int
	if err := adminConn(t, s).QueryRow(t.Context(), `SELECT count(*) FROM workflow_edges WHERE workflow_id = $1`, v.ID).Scan(&edges); err != nil || edges != 20000 {
		t.Fatalf("%d edges stored (%v), want 20000", edges, err)
	}
	_, steps, err := s.GetWorkflow(t.Context(), v.ID)
	if err != nil || len(steps) != app.MaxWorkflowSteps {
		t.Fatalf("GetWorkflow: %d steps, %v", len(steps), err)
	}
	for i, st := range steps {
		if st.Name != in.Steps[i].Step {
			t.Fatalf("step %d is %q, want %q (the order given)", i, st.Name, in.Steps[i].Step)
		}
	}
	if p := steps[2]; len(p.DependsOn) != 2 || p.DependsOn[1] != (app.Dependency{Step: "p00000", OnFailure: app.OnFailureContinue}) || p.Waiting != 2 {
		t.Fatalf("step %s: depends on %+v, waiting on %d", p.Name, p.DependsOn, p.Waiting)
	}
	if steps[0].Status != app.StepReleased || steps[0].JobID == 0 || steps[1].Status != app.StepWaiting {
		t.Fatalf("root %s (job %d), p00000 %s", steps[0].Status, steps[0].JobID, steps[1].Status)
	}
}

// A step's job carries its payload byte for byte, whether released at the
// submission or later from the stored spec.
func TestWorkflowStepPayloadIsKeptAsGiven(t *testing.T) {
	s := mustOpen(t, Options{})
	const payload = `{ "html": "<b>&</b>",  "n": 1.50 }`
	a, b := wfStep("A"), wfStep("B", "A")
	a.Payload, b.Payload = json.RawMessage(payload), json.RawMessage(payload)
	submitWorkflow(t, s, app.WorkflowInput{Name: "p", Steps: []app.StepInput{a, b}})
	ja := claimWF(t, s, 10)["A"]
	if ja == nil || string(ja.Payload) != payload {
		t.Fatalf("A's payload %q, want %q", ja.Payload, payload)
	}
	if errs, err := s.Complete(t.Context(), []app.Completion{{ID: ja.ID, Lease: ja.Lease}}); err != nil || errs[0] != nil {
		t.Fatalf("Complete(A): %v %v", err, errs)
	}
	if jb := claimWF(t, s, 10)["B"]; jb == nil || string(jb.Payload) != payload {
		t.Fatalf("B's payload %q, want %q", jb.Payload, payload)
	}
}

// A batch mixing plain jobs and workflow steps completes each: the plain
// ones in the one statement, the steps through app's rules, which release
// their dependants; the items that lose are answered as such.
func TestCompleteMixesPlainJobsAndSteps(t *testing.T) {
	s := mustOpen(t, Options{})
	v := submitWorkflow(t, s, app.WorkflowInput{Name: "m", Steps: []app.StepInput{wfStep("A"), wfStep("B", "A")}})
	plain := submit(t, s, newJob("wf"))[0]
	got := claimWF(t, s, 10)
	a, p := got["A"], got[""]
	if a == nil || p == nil || p.ID != plain.ID {
		t.Fatalf("claimed %v", got)
	}
	errs, err := s.Complete(t.Context(), []app.Completion{
		{ID: p.ID, Lease: p.Lease},
		{ID: a.ID, Lease: a.Lease, Result: json.RawMessage(`"a"`)},
		{ID: a.ID, Lease: a.Lease}, // a repeat loses
		{ID: p.ID, Lease: p.Lease + 1},
		{ID: 999999, Lease: 1},
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []error{nil, nil, app.ErrLeaseLost, app.ErrLeaseLost, app.ErrNotFound}
	for i, w := range want {
		if (w == nil) != (errs[i] == nil) || w != nil && !errors.Is(errs[i], w) {
			t.Errorf("item %d: %v, want %v", i, errs[i], w)
		}
	}
	_, steps, err := s.GetWorkflow(t.Context(), v.ID)
	if err != nil || steps[0].Status != app.StepDone || string(steps[0].Result) != `"a"` || steps[1].Status != app.StepReleased {
		t.Fatalf("after the batch: A %s %s, B %s (%v)", steps[0].Status, steps[0].Result, steps[1].Status, err)
	}
	if j, _, _ := s.Lookup(t.Context(), p.ID); j.Status != app.StatusDone {
		t.Fatalf("plain job is %s", j.Status)
	}
}

// A dead-lettered step shows its attempts and start from the dead-letter
// row; its workflow's retention leaves that row to the DLQ's.
func TestGetWorkflowReadsTheDeadLetterRow(t *testing.T) {
	s := mustOpen(t, Options{})
	v := submitWorkflow(t, s, app.WorkflowInput{Name: "d", Steps: []app.StepInput{wfStep("A"), wfStep("B", "A")}})
	a := claimWF(t, s, 1)["A"]
	if _, err := app.Fail(t.Context(), s, app.FailRequest{ID: a.ID, Lease: a.Lease, Error: "boom"}); err != nil {
		t.Fatal(err)
	}
	_, steps, err := s.GetWorkflow(t.Context(), v.ID)
	if err != nil {
		t.Fatal(err)
	}
	if st := steps[0]; st.Status != app.StepDead || st.JobStatus != "" || st.Attempts != 1 || st.StartedAt == nil || st.Error == "" {
		t.Fatalf("dead step: %+v", st)
	}
	dead, err := s.ListDead(t.Context(), app.DeadFilter{})
	if err != nil || len(dead) != 1 || dead[0].WorkflowID != v.ID || dead[0].Step != "A" {
		t.Fatalf("dead-letter rows %+v (%v), want A's of workflow %d", dead, err, v.ID)
	}
	if _, _, err := s.GetWorkflow(t.Context(), v.ID+1); !errors.Is(err, app.ErrNotFound) {
		t.Fatalf("GetWorkflow of none: %v, want ErrNotFound", err)
	}
}

// A retention pass deletes finished workflows with everything of theirs
// (the bound on its steps is app's: TestTakeOldIsBoundedBySteps).
func TestOldWorkflowsLeaveNothing(t *testing.T) {
	s := mustOpen(t, Options{})
	for i := range 3 {
		submitWorkflow(t, s, app.WorkflowInput{Name: fmt.Sprint(i), Steps: []app.StepInput{wfStep("A"), wfStep("B")}})
		for _, j := range claimWF(t, s, 10) {
			if errs, err := s.Complete(t.Context(), []app.Completion{{ID: j.ID, Lease: j.Lease}}); err != nil || errs[0] != nil {
				t.Fatalf("Complete: %v %v", err, errs)
			}
		}
	}
	if n, err := s.DeleteOld(t.Context(), app.DeleteOldRequest{What: app.OldWorkflows, Before: time.Now().Add(time.Hour), Limit: 10}); err != nil || n != 3 {
		t.Fatalf("DeleteOld(workflows) = %d, %v; want 3", n, err)
	}
	var left int
	if err := adminConn(t, s).QueryRow(t.Context(), `SELECT (SELECT count(*) FROM workflow_steps) + (SELECT count(*) FROM workflow_edges)
		+ (SELECT count(*) FROM jobs) + (SELECT count(*) FROM workflows)`).Scan(&left); err != nil || left != 0 {
		t.Fatalf("%d rows left (%v), want none", left, err)
	}
}

// An import keeps the workflow step of each job and dead-letter row.
func TestImportKeepsWorkflowSteps(t *testing.T) {
	s := mustOpen(t, Options{})
	now := s.now()
	im, err := s.BeginImport(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer im.Rollback(t.Context())
	err = im.Add(t.Context(), app.Rows{
		Jobs: []*app.Job{{ID: 1, Queue: "wf", Kind: "k", Payload: json.RawMessage(`1`), Status: app.StatusQueued, RunAt: now,
			MaxAttempts: 1, CreatedAt: now, UpdatedAt: now, WorkflowID: 7, Step: "A"}},
		Dead: []*app.DeadJob{{ID: 2, Queue: "wf", Kind: "k", Payload: json.RawMessage(`1`), Reason: app.ReasonMaxAttempts,
			OriginalCreatedAt: now, MovedAt: now, WorkflowID: 7, Step: "B"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := im.Commit(t.Context(), 2); err != nil {
		t.Fatal(err)
	}
	if j, _, err := s.Lookup(t.Context(), 1); err != nil || j.WorkflowID != 7 || j.Step != "A" {
		t.Fatalf("job: %+v %v", j, err)
	}
	if _, d, err := s.Lookup(t.Context(), 2); err != nil || d.WorkflowID != 7 || d.Step != "B" {
		t.Fatalf("dead-letter row: %+v %v", d, err)
	}
}

// An import goes into a store without workflows too.
func TestImportRefusesAStoreWithWorkflows(t *testing.T) {
	s := mustOpen(t, Options{})
	if _, err := adminConn(t, s).Exec(t.Context(), `INSERT INTO workflows (name, status, step_count, created_at, updated_at)
		VALUES ('w', 'running', 1, now(), now())`); err != nil {
		t.Fatal(err)
	}
	if im, err := s.BeginImport(t.Context()); err == nil {
		im.Rollback(t.Context())
		t.Fatal("BeginImport into a store holding a workflow succeeded")
	}
}
