package app

import (
	"sort"
	"time"
)

// Tally gathers a store's per-queue counts as it reads them, so what each
// count adds to a queue's stats is written once, here.
type Tally struct {
	by     map[string]*QueueStats
	oldest map[string]time.Time
}

// NewTally returns an empty Tally.
func NewTally() *Tally {
	return &Tally{by: map[string]*QueueStats{}, oldest: map[string]time.Time{}}
}

// Queue lists queue (also with no jobs) and returns its counts.
func (t *Tally) Queue(name string) *QueueStats {
	st := t.by[name]
	if st == nil {
		st = &QueueStats{Queue: name}
		t.by[name] = st
	}
	return st
}

// Add counts n jobs of queue in status: a stored status, "scheduled"
// (queued, not yet due) or "queued" (due).
func (t *Tally) Add(queue, status string, n int64) {
	st := t.Queue(queue)
	switch Status(status) {
	case StatusQueued:
		st.Queued += n
	case "scheduled":
		st.Scheduled += n
	case StatusProcessing:
		st.Processing += n
	case StatusDone:
		st.Done += n
	case StatusCancelled:
		st.Cancelled += n
	case StatusDeadLetter:
		st.DeadLetter += n
	}
}

// Due notes the run_at of a due job of queue; the earliest gives the
// queue's OldestQueuedAge.
func (t *Tally) Due(queue string, runAt time.Time) {
	if o, ok := t.oldest[queue]; !ok || runAt.Before(o) {
		t.oldest[queue] = runAt
	}
}

// LastMinute adds the attempts of queue that ended in the last minute.
func (t *Tally) LastMinute(queue string, completed, failed int64) {
	st := t.Queue(queue)
	st.CompletedLastMinute += completed
	st.FailedLastMinute += failed
}

// Stats is the tally as of now: each queue's Total and OldestQueuedAge,
// sorted by queue name.
func (t *Tally) Stats(now time.Time) []QueueStats {
	out := make([]QueueStats, 0, len(t.by))
	for name, st := range t.by {
		st.Total = st.Queued + st.Scheduled + st.Processing + st.Done + st.Cancelled + st.DeadLetter
		if at, ok := t.oldest[name]; ok && st.Queued > 0 {
			st.OldestQueuedAge = max(0, now.Sub(at).Seconds())
		}
		out = append(out, *st)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Queue < out[j].Queue })
	return out
}

// TotalStats sums per-queue stats; the oldest age is the largest of them.
func TotalStats(qs []QueueStats) QueueStats {
	var t QueueStats
	for _, q := range qs {
		t.Total += q.Total
		t.Queued += q.Queued
		t.Scheduled += q.Scheduled
		t.Processing += q.Processing
		t.Done += q.Done
		t.Cancelled += q.Cancelled
		t.DeadLetter += q.DeadLetter
		t.CompletedLastMinute += q.CompletedLastMinute
		t.FailedLastMinute += q.FailedLastMinute
		t.OldestQueuedAge = max(t.OldestQueuedAge, q.OldestQueuedAge)
	}
	return t
}
