package app

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"
)

// The lifecycle of a workflow, written once over a Tx. Every change a job
// of a step goes through (its completion, its move to the dead-letter
// queue, its cancel, its TTL, its replay) calls StepsEnded (the SQL stores'
// batched completions call it too) or stepReplayed in the same
// transaction, so a step is released in the transaction that resolves its
// last dependency, and a crash can lose no release.
//
// Locks on PostgreSQL are taken in one order everywhere: jobs, then the
// workflow (several in id order), then its steps (the ended ones in name
// order, then their dependants): a step's end holds its job and takes the
// workflow; a cancel takes the workflow's live jobs, then the workflow.

// SubmitWorkflow stores plan's workflow, steps and edges and queues the
// jobs of the steps without dependencies, in one transaction. It returns the workflow
// and its steps as stored (released ones with their job ids).
func SubmitWorkflow(ctx context.Context, w Writer, plan *WorkflowPlan) (*Workflow, []*WorkflowStep, error) {
	var wf *Workflow
	var steps []*WorkflowStep
	err := w.Write(ctx, func(tx Tx) error {
		c := *plan.Workflow
		wf = &c
		wf.CreatedAt, wf.UpdatedAt = tx.Now(), tx.Now()
		steps = make([]*WorkflowStep, len(plan.Steps))
		var roots []*WorkflowStep
		for i, s := range plan.Steps {
			cs := *s
			steps[i] = &cs
			if cs.Waiting == 0 {
				roots = append(roots, &cs)
			}
		}
		// The row, the jobs of the steps without dependencies, then every
		// step as it is: the roots stored released, not updated after.
		if err := tx.InsertWorkflow(wf); err != nil {
			return err
		}
		if err := insertJobs(tx, wf.ID, roots); err != nil {
			return err
		}
		for _, s := range roots { // its job has it now; a replay takes it from the dead-letter row
			s.Job = StepJob{}
		}
		if err := tx.InsertSteps(wf.ID, steps, plan.Edges); err != nil {
			return err
		}
		tx.Publish(EventWorkflowSubmitted, 0, "", "", workflowData(wf))
		return nil
	})
	if err != nil {
		return nil, nil, fmt.Errorf("submit workflow: %w", err)
	}
	return wf, steps, nil
}

// release inserts the jobs of steps (each waiting on nothing) and marks
// them released.
func release(tx Tx, wf int64, steps []*WorkflowStep) error {
	if len(steps) == 0 {
		return nil
	}
	slices.SortFunc(steps, func(a, b *WorkflowStep) int { return cmp.Compare(a.Position, b.Position) })
	if err := insertJobs(tx, wf, steps); err != nil {
		return err
	}
	return tx.SaveSteps(steps)
}

// insertJobs inserts the jobs of steps and sets them released (in steps,
// not in the store).
func insertJobs(tx Tx, wf int64, steps []*WorkflowStep) error {
	if len(steps) == 0 {
		return nil
	}
	now := tx.Now()
	njs := make([]*NewJob, len(steps))
	for i, s := range steps {
		nj := s.Job.NewJob(wf, s.Name, now)
		njs[i] = &nj
	}
	jobs, err := insert(tx, njs...)
	if err != nil {
		return fmt.Errorf("release steps of workflow %d: %w", wf, err)
	}
	t := now.Truncate(time.Millisecond)
	for i, s := range steps {
		s.Status, s.JobID, s.ReleasedAt, s.Waiting = StepReleased, jobs[i].ID, &t, 0
	}
	return nil
}

// StepEnd is the end of the job of a workflow step: done with Result, or
// failed (dead-lettered, cancelled) with Error.
type StepEnd struct {
	Workflow int64
	Step     string
	JobID    int64
	To       StepStatus
	Result   json.RawMessage
	Error    string
}

// stepEnded records one step's end (see StepsEnded), or, inside a
// batched write (batchEnds), keeps it for the batch's one StepsEnded.
func stepEnded(tx Tx, wfID int64, name string, jobID int64, to StepStatus, result json.RawMessage, errText string) error {
	e := StepEnd{Workflow: wfID, Step: name, JobID: jobID, To: to, Result: result, Error: errText}
	if b, ok := tx.(*endsBatch); ok {
		b.ends = append(b.ends, e)
		return nil
	}
	return StepsEnded(tx, []StepEnd{e})
}

// endsBatch is a Tx whose step ends wait for one StepsEnded: a write that
// ends many jobs (a workflow's cancel, a drain, an admin move, TTL expiry)
// then reads and stores each workflow and its steps once, not per job.
type endsBatch struct {
	Tx
	ends []StepEnd
}

// batchEnds runs fn over a Tx that keeps the step ends fn causes, then
// records them all.
func batchEnds(tx Tx, fn func(Tx) error) error {
	b := &endsBatch{Tx: tx}
	if err := fn(b); err != nil {
		return err
	}
	return StepsEnded(tx, b.ends)
}

// StepsEnded records in their workflows that the jobs of ends ended, and
// releases the dependants this resolves, in tx: also in the SQLite store's
// batched completion, for the workflow steps among the jobs it completed.
// Each workflow is read and stored once however many of its steps ended
// (a fan-in's parents complete a hundred at a time), in id order, so two
// batches lock workflows in the same order. A job that is not its step's
// current one (an earlier job of a replayed step) changes nothing.
func StepsEnded(tx Tx, ends []StepEnd) error {
	if len(ends) > 1 {
		ends = slices.Clone(ends)
		slices.SortStableFunc(ends, func(a, b StepEnd) int { return cmp.Compare(a.Workflow, b.Workflow) })
	}
	for len(ends) > 0 {
		n := 1
		for n < len(ends) && ends[n].Workflow == ends[0].Workflow {
			n++
		}
		if err := workflowStepsEnded(tx, ends[:n]); err != nil {
			return err
		}
		ends = ends[n:]
	}
	return nil
}

// workflowStepsEnded is StepsEnded for the ends of one workflow: the
// workflow's row locked first (so a cancel, which takes it before the
// steps, and a completion never wait for each other crosswise), then its
// steps read, stored and resolved a batch at a time. A cancelled workflow
// has no waiting step left to release.
func workflowStepsEnded(tx Tx, ends []StepEnd) error {
	wfID := ends[0].Workflow
	wf, err := tx.Workflow(wfID)
	if errors.Is(err, ErrNotFound) {
		return nil // aged out with its jobs; nothing waits on it
	}
	if err != nil {
		return err
	}
	names := make([]string, 0, len(ends))
	for _, e := range ends {
		names = append(names, e.Step)
	}
	read, err := tx.Steps(wfID, names)
	if err != nil {
		return err
	}
	steps := make(map[string]*WorkflowStep, len(read))
	for _, s := range read {
		steps[s.Name] = s
	}
	var changed []*WorkflowStep
	isChanged := make(map[*WorkflowStep]bool, len(ends))
	var done, failed int
	resolve := map[EdgeKinds][]string{}
	for _, e := range ends {
		s := steps[e.Step]
		if s == nil || s.JobID != e.JobID {
			continue // an earlier job of a replayed step
		}
		kinds, d, f, ok := stepEnd(tx, s, e)
		done, failed = done+d, failed+f
		if !isChanged[s] {
			isChanged[s] = true
			changed = append(changed, s)
		}
		if ok && wf.Status != WorkflowCancelled {
			resolve[kinds] = append(resolve[kinds], s.Name)
		}
	}
	if len(changed) == 0 {
		return nil
	}
	if err := tx.SaveSteps(changed); err != nil {
		return err
	}
	for _, kinds := range []EdgeKinds{EdgesAll, EdgesBlocking, EdgesContinue} {
		if len(resolve[kinds]) == 0 {
			continue
		}
		ready, err := tx.Resolve(wfID, resolve[kinds], kinds)
		if err != nil {
			return err
		}
		if err := release(tx, wfID, ready); err != nil {
			return err
		}
	}
	wf.DoneCount += done
	if wf.Status != WorkflowCancelled { // its failures no longer block anything
		wf.FailedCount += failed
	}
	return settle(tx, wf)
}

// stepEnd applies e to s, its step: it says which of s's dependants the
// end resolves, if any, and what it adds to the workflow's done and failed
// counts.
func stepEnd(tx Tx, s *WorkflowStep, e StepEnd) (kinds EdgeKinds, done, failed int, resolves bool) {
	now := tx.Now().Truncate(time.Millisecond)
	from := s.Status
	s.Status, s.FinishedAt = e.To, &now
	switch {
	case e.To == StepDone:
		s.Result, s.Error = e.Result, ""
		if len(s.Result) == 0 {
			s.Result = json.RawMessage("null")
		}
		if s.Failed { // its "continue" dependants were resolved by the failure
			return EdgesBlocking, 1, 0, true
		}
		return EdgesAll, 1, 0, true
	case from == StepDead || from == StepCancelled:
		return 0, 0, 0, false // a cancelled job moved to the dead-letter queue: one failure
	}
	s.Error = TruncateString(e.Error, 1024)
	first := !s.Failed
	s.Failed = true
	return EdgesContinue, 0, 1, first // resolved by its first failure only
}

// stepReplayed records that dead-letter row d (the current job of its
// step) was replayed as job: the step is released again, and a workflow
// blocked by it alone runs on.
func stepReplayed(tx Tx, d *DeadJob, job *Job) error {
	wf, err := tx.Workflow(d.WorkflowID)
	if errors.Is(err, ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	steps, err := tx.Steps(d.WorkflowID, []string{d.Step})
	if err != nil || len(steps) == 0 || steps[0].JobID != d.ID {
		return err
	}
	s := steps[0]
	if (s.Status == StepDead || s.Status == StepCancelled) && wf.Status != WorkflowCancelled {
		wf.FailedCount--
	}
	now := tx.Now().Truncate(time.Millisecond)
	s.Status, s.JobID, s.Error, s.FinishedAt, s.ReleasedAt = StepReleased, job.ID, "", nil, &now
	if err := tx.SaveSteps([]*WorkflowStep{s}); err != nil {
		return err
	}
	return settle(tx, wf)
}

// stepGone makes nj, a replay of a workflow step's dead-letter row, a
// plain job unless the row is its step's current job: when the workflow is
// gone (aged out after a cancel; a job of no workflow would outlive every
// retention, which leaves workflow jobs to their workflow's), or the row
// is an earlier failure of a step replayed since (the step follows one
// job; a second would run it twice).
func stepGone(tx Tx, nj *NewJob) error {
	if nj.WorkflowID == 0 || nj.ReplayedFrom == nil {
		return nil
	}
	_, err := tx.Workflow(nj.WorkflowID)
	if errors.Is(err, ErrNotFound) {
		nj.WorkflowID, nj.Step = 0, ""
		return nil
	}
	if err != nil {
		return err
	}
	steps, err := tx.Steps(nj.WorkflowID, []string{nj.Step})
	if err != nil {
		return err
	}
	if len(steps) == 0 || steps[0].JobID != *nj.ReplayedFrom {
		nj.WorkflowID, nj.Step = 0, ""
	}
	return nil
}

// OldWorkflow is a finished workflow retention may delete, and its size.
type OldWorkflow struct {
	ID    int64
	Steps int
}

// MaxOldSteps bounds the steps of the workflows one retention pass
// deletes (the first workflow goes whatever its size): a thousand
// workflows of 20,000 steps would be one transaction of tens of millions
// of rows. What is left goes on the next pass.
const MaxOldSteps = 100000

// DeleteOldWorkflows is retention's pass over workflows, in one
// transaction: up to limit workflows finished before before, none with a
// job still queued or processing (a cancel asked a running step to stop;
// it may not have yet), the earliest finished first, within MaxOldSteps,
// go with their steps, edges and jobs. It says how many went.
func DeleteOldWorkflows(ctx context.Context, w Writer, before time.Time, limit int) (int, error) {
	n := 0
	err := w.Write(ctx, func(tx Tx) error {
		n = 0
		olds, err := tx.OldWorkflows(before, min(max(limit, 1), BulkBatch))
		if err != nil {
			return err
		}
		ids := takeOld(olds, MaxOldSteps)
		if len(ids) == 0 {
			return nil
		}
		if err := tx.DeleteWorkflows(ids); err != nil {
			return err
		}
		n = len(ids)
		return tx.Fault(FaultDelete, 0)
	})
	if err != nil {
		return 0, fmt.Errorf("delete old workflows: %w", err)
	}
	return n, nil
}

// takeOld is the ids of olds, in order, while their steps stay within
// maxSteps, and at least the first.
func takeOld(olds []OldWorkflow, maxSteps int) []int64 {
	var ids []int64
	steps := 0
	for _, o := range olds {
		if len(ids) > 0 && steps+o.Steps > maxSteps {
			break
		}
		steps += o.Steps
		ids = append(ids, o.ID)
	}
	return ids
}

// settle derives wf's status from its counts, stores it, and announces a
// change.
func settle(tx Tx, wf *Workflow) error {
	was := wf.Status
	switch {
	case wf.Status == WorkflowCancelled:
	case wf.DoneCount >= wf.StepCount:
		wf.Status = WorkflowDone
	case wf.FailedCount > 0:
		wf.Status = WorkflowBlocked
	default:
		wf.Status = WorkflowRunning
	}
	now := tx.Now().Truncate(time.Millisecond)
	wf.UpdatedAt = now
	if wf.Status.Finished() && wf.FinishedAt == nil {
		wf.FinishedAt = &now
	}
	if err := tx.SaveWorkflow(wf); err != nil {
		return err
	}
	if wf.Status != was {
		tx.Publish("workflow."+string(wf.Status), 0, "", "", workflowData(wf))
	}
	return nil
}

func workflowData(wf *Workflow) []byte {
	return eventData(map[string]any{"workflow_id": wf.ID, "name": wf.Name, "status": wf.Status,
		"step_count": wf.StepCount, "done_count": wf.DoneCount, "failed_count": wf.FailedCount})
}

// CancelWorkflow cancels workflow id: its waiting steps are cancelled, its
// queued jobs cancelled, its processing jobs asked to stop (their workers
// see it on the next heartbeat), and nothing is released afterwards, all
// in one transaction, audited. A finished workflow is ErrIllegalTransition.
func CancelWorkflow(ctx context.Context, w Writer, id int64, audit *AuditEntry) (*Workflow, error) {
	var wf *Workflow
	err := w.Write(ctx, func(tx Tx) error {
		// Locks in the order every step's end takes them: jobs, then the
		// workflow, then steps (see the top of this file).
		live := func(seen map[int64]bool) ([]*Job, error) {
			var out []*Job
			for after := int64(0); ; {
				jobs, err := tx.Jobs(JobFilter{Workflow: id, StatusIn: []Status{StatusQueued, StatusProcessing}, AfterID: after, Asc: true})
				if err != nil {
					return nil, err
				}
				for _, j := range jobs {
					after = j.ID
					if !seen[j.ID] {
						seen[j.ID] = true
						out = append(out, j)
					}
				}
				if len(jobs) < BulkBatch {
					return out, nil
				}
			}
		}
		seen := map[int64]bool{}
		jobs, err := live(seen)
		if err != nil {
			return err
		}
		if wf, err = tx.Workflow(id); err != nil {
			return err
		}
		if wf.Status.Finished() {
			return fmt.Errorf("workflow %d is %s: %w", id, wf.Status, ErrIllegalTransition)
		}
		wf.Status = WorkflowCancelled
		if err := settle(tx, wf); err != nil {
			return err
		}
		tx.Publish(EventWorkflowCancelled, 0, "", "", workflowData(wf)) // settle saw no change: it was set above
		if _, err := tx.CancelWaiting(id); err != nil {
			return err
		}
		// Steps released by completions that committed between the first
		// read and the workflow's lock: nothing is released after it.
		more, err := live(seen)
		if err != nil {
			return err
		}
		err = batchEnds(tx, func(tx Tx) (err error) {
			for _, j := range append(jobs, more...) {
				switch {
				case j.Status == StatusQueued:
					j.CancelReason = CancelRequested
					_, err = finishCancel(tx, j)
				case !j.CancelRequested:
					if _, err = tx.RequestCancel(j, CancelRequested); err == nil {
						tx.Event(EventCancelRequest, j.ID, j.Queue, j.Kind, nil)
					}
				}
				if err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
		if wf, err = tx.Workflow(id); err != nil { // as the cancels left it
			return err
		}
		return recordAudit(tx, audit, 1)
	})
	if err != nil {
		return nil, fmt.Errorf("cancel workflow %d: %w", id, err)
	}
	return wf, nil
}

// CriticalPath is the chain of steps that decided when the workflow
// finished (or where it is now): from the step that finished last (or is
// still unfinished, latest released), back through the parent whose end
// released it, to a step without dependencies. It is given first to last.
func CriticalPath(steps []*WorkflowStep, now time.Time) []string {
	if len(steps) == 0 {
		return nil
	}
	byName := make(map[string]*WorkflowStep, len(steps))
	for _, s := range steps {
		byName[s.Name] = s
	}
	end := func(s *WorkflowStep) time.Time {
		switch {
		case s.FinishedAt != nil:
			return *s.FinishedAt
		case s.ReleasedAt != nil || s.Status == StepWaiting:
			return now
		}
		return time.Time{}
	}
	// The last step to end, preferring one unfinished and deepest: a step
	// still waiting ends "now" like the ones before it, so ties go to the
	// one with the most dependencies behind it.
	depth := map[string]int{}
	var deep func(s *WorkflowStep) int
	deep = func(s *WorkflowStep) int {
		if d, ok := depth[s.Name]; ok {
			return d
		}
		depth[s.Name] = 0
		d := 0
		for _, p := range s.DependsOn {
			if ps := byName[p.Step]; ps != nil {
				d = max(d, deep(ps)+1)
			}
		}
		depth[s.Name] = d
		return d
	}
	last := steps[0]
	for _, s := range steps[1:] {
		if c := end(s).Compare(end(last)); c > 0 || c == 0 && deep(s) > deep(last) {
			last = s
		}
	}
	path := []string{last.Name}
	seen := map[string]bool{last.Name: true}
	for cur := last; len(cur.DependsOn) > 0; {
		var next *WorkflowStep
		for _, d := range cur.DependsOn {
			p := byName[d.Step]
			if p == nil || seen[p.Name] {
				continue
			}
			if next == nil || end(p).After(end(next)) || end(p).Equal(end(next)) && deep(p) > deep(next) {
				next = p
			}
		}
		if next == nil {
			break
		}
		seen[next.Name] = true
		path = append(path, next.Name)
		cur = next
	}
	slices.Reverse(path)
	return path
}
