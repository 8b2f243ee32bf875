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

// unclaimedWait is how long a Stats waits for a new look at the unclaimed
// kinds before it answers with the last one (the look goes on, and the
// next Stats gets it): counting the due jobs of a kind nobody claims
// costs about a second per million of them.
const unclaimedWait = 40 * time.Millisecond

// unclaimedFirstWait is unclaimedWait for a service's first look, which
// has no earlier answer to fall back on: "none" would be a wrong answer,
// not a late one (a busy machine's dashboard then missed its alert).
const unclaimedFirstWait = time.Second

// unclaimedKinds finds the kinds whose due jobs waited UnclaimedAfter while
// no job of theirs started; an answer younger than UnclaimedEvery (or ten
// times the last look's time) is reused.
// One caller at a time looks again (the others reuse the last answer
// meanwhile), waiting at most unclaimedWait for it.
func (s *Service) unclaimedKinds(ctx context.Context, now time.Time) ([]UnclaimedKind, error) {
	c := &s.unclaimed
	c.mu.Lock()
	// A slow look (a deep queue's kind nobody claims) is taken again after
	// ten times as long as it took at least: it costs at most a tenth of a core.
	if !c.at.IsZero() && now.Sub(c.at) >= 0 && now.Sub(c.at) < max(UnclaimedEvery, 10*c.took) {
		defer c.mu.Unlock()
		return cloneKinds(c.kinds), nil
	}
	prevAt, prev := c.at, c.kinds
	c.at = now // the others reuse prev while this look runs
	c.mu.Unlock()
	type answer struct {
		kinds []UnclaimedKind
		err   error
	}
	done := make(chan answer, 1)
	go func() {
		began := time.Now()
		kinds, err := s.findUnclaimed(context.WithoutCancel(ctx), now)
		c.mu.Lock()
		c.took = time.Since(began)
		switch {
		case err == nil && c.at.Equal(now):
			c.kinds = kinds
		case err != nil && c.at.Equal(now):
			c.at = prevAt // the next Stats looks again
		}
		c.mu.Unlock()
		done <- answer{kinds, err}
	}()
	wait := unclaimedWait
	if prevAt.IsZero() {
		wait = unclaimedFirstWait
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case a := <-done:
		return cloneKinds(a.kinds), a.err
	case <-t.C:
		return cloneKinds(prev), nil
	}
}

// cloneKinds is a copy of kinds, never nil (the API answers a list).
func cloneKinds(kinds []UnclaimedKind) []UnclaimedKind {
	if kinds == nil {
		return []UnclaimedKind{}
	}
	return slices.Clone(kinds)
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
