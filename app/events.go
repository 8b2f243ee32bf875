package app

import (
	"encoding/json"
	"strconv"
	"sync"
	"time"
)

// Lifecycle event types (SPEC section 4, GET /api/events).
const (
	EventSubmitted      = "job.submitted"
	EventStarted        = "job.started"
	EventSucceeded      = "job.succeeded"
	EventRetryScheduled = "job.retry_scheduled"
	EventDeadLettered   = "job.dead_lettered"
	EventCancelled      = "job.cancelled"
	EventCancelRequest  = "job.cancel_requested"
	EventSnoozed        = "job.snoozed"
	EventDebounced      = "job.debounced"
	EventExpired        = "job.expired"
	EventLeaseLost      = "job.lease_lost"
	EventDLQReplayed    = "dlq.replayed"
	EventDLQPurged      = "dlq.purged"
	EventQueuePaused    = "queue.paused"
	EventQueueResumed   = "queue.resumed"
)

// Event is one lifecycle event. Stores record job events in the same
// transaction as the change and publish them on the Bus after commit.
type Event struct {
	ID    int64           `json:"id,omitempty"`
	Type  string          `json:"type"`
	JobID int64           `json:"job_id,omitempty"`
	Queue string          `json:"queue,omitempty"`
	Kind  string          `json:"kind,omitempty"`
	At    time.Time       `json:"at"`
	Data  json.RawMessage `json:"data,omitempty"`
}

// MarshalJSON writes At like every other time of the API.
func (e Event) MarshalJSON() ([]byte, error) {
	type plain Event
	return json.Marshal(struct {
		plain
		At string `json:"at"`
	}{plain(e), FormatTime(e.At)})
}

// StartedData is the data of a job.started event: the attempt, and how long
// the job waited between becoming claimable and starting (for metrics).
func StartedData(j *Job) json.RawMessage {
	wait := int64(0)
	if j.StartedAt != nil {
		wait = max(0, j.StartedAt.Sub(j.RunAt).Milliseconds())
	}
	// Built by hand: the writer makes one for every claimed job.
	b := make([]byte, 0, 64)
	b = strconv.AppendInt(append(b, `{"attempt":`...), int64(j.Attempts), 10)
	b = strconv.AppendInt(append(b, `,"lease":`...), j.Lease, 10)
	b = strconv.AppendInt(append(b, `,"wait_ms":`...), wait, 10)
	return append(b, '}')
}

// FinishedData is the data of a job.succeeded event: how long the attempt ran.
func FinishedData(started *time.Time, now time.Time) json.RawMessage {
	if started == nil {
		return nil
	}
	b := make([]byte, 0, 32)
	b = strconv.AppendInt(append(b, `{"duration_ms":`...), max(0, now.Sub(*started).Milliseconds()), 10)
	return append(b, '}')
}

// Bus fans committed events out to in-process subscribers (the SSE stream,
// metrics, waiters on one job). Publish never blocks: a subscriber whose
// buffer is full is dropped and told so by Subscription.Overflowed.
type Bus struct {
	mu        sync.Mutex
	subs      map[*Subscription]struct{}
	observers []func(*Event)
}

// Observe calls fn synchronously for every published event, before the
// subscribers get it. fn must be quick and must not block (metrics).
func (b *Bus) Observe(fn func(*Event)) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.observers = append(b.observers, fn)
}

// NewBus returns an empty Bus.
func NewBus() *Bus { return &Bus{subs: map[*Subscription]struct{}{}} }

// Subscription receives events on C until it is closed by Close or overflow.
type Subscription struct {
	C        <-chan Event
	c        chan Event
	filter   func(*Event) bool
	bus      *Bus
	overflow bool
	closed   bool
}

// Subscribe returns a subscription to events for which filter (if not nil)
// is true, buffering up to buf of them.
func (b *Bus) Subscribe(buf int, filter func(*Event) bool) *Subscription {
	c := make(chan Event, buf)
	s := &Subscription{C: c, c: c, filter: filter, bus: b}
	b.mu.Lock()
	b.subs[s] = struct{}{}
	b.mu.Unlock()
	return s
}

// Publish hands events to every matching subscriber without waiting.
func (b *Bus) Publish(events ...Event) {
	if b == nil || len(events) == 0 {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, fn := range b.observers {
		for i := range events {
			fn(&events[i])
		}
	}
	for s := range b.subs {
		for i := range events {
			if s.filter != nil && !s.filter(&events[i]) {
				continue
			}
			select {
			case s.c <- events[i]:
			default:
				s.overflow = true
				s.closeLocked()
			}
			if s.closed {
				break
			}
		}
	}
}

// Close stops the subscription and closes C.
func (s *Subscription) Close() {
	s.bus.mu.Lock()
	defer s.bus.mu.Unlock()
	s.closeLocked()
}

// Overflowed reports whether the subscription was dropped for falling behind.
func (s *Subscription) Overflowed() bool {
	s.bus.mu.Lock()
	defer s.bus.mu.Unlock()
	return s.overflow
}

func (s *Subscription) closeLocked() {
	if s.closed {
		return
	}
	s.closed = true
	delete(s.bus.subs, s)
	close(s.c)
}

// Notifier wakes claimers waiting on a queue. Stores call Notify after a
// commit that makes work claimable; claimers take Wait's channel before
// they look, so a wake-up between looking and waiting is never lost, and
// call Leave when they stop waiting. It holds only queues someone waits on:
// an entry goes at the Notify that closes its channel or when its last
// waiter leaves, so waits on ever new queue names do not pile up.
type Notifier struct {
	mu sync.Mutex
	ch map[string]wakeEntry
}

// wakeEntry is the channel of one queue and how many waiters hold it.
type wakeEntry struct {
	c       chan struct{}
	waiters int
}

// NewNotifier returns a Notifier with no waiters.
func NewNotifier() *Notifier { return &Notifier{ch: map[string]wakeEntry{}} }

// Wait returns a channel closed at the next Notify of queue. Every call
// makes the caller a waiter on queue until that Notify or its Leave. want
// is how many jobs the waiter would take.
func (n *Notifier) Wait(queue string, want int) <-chan struct{} {
	n.mu.Lock()
	defer n.mu.Unlock()
	e, ok := n.ch[queue]
	if !ok {
		e.c = make(chan struct{})
	}
	e.waiters++
	n.ch[queue] = e
	return e.c
}

// Leave ends one wait on queue that Wait answered with c; call it once per
// Wait. The last waiter to leave takes the entry with it. A c that a
// Notify closed already is no longer held, so leaving it does nothing.
func (n *Notifier) Leave(queue string, c <-chan struct{}) {
	n.mu.Lock()
	defer n.mu.Unlock()
	e, ok := n.ch[queue]
	if !ok || e.c != c {
		return
	}
	if e.waiters--; e.waiters <= 0 {
		delete(n.ch, queue)
		return
	}
	n.ch[queue] = e
}

// Notify wakes everyone waiting on each of queues.
func (n *Notifier) Notify(queues ...string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, q := range queues {
		if e, ok := n.ch[q]; ok {
			close(e.c)
			delete(n.ch, q)
		}
	}
}

// NotifyAll wakes everyone waiting on any queue (after a lost connection
// to the other nodes, say, when a Notify may have been missed).
func (n *Notifier) NotifyAll() {
	n.mu.Lock()
	defer n.mu.Unlock()
	for q, e := range n.ch {
		close(e.c)
		delete(n.ch, q)
	}
}

// len is how many queues have waiters (tests).
func (n *Notifier) len() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return len(n.ch)
}

// Clock tells the time. Everything in the queue reads time through one
// Clock so tests can move it without sleeping.
type Clock interface {
	Now() time.Time
}

// SystemClock is the wall clock, in UTC.
type SystemClock struct{}

// Now returns the current time in UTC.
func (SystemClock) Now() time.Time { return time.Now().UTC() }

// FakeClock is a Clock that moves only when told to. Safe for concurrent use.
type FakeClock struct {
	mu  sync.Mutex
	now time.Time
}

// NewFakeClock returns a FakeClock at t.
func NewFakeClock(t time.Time) *FakeClock { return &FakeClock{now: t.UTC()} }

// Now returns the fake time.
func (c *FakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock forward by d.
func (c *FakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// Set moves the clock to t.
func (c *FakeClock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = t.UTC()
}
