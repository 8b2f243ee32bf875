package app

import (
	"bytes"
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

// DataMillis reads the integer field name ("wait_ms" of a job.started
// event, "duration_ms" of a job.succeeded one) of an event's data, as a
// struct with that one field would (absent: 0). The shape StartedData and
// FinishedData write is read here, beside them, without a JSON decoder:
// the metrics read it on the store's writer goroutine, twice a job. Any
// other shape goes through encoding/json.
func DataMillis(data json.RawMessage, name string) (int64, bool) {
	if i := bytes.Index(data, []byte(`"`+name+`":`)); i >= 0 {
		rest := data[i+len(name)+3:]
		n := 0
		for n < len(rest) && rest[n] >= '0' && rest[n] <= '9' {
			n++
		}
		if n > 0 && n < 19 && (n == len(rest) || rest[n] == ',' || rest[n] == '}') {
			v, err := strconv.ParseInt(string(rest[:n]), 10, 64)
			return v, err == nil
		}
	}
	var d map[string]json.RawMessage // as a struct with the one field would: absent is 0
	if json.Unmarshal(data, &d) != nil {
		return 0, false
	}
	raw, ok := d[name]
	if !ok {
		return 0, true
	}
	var v int64
	return v, json.Unmarshal(raw, &v) == nil
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

// Notifier wakes claimers waiting on a queue, in proportion to the work
// that arrived: stores call Notify after a commit with one entry per job
// made claimable, and it wakes the queue's waiters in the order they came
// until their wants (how many jobs each would take) cover those jobs, at
// least one per queue named. Waking every waiter for every job (the
// thundering herd) had each of them claim for each submission: eight
// claimers over HTTP on PostgreSQL did a third of one claimer's rate.
//
// Claimers take Wait's channel before they look, so a job landing between
// looking and waiting still wakes them, and call Leave when they stop
// waiting. A woken claimer that did not claim what it was woken for (it
// left, failed, or was woken while it looked and took other jobs), or
// that took a full batch (more may be left), hands the wake-up on with
// Pass, so no job waits for a recheck. It holds only queues someone waits
// on, and only the waiters not yet woken.
//
// Jobs that arrive within Coalesce of a queue's last wake-up, while other
// claimers still wait, are handed out together when it has passed: one
// claim takes what a stream of single submissions brought meanwhile, as a
// lone busy claimer does, instead of one claim (and one completion) per
// submission, each a commit that the submissions wait behind.
//
// A claimer whose look after Wait took fewer jobs than it asked for tells
// so with Drained. Until jobs arrive that no woken waiter will take (a
// Notify its waiters do not cover, a wake-up passed on to nobody, jobs
// owed to waiters who all left), and for DryFor at most, Dry says the
// queue holds nothing a newcomer could claim, and a claimer that would
// wait anyway waits without looking first. A claimer back from handing in
// its batch otherwise looked at once, took the jobs a woken waiter was
// about to take, and left it a claim that found nothing: two claims in
// three, over HTTP with eight claimers, each a statement PostgreSQL plans
// and runs (a write on SQLite).
type Notifier struct {
	mu  sync.Mutex
	qs  map[string]*wakeQueue
	byC map[<-chan struct{}]*waiter
	gen uint64               // counts Notify and NotifyAll calls
	dry map[string]time.Time // queues Drained, when
	// Coalesce is how long after a wake-up of a queue the next waits to
	// gather more jobs (0: none). Set it before the first Wait.
	Coalesce time.Duration
}

// DefaultCoalesce is a new Notifier's Coalesce. It bounds the claims a
// stream of submissions causes to about 100 a second per queue, however
// many claimers wait: at 2 ms, once claimers that come back stopped taking
// the woken claimers' jobs (Dry), each claim took two jobs and each took
// its own completion, and 32 claimers over HTTP did half the rate of one on
// PostgreSQL (a claim is planned and run for each) and 0.7 of it on SQLite.
// At 10 ms they do as well as one; 20 ms gained nothing more. A job that
// follows a quiet spell of 10 ms or more still wakes a claimer at once.
const DefaultCoalesce = 10 * time.Millisecond

// DryFor is how long a Drained queue stays Dry without a Notify. Jobs
// that come due by the clock (scheduled, retried after a backoff) wake
// no one: within DryFor of a drained look a claimer that skips its look
// finds them at its next look instead (a recheck, or the last look before
// its wait ends), as a claimer already waiting does.
const DryFor = 100 * time.Millisecond

// wakeQueue is the waiters of one queue, first come first, and the jobs
// owed to them that wait for the coalescing window to end.
type wakeQueue struct {
	head, tail *waiter
	last       time.Time   // the last wake-up by Notify
	owed       int         // jobs notified since, not yet handed out
	owedGen    uint64      // the gen of the last Notify owed
	timer      *time.Timer // hands them out at the window's end
}

// waiter is one Wait not yet woken nor left.
type waiter struct {
	c          chan struct{}
	want       int
	gen        uint64 // the Notifier's gen when it began to wait
	queue      string
	prev, next *waiter
}

// NewNotifier returns a Notifier with no waiters.
func NewNotifier() *Notifier {
	return &Notifier{qs: map[string]*wakeQueue{}, byC: map[<-chan struct{}]*waiter{}, dry: map[string]time.Time{},
		Coalesce: DefaultCoalesce}
}

// Wait returns a channel closed when the caller is woken for work on
// queue: by a Notify whose jobs the waiters before it do not cover, a
// Pass, or NotifyAll. Every call makes the caller a waiter until then or
// its Leave. want is how many jobs the waiter would take (at least 1).
func (n *Notifier) Wait(queue string, want int) <-chan struct{} {
	n.mu.Lock()
	defer n.mu.Unlock()
	w := &waiter{c: make(chan struct{}), want: max(want, 1), queue: queue, gen: n.gen}
	q := n.qs[queue]
	if q == nil {
		q = &wakeQueue{}
		n.qs[queue] = q
	}
	if w.prev = q.tail; q.tail != nil {
		q.tail.next = w
	} else {
		q.head = w
	}
	q.tail = w
	n.byC[w.c] = w
	return w.c
}

// Leave ends one wait on queue that Wait answered with c; call it once per
// Wait. A waiter not yet woken is forgotten (the last one of a queue takes
// the queue with it); leaving a c that was woken does nothing: whether the
// wake-up must go on is the caller's to say (Pass).
func (n *Notifier) Leave(queue string, c <-chan struct{}) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if w := n.byC[c]; w != nil {
		n.remove(w)
	}
}

// Notify wakes waiters for each of queues, one entry per job made
// claimable: on each queue, waiters in order until their wants cover its
// entries (at least one waiter). Entries of one queue are counted while
// they follow each other, as stores give them. It returns the queues
// whose jobs this process's waiters did not cover (none waited, or they
// would take fewer): only those need waking on the other nodes.
func (n *Notifier) Notify(queues ...string) (uncovered []string) {
	if len(queues) == 0 {
		return nil
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	n.gen++
	for i := 0; i < len(queues); {
		j := i + 1
		for j < len(queues) && queues[j] == queues[i] {
			j++
		}
		if !n.notify(queues[i], j-i) {
			uncovered = append(uncovered, queues[i])
		}
		i = j
	}
	return uncovered
}

// notify wakes waiters of queue for jobs, or owes them the jobs until the
// coalescing window since the last wake-up ends. It reports whether the
// waiters' wants cover the jobs (owed jobs count as covered: waiters
// remain to take them).
func (n *Notifier) notify(queue string, jobs int) bool {
	q := n.qs[queue]
	if q == nil {
		delete(n.dry, queue)
		return false // nobody waits: the next claimer looks before it waits
	}
	now := time.Now()
	if since := now.Sub(q.last); n.Coalesce > 0 && since < n.Coalesce {
		q.owed, q.owedGen = q.owed+jobs, n.gen
		if q.timer == nil {
			q.timer = time.AfterFunc(n.Coalesce-since, func() { n.payOwed(queue, q) })
		}
		return true
	}
	q.last = now
	if n.wake(queue, jobs) >= jobs {
		return true
	}
	delete(n.dry, queue)
	return false
}

// payOwed wakes waiters of q for the jobs owed to them, if q still holds
// waiters of queue.
func (n *Notifier) payOwed(queue string, q *wakeQueue) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if q.timer = nil; n.qs[queue] != q || q.owed == 0 {
		return
	}
	jobs := q.owed
	q.owed, q.last = 0, time.Now()
	if n.wake(queue, jobs) < jobs {
		delete(n.dry, queue)
	}
}

// Pass wakes the first waiter of queue, if any: a claimer hands on a
// wake-up it did not use, or asks the next to look after it took a full
// batch. Without waiters nothing is kept: every claimer looks before it
// waits.
func (n *Notifier) Pass(queue string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.wake(queue, 1) == 0 { // the jobs are anyone's: the next claimer looks
		delete(n.dry, queue)
	}
}

// NotifyAll wakes everyone waiting on any queue (after a lost connection
// to the other nodes, say, when a Notify may have been missed).
func (n *Notifier) NotifyAll() {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.gen++
	clear(n.dry)
	for _, q := range n.qs {
		for q.head != nil {
			n.wakeOne(q.head)
		}
	}
}

// Drained records that the look a claimer made after Wait returned c
// found queue without a job to spare (it took fewer than it asked for).
// It counts only while c still waits: then every Notify of the queue
// since that Wait woke waiters who will take its jobs (one they do not
// cover wakes them all, c too), while a job committed while the look ran,
// which it may not have seen, could have been meant for c.
func (n *Notifier) Drained(queue string, c <-chan struct{}) {
	n.mu.Lock()
	defer n.mu.Unlock()
	w := n.byC[c]
	if w == nil || w.queue != queue {
		return
	}
	q := n.qs[queue]
	if q.owed > 0 && q.owedGen <= w.gen {
		// The jobs owed were committed before this look began, which found
		// none to spare: they are taken, and the waiter they would wake
		// would look for nothing.
		q.owed = 0
		q.timer.Stop()
		q.timer = nil
	}
	if _, ok := n.dry[queue]; !ok && len(n.dry) >= 1024 { // queues named once and never again
		now := time.Now()
		for q, at := range n.dry {
			if now.Sub(at) >= DryFor {
				delete(n.dry, q)
			}
		}
	}
	n.dry[queue] = time.Now()
}

// Dry reports whether queue was Drained within DryFor and all jobs since
// went to woken waiters. Take Wait's channel first: a Notify after Dry
// answered wakes it, or one before it.
func (n *Notifier) Dry(queue string) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	at, ok := n.dry[queue]
	if ok && time.Since(at) >= DryFor {
		delete(n.dry, queue)
		return false
	}
	return ok
}

// wake wakes waiters of queue in order until their wants cover jobs, at
// least one, and returns how many jobs the woken would take.
func (n *Notifier) wake(queue string, jobs int) (covered int) {
	q := n.qs[queue]
	if q == nil {
		return 0
	}
	for q.head != nil && (covered == 0 || covered < jobs) {
		covered += q.head.want
		n.wakeOne(q.head)
	}
	return covered
}

// wakeOne closes w's channel and forgets w.
func (n *Notifier) wakeOne(w *waiter) {
	close(w.c)
	n.remove(w)
}

// remove takes w out of its queue and the index, and the queue out of the
// map when w was its last waiter.
func (n *Notifier) remove(w *waiter) {
	q := n.qs[w.queue]
	if w.prev != nil {
		w.prev.next = w.next
	} else {
		q.head = w.next
	}
	if w.next != nil {
		w.next.prev = w.prev
	} else {
		q.tail = w.prev
	}
	w.prev, w.next = nil, nil
	delete(n.byC, w.c)
	if q.head == nil {
		if q.timer != nil { // nobody left to owe: later claimers look first
			q.timer.Stop()
			q.timer = nil
			delete(n.dry, w.queue)
		}
		delete(n.qs, w.queue)
	}
}

// len is how many queues have waiters (tests); it panics if a waiter is
// indexed that no queue holds, or the other way round.
func (n *Notifier) len() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	held := 0
	for _, q := range n.qs {
		for w := q.head; w != nil; w = w.next {
			held++
		}
	}
	if held != len(n.byC) {
		panic("notifier: waiters and index disagree")
	}
	return len(n.qs)
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
