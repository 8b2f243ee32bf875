package app

import "time"

// Rows is a batch of stored rows, as one store exports them and another
// imports them (queue migrate-store). Only the slice of Table is set on
// export; an import takes any of them.
type Rows struct {
	// Table is the table the rows come from: "jobs", "dead_letter_jobs",
	// "queues", "periodic_fires", "once_records", "audit" or "events".
	Table string
	// Done counts the rows of Table exported so far, this batch included;
	// Total is how many the table holds.
	Done, Total int64

	Jobs   []*Job
	Dead   []*DeadJob
	Queues []QueueState
	Fires  []FireRecord
	Once   []*OnceRecord
	Audit  []AuditEntry
	Events []Event
}

// FireRecord is one row of periodic_fires: a fire time of a periodic entry
// that was enqueued (JobID) or skipped (nil).
type FireRecord struct {
	Entry     string
	FireAt    time.Time
	JobID     *int64
	CreatedAt time.Time
}
