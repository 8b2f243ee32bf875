package app

import (
	"context"
	"encoding/json"
	"time"
)

// Tx is one write transaction of a store as the lifecycle sees it: small
// steps, each one row or one record, that the rules below put in order.
// Everything done through a Tx commits together or not at all; its events
// are published and its queues woken after the commit. A store implements
// it over its own transaction (the SQLite writer's, a PostgreSQL
// transaction, the memory store's undo log).
type Tx interface {
	// Now is the transaction's clock reading; every time it writes is this one.
	Now() time.Time

	// Job reads job id to change it (PostgreSQL locks the row). A job that
	// moved to the dead-letter queue is ErrIllegalTransition; none at all,
	// ErrNotFound.
	Job(id int64) (*Job, error)
	// Processing reads job id if it is processing under lease, else
	// ErrLeaseLost (another lease, or no longer processing) or ErrNotFound.
	Processing(id, lease int64) (*Job, error)
	// Stale reads up to limit processing jobs whose lease expired, oldest
	// expiry first (PostgreSQL skips rows another transaction holds).
	Stale(limit int) ([]*Job, error)
	// Jobs reads the jobs of f (at most f.Limit, default BulkBatch) in id order.
	Jobs(f JobFilter) ([]*Job, error)

	// Dead reads the dead-letter rows of f (at most f.Limit, default
	// BulkBatch) in id order, to change them (PostgreSQL locks them).
	Dead(f DeadFilter) ([]*DeadJob, error)

	// Extend sets the lease of processing job j to expire at until. It
	// returns the row as stored.
	Extend(j *Job, until time.Time) (*Job, error)
	// ClaimQueue reads what limits a claim from queue (Busy only if busy is
	// set). PostgreSQL takes the queue's claim lock first, so the limits
	// hold across nodes until the commit.
	ClaimQueue(queue string, busy bool) (QueueLimits, error)
	// Take moves up to n claimable jobs of req.Queue (of req.Kinds, if any:
	// due by now plus req.Ahead, not expired, not held) to processing, first in claim order, each with a
	// new lease of req.Timeout (if zero, the job's timeout) for
	// req.WorkerID. It returns them as stored, in any order.
	Take(req ClaimRequest, n int) ([]*Job, error)
	// SetRate stores queue's rate bucket: tokens, as of now.
	SetRate(queue string, tokens float64) error
	// Finish makes processing job j done with result (JSON null if empty),
	// finished now, without a lease. It returns the row as stored.
	Finish(j *Job, result json.RawMessage) (*Job, error)
	// Requeue makes job j queued again at runAt with j.Errors, without a
	// lease or worker; giveBack returns the attempt it used (a snooze). It
	// returns the row as stored.
	Requeue(j *Job, runAt time.Time, giveBack bool) (*Job, error)
	// Cancel makes job j cancelled with reason and j.Errors, finished now,
	// without a lease. It returns the row as stored.
	Cancel(j *Job, reason string) (*Job, error)
	// RequestCancel marks processing job j for cancelling, keeping a
	// reason it already has, else reason. It returns the row as stored.
	RequestCancel(j *Job, reason string) (*Job, error)
	// ExpireDue cancels up to limit queued jobs whose expires_at passed,
	// with reason expired, finished now; it names the jobs it cancelled.
	ExpireDue(limit int) ([]Ref, error)
	// DeleteDead deletes the dead-letter rows of f (at most f.Limit,
	// default BulkBatch, lowest id first) and names them in id order.
	DeleteDead(f DeadFilter) ([]Ref, error)
	// SetQueuePaused stores whether queue is paused (since now, if so).
	SetQueuePaused(queue string, paused bool) error
	// Resurrected counts a replay (now) of each dead-letter row dead[i]
	// into jobs[i]: the row points to the job, and gives up its
	// idempotency key (the job has it now).
	Resurrected(dead []*DeadJob, jobs []*Job) error
	// Insert inserts new queued jobs (no key lookup or limit: the caller's
	// rules decide), in one statement where the store can, and returns them
	// as stored, in order.
	Insert(njs ...*NewJob) ([]*Job, error)
	// ByKey reads the job (or dead-letter row, shown as a job) holding an
	// idempotency key in queue; nil if none does.
	ByKey(queue, key string) (*Job, error)
	// Queued counts queue's queued jobs, up to limit. PostgreSQL takes the
	// queue's admission lock first, so the count holds until the commit.
	Queued(queue string, limit int) (int, error)
	// RecordFire records the periodic fire (entry, at) and reports whether
	// it is new: false when it was recorded before, here or on another node.
	RecordFire(entry string, at time.Time) (bool, error)
	// FirePending reports whether an earlier fire of entry still has its
	// job queued or processing.
	FirePending(entry string) (bool, error)
	// SetFireJob notes the job the fire (entry, at) enqueued.
	SetFireJob(entry string, at time.Time, id int64) error
	// Once reads the once-record key to change it (PostgreSQL locks it),
	// first making an empty one (created now) if there is none: so two
	// runs racing for a new key on two nodes meet at one row.
	Once(key string) (*OnceRecord, error)
	// SaveOnce stores r's token, hold, done flag, result and done time.
	SaveOnce(r *OnceRecord) error
	// InsertDead stores d in the dead-letter table (d.MovedAt as stored is
	// written back into d); DeleteJob deletes job id, which must exist.
	InsertDead(d *DeadJob) error
	DeleteJob(id int64) error

	// InsertWorkflow stores wf's row (its id, as stored, written back).
	InsertWorkflow(wf *Workflow) error
	// InsertSteps stores the steps of workflow wf as they are (each
	// WorkflowID set to wf) and the edges between them, in few statements
	// however many.
	InsertSteps(wf int64, steps []*WorkflowStep, edges []WorkflowEdge) error
	// Workflow reads workflow id to change it (PostgreSQL locks the row);
	// none is ErrNotFound.
	Workflow(id int64) (*Workflow, error)
	// SaveWorkflow stores wf's status, counts and times.
	SaveWorkflow(wf *Workflow) error
	// Steps reads the steps names of workflow wf to change them (locked),
	// in any order, without their DependsOn and maybe without their Job
	// (the rules deciding a step's end need neither); a name without a
	// step is left out.
	Steps(wf int64, names []string) ([]*WorkflowStep, error)
	// SaveSteps stores each step's status, job id, waiting count, failed
	// flag, result, error and times.
	SaveSteps(steps []*WorkflowStep) error
	// Resolve counts, for each waiting step of workflow wf, one dependency
	// as met per edge from one of parents that kinds resolves, and returns
	// the steps it leaves waiting on nothing (without their DependsOn).
	Resolve(wf int64, parents []string, kinds EdgeKinds) ([]*WorkflowStep, error)
	// OldWorkflows reads up to limit workflows that finished (done or
	// cancelled) before before and have no job queued or processing, the
	// earliest finished first (PostgreSQL locks them).
	OldWorkflows(before time.Time, limit int) ([]OldWorkflow, error)
	// DeleteWorkflows deletes workflows ids with their steps, edges and
	// jobs (which leave the counts); their dead-letter rows stay.
	DeleteWorkflows(ids []int64) error
	// CancelWaiting cancels (finished now) every waiting step of workflow
	// wf and says how many.
	CancelWaiting(wf int64) (int, error)

	// KeyLimits is how queue limits the jobs of one key (the config the
	// store was opened with: StoreOptions.KeyLimits).
	KeyLimits(queue string) KeyLimits
	// Capped is whether queue has a concurrency limit, which a finished
	// job's slot may let a waiting claimer past (StoreOptions.Capped).
	Capped(queue string) bool
	// KeyChanged notes that key of queue may have room for a held job;
	// ChangedKeys names the keys noted in this write (see SettleKeys).
	KeyChanged(queue, key string)
	ChangedKeys() []QueueKey
	// KeyLoads counts, for each of keys of queue, its jobs that hold a
	// place (KeyLoad); a key without any is left out.
	KeyLoads(queue string, keys []string) (map[string]KeyLoad, error)
	// Release releases the first n held jobs (in claim order) of each of
	// keys of queue and says how many per key (keys with none left out). With turn (round robin), a
	// released job whose run_at is before now takes now plus one
	// millisecond: it goes behind every job claimable now, also those
	// submitted in the same millisecond (a claim's later rounds take it,
	// see ClaimRequest.Ahead).
	Release(queue string, keys []string, n int, turn bool) (map[string]int, error)
	// HasHeld reports, for each of keys of queue, whether it holds a job back.
	HasHeld(queue string, keys []string) (map[string]bool, error)
	// KeyBuckets reads the rate buckets of keys of queue (a key without
	// one is left out); SetKeyBuckets stores them.
	KeyBuckets(queue string, keys []string) (map[string]KeyBucket, error)
	SetKeyBuckets(queue string, buckets map[string]KeyBucket) error
	// WaitingKeys names up to limit keys of queue whose bucket's Wake is
	// due (not zero, not after now), earliest first.
	WaitingKeys(queue string, limit int) ([]string, error)
	// BucketQueues names the queues with key rate buckets, in name order;
	// DeleteBuckets deletes up to limit buckets of queue not used since
	// before and with no wake, and says how many.
	BucketQueues() ([]string, error)
	DeleteBuckets(queue string, before time.Time, limit int) (int, error)
	// HeldQueues names the queues that hold jobs back, in name order;
	// HeldKeys names up to limit keys of queue that do, after after in
	// key order.
	HeldQueues() ([]string, error)
	HeldKeys(queue, after string, limit int) ([]string, error)
	// Dedupe reads, of the newest limit jobs of queue whose dedupe
	// signature is sig, those created at or after since, newest first (ids
	// grow with time: older ones are not looked at). PostgreSQL
	// first takes a lock on (queue, sig) until the commit, so concurrent
	// submissions of one signature meet one after another.
	Dedupe(queue, sig string, since time.Time, limit int) ([]*Job, error)
	// Debounce stores queued job j's new payload and run_at (updated now)
	// and returns the row as stored.
	Debounce(j *Job, payload json.RawMessage, runAt time.Time) (*Job, error)
	// Reschedule stores queued job j's new run_at (updated now);
	// Reprioritize its new priority. Each returns the row as stored.
	Reschedule(j *Job, runAt time.Time) (*Job, error)
	Reprioritize(j *Job, priority int) (*Job, error)

	// PutWorker stores w as registered (replacing a row of its id), with
	// zero counts; see workers.go.
	PutWorker(w *Worker) error
	// BeatWorker stores a heartbeat of worker id (its counts, seen now)
	// and returns the row as stored; none is ErrNotFound.
	BeatWorker(id string, b WorkerBeat) (*Worker, error)
	// Worker reads worker id to change it (PostgreSQL locks the row);
	// none is ErrNotFound.
	Worker(id string) (*Worker, error)
	// SetWorkerCommand stores the operator's command for worker id; none
	// is ErrNotFound.
	SetWorkerCommand(id, command string) error
	// DeleteWorkers deletes up to limit workers last seen before before
	// and says how many.
	DeleteWorkers(before time.Time, limit int) (int, error)

	// Event records a lifecycle event (data is its JSON, or nil).
	Event(typ string, id int64, queue, kind string, data []byte)
	// Publish publishes an event after the commit without recording it
	// (one the job row tells: Timeline derives it).
	Publish(typ string, id int64, queue, kind string, data []byte)
	// Moved tells a store that counts jobs per status (SQLite) that n jobs
	// of queue went from one status to another; others ignore it.
	Moved(queue string, from, to Status, n int)
	// Count adds completed and failed attempts to queue's throughput.
	Count(queue string, completed, failed int64)
	// Picked counts a job of queue claimed after waiting wait since it
	// was due, beside the throughput (the charts' pickup latency).
	Picked(queue string, wait time.Duration)
	// AttemptEnded tells the store that j's current attempt is over (the
	// SQLite store forgets when it started).
	AttemptEnded(j *Job)
	// Wake wakes the claimers of queue after the commit.
	Wake(queue string)
	// Audit records e as it is (its At and Count set).
	Audit(e AuditEntry) error
	// Setting reads the runtime setting (kind, name) to change it (nil if
	// there is none); PostgreSQL first takes a lock on (kind, name) until
	// the commit, so two changes of one setting on two nodes meet one
	// after another, also of one not stored yet.
	Setting(kind, name string) (*SettingsRecord, error)
	// PutSetting stores r (a new one, or over the one of its kind and name).
	PutSetting(r SettingsRecord) error
	// DeleteSetting deletes the runtime setting (kind, name), if there is one.
	DeleteSetting(kind, name string) error
	// SetProgress stores pct and msg, reported now, as the progress of
	// attempt of job j (see progress.go).
	SetProgress(j *Job, attempt, pct int, msg string) error
	// LogState reads the state of the log of attempt of job jobID to
	// change it (PostgreSQL locks its row); an attempt without a log is
	// LogState{NextSeq: 1}. SaveLogState stores st, its last line now.
	LogState(jobID int64, attempt int) (LogState, error)
	SaveLogState(jobID int64, attempt int, st LogState) error
	// InsertLog inserts lines into the log of attempt of job jobID,
	// numbered from first, in one statement.
	InsertLog(jobID int64, attempt int, first int64, lines []LogLine) error
	// OldestLog calls each with the seq and LogSize of the attempt's
	// lines, oldest first, until it returns false; DropLog deletes the
	// attempt's lines up to seq upto. (AppendLog decides the cut.)
	OldestLog(jobID int64, attempt int, each func(seq, size int64) bool) error
	DropLog(jobID int64, attempt int, upto int64) error

	// WebhookRules is the webhook rules in effect (StoreOptions.Webhooks;
	// nil: none). Unsettled returns the events published since its last
	// call, once each (see Settle).
	WebhookRules() *WebhookRules
	Unsettled() []Event
	// Callbacks reads the callback_urls of jobs ids, of those that have
	// one, in jobs or in the dead-letter table (a job that just moved
	// there); a store may answer none at once when it knows no job has one.
	Callbacks(ids []int64) (map[int64]string, error)

	// Fault calls the store's fault hook at p, for the tests that prove a
	// write is all or nothing; nil without a hook.
	Fault(p FaultPoint, id int64) error
}

// Ref names a row that a set-based step of a Tx changed.
type Ref struct {
	ID          int64
	Queue, Kind string
	// WorkflowID and Step name the workflow step of the job, if any.
	WorkflowID int64
	Step       string
	// Key is the job's flow-control key, if any.
	Key string
}

// Writer runs fn in one write transaction of the store: all of it or none.
// It maps driver errors to the errors of this package.
type Writer interface {
	Write(ctx context.Context, fn func(Tx) error) error
}

func eventData(m map[string]any) []byte {
	b, _ := json.Marshal(m)
	return b
}
