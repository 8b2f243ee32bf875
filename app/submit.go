package app

import (
	"context"
	"fmt"
	"sort"
)

// Submit inserts req's jobs all or nothing. A job whose idempotency key is
// already used in its queue (by a stored job or a dead-letter row) inserts
// nothing and comes back with Existing set, or fails the whole call with
// ErrIdempotencyConflict when its kind or payload differ; a queue at its
// MaxQueued limit fails the call with ErrQueueFull. A batch that needs none
// of these checks goes through the store's InsertJobs, where each store
// gathers plain submissions its fastest way.
func Submit(ctx context.Context, st JobStore, req SubmitRequest) ([]Submitted, error) {
	if plain(req) {
		out, err := st.InsertJobs(ctx, req.Jobs)
		if err != nil {
			return nil, WithOperation("submit", err)
		}
		return out, nil
	}
	var out []Submitted
	err := st.Write(ctx, func(tx Tx) (err error) {
		out, err = submitTx(tx, req)
		return err
	})
	if err != nil {
		return nil, WithOperation("submit", err)
	}
	return out, nil
}

// plain reports whether no job of req has an idempotency key, a dedupe
// rule or a key its queue limits, or goes to a queue with max_queued.
func plain(req SubmitRequest) bool {
	for i := range req.Jobs {
		nj := &req.Jobs[i]
		limited := nj.Key != "" && (req.KeyLimits == nil || req.KeyLimits(nj.Queue).Keyed())
		if nj.IdempotencyKey != "" || limited || nj.Unique != nil || nj.Debounce > 0 || nj.Throttle > 0 || req.MaxQueued[nj.Queue] > 0 {
			return false
		}
	}
	return true
}

// submitTx admits req's jobs in tx. The queued jobs of each limited queue
// are counted first, in name order (PostgreSQL locks the queue to count, and
// one order means two batches never wait on each other in a circle). Jobs
// to insert wait and go in one Insert, before a key is looked up (the key
// may repeat inside the batch) and at the end.
func submitTx(tx Tx, req SubmitRequest) ([]Submitted, error) {
	out := make([]Submitted, len(req.Jobs))
	queued, err := countQueued(tx, req)
	if err != nil {
		return nil, err
	}
	var pending []*NewJob
	var pendingAt []int
	flush := func() error {
		if len(pending) == 0 {
			return nil
		}
		jobs, err := insert(tx, pending...)
		if err != nil {
			return err
		}
		for k, j := range jobs {
			out[pendingAt[k]] = Submitted{Job: j}
		}
		pending, pendingAt = pending[:0], pendingAt[:0]
		return nil
	}
	for i := range req.Jobs {
		nj := &req.Jobs[i]
		if nj.IdempotencyKey != "" {
			if err := flush(); err != nil {
				return nil, err
			}
			old, err := tx.ByKey(nj.Queue, nj.IdempotencyKey)
			if err != nil {
				return nil, err
			}
			if old != nil {
				if !SameSubmission(old.Kind, old.Payload, nj) {
					return nil, KeyConflict(nj.IdempotencyKey, nj.Queue, old.ID, out[:i])
				}
				out[i] = Submitted{Job: old, Existing: true}
				continue
			}
		}
		if nj.Unique != nil || nj.Debounce > 0 || nj.Throttle > 0 {
			if err := flush(); err != nil {
				return nil, err
			}
			old, err := dedupe(tx, nj)
			if err != nil {
				return nil, err
			}
			if old != nil {
				out[i] = Submitted{Job: old, Duplicate: true}
				continue
			}
		}
		if max := req.MaxQueued[nj.Queue]; max > 0 {
			if n := queued[nj.Queue]; n+1 > max {
				return nil, fmt.Errorf("%w: queue %q holds %d queued jobs (max_queued %d)", ErrQueueFull, nj.Queue, n, max)
			}
			queued[nj.Queue]++
		}
		pending, pendingAt = append(pending, nj), append(pendingAt, i)
	}
	return out, flush()
}

// countQueued counts, up to one past its limit, the queued jobs of each
// limited queue that req submits to.
func countQueued(tx Tx, req SubmitRequest) (map[string]int, error) {
	var limited []string
	seen := map[string]bool{}
	for i := range req.Jobs {
		q := req.Jobs[i].Queue
		if req.MaxQueued[q] > 0 && !seen[q] {
			seen[q] = true
			limited = append(limited, q)
		}
	}
	sort.Strings(limited)
	queued := make(map[string]int, len(limited))
	for _, q := range limited {
		n, err := tx.Queued(q, req.MaxQueued[q]+1)
		if err != nil {
			return nil, err
		}
		queued[q] = n
	}
	return queued, nil
}

// InsertAll is InsertJobs for a store with no faster way: one transaction,
// one Insert.
func InsertAll(ctx context.Context, w Writer, jobs []NewJob) ([]Submitted, error) {
	njs := make([]*NewJob, len(jobs))
	for i := range jobs {
		njs[i] = &jobs[i]
	}
	out := make([]Submitted, len(jobs))
	err := w.Write(ctx, func(tx Tx) error {
		stored, err := insert(tx, njs...)
		for i, j := range stored {
			out[i] = Submitted{Job: j}
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
