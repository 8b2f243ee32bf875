package app

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"sync"
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

// closed reports whether c is closed, without waiting.
func closed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// A Notify wakes every waiter that has not left, whether or not others
// left before it; a wake-up that lands between Wait and the select is kept;
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
