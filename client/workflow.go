package client

import (
	"context"
	"net/http"
	"net/url"
	"strconv"

	"github.com/queuehq/queue/app"
)

// WorkflowInput is a workflow to submit: a name, tags, and steps, each a
// job as Submit takes it plus its step name and what it depends on; the
// optional Callback is a step after every step nothing else depends on.
type WorkflowInput = app.WorkflowInput

// StepInput is one step of a WorkflowInput.
type StepInput = app.StepInput

// Dependency is one entry of a step's DependsOn: a parent step, and
// OnFailure "continue" to run even if that parent fails.
type Dependency = app.Dependency

// Workflow is a workflow as the server shows it: its status and counts,
// its steps with their states, and its critical path.
type Workflow = app.WorkflowView

// WorkflowPage is one page of ListWorkflows, newest first.
type WorkflowPage = app.WorkflowPage

// Parent is one dependency of a step as its handler sees it, in Job.Parents.
type Parent = app.Parent

// SubmitWorkflow stores a workflow in one transaction: all of it or, on an
// error (a cycle, an unknown dependency, an invalid step, each named in the
// message and Error.Field), nothing. Steps without dependencies are queued
// at once; the others wait for theirs.
func (c *Client) SubmitWorkflow(ctx context.Context, in WorkflowInput) (*Workflow, error) {
	var w Workflow
	if _, _, err := c.do(ctx, http.MethodPost, "/api/workflows", tracedWorkflow(ctx, in), &w, nil); err != nil {
		return nil, err
	}
	return &w, nil
}

// GetWorkflow returns a workflow with its steps; an unknown id is an error
// matching ErrNotFound.
func (c *Client) GetWorkflow(ctx context.Context, id int64) (*Workflow, error) {
	var w Workflow
	if _, _, err := c.do(ctx, http.MethodGet, "/api/workflows/"+strconv.FormatInt(id, 10), nil, &w, nil); err != nil {
		return nil, err
	}
	return &w, nil
}

// WorkflowListOptions filters ListWorkflows.
type WorkflowListOptions struct {
	// Status is running, blocked, done or cancelled; empty: any.
	Status string
	// Name keeps the workflows whose name contains it.
	Name   string
	Limit  int
	Cursor string
}

// ListWorkflows returns one page of workflows (without their steps),
// newest first.
func (c *Client) ListWorkflows(ctx context.Context, o WorkflowListOptions) (*WorkflowPage, error) {
	q := url.Values{}
	for k, v := range map[string]string{"status": o.Status, "name": o.Name, "cursor": o.Cursor} {
		if v != "" {
			q.Set(k, v)
		}
	}
	if o.Limit > 0 {
		q.Set("limit", strconv.Itoa(o.Limit))
	}
	var page WorkflowPage
	_, _, err := c.do(ctx, http.MethodGet, "/api/workflows"+query(q), nil, &page, nil)
	return &page, err
}

// CancelWorkflow cancels a workflow: its waiting steps and queued jobs are
// cancelled, its running jobs asked to stop, and nothing runs after them.
// A finished workflow is an error matching ErrIllegalTransition.
func (c *Client) CancelWorkflow(ctx context.Context, id int64) (*Workflow, error) {
	var w Workflow
	if _, _, err := c.do(ctx, http.MethodPost, "/api/workflows/"+strconv.FormatInt(id, 10)+"/cancel", nil, &w, nil); err != nil {
		return nil, err
	}
	return &w, nil
}
