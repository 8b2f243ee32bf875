package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/queuehq/queue/app"
)

// errInjected is what the fault tests' hooks return.
var errInjected = errors.New("injected fault")

// faultCase is a write that changes a job, with the fault point inside it.
// arrange brings the store to where the write applies and returns it. The
// fault fires from the point's call number after+1 on.
type faultCase struct {
	name    string
	point   app.FaultPoint
	after   int32
	arrange func(e *env) (write func() error)
}

var faultCases = []faultCase{
	{"completion that releases its key's next job", app.FaultKeyRelease, 0, func(e *env) func() error {
		e.setLimits("q", app.KeyLimits{Concurrency: 1})
		e.submitN(2, "q", "k", keyed("A"))
		j := e.claimOne("q")
		return func() error {
			errs, err := e.s.Complete(e.ctx, []app.Completion{{ID: j.ID, Lease: j.Lease}})
			if err == nil {
				err = errs[0]
			}
			return err
		}
	}},
	{"round-robin claim, which releases its key's next turn", app.FaultKeyRelease, 0, func(e *env) func() error {
		e.setLimits("q", app.KeyLimits{RoundRobin: true})
		e.submitN(2, "q", "k", keyed("A"))
		return func() error {
			_, err := e.s.Claim(e.ctx, app.ClaimRequest{Queue: "q", WorkerID: "w", Limit: 1})
			return err
		}
	}},
	{"keyed submission, released at once", app.FaultKeyRelease, 0, func(e *env) func() error {
		e.setLimits("q", app.KeyLimits{Concurrency: 1})
		return func() error {
			_, err := app.Submit(e.ctx, e.s, app.SubmitRequest{Jobs: []app.NewJob{e.newJob("q", "k", keyed("A"))}})
			return err
		}
	}},
	{"debounce", app.FaultRequeue, 0, func(e *env) func() error {
		deb := func(nj *app.NewJob) { nj.Key, nj.Debounce = "A", time.Second }
		e.submitOne("q", "k", deb)
		return func() error {
			_, err := app.Submit(e.ctx, e.s, app.SubmitRequest{Jobs: []app.NewJob{e.newJob("q", "k", deb, func(nj *app.NewJob) { nj.Payload = json.RawMessage(`2`) })}})
			return err
		}
	}},
	{"submit", app.FaultJobInsert, 0, func(e *env) func() error {
		return func() error {
			_, err := app.Submit(e.ctx, e.s, app.SubmitRequest{Jobs: []app.NewJob{e.newJob("q", "k")}})
			return err
		}
	}},
	{"batch submit, at its second job", app.FaultJobInsert, 1, func(e *env) func() error {
		// SPEC: a batch is all or nothing in one transaction; the first
		// job's row is already written when the second one fails.
		return func() error {
			_, err := app.Submit(e.ctx, e.s, app.SubmitRequest{Jobs: []app.NewJob{e.newJob("q", "a"), e.newJob("q", "b"), e.newJob("q", "c")}})
			return err
		}
	}},
	{"submit, eight at once", app.FaultJobInsert, 0, func(e *env) func() error {
		// Concurrent plain submissions share a transaction (and, in SQLite,
		// one INSERT): a fault inside it fails each, and stores none.
		return func() error {
			errs := make([]error, 8)
			var wg sync.WaitGroup
			for i := range errs {
				wg.Add(1)
				go func() {
					defer wg.Done()
					_, errs[i] = app.Submit(e.ctx, e.s, app.SubmitRequest{Jobs: []app.NewJob{e.newJob("q", "k")}})
				}()
			}
			wg.Wait()
			failed, err := 0, error(nil)
			for _, e := range errs {
				if e != nil {
					failed, err = failed+1, e
				}
			}
			if failed > 0 && failed < len(errs) {
				return fmt.Errorf("%d of %d submissions failed: %w", failed, len(errs), err)
			}
			return err
		}
	}},
	{"claim", app.FaultClaim, 0, func(e *env) func() error {
		e.submitN(3, "q", "k")
		return func() error {
			_, err := e.s.Claim(e.ctx, app.ClaimRequest{Queue: "q", WorkerID: "w1", Limit: 2})
			return err
		}
	}},
	{"complete", app.FaultComplete, 0, func(e *env) func() error {
		e.submitOne("q", "k")
		c := e.claimOne("q")
		return func() error {
			errs, err := e.s.Complete(e.ctx, []app.Completion{{ID: c.ID, Lease: c.Lease, Result: json.RawMessage(`{"ok":true}`)}})
			if err == nil && errs[0] != nil {
				return fmt.Errorf("item: %w", errs[0])
			}
			return err
		}
	}},
	{"fail, to retry", app.FaultRequeue, 0, func(e *env) func() error {
		e.submitOne("q", "k", withMax(3))
		c := e.claimOne("q")
		return func() error {
			_, err := app.Fail(e.ctx, e.s, app.FailRequest{ID: c.ID, Lease: c.Lease, Error: "boom", Retry: true, Backoff: fixedBackoff})
			return err
		}
	}},
	{"lease expiry", app.FaultRequeue, 0, func(e *env) func() error {
		e.submitOne("q", "k", withTimeout(10*time.Second))
		e.claimOne("q")
		e.clock.Advance(11 * time.Second)
		return func() error {
			_, err := app.RecoverStale(e.ctx, e.s, 100, fixedBackoff)
			return err
		}
	}},
	{"snooze", app.FaultRequeue, 0, func(e *env) func() error {
		e.submitOne("q", "k")
		c := e.claimOne("q")
		return func() error {
			_, err := app.Snooze(e.ctx, e.s, c.ID, c.Lease, time.Minute)
			return err
		}
	}},
	{"cancel a queued job", app.FaultCancel, 0, func(e *env) func() error {
		j := e.submitOne("q", "k")
		return func() error {
			_, err := app.Cancel(e.ctx, e.s, app.CancelRequest{ID: j.ID, Audit: &app.AuditEntry{Actor: "ops", Action: "job.cancel"}})
			return err
		}
	}},
	{"cancel a processing job", app.FaultCancel, 0, func(e *env) func() error {
		e.submitOne("q", "k")
		c := e.claimOne("q")
		return func() error {
			_, err := app.Cancel(e.ctx, e.s, app.CancelRequest{ID: c.ID})
			return err
		}
	}},
	{"drain", app.FaultCancel, 0, func(e *env) func() error {
		e.submitN(3, "q", "k")
		return func() error {
			_, err := app.Drain(e.ctx, e.s, app.JobFilter{Queue: "q"}, &app.AuditEntry{Actor: "ops", Action: "queue.drain"})
			return err
		}
	}},
	{"TTL expiry", app.FaultCancel, 0, func(e *env) func() error {
		exp := e.clock.Now().Add(time.Minute)
		e.submitN(2, "q", "k", func(n *app.NewJob) { n.ExpiresAt = &exp })
		e.clock.Advance(2 * time.Minute)
		return func() error {
			_, err := app.ExpireTTL(e.ctx, e.s, 100)
			return err
		}
	}},
	{"replay", app.FaultJobInsert, 0, func(e *env) func() error {
		d := e.deadLetter(e.submitOne("q", "k"))
		return func() error {
			_, err := app.Replay(e.ctx, e.s, app.ReplayRequest{Filter: app.DeadFilter{IDs: []int64{d.ID}}})
			return err
		}
	}},
	{"periodic fire", app.FaultJobInsert, 0, func(e *env) func() error {
		fire := app.PeriodicFire{Entry: "nightly", FireAt: e.clock.Now().Truncate(time.Minute), Job: e.newJob("q", "k")}
		return func() error {
			_, created, err := app.FirePeriodic(e.ctx, e.s, fire)
			if err == nil && !created {
				return errors.New("the fire enqueued nothing")
			}
			return err
		}
	}},
	{"purge", app.FaultDelete, 0, func(e *env) func() error {
		e.deadLetter(e.submitOne("q", "k"))
		return func() error {
			_, err := app.Purge(e.ctx, e.s, app.DeadFilter{Queue: "q"}, &app.AuditEntry{Actor: "ops", Action: "dlq.purge"})
			return err
		}
	}},
	{"retention of finished jobs", app.FaultDelete, 0, func(e *env) func() error {
		e.submitOne("q", "k")
		e.complete(e.claimOne("q"), `1`)
		e.clock.Advance(2 * time.Hour)
		return func() error {
			_, err := e.s.DeleteOld(e.ctx, app.DeleteOldRequest{What: app.OldFinished, Before: e.clock.Now().Add(-time.Hour), Limit: 100})
			return err
		}
	}},
	{"retention of dead-letter rows", app.FaultDelete, 0, func(e *env) func() error {
		e.deadLetter(e.submitOne("q", "k"))
		e.clock.Advance(2 * time.Hour)
		return func() error {
			_, err := e.s.DeleteOld(e.ctx, app.DeleteOldRequest{What: app.OldDead, Before: e.clock.Now().Add(-time.Hour), Limit: 100})
			return err
		}
	}},
	{"move to the dead-letter queue", app.FaultDeadLetterInsert, 0, func(e *env) func() error {
		e.submitN(2, "q", "k")
		return func() error {
			_, err := app.MoveToDead(e.ctx, e.s, app.JobFilter{Queue: "q"}, "", &app.AuditEntry{Actor: "ops", Action: "job.move"})
			return err
		}
	}},
	{"submit with an idempotency key and a queue limit", app.FaultJobInsert, 1, func(e *env) func() error {
		// Not a plain batch: the rules of app.Submit over the Tx, which
		// inserts the second job after the first one's row is written.
		return func() error {
			_, err := app.Submit(e.ctx, e.s, app.SubmitRequest{Jobs: []app.NewJob{e.newJob("q", "a", withKey("k1")), e.newJob("q", "b")},
				MaxQueued: map[string]int{"q": 10}})
			return err
		}
	}},
	{"move a cancelled job by id, with a note", app.FaultDeadLetterInsert, 0, func(e *env) func() error {
		j := e.submitOne("q", "k")
		if _, err := app.Cancel(e.ctx, e.s, app.CancelRequest{ID: j.ID}); err != nil {
			e.t.Fatal(err)
		}
		return func() error {
			_, err := app.MoveToDead(e.ctx, e.s, app.JobFilter{IDs: []int64{j.ID}, StatusIn: []app.Status{app.StatusCancelled}}, "bad data", nil)
			return err
		}
	}},
	{"replay carrying an idempotency key", app.FaultJobInsert, 0, func(e *env) func() error {
		d := e.deadLetter(e.submitOne("q", "k", withKey("k2")))
		return func() error {
			_, err := app.Replay(e.ctx, e.s, app.ReplayRequest{Filter: app.DeadFilter{IDs: []int64{d.ID}, Limit: 1}})
			return err
		}
	}},
}

// Every write that changes a job is one transaction: a fault at its point,
// after the job's row changed, leaves everything a reader can see (jobs,
// dead-letter rows, events, counters, throughput, queues, audit) as it was.
// Without the fault the same write then succeeds and changes what it should,
// which proves the point sits inside a real write.
func testFaultInsideEveryWriteChangesNothing(e *env) {
	for _, fc := range faultCases {
		e.t.Run(fc.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, e.open, true)
			write := fc.arrange(e)
			before := e.snapshot()
			var hits atomic.Int32
			e.setFault(func(ctx context.Context, p app.FaultPoint, id int64) error {
				if p != fc.point {
					return nil
				}
				if hits.Add(1) > fc.after {
					return errInjected
				}
				return nil
			})
			err := write()
			e.setFault(nil)
			if err == nil {
				t.Fatalf("the write succeeded with a fault at %s", fc.point)
			}
			if hits.Load() <= fc.after {
				t.Fatalf("the write never reached %s (it failed with %v)", fc.point, err)
			}
			if after := e.snapshot(); after != before {
				t.Fatalf("a fault at %s (%v) changed the store:\nbefore %s\nafter  %s", fc.point, err, before, after)
			}
			if err := write(); err != nil {
				t.Fatalf("without the fault: %v", err)
			}
			if after := e.snapshot(); after == before {
				t.Fatalf("without the fault the write changed nothing: the case does not test a write")
			}
		})
	}
}

// snapshot is what a reader can see of the store, as JSON.
func (e *env) snapshot() string {
	e.t.Helper()
	var s struct {
		Jobs       []*app.Job
		Dead       []*app.DeadJob
		Events     map[int64][]app.Event
		Stats      []app.QueueStats
		Throughput []app.MinuteCount
		Queues     []app.QueueState
		Audit      []app.AuditEntry
		Workflows  []*app.WorkflowView
		Extra      map[string]any // see extraSnapshots
	}
	var err error
	must := func(what string, err error) {
		if err != nil {
			e.t.Fatalf("snapshot: %s: %v", what, err)
		}
	}
	s.Jobs, err = e.s.List(e.ctx, app.JobFilter{Asc: true, Limit: 1000})
	must("jobs", err)
	s.Dead, err = e.s.ListDead(e.ctx, app.DeadFilter{Asc: true, Limit: 1000})
	must("dead-letter rows", err)
	s.Events = map[int64][]app.Event{}
	ids := make([]int64, 0, len(s.Jobs)+len(s.Dead))
	for _, j := range s.Jobs {
		ids = append(ids, j.ID)
	}
	for _, d := range s.Dead {
		ids = append(ids, d.ID)
	}
	for _, id := range ids {
		s.Events[id], err = e.s.JobEvents(e.ctx, id)
		must("events", err)
	}
	s.Stats, err = e.s.Stats(e.ctx)
	must("stats", err)
	s.Throughput, err = e.s.Throughput(e.ctx, T0.Add(-time.Hour))
	must("throughput", err)
	s.Queues, err = e.s.Queues(e.ctx)
	must("queues", err)
	s.Audit, err = e.s.ListAudit(e.ctx, app.AuditFilter{Limit: 1000})
	must("audit", err)
	s.Workflows = e.workflowSnapshot()
	s.Extra = map[string]any{}
	for name, f := range extraSnapshots {
		s.Extra[name] = f(e)
	}
	b, err := json.Marshal(s)
	must("encode", err)
	return string(b)
}
