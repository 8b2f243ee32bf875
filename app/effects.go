package app

import "time"

// Effects is what a write does besides changing rows, collected while it
// runs and carried out by the store around its commit: events to write to
// the events table before it (Recorded) and to publish after it
// (Published), throughput to count before it, queues to wake after it. A
// store embeds it in its Tx, which gives the Tx its Event, AttemptEnded,
// Count and Wake; nothing collected takes effect if the write fails.
type Effects struct {
	now       time.Time
	Published []Event
	Recorded  []Event
	Woken     []string
	Counts    map[CountKey]*CountVal
	changed   []QueueKey
	settled   int           // Published[:settled] were looked at by Settle
	opts      *StoreOptions // the config a write reads (see Use)
}

// CountKey is the throughput of a queue in one second.
type CountKey struct {
	Queue  string
	Second int64
}

// CountVal is the attempts that ended in a CountKey's second, and the
// jobs claimed in it with their waits from due to claim (see Picked).
type CountVal struct {
	Completed, Failed int64
	Claimed           int64
	WaitMS, WaitMaxMS int64 // the waits' sum and the longest, in milliseconds
}

// Add adds o to c: sums, and the longer of the two longest waits.
func (c *CountVal) Add(o CountVal) {
	c.Completed += o.Completed
	c.Failed += o.Failed
	c.Claimed += o.Claimed
	c.WaitMS += o.WaitMS
	c.WaitMaxMS = max(c.WaitMaxMS, o.WaitMaxMS)
}

// Reset readies e for a write at now, keeping what it allocated but
// letting go of what it held.
func (e *Effects) Reset(now time.Time) {
	e.now = now
	clear(e.Published)
	clear(e.Recorded)
	e.Published, e.Recorded, e.Woken = e.Published[:0], e.Recorded[:0], e.Woken[:0]
	clear(e.Counts)
	e.changed = e.changed[:0]
	e.settled = 0
}

// Merge adds what o collected to e (a write that joins others in one
// transaction).
func (e *Effects) Merge(o *Effects) {
	e.Published = append(e.Published, o.Published...)
	e.Recorded = append(e.Recorded, o.Recorded...)
	e.Woken = append(e.Woken, o.Woken...)
	for k, v := range o.Counts {
		e.count(k).Add(*v)
	}
}

// Event records a lifecycle event and publishes it after the commit.
func (e *Effects) Event(typ string, jobID int64, queue, kind string, data []byte) {
	ev := Event{Type: typ, JobID: jobID, Queue: queue, Kind: kind, At: e.now, Data: data}
	e.Published = append(e.Published, ev)
	e.Recorded = append(e.Recorded, ev)
}

// Publish publishes an event the job row already tells (submitted,
// started, succeeded) without recording it: Timeline derives it from the
// row, and these three would be most of the events table's writes.
func (e *Effects) Publish(typ string, jobID int64, queue, kind string, data []byte) {
	e.Published = append(e.Published, Event{Type: typ, JobID: jobID, Queue: queue, Kind: kind, At: e.now, Data: data})
}

// AttemptEnded records the job.started of j's current attempt, which ends
// now without success: started_at will not keep it once another attempt
// starts. It is not published again (the claim did).
func (e *Effects) AttemptEnded(j *Job) {
	if j.Status != StatusProcessing || j.StartedAt == nil {
		return
	}
	e.Recorded = append(e.Recorded, Event{Type: EventStarted, JobID: j.ID, Queue: j.Queue, Kind: j.Kind, At: *j.StartedAt, Data: StartedData(j)})
}

// Count adds completed and failed attempts to queue's throughput this second.
func (e *Effects) Count(queue string, completed, failed int64) {
	e.count(CountKey{queue, e.now.Unix()}).Add(CountVal{Completed: completed, Failed: failed})
}

// Picked counts a job of queue claimed this second after waiting wait
// since it was due (see PickupWait), in the same upsert as the throughput.
func (e *Effects) Picked(queue string, wait time.Duration) {
	ms := max(wait.Milliseconds(), 0)
	e.count(CountKey{queue, e.now.Unix()}).Add(CountVal{Claimed: 1, WaitMS: ms, WaitMaxMS: ms})
}

// count is the counter of k, made if needed.
func (e *Effects) count(k CountKey) *CountVal {
	if e.Counts == nil {
		e.Counts = map[CountKey]*CountVal{}
	}
	c := e.Counts[k]
	if c == nil {
		c = &CountVal{}
		e.Counts[k] = c
	}
	return c
}

// Use takes the config a write reads from the options its store was
// opened with (key limits, concurrency caps, webhook rules): each store
// calls it after Reset, so an option added here reaches all three.
func (e *Effects) Use(o *StoreOptions) { e.opts = o }

// Wake wakes the claimers of queue after the commit.
func (e *Effects) Wake(queue string) { e.Woken = append(e.Woken, queue) }

// Capped is whether queue has a concurrency limit (StoreOptions.Capped;
// without it, every queue).
func (e *Effects) Capped(queue string) bool {
	return e.opts == nil || e.opts.Capped == nil || e.opts.Capped(queue)
}

// KeyLimits is how queue limits its keys (StoreOptions.KeyLimits; without
// it, no queue limits its keys).
func (e *Effects) KeyLimits(queue string) KeyLimits {
	if e.opts == nil || e.opts.KeyLimits == nil {
		return KeyLimits{}
	}
	return e.opts.KeyLimits(queue)
}

// KeyChanged notes key of queue for SettleKeys.
func (e *Effects) KeyChanged(queue, key string) {
	e.changed = append(e.changed, QueueKey{queue, key})
}

// ChangedKeys names the keys noted since the last Reset (or TakeChanged).
func (e *Effects) ChangedKeys() []QueueKey {
	out := e.changed
	e.changed = e.changed[:0:0]
	return out
}

// WebhookRules is the webhook rules in effect (StoreOptions.Webhooks;
// without it, no subscriptions: callbacks are still made).
func (e *Effects) WebhookRules() *WebhookRules {
	if e.opts == nil || e.opts.Webhooks == nil {
		return nil
	}
	return e.opts.Webhooks()
}

// Unsettled returns the events published since the last call (or Reset),
// for Settle: a write that settles more than once (the SQLite writer's
// requests share a transaction) looks at each event once.
func (e *Effects) Unsettled() []Event {
	out := e.Published[e.settled:]
	e.settled = len(e.Published)
	return out
}
