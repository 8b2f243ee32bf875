package memory

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/queuehq/queue/app"
)

// flows holds the workflows: rows, steps in the order given, and the edges
// from each parent.
type flows struct {
	next     int64
	rows     map[int64]*app.Workflow
	steps    map[stepKey]*app.WorkflowStep
	order    map[int64][]string
	children map[stepKey][]app.WorkflowEdge
}

type stepKey struct {
	wf   int64
	name string
}

func newFlows() flows {
	return flows{rows: map[int64]*app.Workflow{}, steps: map[stepKey]*app.WorkflowStep{},
		order: map[int64][]string{}, children: map[stepKey][]app.WorkflowEdge{}}
}

// InsertWorkflow implements app.Tx.
func (t *tx) InsertWorkflow(wf *app.Workflow) error {
	f := &t.s.flows
	next := f.next
	f.next++
	t.undo = append(t.undo, func() { f.next = next })
	wf.ID = f.next
	put(t, f.rows, wf.ID, wf.Clone())
	return nil
}

// InsertSteps implements app.Tx.
func (t *tx) InsertSteps(wf int64, steps []*app.WorkflowStep, edges []app.WorkflowEdge) error {
	f := &t.s.flows
	names := make([]string, len(steps))
	for i, s := range steps {
		s.WorkflowID = wf
		names[i] = s.Name
		put(t, f.steps, stepKey{wf, s.Name}, s.Clone())
	}
	put(t, f.order, wf, names)
	for _, e := range edges {
		k := stepKey{wf, e.Parent}
		put(t, f.children, k, append(slices.Clone(f.children[k]), e))
	}
	return nil
}

// Workflow implements app.Tx.
func (t *tx) Workflow(id int64) (*app.Workflow, error) {
	w, ok := t.s.flows.rows[id]
	if !ok {
		return nil, fmt.Errorf("workflow %d: %w", id, app.ErrNotFound)
	}
	return w.Clone(), nil
}

// SaveWorkflow implements app.Tx.
func (t *tx) SaveWorkflow(wf *app.Workflow) error {
	if _, ok := t.s.flows.rows[wf.ID]; !ok {
		return fmt.Errorf("workflow %d: %w", wf.ID, app.ErrNotFound)
	}
	put(t, t.s.flows.rows, wf.ID, wf.Clone())
	return nil
}

// Steps implements app.Tx.
func (t *tx) Steps(wf int64, names []string) ([]*app.WorkflowStep, error) {
	var out []*app.WorkflowStep
	for _, name := range names {
		if s, ok := t.s.flows.steps[stepKey{wf, name}]; ok {
			c := s.Clone()
			c.DependsOn = nil
			out = append(out, c)
		}
	}
	return out, nil
}

// SaveSteps implements app.Tx.
func (t *tx) SaveSteps(steps []*app.WorkflowStep) error {
	for _, s := range steps {
		k := stepKey{s.WorkflowID, s.Name}
		old, ok := t.s.flows.steps[k]
		if !ok {
			return fmt.Errorf("step %q of workflow %d: %w", s.Name, s.WorkflowID, app.ErrNotFound)
		}
		c := s.Clone()
		c.DependsOn, c.Job = old.DependsOn, old.Job // not the caller's to change
		put(t, t.s.flows.steps, k, c)
	}
	return nil
}

// Resolve implements app.Tx.
func (t *tx) Resolve(wf int64, parents []string, kinds app.EdgeKinds) ([]*app.WorkflowStep, error) {
	var ready []*app.WorkflowStep
	for _, parent := range parents {
		for _, e := range t.s.flows.children[stepKey{wf, parent}] {
			k := stepKey{wf, e.Child}
			s := t.s.flows.steps[k]
			if s == nil || s.Status != app.StepWaiting || !kinds.Resolves(e.Continue) {
				continue
			}
			c := s.Clone()
			c.Waiting--
			put(t, t.s.flows.steps, k, c)
			if c.Waiting == 0 {
				r := c.Clone()
				r.DependsOn = nil
				ready = append(ready, r)
			}
		}
	}
	return ready, nil
}

// CancelWaiting implements app.Tx.
func (t *tx) CancelWaiting(wf int64) (int, error) {
	n := 0
	for _, name := range t.s.flows.order[wf] {
		k := stepKey{wf, name}
		if s := t.s.flows.steps[k]; s.Status == app.StepWaiting {
			c := s.Clone()
			now := t.now
			c.Status, c.FinishedAt = app.StepCancelled, &now
			put(t, t.s.flows.steps, k, c)
			n++
		}
	}
	return n, nil
}

// ListWorkflows implements app.Store.
func (s *Store) ListWorkflows(ctx context.Context, f app.WorkflowFilter) ([]*app.Workflow, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []*app.Workflow
	for _, w := range s.flows.rows {
		if (f.Status == "" || w.Status == f.Status) && (f.Name == "" || strings.Contains(w.Name, f.Name)) &&
			(f.AfterID <= 0 || w.ID < f.AfterID) {
			out = append(out, w.Clone())
		}
	}
	slices.SortFunc(out, func(a, b *app.Workflow) int { return int(b.ID - a.ID) })
	if f.Limit > 0 && len(out) > f.Limit {
		out = out[:f.Limit]
	}
	return out, nil
}

// GetWorkflow implements app.Store.
func (s *Store) GetWorkflow(ctx context.Context, id int64) (*app.Workflow, []*app.WorkflowStep, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	w, ok := s.flows.rows[id]
	if !ok {
		return nil, nil, app.ErrNotFound
	}
	steps := make([]*app.WorkflowStep, 0, len(s.flows.order[id]))
	for _, name := range s.flows.order[id] {
		c := s.flows.steps[stepKey{id, name}].Clone()
		if j, ok := s.jobs[c.JobID]; ok && c.JobID != 0 {
			c.JobStatus, c.Attempts, c.StartedAt = j.Status, j.Attempts, copyTime(j.StartedAt)
		} else if d, ok := s.dead[c.JobID]; ok && c.JobID != 0 {
			c.Attempts, c.StartedAt = d.Attempts, copyTime(d.StartedAt)
		}
		steps = append(steps, c)
	}
	return w.Clone(), steps, nil
}

// Parents implements app.Store.
func (s *Store) Parents(ctx context.Context, wf int64, steps []string) (map[string][]*app.WorkflowStep, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string][]*app.WorkflowStep{}
	for _, name := range steps {
		st, ok := s.flows.steps[stepKey{wf, name}]
		if !ok || len(st.DependsOn) == 0 {
			continue
		}
		for _, d := range st.DependsOn {
			if p, ok := s.flows.steps[stepKey{wf, d.Step}]; ok {
				out[name] = append(out[name], p.Clone())
			}
		}
	}
	return out, nil
}

// OldWorkflows implements app.Tx.
func (t *tx) OldWorkflows(before time.Time, limit int) ([]app.OldWorkflow, error) {
	live := map[int64]bool{} // workflows with a job still queued or processing
	for _, j := range t.s.jobs {
		if j.WorkflowID != 0 && (j.Status == app.StatusQueued || j.Status == app.StatusProcessing) {
			live[j.WorkflowID] = true
		}
	}
	var old []*app.Workflow
	for id, w := range t.s.flows.rows {
		if w.Status.Finished() && w.FinishedAt != nil && w.FinishedAt.Before(before) && !live[id] {
			old = append(old, w)
		}
	}
	slices.SortFunc(old, func(a, b *app.Workflow) int {
		return cmp.Or(a.FinishedAt.Compare(*b.FinishedAt), cmp.Compare(a.ID, b.ID))
	})
	out := make([]app.OldWorkflow, 0, min(len(old), limit))
	for _, w := range old[:min(len(old), limit)] {
		out = append(out, app.OldWorkflow{ID: w.ID, Steps: w.StepCount})
	}
	return out, nil
}

// DeleteWorkflows implements app.Tx.
func (t *tx) DeleteWorkflows(ids []int64) error {
	f := &t.s.flows
	gone := make(map[int64]bool, len(ids))
	for _, id := range ids {
		gone[id] = true
		for _, name := range f.order[id] {
			del(t, f.steps, stepKey{id, name})
			del(t, f.children, stepKey{id, name})
		}
		del(t, f.order, id)
		del(t, f.rows, id)
	}
	for jid, j := range t.s.jobs { // one pass, however many workflows
		if gone[j.WorkflowID] {
			t.deleteJob(jid)
		}
	}
	return nil
}
