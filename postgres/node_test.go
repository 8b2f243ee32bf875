package postgres

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/rs/zerolog"

	"github.com/queuehq/queue/app"
)

// twoNodes opens two stores on one schema, as two servers would.
func twoNodes(t *testing.T, opts app.StoreOptions) (*Store, *Store) {
	a := mustOpen(t, Options{StoreOptions: opts})
	b := mustOpen(t, Options{StoreOptions: opts, Schema: a.Schema()})
	return a, b
}

func waitClosed(t *testing.T, c <-chan struct{}, within time.Duration, what string) time.Duration {
	t.Helper()
	start := time.Now()
	select {
	case <-c:
		return time.Since(start)
	case <-time.After(within):
		t.Fatalf("%s: not woken within %v", what, within)
	}
	return 0
}

// A submission on one node wakes a claimer waiting on the other at once,
// through LISTEN/NOTIFY; stores in other schemas are not woken.
func TestWakeCrossesNodes(t *testing.T) {
	a, b := twoNodes(t, app.StoreOptions{})
	other := mustOpen(t, Options{})
	for i := 0; i < 5; i++ {
		w := b.Wake("q", 1)
		wo := other.Wake("q", 1)
		submit(t, a, newJob("q"))
		if d := waitClosed(t, w, 2*time.Second, "node B after a submission on node A"); d > 100*time.Millisecond {
			t.Fatalf("node B woken %v after the submission on node A, want within 100ms", d)
		}
		select {
		case <-wo:
			t.Fatalf("a store in another schema was woken")
		default:
		}
	}
}

// Jobs this node's waiting claimers take are not announced to the other
// nodes (each would wake a claimer to claim nothing); jobs they do not
// cover are.
func TestWakeStaysLocalWhenCovered(t *testing.T) {
	a, b := twoNodes(t, app.StoreOptions{})
	la, rb := a.Wake("q", 500), b.Wake("q", 500)
	submit(t, a, newJob("q"), newJob("q"))
	waitClosed(t, la, 2*time.Second, "node A's claimer after a submission on node A")
	select {
	case <-rb:
		t.Fatal("node B woken for jobs node A's claimer takes")
	case <-time.After(300 * time.Millisecond):
	}
	b.Unwake("q", rb)

	la, rb = a.Wake("q", 1), b.Wake("q", 500)
	submit(t, a, newJob("q"), newJob("q")) // two jobs, a claimer here for one
	waitClosed(t, la, 2*time.Second, "node A's claimer")
	waitClosed(t, rb, 2*time.Second, "node B for the job node A's claimer leaves")
}

// A listener that loses its connection reconnects, and wake-ups flow again.
func TestListenerReconnects(t *testing.T) {
	a, b := twoNodes(t, app.StoreOptions{})
	db := adminConn(t, a)
	w := b.Wake("q", 1)
	var n int
	// Both nodes listen on the channel; drop every listening connection.
	if err := db.QueryRow(t.Context(), `SELECT count(pg_terminate_backend(pid, 5000)) FROM pg_stat_activity
		WHERE application_name = $1`, "queue listen "+b.Schema()).Scan(&n); err != nil || n != 2 {
		t.Fatalf("terminated %d listeners (%v), want 2", n, err)
	}
	// The lost listener wakes its waiters (they look again) ...
	waitClosed(t, w, 5*time.Second, "a waiter after its listener reconnected")
	// ... and once it listens again, notifications arrive.
	deadline := time.Now().Add(10 * time.Second)
	for {
		w = b.Wake("q", 1)
		submit(t, a, newJob("q"))
		select {
		case <-w:
			return
		case <-time.After(200 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatal("no wake-ups across nodes 10s after the listeners were dropped")
		}
	}
}

// Quiet spells (no notification for a while) are checked with a ping and
// do not cost the listener its connection or a wake-up.
func TestListenerSurvivesQuietSpells(t *testing.T) {
	old := listenCheck
	listenCheck = 50 * time.Millisecond
	t.Cleanup(func() { listenCheck = old }) // after the stores closed
	a, b := twoNodes(t, app.StoreOptions{})
	db := adminConn(t, a)
	listeners := func() string {
		var pids string
		if err := db.QueryRow(t.Context(), `SELECT string_agg(pid::text, ',' ORDER BY pid) FROM pg_stat_activity
			WHERE application_name = $1`, "queue listen "+b.Schema()).Scan(&pids); err != nil {
			t.Fatal(err)
		}
		return pids
	}
	before := listeners()
	time.Sleep(300 * time.Millisecond) // several checks
	w := b.Wake("q", 1)
	submit(t, a, newJob("q"))
	waitClosed(t, w, 2*time.Second, "node B after quiet spells")
	if after := listeners(); after != before || strings.Count(after, ",") != 1 {
		t.Fatalf("listener backends %s before the quiet spells, %s after; want the same two", before, after)
	}
}

// The concurrency limit and the rate bucket of a queue hold across nodes.
func TestClaimLimitsHoldAcrossNodes(t *testing.T) {
	clock := app.NewFakeClock(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	a, b := twoNodes(t, app.StoreOptions{Clock: clock})
	jobs := make([]app.NewJob, 60)
	for i := range jobs {
		jobs[i] = newJob("lim")
		jobs[i].MaxAttempts = 5
	}
	submit(t, a, jobs...)
	for i := range jobs {
		jobs[i].Queue = "rate"
	}
	submit(t, b, jobs...)
	var claimedLim, claimedRate atomic.Int64
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		s := a
		if g%2 == 1 {
			s = b
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 5; i++ {
				got, err := s.Claim(t.Context(), app.ClaimRequest{Queue: "lim", Limit: 2, Concurrency: 3})
				if err != nil {
					t.Error(err)
					return
				}
				claimedLim.Add(int64(len(got)))
				got, err = s.Claim(t.Context(), app.ClaimRequest{Queue: "rate", Limit: 2, Rate: 1, Burst: 4})
				if err != nil {
					t.Error(err)
					return
				}
				claimedRate.Add(int64(len(got)))
			}
		}()
	}
	wg.Wait()
	if n := claimedLim.Load(); n != 3 {
		t.Errorf("claims under concurrency 3 across two nodes: %d, want 3", n)
	}
	if n, _ := a.CountJobs(t.Context(), app.JobFilter{Queue: "lim", Status: "processing"}); n != 3 {
		t.Errorf("processing under concurrency 3: %d", n)
	}
	if n := claimedRate.Load(); n != 4 {
		t.Errorf("claims from a bucket of 4 (clock stopped) across two nodes: %d, want 4", n)
	}
}

// leaders counts the nodes running fn at once.
type leaders struct {
	now, most, runs atomic.Int32
	who             atomic.Pointer[string]
}

func (l *leaders) fn(name string) func(ctx context.Context) {
	return func(ctx context.Context) {
		n := l.now.Add(1)
		defer l.now.Add(-1)
		l.runs.Add(1)
		for {
			m := l.most.Load()
			if n <= m || l.most.CompareAndSwap(m, n) {
				break
			}
		}
		l.who.Store(&name)
		<-ctx.Done()
	}
}

func (l *leaders) waitFor(t *testing.T, runs int32, within time.Duration) string {
	t.Helper()
	deadline := time.Now().Add(within)
	for l.runs.Load() < runs || l.now.Load() == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("no leader (run %d) within %v", runs, within)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return *l.who.Load()
}

// Exactly one node leads; when it stops, another takes over within a few
// seconds, and when its connection dies (the lock with it), too.
func TestLeadershipMovesToAnotherNode(t *testing.T) {
	a, b := twoNodes(t, app.StoreOptions{})
	var l leaders
	log := zerolog.New(zerolog.NewTestWriter(t))
	ctxA, stopA := context.WithCancel(t.Context())
	ctxB, stopB := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); a.Lead(ctxA, log.With().Str("node", "a").Logger(), l.fn("a")) }()
	go func() { defer wg.Done(); b.Lead(ctxB, log.With().Str("node", "b").Logger(), l.fn("b")) }()
	defer func() { stopA(); stopB(); wg.Wait() }()

	first := l.waitFor(t, 1, 5*time.Second)
	time.Sleep(1500 * time.Millisecond) // the follower tried and failed at least once
	if l.most.Load() != 1 || l.runs.Load() != 1 {
		t.Fatalf("%d nodes led at once, %d runs; want exactly one leader", l.most.Load(), l.runs.Load())
	}
	// A clean stop hands over without overlap.
	start := time.Now()
	if first == "a" {
		stopA()
	} else {
		stopB()
	}
	second := l.waitFor(t, 2, 5*time.Second)
	t.Logf("leadership moved from %s to %s in %v", first, second, time.Since(start))
	if second == first || l.most.Load() != 1 {
		t.Fatalf("after %s stopped: leader %s, %d at once", first, second, l.most.Load())
	}
	// The leader's connection dies: its fn is stopped; it leads again once
	// the lock is free, which it is, as nobody else runs.
	leader := b
	if second == "a" {
		leader = a
	}
	db := adminConn(t, a)
	key := lockKey("leader", leader.Schema())
	var n int
	if err := db.QueryRow(t.Context(), `SELECT count(pg_terminate_backend(pid, 5000)) FROM pg_locks
		WHERE locktype = 'advisory' AND granted AND classid::bigint = $1 AND objid::bigint = $2 AND objsubid = 1`,
		int64(uint64(key)>>32), int64(uint32(key))).Scan(&n); err != nil || n != 1 {
		t.Fatalf("terminated %d lock holders (%v), want 1", n, err)
	}
	start = time.Now()
	l.waitFor(t, 3, 10*time.Second)
	t.Logf("leader re-elected %v after its lock connection was killed", time.Since(start))
}

// A node's own NOTIFY does not wake its claimers a second time: they were
// woken at the commit, one for a job, and the echo would have one more
// claim for nothing. Another node's NOTIFY still wakes them.
func TestOwnNotifyWakesNoMore(t *testing.T) {
	a, b := twoNodes(t, app.StoreOptions{})
	first, second := a.Wake("q", 500), a.Wake("q", 500)
	submit(t, a, newJob("q"))
	waitClosed(t, first, 2*time.Second, "the first claimer")
	time.Sleep(300 * time.Millisecond) // the NOTIFY came back by now
	if closed(second) {
		t.Fatal("the node's own NOTIFY woke a second claimer for one job")
	}
	submit(t, b, newJob("q"))
	waitClosed(t, second, 2*time.Second, "the second claimer, by the other node's NOTIFY")
}

func closed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// A node alone on its schema sends no NOTIFY (each is a transaction of the
// database's, for no one); once another node listens, jobs its waiting
// claimers do not cover are announced again.
func TestLoneNodeSendsNoNotify(t *testing.T) {
	a := mustOpen(t, Options{})
	spy := adminConn(t, a) // listens, but is no node: not counted as one
	if _, err := spy.Exec(t.Context(), `LISTEN `+pgx.Identifier{a.channel}.Sanitize()); err != nil {
		t.Fatal(err)
	}
	heard := func(within time.Duration) bool {
		ctx, cancel := context.WithTimeout(t.Context(), within)
		defer cancel()
		_, err := spy.WaitForNotification(ctx)
		return err == nil
	}
	for range 3 {
		submit(t, a, newJob("q")) // nobody waits: uncovered
	}
	if heard(300 * time.Millisecond) {
		t.Fatal("a node alone on its schema sent a NOTIFY")
	}

	b := mustOpen(t, Options{Schema: a.Schema()})
	w := b.Wake("q", 1)
	deadline := time.Now().Add(peersEvery + 2*time.Second)
	for !closed(w) {
		if time.Now().After(deadline) {
			t.Fatalf("node B not woken by submissions on node A within %v of starting", peersEvery+2*time.Second)
		}
		submit(t, a, newJob("q"))
		time.Sleep(50 * time.Millisecond)
	}
	if !heard(time.Second) {
		t.Fatal("node B was woken, but no NOTIFY was sent")
	}
}

// A completion frees a slot of a queue with a concurrency limit, which
// holds across nodes: a claimer waiting on another node is woken for it
// (this node has none waiting), not left to its recheck.
func TestCompletionWakesAnotherNodesClaimer(t *testing.T) {
	a, b := twoNodes(t, app.StoreOptions{}) // no Capped: every queue has a limit
	submit(t, a, newJob("q"))
	j := claimN(t, a, "q", 1)
	if len(j) != 1 {
		t.Fatalf("claimed %d jobs, want 1", len(j))
	}
	w := b.Wake("q", 1)
	defer b.Unwake("q", w)
	complete(t, a, j...)
	waitClosed(t, w, 500*time.Millisecond, "node B's claimer after a completion on node A")
}
