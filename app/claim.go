package app

import (
	"context"
	"fmt"
	"slices"
	"time"
)

// QueueLimits is what limits a claim from a queue, as the store holds it.
type QueueLimits struct {
	Paused bool
	// Busy is how many of the queue's jobs are processing (read only when
	// the claim has a concurrency limit).
	Busy int
	// Tokens is the queue's rate bucket as of RateAt (zero: never used).
	Tokens float64
	RateAt time.Time
}

// Claim moves up to req.Limit claimable jobs of req.Queue to processing, in
// claim order, each with a new lease: as many as the queue's pause, its
// concurrency limit (jobs processing) and its rate bucket allow. Tokens a
// claim took but found no job for go back to the bucket.
func Claim(ctx context.Context, w Writer, req ClaimRequest) ([]*Job, error) {
	var out []*Job
	err := w.Write(ctx, func(tx Tx) error {
		out = nil
		q, err := tx.ClaimQueue(req.Queue, req.Concurrency > 0)
		if err != nil || q.Paused {
			return err
		}
		n := max(req.Limit, 1)
		if req.Concurrency > 0 {
			n = min(n, req.Concurrency-q.Busy)
		}
		var left float64
		if req.Rate > 0 && n > 0 {
			n, left = RateTake(q.Tokens, q.RateAt, tx.Now(), req.Rate, req.Burst, n)
		}
		if n <= 0 {
			return nil
		}
		lim := tx.KeyLimits(req.Queue)
		if err := wokenKeys(tx, req.Queue, lim, 1000); err != nil {
			return err
		}
		if out, err = tx.Take(req, n); err != nil {
			return err
		}
		if err := Claimed(tx, out); err != nil {
			return err
		}
		// Under round robin a key has one job released at a time: the next
		// is released (a millisecond behind the others, see Tx.Release) as
		// this one is taken, and taken in the same claim if it has room left.
		for lim.RoundRobin && len(out) < n {
			if _, err := releaseChanged(tx); err != nil {
				return err
			}
			turn := req
			turn.Ahead = time.Millisecond
			more, err := tx.Take(turn, n-len(out))
			if err != nil {
				return err
			}
			if len(more) == 0 {
				break
			}
			if err := Claimed(tx, more); err != nil {
				return err
			}
			out = append(out, more...)
		}
		slices.SortFunc(out, ClaimOrder)
		if req.Rate > 0 {
			return tx.SetRate(req.Queue, left+float64(n-len(out)))
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("claim from %s: %w", req.Queue, err)
	}
	return out, nil
}

// Claimed is what follows the take of jobs in a claim's transaction, also
// PostgreSQL's one-statement claim: the jobs in claim order, the fault
// point, job.started, the counts moved, the pickup waits counted.
func Claimed(tx Tx, jobs []*Job) error {
	slices.SortFunc(jobs, ClaimOrder)
	for _, j := range jobs {
		if err := tx.Fault(FaultClaim, j.ID); err != nil {
			return err
		}
		tx.Publish(EventStarted, j.ID, j.Queue, j.Kind, StartedData(j))
		tx.Moved(j.Queue, StatusQueued, StatusProcessing, 1)
		tx.Picked(j.Queue, PickupWait(j))
		if j.Key != "" && tx.KeyLimits(j.Queue).RoundRobin {
			tx.KeyChanged(j.Queue, j.Key) // its turn is over: the key's next job queues up
		}
	}
	return nil
}
