package app

import (
	"sort"
	"time"
)

// FinishStats completes per-queue counts a store gathered: each queue's
// Total and OldestQueuedAge (from the run_at of its oldest claimable job),
// sorted by queue name. Stores call it so the arithmetic lives in one place.
func FinishStats(byQueue map[string]*QueueStats, oldest map[string]time.Time, now time.Time) []QueueStats {
	out := make([]QueueStats, 0, len(byQueue))
	for name, st := range byQueue {
		st.Total = st.Queued + st.Scheduled + st.Processing + st.Done + st.Cancelled + st.DeadLetter
		if t, ok := oldest[name]; ok && st.Queued > 0 {
			st.OldestQueuedAge = max(0, now.Sub(t).Seconds())
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
