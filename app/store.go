package app

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/rs/zerolog"
)

// Store keeps jobs, dead-letter rows and the records around them. Every
// implementation (sqlite, postgres, memory) passes storetest.Run, and every
// method that moves a job does it in one transaction: after an error nothing
// has changed. Stores take their clock, event bus and fault hook from
// StoreOptions; they apply the lifecycle rules of this package
// (Transition, DecideFail, ...) rather than their own.
//
// It is made of role interfaces, so a part of the program can ask for only
// what it uses; one Store carries them all for the wiring.
type Store interface {
	JobStore
	DeadLetterStore
	QueueStore
	MaintenanceStore
	PeriodicStore
	AuditStore
	WorkflowStore
	ChartStore
	SettingsStore
	WorkerStore
	LogStore

	// Wake returns a channel closed when queue may have new claimable work
	// (a submission, a retry, a resume). Take it before claiming, so nothing
	// that lands in between is missed. want is how many jobs the caller
	// would take: waiters are woken in proportion to the work that arrived,
	// not all at once.
	Wake(queue string, want int) <-chan struct{}
	// Unwake lets go of c, a channel Wake(queue) returned, when its caller
	// stops waiting; call it once per Wake. The store forgets a queue when
	// its last waiter leaves, so waits on new names do not pile up.
	Unwake(queue string, c <-chan struct{})
	// PassWake wakes the next claimer waiting on queue, if any: a claimer
	// hands on a wake-up it did not use, or after a full batch, so no job
	// waits for a recheck (Notifier.Pass).
	PassWake(queue string)
	// Drained says the claim a caller made after Wake returned c took
	// fewer jobs of queue than it asked for; Dry reports such a claim made
	// lately, with no work for queue since (Notifier.Drained, Dry).
	Drained(queue string, c <-chan struct{})
	Dry(queue string) bool
	// Ping reports whether the store can be reached.
	Ping(ctx context.Context) error
	// Close releases the store; it waits for writes in flight.
	Close() error
}

// Leader is what a store offers when several servers share it (PostgreSQL):
// Lead runs fn while this node holds the maintenance lock, handing it over
// when a node stops or dies. A store without it has one node, always leading.
type Leader interface {
	Lead(ctx context.Context, log zerolog.Logger, fn func(ctx context.Context))
}

// JobStore submits, reads and moves jobs through their lifecycle.
type JobStore interface {
	// Writer runs the lifecycle of this package (Fail, Snooze, Cancel,
	// RecoverStale, Drain, MoveToDead, ExpireTTL, Replay, Purge, SetPaused,
	// FirePeriodic) in one
	// transaction over the store's Tx.
	Writer
	// InsertJobs inserts plain jobs (no idempotency key, no queue limit)
	// all or nothing; Submit sends them here, where a store gathers the
	// submissions of concurrent callers into one transaction.
	InsertJobs(ctx context.Context, jobs []NewJob) ([]Submitted, error)
	// Lookup reads job id from the jobs table and from the dead-letter table
	// in one consistent snapshot and returns what it found in each (exactly
	// one is not nil in a sound store; ErrNotFound when neither).
	Lookup(ctx context.Context, id int64) (*Job, *DeadJob, error)
	// List returns jobs matching f in id order (descending unless f.Asc).
	List(ctx context.Context, f JobFilter) ([]*Job, error)
	// JobEvents returns the lifecycle events recorded for job id, oldest
	// first. A store may leave out the submitted, started and succeeded
	// events its job row already tells, but must keep a job.started for
	// every attempt that did not succeed (see Timeline, which the Service
	// applies).
	JobEvents(ctx context.Context, id int64) ([]Event, error)

	// Claim moves up to req.Limit claimable jobs of req.Queue to processing,
	// in claim order (priority, run_at, id), each with a new lease. A paused
	// queue, a full concurrency limit or an empty rate bucket hands out fewer
	// or none.
	Claim(ctx context.Context, req ClaimRequest) ([]*Job, error)
	// Complete marks each processing job done with its result; each item is
	// fenced on its own, so the slice of errors matches items one to one.
	// The error is for the call as a whole (the store failed).
	Complete(ctx context.Context, items []Completion) ([]error, error)
	// CountJobs counts jobs matching f (cursor fields ignored), at most
	// f.CountCap+1 of them when f.CountCap is positive.
	CountJobs(ctx context.Context, f JobFilter) (int, error)
	// Values returns up to limit distinct values of field, "kind" or
	// "tag", that start with prefix (byte for byte), in byte order: the
	// kinds of every job (an index walk, one step per value), the tags of
	// the newest MaxTagScan jobs (tags have no index: the scan is bounded).
	Values(ctx context.Context, field, prefix string, limit int) ([]string, error)
}

// MaxTagScan is how many of the newest jobs Values reads for tags, so a
// suggestion stays cheap on a table of millions: a tag only older jobs
// carry is not suggested.
const MaxTagScan = 10_000

// DeadLetterStore reads and acts on the dead-letter queue.
type DeadLetterStore interface {
	// ListDead returns dead-letter rows matching f as listed: by the time
	// of the move, then id, newest first unless f.Asc.
	ListDead(ctx context.Context, f DeadFilter) ([]*DeadJob, error)
	// CountDead counts dead-letter rows matching f (cursor fields ignored).
	CountDead(ctx context.Context, f DeadFilter) (int, error)
	// DeadGroups counts the dead-letter rows per queue, kind, reason and
	// day of the move (UTC).
	DeadGroups(ctx context.Context) ([]DeadGroup, error)
}

// KindWait is the due queued jobs of one kind in one queue.
type KindWait struct {
	Queue, Kind string
	Queued      int64
	Oldest      time.Time // the earliest run_at
}

// DeadGroup counts the dead-letter rows of one queue, kind, reason and day.
type DeadGroup struct {
	Queue, Kind, Reason string
	Day                 string // of the move, UTC: 2006-01-02
	Rows                int64
	Replayed            int64     // rows replayed at least once
	Replays             int64     // replays of the rows in all
	Oldest              time.Time // the earliest move
}

// QueueStore keeps the queues' state and counts.
type QueueStore interface {
	// Queues returns every queue that has jobs, dead-letter rows or state.
	Queues(ctx context.Context) ([]QueueState, error)
	// Stats counts jobs per queue as of now (see QueueStats).
	Stats(ctx context.Context) ([]QueueStats, error)
	// Waiting groups the due queued jobs by queue and kind, for the groups
	// whose oldest run_at is before dueBefore (at most 100 groups).
	Waiting(ctx context.Context, dueBefore time.Time) ([]KindWait, error)
	// Throughput returns completed and failed counts per minute since since.
	Throughput(ctx context.Context, since time.Time) ([]MinuteCount, error)
	// KeyStats reads queue's keys for its page (see KeyStats), up to limit
	// keys in each list.
	KeyStats(ctx context.Context, queue string, limit int) (*KeyStats, error)
	// HeldCounts counts the jobs each queue holds back for their keys
	// (queues with none are left out).
	HeldCounts(ctx context.Context) (map[string]int, error)
}

// KeyStats is what a queue's page shows of its keys.
type KeyStats struct {
	// Held counts the queue's jobs waiting for their key to have room.
	Held int `json:"held"`
	// Busiest are the keys with the most jobs queued or processing, among
	// the first MaxKeyScan live keyed jobs of the queue; AtLimit, the keys
	// holding jobs back, most held first, among the first MaxKeyScan held.
	Busiest []KeyCount `json:"busiest"`
	AtLimit []KeyCount `json:"at_limit"`
}

// KeyCount is one key's jobs: queued (held ones included), processing, held.
type KeyCount struct {
	Key        string `json:"key"`
	Queued     int    `json:"queued"`
	Processing int    `json:"processing"`
	Held       int    `json:"held"`
}

// MaxKeyScan bounds the rows KeyStats reads for its lists, so a queue page
// stays fast with a million keyed jobs.
const MaxKeyScan = 100_000

// MaintenanceStore is the work of the maintenance loop and retention.
type MaintenanceStore interface {
	// DeleteOld deletes up to req.Limit rows of req.What older than req.Before
	// in one statement and returns how many went.
	DeleteOld(ctx context.Context, req DeleteOldRequest) (int, error)
}

// PeriodicStore records the fires of periodic jobs, once each across nodes.
type PeriodicStore interface {
	// LastFire returns the latest recorded fire time of entry (zero if none).
	LastFire(ctx context.Context, entry string) (time.Time, error)
}

// WorkflowStore reads workflows (their changes go through the Writer:
// SubmitWorkflow, CancelWorkflow, and the job lifecycle).
type WorkflowStore interface {
	// ListWorkflows returns the workflows of f, newest first.
	ListWorkflows(ctx context.Context, f WorkflowFilter) ([]*Workflow, error)
	// GetWorkflow reads workflow id and its steps in the order they were
	// given, each with its job's status, attempts and last start while
	// the job is in the jobs table (one snapshot). None is ErrNotFound.
	GetWorkflow(ctx context.Context, id int64) (*Workflow, []*WorkflowStep, error)
	// Parents reads, for each of steps of workflow wf, the steps it depends
	// on, in the order of its depends_on (their DependsOn need not be read).
	// A step without dependencies may be left out of the answer.
	Parents(ctx context.Context, wf int64, steps []string) (map[string][]*WorkflowStep, error)
}

// AuditStore keeps the audit trail of admin actions.
type AuditStore interface {
	// ListAudit returns admin actions, newest first.
	ListAudit(ctx context.Context, f AuditFilter) ([]AuditEntry, error)
}

// StoreOptions is what every store takes besides its address.
type StoreOptions struct {
	// Clock gives all times. If nil, the system clock is used.
	Clock Clock
	// Bus receives lifecycle events after they commit. If nil, none are published.
	Bus *Bus
	// Fault, if set, is called at the named FaultPoints inside write
	// transactions; a non-nil error aborts that transaction. Tests only.
	Fault FaultFunc
	// Log receives the store's own logs. If zero, nothing is logged.
	Log zerolog.Logger
	// ObserveWrite, if set, sees the size (requests or rows) and duration of
	// every write transaction, for metrics.
	ObserveWrite func(batch int, took time.Duration)
	// KeyLimits gives how a queue limits the jobs of one key (the
	// Service's Config.KeyLimits); if nil, no queue limits its keys.
	KeyLimits func(queue string) KeyLimits
	// Capped says whether a claim of queue can be held back by its
	// concurrency limit (the Service's Config.Capped), so that a completion,
	// which frees a slot, must wake its claimers; if nil, every queue.
	Capped func(queue string) bool
	// Webhooks gives the webhook rules in effect (the Service's
	// Config.WebhookRules), which Settle reads at the end of every write;
	// if nil, no subscription delivers (callbacks still do).
	Webhooks func() *WebhookRules
}

// FaultFunc lets tests break a transaction at a named point (see FaultPoint).
type FaultFunc func(ctx context.Context, point FaultPoint, jobID int64) error

// FaultPoint names a place inside a write transaction where tests inject faults.
type FaultPoint string

// The fault points: each sits inside a write that changes a job, after the
// change to the job's row and before the rest of the transaction (the other
// table of a move, events, counters), so a test that fails there proves the
// whole write is undone. The hook gets the job's id (0 for a bulk delete).
const (
	// FaultDeadLetterInsert is between the INSERT into dead_letter_jobs and
	// the DELETE from jobs of a dead-letter move.
	FaultDeadLetterInsert FaultPoint = "dead_letter.after_insert"
	// FaultJobInsert follows the INSERT of a job: a submission, a periodic
	// fire (before its fire is recorded) or a replay (before the dead-letter
	// row is deleted).
	FaultJobInsert FaultPoint = "job.after_insert"
	// FaultClaim follows the UPDATE that claims a job.
	FaultClaim FaultPoint = "claim.after_update"
	// FaultComplete follows the UPDATE that completes a job.
	FaultComplete FaultPoint = "complete.after_update"
	// FaultRequeue follows the UPDATE that puts a processing job back in
	// the queue: a failure to retry, an expired lease, a snooze.
	FaultRequeue FaultPoint = "requeue.after_update"
	// FaultCancel follows the UPDATE that cancels a job or asks it to stop:
	// a cancel, a drain, a TTL expiry.
	FaultCancel FaultPoint = "cancel.after_update"
	// FaultDelete follows the DELETE of jobs or dead-letter rows by purge
	// or retention, and of a finished job an operator deletes (LiveDelete).
	FaultDelete FaultPoint = "delete.after_delete"
	// FaultKeyRelease follows the UPDATE that releases the held jobs a
	// key has room for (see SettleKeys).
	FaultKeyRelease FaultPoint = "key.after_release"
)

// ClockOrSystem returns o.Clock, or the system clock.
func (o StoreOptions) ClockOrSystem() Clock {
	if o.Clock == nil {
		return SystemClock{}
	}
	return o.Clock
}

// SubmitRequest is a batch of new jobs with the admission limits of their queues.
type SubmitRequest struct {
	Jobs []NewJob
	// MaxQueued maps a queue to its max_queued limit (absent or 0: none).
	MaxQueued map[string]int
	// KeyLimits, if set, tells which queues limit their keys: a keyed job
	// of another queue is plain (its key a label). If nil, every keyed job
	// takes the rules' path.
	KeyLimits func(queue string) KeyLimits
}

// ClaimRequest asks for work from one queue.
type ClaimRequest struct {
	Queue    string
	WorkerID string
	// Limit is how many jobs to hand out at most (at least 1).
	Limit int
	// Kinds, if not empty, restricts the claim to these kinds.
	Kinds []string
	// Timeout, if positive, is the lease length instead of each job's timeout.
	Timeout time.Duration
	// Concurrency caps the queue's processing jobs across all workers (0: none).
	Concurrency int
	// Rate caps claims per second across all workers (0: none), with Burst
	// claims allowed at once (0: max(1, Rate)).
	Rate  float64
	Burst int
	// Ahead also hands out jobs due within it (set by Claim only: a
	// round-robin claim's later rounds take the turns it released, which
	// Release placed a millisecond ahead).
	Ahead time.Duration
}

// Completion acknowledges one job.
type Completion struct {
	ID     int64           `json:"id"`
	Lease  int64           `json:"lease"`
	Result json.RawMessage `json:"result"`
}

// FirstCompletions is items without repeats of the same id and lease,
// for a store that completes a batch in one statement. A batch may name a
// job twice; as if its items ran one by one, the first that holds the job's
// lease completes it and every other item of that job loses (see
// SettleCompletions).
func FirstCompletions(items []Completion) []Completion {
	type key struct{ id, lease int64 }
	seen := make(map[key]bool, len(items))
	out := make([]Completion, 0, len(items))
	for _, it := range items {
		if k := (key{it.ID, it.Lease}); !seen[k] {
			seen[k] = true
			out = append(out, it)
		}
	}
	return out
}

// SettleCompletions answers each item of a batch once the store completed
// the jobs in done (job id -> the lease it was completed under): nil for the
// first item of each such job with that lease, and for every other item the
// reason fence gives (ErrLeaseLost or ErrNotFound). Any other error from
// fence fails the whole batch.
func SettleCompletions(items []Completion, done map[int64]int64, fence func(id int64) error) ([]error, error) {
	errs := make([]error, len(items))
	answered := make(map[int64]bool, len(done))
	for i, it := range items {
		if lease, ok := done[it.ID]; ok && lease == it.Lease && !answered[it.ID] {
			answered[it.ID] = true
			continue
		}
		if errs[i] = fence(it.ID); !errors.Is(errs[i], ErrLeaseLost) && !errors.Is(errs[i], ErrNotFound) {
			return nil, errs[i]
		}
	}
	return errs, nil
}

// FailRequest reports a failed attempt.
type FailRequest struct {
	ID    int64
	Lease int64
	Error string
	// Retry false sends the job straight to the dead-letter queue.
	Retry bool
	// RetryIn, if positive, replaces the backoff delay.
	RetryIn time.Duration
	// Backoff gives the delay before the next attempt.
	Backoff BackoffFunc
}

// Outcomes of a failed attempt.
const (
	OutcomeRetryScheduled = "retry_scheduled"
	OutcomeDeadLettered   = "dead_lettered"
	OutcomeCancelled      = "cancelled"
)

// FailResult tells what became of a failed attempt: Job after a retry or a
// cancel, Dead after a dead-letter move.
type FailResult struct {
	Outcome string
	Job     *Job
	Dead    *DeadJob
}

// CancelRequest cancels a job. Without Lease an operator asks; with Lease
// the worker holding the job acknowledges a cancel.
type CancelRequest struct {
	ID     int64
	Lease  *int64
	Reason string // if empty, CancelRequested
	Audit  *AuditEntry
}

// ReplayRequest replays dead-letter rows.
type ReplayRequest struct {
	Filter DeadFilter
	// RunAt is when the first new job may run (zero: now); each following
	// one is Spacing later (for bulk replay at a rate).
	RunAt   time.Time
	Spacing time.Duration
	// Override, if set, changes what the new jobs get from their rows.
	Override *ReplayOverride
	// OnceKey, if set, names a once-record that makes a repeat of this
	// replay answer with the job the first one made, in the same
	// transaction as the replay (a retried request never makes two jobs).
	OnceKey string
	Audit   *AuditEntry
}

// JobFilter selects jobs. Zero fields match everything.
type JobFilter struct {
	IDs    []int64
	Queue  string
	Kind   string
	Tag    string
	Status string // one of the four, or "scheduled" (queued, run_at later than now), "queued" (claimable now) or "retrying" (queued after a failed attempt)
	// Retried, if set, matches only jobs with an attempt behind them
	// (attempts > 0): with status scheduled, the retrying jobs that wait
	// out their backoff.
	Retried bool
	// KindPrefix, if set, matches the kinds that start with it (byte for
	// byte: % and _ are plain characters).
	KindPrefix string
	// Order is "" (by id) or OrderRunAt (by run_at, then id).
	Order string
	// AfterRunAt is, with OrderRunAt and AfterID, the run_at of the job a
	// listing continues after.
	AfterRunAt time.Time
	// StatusIn, if set, matches jobs in any of these stored statuses.
	StatusIn []Status
	// AfterID continues a listing after this id (in the listing's order).
	AfterID int64
	// MaxID, if positive, matches only ids up to it (bulk actions fix it at start).
	MaxID int64
	// ReplayedFrom, if positive, matches the jobs replayed from that
	// dead-letter row.
	ReplayedFrom int64
	// StartedAfter, if not zero, matches jobs whose last attempt started
	// after it.
	StartedAfter time.Time
	// LeaseExpiredBefore, if not zero, matches jobs whose lease expired
	// before it.
	LeaseExpiredBefore time.Time
	// Workflow, if positive, matches the jobs of that workflow's steps.
	Workflow int64
	// Key, if set, matches the jobs of that flow-control key.
	Key string
	// JobMatch looks inside jobs: payload fields, error text, time ranges
	// (jobs_live.go).
	JobMatch
	Asc   bool
	Limit int
	// CountCap, if positive, lets CountJobs stop at CountCap+1 jobs (a
	// count past the cap answers CountCap+1, however many match): a page
	// that re-reads its total every second need not count a million jobs
	// each time. 0 counts them all.
	CountCap int
}

// Empty reports whether f selects by nothing but ids/paging.
func (f JobFilter) Empty() bool { return f.Queue == "" && f.Kind == "" && f.Tag == "" }

// DeadFilter selects dead-letter rows. Zero fields match everything.
type DeadFilter struct {
	IDs   []int64
	Queue string
	Kind  string
	// KindPrefix, if set, matches the kinds that start with it.
	KindPrefix string
	Tag        string
	Reason     string
	// OlderThan, if not zero, matches rows moved before it; MovedSince,
	// rows moved at it or later.
	OlderThan, MovedSince time.Time
	// Replayed, if set, matches rows replayed at least once (true) or never
	// (false).
	Replayed *bool
	// After continues a listing (ListDead, by the time of the move) after
	// this row, in the listing's order; Upto, if set, matches only rows
	// moved at or before it (a dry run's bound).
	After, Upto *DeadKey
	// AfterID and MaxID page and bound the bulk steps (Tx.Dead,
	// Tx.DeleteDead), which go in id order.
	AfterID int64
	MaxID   int64
	Asc     bool
	Limit   int
}

// DeadKey is where a dead-letter row stands in the listing, which is by the
// time of the move and then by id.
type DeadKey struct {
	MovedAt time.Time
	ID      int64
}

// Place is d's place in the listing.
func (d *DeadJob) Place() *DeadKey { return &DeadKey{d.MovedAt, d.ID} }

// Empty reports whether f selects by nothing but ids/paging.
func (f DeadFilter) Empty() bool { return f.Queue == "" && f.Kind == "" && f.Tag == "" }

// QueueState is a queue as the store knows it.
type QueueState struct {
	Name     string     `json:"name"`
	Paused   bool       `json:"paused"`
	PausedAt *time.Time `json:"paused_at,omitempty"`
}

// QueueStats are the counts of GET /api/stats for one queue (or the total,
// with Queue empty). Total is the sum of the six counts before it.
type QueueStats struct {
	Queue               string  `json:"queue,omitempty"`
	Total               int64   `json:"total"`
	Queued              int64   `json:"queued"`
	Scheduled           int64   `json:"scheduled"`
	Processing          int64   `json:"processing"`
	Done                int64   `json:"done"`
	Cancelled           int64   `json:"cancelled"`
	DeadLetter          int64   `json:"dead_letter"`
	OldestQueuedAge     float64 `json:"oldest_queued_age_seconds"`
	CompletedLastMinute int64   `json:"completed_last_minute"`
	FailedLastMinute    int64   `json:"failed_last_minute"`
}

// MinuteCount is how many attempts of a queue completed and failed in one minute.
type MinuteCount struct {
	Queue     string    `json:"queue"`
	Minute    time.Time `json:"minute"`
	Completed int64     `json:"completed"`
	Failed    int64     `json:"failed"`
}

// What DeleteOld deletes.
const (
	OldFinished   = "finished"   // done and cancelled jobs, by finished_at (not of a workflow)
	OldWorkflows  = "workflows"  // finished workflows with their steps and jobs, by finished_at
	OldDead       = "dead"       // dead-letter rows, by moved_to_dead_letter_at
	OldEvents     = "events"     // lifecycle events
	OldAudit      = "audit"      // admin actions
	OldOnce       = "once"       // finished once-records
	OldPeriodic   = "periodic"   // periodic fire records
	OldThroughput = "throughput" // per-second throughput counters
)

// DeleteOldRequest is one bounded retention pass.
type DeleteOldRequest struct {
	What   string
	Before time.Time
	// Queue, if set, limits the pass to one queue; Except skips queues that
	// have their own retention (for the default pass).
	Queue  string
	Except []string
	Limit  int
}

// PeriodicFire is one tick of a periodic entry.
type PeriodicFire struct {
	Entry         string
	FireAt        time.Time
	Job           NewJob
	SkipIfPending bool
	// API is set for an entry made through the API: a fire of one deleted
	// meanwhile (on any node) enqueues nothing.
	API bool
}

// AuditEntry is one admin action.
type AuditEntry struct {
	ID     int64           `json:"id"`
	At     time.Time       `json:"at"`
	Actor  string          `json:"actor"`
	Action string          `json:"action"`
	Target string          `json:"target,omitempty"`
	Filter json.RawMessage `json:"filter,omitempty"`
	Count  int             `json:"count"`
}

// AuditFilter selects audit entries.
type AuditFilter struct {
	Action   string
	BeforeID int64
	Limit    int
}

// OnceRecord is a side effect that must run once (SPEC section 5).
type OnceRecord struct {
	Key       string          `json:"key"`
	Token     string          `json:"token,omitempty"`
	Done      bool            `json:"done"`
	Result    json.RawMessage `json:"result,omitempty"`
	HeldUntil *time.Time      `json:"held_until,omitempty"`
	CreatedAt time.Time       `json:"created_at"`
	DoneAt    *time.Time      `json:"done_at,omitempty"`
	// Acquired is true when this call took the record.
	Acquired bool `json:"-"`
}

// BackoffFunc is the delay before attempt+1 of a job in queue after attempt failed.
type BackoffFunc func(queue string, attempt int) time.Duration
