package app

import (
	"context"
	"fmt"
	"sort"
	"time"
)

// Report is what `queue doctor` found. The database fields are the
// store's own (Diagnose leaves them empty).
type Report struct {
	Path            string       `json:"path"`
	SchemaVersion   string       `json:"schema_version"`
	Integrity       string       `json:"integrity"`
	SizeBytes       int64        `json:"size_bytes"`
	WALBytes        int64        `json:"wal_bytes"`
	WALFrames       int64        `json:"wal_frames_not_checkpointed"`
	Queues          []QueueStats `json:"queues"`
	OldestClaimable float64      `json:"oldest_claimable_age_seconds"`
	DLQLastDay      int64        `json:"dead_lettered_last_24h"`
	DLQDayBefore    int64        `json:"dead_lettered_24h_before"`
	StuckLeases     int64        `json:"stuck_leases"`
	// BlockedWorkflows counts workflows waiting for a dead step's replay
	// (up to 1,000).
	BlockedWorkflows int64 `json:"blocked_workflows"`
	// Counts lists the per-status counters Stats reads that differ from a
	// count of the rows; Repaired says they were rewritten.
	Counts   []CountFix `json:"counts_wrong"`
	Repaired bool       `json:"counts_repaired"`
	Problems []string   `json:"problems"`
}

// CountFix is a counter of a queue's jobs in a status ("dead_letter":
// its dead-letter rows) that differed from a count of the rows.
type CountFix struct {
	Queue   string `json:"queue"`
	Status  string `json:"status"`
	Counter int64  `json:"counter"`
	Rows    int64  `json:"rows"`
}

// Recounter is a store that keeps counters of its jobs per queue and
// status (so that Stats and a cold start never count rows) and can check
// them against the rows, and rewrite the wrong ones when repair is set.
type Recounter interface {
	RecountJobs(ctx context.Context, repair bool) ([]CountFix, error)
}

// CountFixes lists the counters (got) that differ from a count of the
// rows (want), by queue, then status; name gives a key's queue and status.
// A store's RecountJobs reports what it found through it.
func CountFixes[K comparable](got, want map[K]int64, name func(K) (queue, status string)) []CountFix {
	var out []CountFix
	for k, n := range want {
		if got[k] != n {
			q, st := name(k)
			out = append(out, CountFix{Queue: q, Status: st, Counter: got[k], Rows: n})
		}
	}
	for k, n := range got {
		if _, ok := want[k]; !ok {
			q, st := name(k)
			out = append(out, CountFix{Queue: q, Status: st, Counter: n})
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Queue != out[j].Queue {
			return out[i].Queue < out[j].Queue
		}
		return out[i].Status < out[j].Status
	})
	return out
}

// Recount checks st's counters against its rows (when st keeps any) and
// notes in r what differs, and whether it was repaired.
func (r *Report) Recount(ctx context.Context, st Store, repair bool) error {
	rc, ok := st.(Recounter)
	if !ok {
		return nil
	}
	fixes, err := rc.RecountJobs(ctx, repair)
	if err != nil {
		return fmt.Errorf("doctor: %w", err)
	}
	r.Counts, r.Repaired = fixes, repair && len(fixes) > 0
	if len(fixes) > 0 && !repair {
		r.Problem("%d job counters differ from the rows (Stats and the dashboard show them): run `queue doctor --repair`", len(fixes))
	}
	return nil
}

// Problem notes a problem, in words that say what to do about it.
func (r *Report) Problem(format string, args ...any) {
	r.Problems = append(r.Problems, fmt.Sprintf(format, args...))
	sort.Strings(r.Problems)
}

// Diagnose reads what a store holds, without writing, and names what looks
// wrong: leases that expired over a minute ago and were not recovered (no
// maintenance running), a dead-letter queue growing fast, and workflows
// blocked by a dead step.
func Diagnose(ctx context.Context, st Store, now time.Time) (*Report, error) {
	r := &Report{Problems: []string{}}
	var err error
	if r.Queues, err = st.Stats(ctx); err != nil {
		return nil, fmt.Errorf("doctor: %w", err)
	}
	for _, q := range r.Queues {
		r.OldestClaimable = max(r.OldestClaimable, q.OldestQueuedAge)
	}
	day := 24 * time.Hour
	counts := []struct {
		n     *int64
		count func() (int, error)
	}{
		{&r.DLQLastDay, func() (int, error) { return st.CountDead(ctx, DeadFilter{MovedSince: now.Add(-day)}) }},
		{&r.DLQDayBefore, func() (int, error) {
			return st.CountDead(ctx, DeadFilter{MovedSince: now.Add(-2 * day), OlderThan: now.Add(-day)})
		}},
		{&r.StuckLeases, func() (int, error) {
			return st.CountJobs(ctx, JobFilter{Status: string(StatusProcessing), LeaseExpiredBefore: now.Add(-time.Minute)})
		}},
	}
	for _, c := range counts {
		n, err := c.count()
		if err != nil {
			return nil, fmt.Errorf("doctor: %w", err)
		}
		*c.n = int64(n)
	}
	blocked, err := st.ListWorkflows(ctx, WorkflowFilter{Status: WorkflowBlocked, Limit: 1000})
	if err != nil {
		return nil, fmt.Errorf("doctor: %w", err)
	}
	if r.BlockedWorkflows = int64(len(blocked)); r.BlockedWorkflows > 0 {
		r.Problem("%d workflows are blocked by a dead-lettered or cancelled step (`queue workflow list --status blocked`): replay the step from the dead-letter queue, or cancel the workflow", r.BlockedWorkflows)
	}
	if r.StuckLeases > 0 {
		r.Problem("%d jobs hold leases that expired over a minute ago: is `queue serve` running its maintenance?", r.StuckLeases)
	}
	if r.DLQLastDay > 100 && r.DLQLastDay > 2*r.DLQDayBefore {
		r.Problem("the dead-letter queue grew by %d in the last day (%d the day before)", r.DLQLastDay, r.DLQDayBefore)
	}
	return r, nil
}
