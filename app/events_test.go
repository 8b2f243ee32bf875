package app

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"
)

// The data of job.started and job.succeeded is the JSON the API documents,
// for any attempt, lease and duration.
func TestEventData(t *testing.T) {
	runAt := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	started := runAt.Add(1500 * time.Millisecond)
	for _, c := range []struct {
		job  Job
		want string
	}{
		{Job{Attempts: 1, Lease: 1, RunAt: runAt, StartedAt: &started}, `{"attempt":1,"lease":1,"wait_ms":1500}`},
		{Job{Attempts: 25, Lease: 9223372036854775807, RunAt: started, StartedAt: &runAt}, `{"attempt":25,"lease":9223372036854775807,"wait_ms":0}`},
		{Job{Attempts: 3, Lease: 7, RunAt: runAt}, `{"attempt":3,"lease":7,"wait_ms":0}`},
	} {
		got := StartedData(&c.job)
		if string(got) != c.want || !json.Valid(got) {
			t.Errorf("StartedData = %s, want %s", got, c.want)
		}
	}
	if got := string(FinishedData(&runAt, started)); got != `{"duration_ms":1500}` {
		t.Errorf("FinishedData = %s", got)
	}
	if got := string(FinishedData(&started, runAt)); got != `{"duration_ms":0}` {
		t.Errorf("FinishedData of a clock that went back = %s", got)
	}
	if got := FinishedData(nil, runAt); got != nil {
		t.Errorf("FinishedData without a start = %s, want none", got)
	}
}

// A Notify wakes a waiter that has not left, whether or not others left
// before it; a wake-up that lands between Wait and the select is kept;
// leaving a channel a Notify closed does not touch the next one.
func TestNotifierWakeSemantics(t *testing.T) {
	n := NewNotifier()
	a, b := n.Wait("q", 1), n.Wait("q", 1)
	n.Leave("q", a)
	if closed(b) {
		t.Fatal("a waiter leaving woke the other")
	}
	n.Notify("other")
	if closed(b) {
		t.Fatal("woken by another queue")
	}
	n.Notify("q") // before the waiter selects: nothing is lost
	if !closed(b) {
		t.Fatal("the waiter that stayed was not woken by Notify")
	}
	n.Leave("q", b) // after its Notify: nothing to do

	old := n.Wait("q", 1)
	n.Notify("q")
	next := n.Wait("q", 1)
	n.Leave("q", old) // the old wait ends after the new one began
	if next == old || closed(next) {
		t.Fatal("a wait after Notify got a closed channel")
	}
	n.Notify("q")
	if !closed(next) {
		t.Fatal("leaving a notified channel dropped the next wait: its Notify was lost")
	}

	x, y := n.Wait("x", 1), n.Wait("y", 1)
	n.NotifyAll()
	if !closed(x) || !closed(y) || n.len() != 0 {
		t.Fatalf("NotifyAll: x closed %v, y closed %v, %d entries left", closed(x), closed(y), n.len())
	}
}

// wokenOf counts the closed channels of cs.
func wokenOf(cs []<-chan struct{}) (n int) {
	for _, c := range cs {
		if closed(c) {
			n++
		}
	}
	return n
}

// Waiters are woken in proportion to the jobs that arrived, first come
// first, never all for one job (the thundering herd), and never fewer than
// the jobs need: one job wakes one of 32 waiters; N jobs wake N waiters
// that take one each; waiters that take 3 are woken until they cover 7
// jobs; a Pass wakes the next; NotifyAll wakes the rest.
func TestNotifierWakesInProportion(t *testing.T) {
	n := NewNotifier()
	n.Coalesce = 0 // every Notify counts at once
	var big []<-chan struct{}
	for range 32 {
		big = append(big, n.Wait("q", 500))
	}
	n.Notify("q")
	if got := wokenOf(big); got != 1 || !closed(big[0]) {
		t.Fatalf("one job woke %d of 32 waiters (the first: %v), want exactly the first", got, closed(big[0]))
	}
	n.Notify(make([]string, 0)...) // nothing
	n.Notify("q", "q", "q")        // 3 jobs: the next waiter takes 500
	if got := wokenOf(big); got != 2 {
		t.Fatalf("three more jobs woke %d waiters in all, want 2", got)
	}
	for _, c := range big {
		n.Leave("q", c)
	}
	if n.len() != 0 {
		t.Fatal("waiters left behind")
	}

	const jobs = 10
	var ones []<-chan struct{}
	for range 32 {
		ones = append(ones, n.Wait("q", 1))
	}
	queues := make([]string, jobs)
	for i := range queues {
		queues[i] = "q"
	}
	n.Notify(queues...)
	if got := wokenOf(ones); got != jobs || !closed(ones[jobs-1]) || closed(ones[jobs]) {
		t.Fatalf("%d jobs woke %d waiters that take one each, want the first %d", jobs, got, jobs)
	}
	n.Notify("q", "other", "q") // runs of one queue are counted apart: one each
	if got := wokenOf(ones); got != jobs+2 {
		t.Fatalf("two more jobs: %d woken in all, want %d", got, jobs+2)
	}
	n.Pass("q")
	if got := wokenOf(ones); got != jobs+3 || !closed(ones[jobs+2]) {
		t.Fatalf("Pass: %d woken, want %d, the next in line", got, jobs+3)
	}
	n.Pass("nobody") // no waiter: nothing kept
	if c := n.Wait("nobody", 1); closed(c) {
		t.Fatal("a Pass without waiters woke a later wait")
	} else {
		n.Leave("nobody", c)
	}
	n.NotifyAll()
	if got := wokenOf(ones); got != 32 || n.len() != 0 {
		t.Fatalf("NotifyAll woke %d of 32, %d queues left", got, n.len())
	}

	var threes []<-chan struct{}
	for range 5 {
		threes = append(threes, n.Wait("q", 3))
	}
	n.Leave("q", threes[0]) // left before: not counted
	n.Notify("q", "q", "q", "q", "q", "q", "q")
	if got := wokenOf(threes); got != 3 || !closed(threes[3]) || closed(threes[4]) {
		t.Fatalf("7 jobs woke %d waiters that take 3, want 3", got)
	}
	n.Leave("q", threes[4])
	if n.len() != 0 {
		t.Fatal("waiters left behind")
	}
}

// Jobs that come within the coalescing window of a queue's last wake-up
// wake the next waiter together when it ends, not one each at once; a
// queue whose waiters all left owes nothing.
func TestNotifierCoalesces(t *testing.T) {
	n := NewNotifier()
	n.Coalesce = 50 * time.Millisecond
	var cs []<-chan struct{}
	for range 8 {
		cs = append(cs, n.Wait("q", 500))
	}
	n.Notify("q")
	n.Notify("q")
	n.Notify("q", "q")
	if got := wokenOf(cs); got != 1 {
		t.Fatalf("4 jobs in one window woke %d waiters at once, want 1", got)
	}
	eventually(t, "the owed jobs to wake the next waiter", func() bool { return wokenOf(cs) == 2 })
	time.Sleep(100 * time.Millisecond)
	if got := wokenOf(cs); got != 2 || !closed(cs[1]) {
		t.Fatalf("after the window %d woken, want 2", got)
	}
	n.Notify("q") // after the window: at once
	if got := wokenOf(cs); got != 3 {
		t.Fatalf("a job after the window woke %d in all, want 3", got)
	}
	n.Notify("q") // within the new window: owed
	for _, c := range cs {
		n.Leave("q", c)
	}
	if n.len() != 0 {
		t.Fatal("waiters left behind")
	}
	time.Sleep(100 * time.Millisecond) // a timer that fired anyway finds nobody
	if n.len() != 0 {
		t.Fatal("an owed wake-up brought a queue back")
	}
}

// Waits on 30,000 distinct queue names, two waiters on some, some ended by
// a Notify and some by their timers, leave nothing behind.
func TestNotifierForgetsQueuesNobodyWaitsOn(t *testing.T) {
	n := NewNotifier()
	const names = 30000
	var wg sync.WaitGroup
	work := make(chan int)
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				q := "q-" + strconv.Itoa(i)
				c := n.Wait(q, 1)
				if i%3 == 0 { // a second waiter on the same name leaves first
					n.Leave(q, n.Wait(q, 1))
				}
				if i%5 == 0 {
					go n.Notify(q)
				}
				tm := time.NewTimer(time.Duration(i%4) * time.Millisecond)
				select {
				case <-c:
				case <-tm.C:
				}
				tm.Stop()
				n.Leave(q, c)
			}
		}()
	}
	for i := range names {
		work <- i
	}
	close(work)
	wg.Wait()
	if got := n.len(); got != 0 {
		t.Fatalf("after %d waits on distinct queues ended, the Notifier holds %d queues, want 0", names, got)
	}
}

// wakeStore is a Store of which a Service's Claim uses only Claim, Wake and
// Unwake; the rest of Store is nil. Claim finds a job in queues named
// "job-…", fails in "err-…", and finds nothing elsewhere.
type wakeStore struct {
	Store
	n *Notifier
}

func (s *wakeStore) Claim(_ context.Context, req ClaimRequest) ([]*Job, error) {
	switch {
	case strings.HasPrefix(req.Queue, "job-"):
		return []*Job{{Queue: req.Queue}}, nil
	case strings.HasPrefix(req.Queue, "err-"):
		return nil, errors.New("broken")
	}
	return nil, nil
}
func (s *wakeStore) Wake(q string, want int) <-chan struct{} { return s.n.Wait(q, want) }
func (s *wakeStore) Unwake(q string, c <-chan struct{})      { s.n.Leave(q, c) }
func (s *wakeStore) PassWake(q string)                       { s.n.Pass(q) }
func (s *wakeStore) Drained(q string, c <-chan struct{})     { s.n.Drained(q, c) }
func (s *wakeStore) Dry(q string) bool                       { return s.n.Dry(q) }

// However a claim's wait ends (a job, an error, the wait over, the claimer
// gone, the cap reached, the server stopping), it leaves no entry behind.
func TestClaimsLeaveNoWakeEntries(t *testing.T) {
	st := &wakeStore{n: NewNotifier()}
	cfg := DefaultConfig()
	cfg.MaxWaiters = 8
	svc := NewService(st, cfg, nil, nil, zerolog.Nop())
	wait := Duration(time.Millisecond)
	long := Duration(time.Minute)
	var wg sync.WaitGroup
	for i := range 4000 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			in := ClaimInput{Wait: &wait}
			q := "q-" + strconv.Itoa(i)
			switch i % 4 {
			case 1:
				q = "job-" + q
			case 2:
				q = "err-" + q
			case 3: // the claimer leaves
				in.Wait = &long
				time.AfterFunc(2*time.Millisecond, cancel)
			}
			svc.Claim(ctx, q, in) // with 8 places, some get ErrTooManyWaiters
		}()
	}
	wg.Wait()
	stopped := make(chan struct{})
	go func() { defer close(stopped); svc.Claim(t.Context(), "stopping", ClaimInput{Wait: &long}) }()
	for st.n.len() == 0 && !closed(stopped) { // until it waits (or was refused)
		time.Sleep(time.Millisecond)
	}
	svc.Stop()
	<-stopped
	if n, w := st.n.len(), svc.Waiting(); n != 0 || w != 0 {
		t.Fatalf("after every claim ended: %d queues in the Notifier, %d waiting; want 0 and 0", n, w)
	}
}

// countStore is a Store of which a Service's Claim uses only Claim, Wake,
// Unwake and PassWake: a count of jobs per queue, taken by claims, added by
// add, which notifies as a store's commit does. after, if set, runs in each
// claim after it took its jobs.
type countStore struct {
	Store
	n      *Notifier
	mu     sync.Mutex
	jobs   map[string]int
	claims atomic.Int64
	after  func(req ClaimRequest, took int)
}

func newCountStore() *countStore { return &countStore{n: NewNotifier(), jobs: map[string]int{}} }

func (s *countStore) Claim(_ context.Context, req ClaimRequest) ([]*Job, error) {
	s.claims.Add(1)
	s.mu.Lock()
	k := min(req.Limit, s.jobs[req.Queue])
	s.jobs[req.Queue] -= k
	s.mu.Unlock()
	if s.after != nil {
		s.after(req, k)
	}
	out := make([]*Job, k)
	for i := range out {
		out[i] = &Job{Queue: req.Queue}
	}
	return out, nil
}

func (s *countStore) add(queue string, k int) {
	s.mu.Lock()
	s.jobs[queue] += k
	s.mu.Unlock()
	qs := make([]string, k)
	for i := range qs {
		qs[i] = queue
	}
	s.n.Notify(qs...)
}

func (s *countStore) Wake(q string, want int) <-chan struct{} { return s.n.Wait(q, want) }
func (s *countStore) Unwake(q string, c <-chan struct{})      { s.n.Leave(q, c) }
func (s *countStore) PassWake(q string)                       { s.n.Pass(q) }
func (s *countStore) Drained(q string, c <-chan struct{})     { s.n.Drained(q, c) }
func (s *countStore) Dry(q string) bool                       { return s.n.Dry(q) }

// waiters is how many waiters of queue are not yet woken.
func (n *Notifier) waiters(queue string) (k int) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if q := n.qs[queue]; q != nil {
		for w := q.head; w != nil; w = w.next {
			k++
		}
	}
	return k
}

// eventually waits up to 5 s for cond.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for end := time.Now().Add(5 * time.Second); !cond(); time.Sleep(time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// One job submitted while 32 claimers wait is claimed by one of them: one
// claim, not 32 (the herd), and the other 31 sleep on.
func TestClaimersAreNotAHerd(t *testing.T) {
	st := newCountStore()
	svc := NewService(st, DefaultConfig(), nil, nil, zerolog.Nop())
	defer svc.Stop()
	wait := Duration(30 * time.Second)
	got := make(chan int, 32)
	for range 32 {
		go func() {
			jobs, _ := svc.Claim(t.Context(), "q", ClaimInput{Limit: 500, Wait: &wait})
			got <- len(jobs)
		}()
	}
	eventually(t, "32 waiters", func() bool { return st.n.waiters("q") == 32 })
	before := st.claims.Load()
	st.add("q", 1)
	if n := <-got; n != 1 {
		t.Fatalf("the woken claimer got %d jobs, want 1", n)
	}
	time.Sleep(50 * time.Millisecond)
	if d := st.claims.Load() - before; d != 1 {
		t.Fatalf("one job while 32 claimers waited made %d claims, want 1", d)
	}
	if w := st.n.waiters("q"); w != 31 {
		t.Fatalf("%d claimers wait on, want 31", w)
	}
}

// No job waits for a recheck: jobs submitted in bursts to claimers that
// take one at a time are all claimed at once, and a claimer woken while it
// looked, which took an older job, hands its wake-up on to the next.
func TestClaimWakeUpsStrandNoJob(t *testing.T) {
	st := newCountStore()
	svc := NewService(st, DefaultConfig(), nil, nil, zerolog.Nop())
	defer svc.Stop()
	wait := Duration(30 * time.Second)
	const total = 300
	var claimed atomic.Int64
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	for range 8 {
		go func() {
			for ctx.Err() == nil {
				jobs, _ := svc.Claim(ctx, "q", ClaimInput{Limit: 1, Wait: &wait})
				claimed.Add(int64(len(jobs)))
			}
		}()
	}
	for sent := 0; sent < total; {
		eventually(t, "the claimers to wait", func() bool { return st.n.waiters("q") == 8 })
		k := min(1+sent%13, total-sent) // bursts of 1 to 13 jobs for 8 claimers
		start := time.Now()
		st.add("q", k)
		sent += k
		eventually(t, "the burst to be claimed", func() bool { return claimed.Load() == int64(sent) })
		if d := time.Since(start); d > 700*time.Millisecond { // a recheck (1 s) found them
			t.Fatalf("a burst of %d jobs took %v to be claimed: one waited for a recheck", k, d)
		}
	}
	cancel()

	// A waits alone and is woken for job 1; while it looks (it takes job 1),
	// B starts waiting behind it and job 2 lands, waking A again. A returns
	// job 1 and must pass job 2's wake-up to B.
	st2 := newCountStore()
	svc2 := NewService(st2, DefaultConfig(), nil, nil, zerolog.Nop())
	defer svc2.Stop()
	bGot := make(chan int, 1)
	var once sync.Once
	st2.after = func(req ClaimRequest, took int) {
		if took == 0 {
			return
		}
		once.Do(func() {
			go func() {
				jobs, _ := svc2.Claim(t.Context(), "q", ClaimInput{Limit: 1, Wait: &wait})
				bGot <- len(jobs)
			}()
			eventually(t, "B to wait", func() bool { return st2.n.waiters("q") == 2 && st2.claims.Load() == 3 })
			st2.add("q", 1) // wakes A, first in line
		})
	}
	aGot := make(chan int, 1)
	go func() {
		jobs, _ := svc2.Claim(t.Context(), "q", ClaimInput{Limit: 1, Wait: &wait})
		aGot <- len(jobs)
	}()
	eventually(t, "A to wait", func() bool { return st2.n.waiters("q") == 1 })
	st2.add("q", 1)
	if n := <-aGot; n != 1 {
		t.Fatalf("A got %d jobs, want 1", n)
	}
	select {
	case n := <-bGot:
		if n != 1 {
			t.Fatalf("B got %d jobs, want 1", n)
		}
	case <-time.After(700 * time.Millisecond):
		t.Fatal("B was not woken for job 2: A kept the wake-up it did not use")
	}
}

// DataMillis reads what StartedData and FinishedData write, and any
// other shape as encoding/json would.
func TestDataMillis(t *testing.T) {
	for _, c := range []struct {
		data string
		want int64
		ok   bool
	}{
		{`{"attempt":1,"lease":2,"wait_ms":345}`, 345, true},
		{`{"duration_ms":0}`, 0, true},
		{`{"wait_ms": 12}`, 12, true},
		{`{"wait_ms":12.5}`, 0, false},
		{`{"other":1}`, 0, true},
		{`{"wait_ms":"x"}`, 0, false},
		{``, 0, false},
		{`null`, 0, true},
		{`{"wait_ms":99999999999999999999}`, 0, false},
	} {
		got, ok := DataMillis([]byte(c.data), "wait_ms")
		if got != c.want || ok != c.ok {
			t.Errorf("%s: %d %v, want %d %v", c.data, got, ok, c.want, c.ok)
		}
	}
}

// A look that took fewer jobs than it asked for makes its queue Dry while
// every job since went to a woken waiter: jobs no waiter covers, a wake-up
// passed on to nobody, jobs owed to waiters who all left, NotifyAll or
// DryFor end it. A report for a wait already woken makes nothing Dry.
func TestNotifierDrainedIsDry(t *testing.T) {
	n := NewNotifier()
	n.Coalesce = 0
	c := n.Wait("q", 10)
	n.Drained("q", c)
	if !n.Dry("q") {
		t.Fatal("a drained queue is not Dry")
	}
	if n.Dry("other") {
		t.Fatal("a queue nobody drained is Dry")
	}
	c2 := n.Wait("q", 10)
	n.Notify("q") // c takes it
	if !n.Dry("q") {
		t.Fatal("a job a woken waiter takes ended Dry")
	}
	n.Notify(slices.Repeat([]string{"q"}, 11)...) // c2 takes 10 of 11
	if n.Dry("q") {
		t.Fatal("a queue is Dry after jobs its waiters do not cover")
	}
	n.Leave("q", c)
	n.Leave("q", c2)
	c = n.Wait("q", 10)
	n.Drained("q", c)
	n.Leave("q", c)
	n.Notify("q") // nobody waits
	if n.Dry("q") {
		t.Fatal("a queue is Dry after a job nobody waited for")
	}

	c = n.Wait("q", 10)
	n.Notify("q") // wakes c: its look may not have seen the job
	n.Drained("q", c)
	if n.Dry("q") {
		t.Fatal("a look woken before it reported is taken for a drained one")
	}

	c = n.Wait("q", 10)
	n.Drained("q", c)
	n.Leave("q", c)
	n.Pass("q") // a woken claimer left its jobs, and nobody waits
	if n.Dry("q") {
		t.Fatal("a queue is Dry after a wake-up passed on to nobody")
	}

	c = n.Wait("q", 10)
	n.Drained("q", c)
	n.NotifyAll()
	if n.Dry("q") {
		t.Fatal("a queue is Dry after NotifyAll")
	}
	n.Leave("q", c)

	c = n.Wait("q", 10)
	n.Drained("q", c)
	n.Leave("q", c)
	n.Notify("elsewhere")
	if !n.Dry("q") {
		t.Fatal("a Notify of another queue ended Dry")
	}
	time.Sleep(DryFor + 10*time.Millisecond)
	if n.Dry("q") {
		t.Fatalf("a queue is Dry %v after it was drained", DryFor)
	}

	owe := NewNotifier()
	owe.Coalesce = time.Hour
	c1, c2 := owe.Wait("q", 10), owe.Wait("q", 10)
	owe.Drained("q", c2)
	owe.Notify("q") // wakes c1
	owe.Notify("q") // owed to c2 until the window ends
	if !owe.Dry("q") {
		t.Fatal("a job owed to a waiter ended Dry")
	}
	owe.Leave("q", c1)
	owe.Leave("q", c2)
	if owe.Dry("q") {
		t.Fatal("a queue is Dry after the waiters a job was owed to left")
	}

	// Jobs owed when a look began that found the queue drained were taken:
	// they wake no one. Jobs owed after it began still do.
	for _, before := range []bool{true, false} {
		owe := NewNotifier()
		owe.Coalesce = 20 * time.Millisecond
		c1, next := owe.Wait("q", 1), owe.Wait("q", 1)
		owe.Notify("q") // wakes c1; next waits on
		var c2 <-chan struct{}
		if before {
			owe.Notify("q") // owed
			c2 = owe.Wait("q", 10)
		} else {
			c2 = owe.Wait("q", 10)
			owe.Notify("q") // owed
		}
		owe.Drained("q", c2)
		time.Sleep(4 * owe.Coalesce)
		if closed(next) == before {
			t.Errorf("owed before the drained look began: %v; the owed job woke the next waiter: %v", before, closed(next))
		}
		owe.Leave("q", c1)
		owe.Leave("q", next)
		owe.Leave("q", c2)
	}
}

// A claimer back from its batch does not look at a queue a look just
// found drained: it waits, is woken by the next job, and claims it. A job
// that comes due by the clock (no Notify) is still found, by the last look
// before the wait ends. Claims of some kinds, and of a queue with limits,
// tell nothing of the queue's other jobs: they make it Dry for no one.
func TestClaimSkipsALookAtADrainedQueue(t *testing.T) {
	st := newCountStore()
	svc := NewService(st, DefaultConfig(), nil, nil, zerolog.Nop())
	defer svc.Stop()
	wait := Duration(30 * time.Second)
	claim := func(queue string, in ClaimInput) chan int {
		got := make(chan int, 1)
		go func() {
			jobs, err := svc.Claim(t.Context(), queue, in)
			if err != nil {
				t.Error(err)
			}
			got <- len(jobs)
		}()
		return got
	}
	got := claim("q", ClaimInput{Limit: 500, Wait: &wait})
	eventually(t, "a waiter", func() bool { return st.n.waiters("q") == 1 })
	st.add("q", 3)
	if n := <-got; n != 3 {
		t.Fatalf("the claim got %d jobs, want 3", n)
	}
	before := st.claims.Load()
	got = claim("q", ClaimInput{Limit: 500, Wait: &wait})
	eventually(t, "a waiter", func() bool { return st.n.waiters("q") == 1 })
	if d := st.claims.Load() - before; d != 0 {
		t.Fatalf("a claim on a queue just drained looked %d times before it waited, want 0", d)
	}
	st.add("q", 2)
	if n := <-got; n != 2 {
		t.Fatalf("the claim got %d jobs, want 2", n)
	}
	if d := st.claims.Load() - before; d != 1 {
		t.Fatalf("a claim woken once made %d looks, want 1", d)
	}

	// A job comes due with no Notify, while the queue is Dry.
	st.mu.Lock()
	st.jobs["q"]++
	st.mu.Unlock()
	if !st.n.Dry("q") {
		t.Fatal("the queue is not Dry after a claim took fewer than it asked for")
	}
	short := Duration(200 * time.Millisecond)
	if n := <-claim("q", ClaimInput{Limit: 500, Wait: &short}); n != 1 {
		t.Fatalf("a claim with a wait got %d jobs of a queue with one due, want 1", n)
	}

	cfg := DefaultConfig()
	cfg.Queues = map[string]QueueConfig{"limited": {Concurrency: 5}}
	svc2 := NewService(st, cfg, nil, nil, zerolog.Nop())
	defer svc2.Stop()
	none := Duration(time.Millisecond)
	for _, c := range []struct {
		svc   *Service
		queue string
		in    ClaimInput
	}{
		{svc, "kinds", ClaimInput{Limit: 10, Wait: &none, Kinds: []string{"a"}}},
		{svc2, "limited", ClaimInput{Limit: 10, Wait: &none}},
	} {
		if _, err := c.svc.Claim(t.Context(), c.queue, c.in); err != nil {
			t.Fatal(err)
		}
		if st.n.Dry(c.queue) {
			t.Errorf("a claim of %s that took nothing made it Dry", c.queue)
		}
	}
}
