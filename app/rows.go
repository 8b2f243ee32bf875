package app

import "time"

// Rows is a batch of stored rows, as one store exports them and another
// imports them (queue migrate-store). Only the slice of Table is set on
// export; an import takes any of them.
type Rows struct {
	// Table is the table the rows come from: "jobs", "dead_letter_jobs",
	// "workflows", "workflow_steps", "workflow_edges", "queues",
	// "periodic_fires", "once_records", "audit", "events" or
	// "runtime_settings".
	Table string
	// Done counts the rows of Table exported so far, this batch included;
	// Total is how many the table holds.
	Done, Total int64

	Jobs      []*Job
	Dead      []*DeadJob
	Workflows []*Workflow
	Steps     []StepRecord
	Edges     []EdgeRecord
	Queues    []QueueState
	Fires     []FireRecord
	Once      []*OnceRecord
	Audit     []AuditEntry
	Events    []Event
	Settings  []SettingsRecord
}

// FireRecord is one row of periodic_fires: a fire time of a periodic entry
// that was enqueued (JobID) or skipped (nil).
type FireRecord struct {
	Entry     string
	FireAt    time.Time
	JobID     *int64
	CreatedAt time.Time
}

// StepRecord is one row of workflow_steps: the step as stored, with its
// WorkflowID and its job (Job, its payload byte for byte as submitted),
// and its place among the steps of its workflow. Its DependsOn may be
// empty: a step's dependencies travel as EdgeRecords, which keep their
// order.
type StepRecord struct {
	Step     *WorkflowStep
	Position int
}

// EdgeRecord is one row of workflow_edges: Child depends on Parent in
// workflow WorkflowID, and Ord is the dependency's place in Child's
// depends_on (from 0).
type EdgeRecord struct {
	WorkflowID int64
	WorkflowEdge
	Ord int
}
