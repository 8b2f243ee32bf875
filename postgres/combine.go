package postgres

import (
	"context"
	"errors"
	"sync"

	"github.com/queuehq/queue/app"
)

// Group commit for submissions. Each submission on its own is a
// transaction: a round trip to begin, one for the inserts, and a commit
// that waits for the WAL to reach the disk. Submissions that arrive while
// others are being written are gathered and written together, in one
// transaction, one round trip of inserts and one commit, by at most
// maxCombiners transactions at a time. Only plain submissions are gathered:
// one with an idempotency key or into a queue with max_queued may fail on
// its own, so it keeps its own transaction.

// maxCombiners is how many gathered transactions may be in flight at once.
// One: the submissions that arrive while it commits all go in the next.
// More split the same callers into smaller transactions, each a commit and
// a plan's worth of PostgreSQL's CPU (measured in the PostgreSQL e2e
// benchmark, on two cores that also run PostgreSQL: 2 gave 6-7% fewer
// jobs/s than 1, with no better latency at 100 jobs/s; 4 about 8% fewer
// than 2, 8 fewer still).
const maxCombiners = 1

// maxCombined caps the jobs of one gathered transaction.
const maxCombined = 1000

type submitCall struct {
	jobs []app.NewJob
	out  []app.Submitted
	err  error
	done chan struct{}
}

type combiner struct {
	mu      sync.Mutex
	pending []*submitCall
	running int
}

// combine writes jobs together with the submissions waiting beside them and
// answers once their shared transaction committed.
func (s *Store) combine(jobs []app.NewJob) ([]app.Submitted, error) {
	c := &submitCall{jobs: jobs, done: make(chan struct{})}
	s.comb.mu.Lock()
	s.comb.pending = append(s.comb.pending, c)
	if s.comb.running < maxCombiners {
		s.comb.running++
		go s.drainSubmissions()
	}
	s.comb.mu.Unlock()
	<-c.done // the write is short and must not be left half answered
	return c.out, c.err
}

// drainSubmissions writes gathered submissions until none are waiting.
func (s *Store) drainSubmissions() {
	for {
		s.comb.mu.Lock()
		if len(s.comb.pending) == 0 {
			s.comb.running--
			s.comb.mu.Unlock()
			return
		}
		n, jobs := 0, 0
		for n < len(s.comb.pending) && (n == 0 || jobs+len(s.comb.pending[n].jobs) <= maxCombined) {
			jobs += len(s.comb.pending[n].jobs)
			n++
		}
		batch := append([]*submitCall(nil), s.comb.pending[:n]...)
		s.comb.pending = append(s.comb.pending[:0], s.comb.pending[n:]...)
		s.comb.mu.Unlock()
		s.writeSubmissions(batch)
	}
}

func (s *Store) writeSubmissions(batch []*submitCall) {
	ctx := context.Background()
	err := s.writePiped(ctx, func(w *wtx, p *pipe) {
		var all []*app.NewJob
		for _, c := range batch {
			for i := range c.jobs {
				all = append(all, &c.jobs[i])
			}
		}
		jobs := w.insertJobs(p, all)
		for _, c := range batch {
			c.out = make([]app.Submitted, len(c.jobs))
			for i := range c.out {
				c.out[i] = app.Submitted{Job: jobs[0]}
				jobs = jobs[1:]
			}
		}
	})
	if err != nil && len(batch) > 1 && !errors.Is(err, errCommittedUnread) {
		// Something in the batch failed: write each on its own, so one bad
		// submission fails alone.
		for _, c := range batch {
			c.out, c.err = s.insertAlone(ctx, c.jobs)
			close(c.done)
		}
		return
	}
	for _, c := range batch {
		if err != nil {
			c.out, c.err = nil, mapErr(err)
		}
		close(c.done)
	}
}
