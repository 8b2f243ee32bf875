package app

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"time"
	"unicode"
)

// Workflows are jobs that depend on jobs. The graph is stored in one
// transaction: the workflow row, a row per step (workflow_steps) and a row
// per dependency (workflow_edges). A step waits in workflow_steps, not in
// the jobs table, until its last dependency is resolved; the transaction
// that resolves it (a completion, a dead-letter move, a cancel) inserts its
// job, so a claim never sees a waiting step and the jobs table keeps its
// four statuses. The rules are here, once; the stores only carry out the
// Tx steps they name.

// WorkflowStatus is where a workflow is as a whole.
type WorkflowStatus string

// Workflow statuses.
const (
	// WorkflowRunning: steps are waiting, queued or processing; none failed.
	WorkflowRunning WorkflowStatus = "running"
	// WorkflowBlocked: a step dead-lettered (or was cancelled on its own)
	// and was not replayed; its dependants wait for the replay.
	WorkflowBlocked WorkflowStatus = "blocked"
	// WorkflowDone: every step is done.
	WorkflowDone WorkflowStatus = "done"
	// WorkflowCancelled: the workflow was cancelled; nothing more is released.
	WorkflowCancelled WorkflowStatus = "cancelled"
)

// Finished reports whether no step of the workflow can run any more.
func (s WorkflowStatus) Finished() bool { return s == WorkflowDone || s == WorkflowCancelled }

// StepStatus is where one step is.
type StepStatus string

// Step statuses, as stored.
const (
	// StepWaiting: a dependency is unresolved; the step has no job yet.
	StepWaiting StepStatus = "waiting"
	// StepReleased: its job is in the jobs table, queued or processing.
	StepReleased StepStatus = "released"
	// StepDone: its job completed.
	StepDone StepStatus = "done"
	// StepDead: its job is in the dead-letter queue.
	StepDead StepStatus = "dead_letter"
	// StepCancelled: its job was cancelled, or the workflow was cancelled
	// before it was released.
	StepCancelled StepStatus = "cancelled"
)

// OnFailureContinue on a dependency lets the dependant run after that parent
// dead-lettered or was cancelled (the failure shows in its parents).
const OnFailureContinue = "continue"

// Limits of a workflow.
const (
	MaxWorkflowSteps = 20000
	MaxWorkflowName  = 200
	// DefaultCallbackStep names the step the callback shorthand adds.
	DefaultCallbackStep = "callback"
)

// Workflow event types (GET /api/events): the workflow's status changed.
const (
	EventWorkflowSubmitted = "workflow.submitted"
	EventWorkflowBlocked   = "workflow.blocked"
	EventWorkflowResumed   = "workflow.running"
	EventWorkflowDone      = "workflow.done"
	EventWorkflowCancelled = "workflow.cancelled"
)

// Workflow is one workflow as stored, with its counts.
type Workflow struct {
	ID     int64          `json:"id"`
	Name   string         `json:"name"`
	Tags   []string       `json:"tags"`
	Status WorkflowStatus `json:"status"`
	// StepCount is how many steps it has; DoneCount how many are done;
	// FailedCount how many are dead-lettered or cancelled and not replayed
	// (while the workflow is not cancelled).
	StepCount   int        `json:"step_count"`
	DoneCount   int        `json:"done_count"`
	FailedCount int        `json:"failed_count"`
	CreatedAt   time.Time  `json:"created_at"`
	UpdatedAt   time.Time  `json:"updated_at"`
	FinishedAt  *time.Time `json:"finished_at"`
}

// Dependency is one entry of a step's depends_on: a parent step, and what
// a failure of that parent does (empty: the step waits for a replay;
// "continue": the step runs anyway). JSON takes "name" or {"step": "name",
// "on_failure": "continue"}.
type Dependency struct {
	Step      string `json:"step"`
	OnFailure string `json:"on_failure,omitempty"`
}

// UnmarshalJSON reads a dependency from a step name or an object.
func (d *Dependency) UnmarshalJSON(b []byte) error {
	if b = bytes.TrimSpace(b); len(b) > 0 && b[0] == '"' {
		*d = Dependency{}
		return json.Unmarshal(b, &d.Step)
	}
	type plain Dependency
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var p plain
	if err := dec.Decode(&p); err != nil {
		return fmt.Errorf("a dependency is a step name or {\"step\": name, \"on_failure\": \"continue\"}: %w", err)
	}
	*d = Dependency(p)
	return nil
}

// StepJob is the job a step becomes when it is released. A delay and a ttl
// count from the release; run_at and expires_at are absolute.
type StepJob struct {
	Queue       string          `json:"queue"`
	Kind        string          `json:"kind"`
	Payload     json.RawMessage `json:"payload"`
	Priority    int             `json:"priority,omitempty"`
	RunAt       *time.Time      `json:"run_at,omitempty"`
	Delay       Duration        `json:"delay,omitempty"`
	MaxAttempts int             `json:"max_attempts"`
	Timeout     Duration        `json:"timeout"`
	TTL         Duration        `json:"ttl,omitempty"`
	ExpiresAt   *time.Time      `json:"expires_at,omitempty"`
	Tags        []string        `json:"tags,omitempty"`
	Key         string          `json:"key,omitempty"`
	// CallbackURL, Traceparent and Tracestate: see Job.
	CallbackURL string `json:"callback_url,omitempty"`
	Traceparent string `json:"traceparent,omitempty"`
	Tracestate  string `json:"tracestate,omitempty"`
}

// NewJob is the job of step name of workflow wf released at now.
func (sj *StepJob) NewJob(wf int64, name string, now time.Time) NewJob {
	nj := NewJob{
		Queue: sj.Queue, Kind: sj.Kind, Payload: sj.Payload, Priority: sj.Priority,
		RunAt: now.Add(sj.Delay.D()), MaxAttempts: sj.MaxAttempts, Timeout: sj.Timeout.D(),
		ExpiresAt: sj.ExpiresAt, Tags: sj.Tags, WorkflowID: wf, Step: name, Key: sj.Key,
		CallbackURL: sj.CallbackURL, Traceparent: sj.Traceparent, Tracestate: sj.Tracestate,
	}
	if sj.RunAt != nil && sj.RunAt.After(now) {
		nj.RunAt = *sj.RunAt
	}
	if sj.TTL > 0 {
		t := now.Add(sj.TTL.D())
		nj.ExpiresAt = &t
	}
	return nj
}

// Spec is sj as the stores keep it: JSON without the payload, which has a
// column of its own, so that a step's job gets the payload byte for byte
// (encoding/json would compact it and escape < > &).
func (sj StepJob) Spec() (string, error) {
	sj.Payload = nil
	b, err := json.Marshal(sj)
	return string(b), err
}

// ParseStepJob reads a StepJob from its Spec and its stored payload.
func ParseStepJob(spec string, payload []byte) (StepJob, error) {
	var sj StepJob
	if err := json.Unmarshal([]byte(spec), &sj); err != nil {
		return sj, fmt.Errorf("step job: %w", err)
	}
	sj.Payload = json.RawMessage(payload)
	return sj, nil
}

// WorkflowStep is one step of a workflow as stored, and as the API shows it.
type WorkflowStep struct {
	WorkflowID int64        `json:"workflow_id"`
	Name       string       `json:"step"`
	Queue      string       `json:"queue"`
	Kind       string       `json:"kind"`
	DependsOn  []Dependency `json:"depends_on"`
	Status     StepStatus   `json:"status"`
	// JobID is its job's id once released (after a replay, the new job's).
	JobID int64 `json:"job_id,omitempty"`
	// Waiting counts the dependencies not yet resolved.
	Waiting int `json:"waiting_on"`
	// Failed is set once its job failed (dead-lettered or cancelled): its
	// "continue" dependants were released then, and are not again.
	Failed bool            `json:"-"`
	Result json.RawMessage `json:"result,omitempty"`
	Error  string          `json:"error,omitempty"`
	Job    StepJob         `json:"-"`
	// Position is the step's place in the workflow as given; steps
	// released together get their jobs (and so their claim order) in it.
	Position   int        `json:"-"`
	ReleasedAt *time.Time `json:"released_at"`
	FinishedAt *time.Time `json:"finished_at"`

	// Read from its job when the store reads a workflow (GetWorkflow): the
	// job's status while released, its attempts and its last start.
	JobStatus Status     `json:"job_status,omitempty"`
	Attempts  int        `json:"attempts"`
	StartedAt *time.Time `json:"started_at"`
}

// WorkflowEdge is one dependency: child depends on parent.
type WorkflowEdge struct {
	Parent, Child string
	// Continue: a failure of the parent resolves the edge too.
	Continue bool
}

// Parent is one dependency of a step as its handler sees it.
type Parent struct {
	Step   string          `json:"step"`
	Status StepStatus      `json:"status"`
	JobID  int64           `json:"job_id,omitempty"`
	Result json.RawMessage `json:"result"`
	Error  string          `json:"error,omitempty"`
}

// ParentOf is s as a parent.
func ParentOf(s *WorkflowStep) Parent {
	r := s.Result
	if len(r) == 0 {
		r = json.RawMessage("null")
	}
	return Parent{Step: s.Name, Status: s.Status, JobID: s.JobID, Result: r, Error: s.Error}
}

// EdgeKinds says which dependencies on a parent a Tx.Resolve resolves.
type EdgeKinds int

// Edge kinds.
const (
	// EdgesAll: every dependency (the parent is done, never failed before).
	EdgesAll EdgeKinds = iota
	// EdgesBlocking: dependencies without on_failure "continue" (the parent
	// is done after a failure resolved its "continue" dependants).
	EdgesBlocking
	// EdgesContinue: dependencies with on_failure "continue" (the parent failed).
	EdgesContinue
)

// Resolves reports whether kinds resolves an edge whose Continue is cont.
func (k EdgeKinds) Resolves(cont bool) bool {
	return k == EdgesAll || (k == EdgesContinue) == cont
}

// WorkflowFilter selects workflows; zero fields match everything.
type WorkflowFilter struct {
	Status WorkflowStatus
	Name   string
	// AfterID continues a listing (newest first) after this id.
	AfterID int64
	Limit   int
}

// WorkflowInput is POST /api/workflows.
type WorkflowInput struct {
	Name  string      `json:"name"`
	Tags  []string    `json:"tags,omitempty"`
	Steps []StepInput `json:"steps"`
	// Callback, if set, is a step that depends on every step no other
	// step depends on: it runs once the rest of the workflow is done.
	Callback *StepInput `json:"callback,omitempty"`
}

// StepInput is one step: a job as POST /api/jobs takes it, its name, and
// the steps it depends on. OnFailure is for the callback shorthand: it
// applies to each of the callback's dependencies.
type StepInput struct {
	SubmitInput
	Step      string       `json:"step"`
	DependsOn []Dependency `json:"depends_on,omitempty"`
	OnFailure string       `json:"on_failure,omitempty"`
}

// WorkflowPlan is a validated workflow, ready to store.
type WorkflowPlan struct {
	Workflow *Workflow
	Steps    []*WorkflowStep
	Edges    []WorkflowEdge
}

// Plan validates in against the queues' policies of cfg: every step a
// valid job without an idempotency key, step names unique, dependencies
// known, no cycle. Errors name the step at fault.
func (in *WorkflowInput) Plan(cfg *Config, now time.Time) (*WorkflowPlan, error) {
	if strings.TrimSpace(in.Name) == "" {
		return nil, Invalid("name", "a workflow needs a name")
	}
	if len(in.Name) > MaxWorkflowName || strings.IndexFunc(in.Name, unicode.IsControl) >= 0 {
		return nil, Invalid("name", "the name must be at most %d characters, none a control character", MaxWorkflowName)
	}
	if len(in.Tags) > MaxTags {
		return nil, Invalid("tags", "%d tags; at most 16", len(in.Tags))
	}
	for _, t := range in.Tags {
		if err := ValidateKind(t); err != nil {
			return nil, Invalid("tags", "tag %v", err)
		}
	}
	steps := in.Steps
	if len(steps) == 0 {
		return nil, Invalid("steps", "a workflow needs at least one step")
	}
	if n := len(steps) + btoi(in.Callback != nil); n > MaxWorkflowSteps {
		return nil, Invalid("steps", "%d steps; a workflow holds at most %d", n, MaxWorkflowSteps)
	}
	if in.Callback != nil {
		cb := *in.Callback
		if cb.Step == "" {
			cb.Step = DefaultCallbackStep
		}
		if len(cb.DependsOn) > 0 {
			return nil, Invalid("callback.depends_on", "the callback depends on every step no other step depends on; give depends_on on a step instead")
		}
		if cb.OnFailure != "" && cb.OnFailure != OnFailureContinue {
			return nil, Invalid("callback.on_failure", "on_failure must be \"continue\" or absent")
		}
		needed := map[string]bool{}
		for _, s := range steps {
			for _, d := range s.DependsOn {
				needed[d.Step] = true
			}
		}
		for _, s := range steps {
			if !needed[s.Step] {
				cb.DependsOn = append(cb.DependsOn, Dependency{Step: s.Step, OnFailure: cb.OnFailure})
			}
		}
		cb.OnFailure = ""
		steps = append(steps[:len(steps):len(steps)], cb)
	}
	p := &WorkflowPlan{
		Workflow: &Workflow{Name: in.Name, Tags: in.Tags, Status: WorkflowRunning, StepCount: len(steps), CreatedAt: now, UpdatedAt: now},
		Steps:    make([]*WorkflowStep, len(steps)),
	}
	index := make(map[string]int, len(steps))
	for i := range steps {
		field := func(f string) string {
			if in.Callback != nil && i == len(steps)-1 {
				return "callback." + f
			}
			return fmt.Sprintf("steps[%d].%s", i, f)
		}
		s := &steps[i]
		if s.Step == "" {
			return nil, Invalid(field("step"), "every step needs a name (step)")
		}
		if err := ValidateKind(s.Step); err != nil {
			return nil, Invalid(field("step"), "step name %v", err)
		}
		if j, dup := index[s.Step]; dup {
			return nil, Invalid(field("step"), "step %q is named twice (steps %d and %d)", s.Step, j, i)
		}
		index[s.Step] = i
		if s.IdempotencyKey != "" {
			return nil, Invalid(field("idempotency_key"), "step %q: a workflow step cannot carry an idempotency key", s.Step)
		}
		if s.Unique != nil || s.Debounce != nil || s.Throttle != nil {
			return nil, Invalid(field("unique"), "step %q: a workflow step cannot carry unique, debounce or throttle (its job is made when the step is released)", s.Step)
		}
		if s.OnFailure != "" {
			return nil, Invalid(field("on_failure"), "step %q: on_failure goes on each dependency ({\"step\": ..., \"on_failure\": \"continue\"})", s.Step)
		}
		nj, err := s.SubmitInput.NewJob(cfg, now)
		if err != nil {
			if ie, ok := err.(*InvalidError); ok {
				ie.Field, ie.Message = field(ie.Field), fmt.Sprintf("step %q: %s", s.Step, ie.Message)
			}
			return nil, err
		}
		sj := StepJob{Queue: nj.Queue, Kind: nj.Kind, Payload: nj.Payload, Priority: nj.Priority,
			MaxAttempts: nj.MaxAttempts, Timeout: Duration(nj.Timeout), Tags: nj.Tags, Key: nj.Key,
			CallbackURL: nj.CallbackURL, Traceparent: nj.Traceparent, Tracestate: nj.Tracestate}
		if s.RunAt != nil {
			sj.RunAt = &nj.RunAt
		} else if s.Delay != nil {
			sj.Delay = *s.Delay
		}
		if s.TTL != nil {
			sj.TTL = *s.TTL
		} else {
			sj.ExpiresAt = nj.ExpiresAt
		}
		p.Steps[i] = &WorkflowStep{Name: s.Step, Queue: nj.Queue, Kind: nj.Kind, DependsOn: s.DependsOn,
			Status: StepWaiting, Waiting: len(s.DependsOn), Job: sj, Position: i}
		if p.Steps[i].DependsOn == nil {
			p.Steps[i].DependsOn = []Dependency{}
		}
	}
	for i, s := range p.Steps {
		seen := make(map[string]bool, len(s.DependsOn))
		for _, d := range s.DependsOn {
			field := fmt.Sprintf("steps[%d].depends_on", i)
			if in.Callback != nil && i == len(p.Steps)-1 {
				field = "callback.depends_on"
			}
			switch _, known := index[d.Step]; {
			case d.Step == s.Name:
				return nil, Invalid(field, "step %q depends on itself", s.Name)
			case !known:
				return nil, Invalid(field, "step %q depends on %q, which is not a step of this workflow", s.Name, clip(d.Step))
			case seen[d.Step]:
				return nil, Invalid(field, "step %q names %q twice in depends_on", s.Name, d.Step)
			case d.OnFailure != "" && d.OnFailure != OnFailureContinue:
				return nil, Invalid(field, "step %q: on_failure of %q must be \"continue\" or absent", s.Name, d.Step)
			}
			seen[d.Step] = true
			p.Edges = append(p.Edges, WorkflowEdge{Parent: d.Step, Child: s.Name, Continue: d.OnFailure == OnFailureContinue})
		}
	}
	if cycle := findCycle(p.Steps, index); cycle != nil {
		return nil, Invalid("steps", "the steps form a cycle: %s", strings.Join(cycle, " depends on "))
	}
	return p, nil
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// findCycle returns the steps of a dependency cycle (the first repeated at
// the end), or nil if the graph has none. Iterative, so a 20,000-step chain
// does not grow the stack.
func findCycle(steps []*WorkflowStep, index map[string]int) []string {
	const (
		unseen = iota
		open
		closed
	)
	state := make([]int, len(steps))
	parent := make([]int, len(steps))
	type frame struct{ node, next int }
	for root := range steps {
		if state[root] != unseen {
			continue
		}
		stack := []frame{{root, 0}}
		state[root] = open
		for len(stack) > 0 {
			f := &stack[len(stack)-1]
			deps := steps[f.node].DependsOn
			if f.next == len(deps) {
				state[f.node] = closed
				stack = stack[:len(stack)-1]
				continue
			}
			d := index[deps[f.next].Step]
			f.next++
			switch state[d] {
			case unseen:
				state[d], parent[d] = open, f.node
				stack = append(stack, frame{d, 0})
			case open: // f.node depends on d, which is on the path to f.node
				cycle := []string{steps[d].Name}
				for n := f.node; n != d; n = parent[n] {
					cycle = append(cycle, steps[n].Name)
				}
				cycle = append(cycle, steps[d].Name)
				// Built from the dependency back to the dependant: turned
				// round, each step depends on the next.
				for i, j := 0, len(cycle)-1; i < j; i, j = i+1, j-1 {
					cycle[i], cycle[j] = cycle[j], cycle[i]
				}
				return cycle
			}
		}
	}
	return nil
}
