package app

import (
	"context"
	"iter"
	"slices"
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

// Job counts j as of now: its status, scheduled if queued, released and
// not yet due. A held job counts as queued and is not a due job (it waits
// for its key, not for a worker), as the SQL stores count it.
func (t *Tally) Job(j *Job, now time.Time) {
	switch {
	case j.Held:
	case j.Status == StatusQueued && j.RunAt.After(now):
		t.Add(j.Queue, "scheduled", 1)
		return
	case j.Status == StatusQueued:
		t.Due(j.Queue, j.RunAt)
	}
	t.Add(j.Queue, string(j.Status), 1)
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

// UnclaimedAfter is how long a kind's due jobs may wait, with no job of the
// kind started meanwhile, before the kind counts as unclaimed: no worker
// handles it (a typo in a kind, a worker not deployed).
const UnclaimedAfter = 10 * time.Minute

// UnclaimedKind is a kind no worker has claimed for UnclaimedAfter.
type UnclaimedKind struct {
	Queue     string  `json:"queue"`
	Kind      string  `json:"kind"`
	Queued    int64   `json:"queued"`
	OldestAge float64 `json:"oldest_age_seconds"`
}

// UnclaimedEvery is how long an answer of unclaimedKinds is reused.
const UnclaimedEvery = 30 * time.Second

// unclaimedKinds finds the kinds whose due jobs waited UnclaimedAfter while
// no job of theirs started; an answer younger than UnclaimedEvery is reused.
func (s *Service) unclaimedKinds(ctx context.Context, now time.Time) ([]UnclaimedKind, error) {
	c := &s.unclaimed
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.at.IsZero() && now.Sub(c.at) >= 0 && now.Sub(c.at) < UnclaimedEvery {
		return slices.Clone(c.kinds), nil
	}
	kinds, err := s.findUnclaimed(ctx, now)
	if err == nil {
		c.at, c.kinds = now, kinds
	}
	return slices.Clone(kinds), err
}

func (s *Service) findUnclaimed(ctx context.Context, now time.Time) ([]UnclaimedKind, error) {
	since := now.Add(-UnclaimedAfter)
	waits, err := s.Store.Waiting(ctx, since)
	if err != nil {
		return nil, err
	}
	out := []UnclaimedKind{}
	for _, w := range waits {
		started, err := s.Store.CountJobs(ctx, JobFilter{Queue: w.Queue, Kind: w.Kind, StartedAfter: since})
		if err != nil {
			return nil, err
		}
		if started > 0 {
			continue // claimed lately: slow, not unclaimed
		}
		out = append(out, UnclaimedKind{Queue: w.Queue, Kind: w.Kind, Queued: w.Queued, OldestAge: now.Sub(w.Oldest).Seconds()})
	}
	return out, nil
}

// GroupWaiting is Waiting in Go over jobs (the memory store uses it).
func GroupWaiting(jobs iter.Seq[*Job], now, dueBefore time.Time) []KindWait {
	by := map[[2]string]*KindWait{}
	for j := range jobs {
		if j.Status != StatusQueued || j.Held || j.RunAt.After(now) {
			continue // a held job waits for its key, not for a worker
		}
		w := by[[2]string{j.Queue, j.Kind}]
		if w == nil {
			w = &KindWait{Queue: j.Queue, Kind: j.Kind, Oldest: j.RunAt}
			by[[2]string{j.Queue, j.Kind}] = w
		}
		w.Queued, w.Oldest = w.Queued+1, minTime(w.Oldest, j.RunAt)
	}
	var out []KindWait
	for _, w := range by {
		if w.Oldest.Before(dueBefore) && len(out) < 100 {
			out = append(out, *w)
		}
	}
	return out
}
