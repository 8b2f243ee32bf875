package app

import (
	"context"
	"fmt"
	"strconv"
	"time"
)

// WorkflowView is a workflow as GET /api/workflows/{id} shows it: its
// row, its steps (each with the state of its job) and its critical path.
type WorkflowView struct {
	*Workflow
	Steps        []*WorkflowStep `json:"steps"`
	CriticalPath []string        `json:"critical_path"`
}

// State is what the API shows as a step's status: its job's status while
// released (queued, processing), else the step's own.
func (s *WorkflowStep) State() string {
	if s.Status == StepReleased && s.JobStatus != "" {
		return string(s.JobStatus)
	}
	if s.Status == StepReleased {
		return string(StatusQueued)
	}
	return string(s.Status)
}

// SubmitWorkflow validates in and stores the workflow in one transaction
// (all or nothing); steps without dependencies are queued at once.
func (s *Service) SubmitWorkflow(ctx context.Context, in WorkflowInput) (*WorkflowView, error) {
	now := s.Clock.Now()
	plan, err := in.Plan(s.Config, now)
	if err != nil {
		return nil, err
	}
	end := s.traceSteps(plan, now) // each step's job stores its submit span's context
	wf, steps, err := SubmitWorkflow(ctx, s.Store, plan)
	end(nil, err)
	if err != nil {
		return nil, err
	}
	return view(wf, steps, s.Clock.Now()), nil
}

// GetWorkflow reads workflow id with its steps and critical path.
func (s *Service) GetWorkflow(ctx context.Context, id int64) (*WorkflowView, error) {
	wf, steps, err := s.Store.GetWorkflow(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("workflow %d: %w", id, err)
	}
	return view(wf, steps, s.Clock.Now()), nil
}

// view is wf as the API shows it: each step in its State, empty lists as
// lists, and the critical path as of now.
func view(wf *Workflow, steps []*WorkflowStep, now time.Time) *WorkflowView {
	shown(wf)
	for _, st := range steps {
		st.Status = StepStatus(st.State())
		if st.DependsOn == nil {
			st.DependsOn = []Dependency{}
		}
	}
	return &WorkflowView{Workflow: wf, Steps: steps, CriticalPath: CriticalPath(steps, now)}
}

// shown gives wf the empty list of tags the API answers for none.
func shown(wf *Workflow) *Workflow {
	if wf.Tags == nil {
		wf.Tags = []string{}
	}
	return wf
}

// WorkflowListInput is GET /api/workflows.
type WorkflowListInput struct {
	Status string
	Name   string
	Cursor string
	Limit  int
}

// WorkflowPage is one page of workflows, newest first.
type WorkflowPage struct {
	Workflows  []*Workflow `json:"workflows"`
	NextCursor string      `json:"next_cursor,omitempty"`
}

// ListWorkflows lists workflows, newest first, a page at a time.
func (s *Service) ListWorkflows(ctx context.Context, in WorkflowListInput) (*WorkflowPage, error) {
	f := WorkflowFilter{Status: WorkflowStatus(in.Status), Name: in.Name, Limit: in.Limit}
	switch f.Status {
	case "", WorkflowRunning, WorkflowBlocked, WorkflowDone, WorkflowCancelled:
	default:
		return nil, Invalid("status", "status %q is not one of running, blocked, done, cancelled", clip(in.Status))
	}
	if f.Limit == 0 {
		f.Limit = 50
	}
	if f.Limit < 1 || f.Limit > 1000 {
		return nil, Invalid("limit", "limit must be between 1 and 1000")
	}
	if in.Cursor != "" {
		after, _, err := DecodeCursor(in.Cursor)
		if err != nil {
			return nil, err
		}
		f.AfterID = after
	}
	want := f.Limit
	f.Limit++
	wfs, err := s.Store.ListWorkflows(ctx, f)
	if err != nil {
		return nil, fmt.Errorf("list workflows: %w", err)
	}
	for _, wf := range wfs {
		shown(wf)
	}
	page := &WorkflowPage{Workflows: wfs}
	if len(wfs) > want {
		page.Workflows = wfs[:want]
		page.NextCursor = EncodeCursor(wfs[want-1].ID, false)
	}
	if page.Workflows == nil {
		page.Workflows = []*Workflow{}
	}
	return page, nil
}

// CancelWorkflow cancels workflow id's unfinished steps, audited as actor's.
func (s *Service) CancelWorkflow(ctx context.Context, id int64, actor string) (*WorkflowView, error) {
	_, err := CancelWorkflow(ctx, s.Store, id, &AuditEntry{Actor: actor, Action: "workflow.cancel", Target: "workflow " + strconv.FormatInt(id, 10)})
	if err != nil {
		return nil, err
	}
	return s.GetWorkflow(ctx, id)
}

// withParents sets the parents of each claimed job that runs a workflow
// step with dependencies: each parent's step name, status and result.
// One read per workflow among the jobs, not one per job: a claim of a
// hundred steps of a fan-out is one read.
func (s *Service) withParents(ctx context.Context, jobs []*Job) error {
	steps := map[int64][]string{}
	for _, j := range jobs {
		if j.WorkflowID != 0 {
			steps[j.WorkflowID] = append(steps[j.WorkflowID], j.Step)
		}
	}
	for wf, names := range steps {
		ps, err := s.Store.Parents(ctx, wf, names)
		if err != nil {
			return fmt.Errorf("parents of steps of workflow %d: %w", wf, err)
		}
		for _, j := range jobs {
			if j.WorkflowID == wf {
				for _, p := range ps[j.Step] {
					j.Parents = append(j.Parents, ParentOf(p))
				}
			}
		}
	}
	return nil
}
