package postgres

import (
	"context"
	"errors"

	"github.com/queuehq/queue/app"
)

// errNoWorkflows stands in until this store keeps workflows.
var errNoWorkflows = errors.New("workflows are not stored by this store yet")

// InsertWorkflow implements app.Tx.
func (w *wtx) InsertWorkflow(wf *app.Workflow, steps []*app.WorkflowStep, edges []app.WorkflowEdge) error {
	return errNoWorkflows
}

// Workflow implements app.Tx.
func (w *wtx) Workflow(id int64) (*app.Workflow, error) { return nil, errNoWorkflows }

// SaveWorkflow implements app.Tx.
func (w *wtx) SaveWorkflow(wf *app.Workflow) error { return errNoWorkflows }

// Step implements app.Tx.
func (w *wtx) Step(wf int64, name string) (*app.WorkflowStep, error) { return nil, errNoWorkflows }

// SaveStep implements app.Tx.
func (w *wtx) SaveStep(s *app.WorkflowStep) error { return errNoWorkflows }

// Resolve implements app.Tx.
func (w *wtx) Resolve(wf int64, parent string, kinds app.EdgeKinds) ([]*app.WorkflowStep, error) {
	return nil, errNoWorkflows
}

// StepsReleased implements app.Tx.
func (w *wtx) StepsReleased(wf int64, steps []*app.WorkflowStep) error { return errNoWorkflows }

// CancelWaiting implements app.Tx.
func (w *wtx) CancelWaiting(wf int64) (int, error) { return 0, errNoWorkflows }

// ListWorkflows implements app.Store.
func (s *Store) ListWorkflows(ctx context.Context, f app.WorkflowFilter) ([]*app.Workflow, error) {
	return nil, errNoWorkflows
}

// GetWorkflow implements app.Store.
func (s *Store) GetWorkflow(ctx context.Context, id int64) (*app.Workflow, []*app.WorkflowStep, error) {
	return nil, nil, errNoWorkflows
}

// Parents implements app.Store.
func (s *Store) Parents(ctx context.Context, wf int64, name string) ([]*app.WorkflowStep, error) {
	return nil, errNoWorkflows
}
