package app

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"
)

// The worker registry (issue 26): every worker process (`queue work`, a Go
// program's client.Worker, the built-in workers of `queue serve`, a worker
// in another language) registers with POST /api/workers and heartbeats
// every WorkerHeartbeatInterval with its counts; the answer carries the
// operator's command. The rows live in the database, so every node of a
// PostgreSQL cluster lists every worker. The rules are here; the stores
// add SQL (Tx.PutWorker, BeatWorker, Worker, SetWorkerCommand,
// DeleteWorkers; WorkerStore for reads).

// Commands an operator gives a registered worker.
const (
	// WorkerRun is the default: claim and run jobs.
	WorkerRun = "run"
	// WorkerQuiet: claim nothing more, finish the running jobs, then stay
	// up idle (Sidekiq's quiet).
	WorkerQuiet = "quiet"
	// WorkerStop: claim nothing more, stop the running jobs and give them
	// back to the queue without using up their attempt, then exit.
	WorkerStop = "stop"
)

// Types of worker, as they register.
const (
	WorkerHTTP    = "http"    // `queue work`, or any worker over the HTTP API
	WorkerGo      = "go"      // the Go package's client.Worker
	WorkerBuiltin = "builtin" // a [[workers]] entry of `queue serve`
)

// States of a worker in GET /api/workers, derived from its command and
// when it was last seen.
const (
	WorkerRunning  = "running"
	WorkerQuieted  = "quiet"
	WorkerStopping = "stopping"
	WorkerGone     = "gone"
)

// Timing of the registry.
const (
	// WorkerHeartbeatInterval is how often a worker heartbeats (the
	// registration's answer tells it).
	WorkerHeartbeatInterval = 5 * time.Second
	// WorkerGoneAfter is how long after its last heartbeat a worker shows
	// as gone: three missed heartbeats.
	WorkerGoneAfter = 3 * WorkerHeartbeatInterval
	// WorkerRetention is how long after its last heartbeat a worker's row
	// stays; the retention sweep deletes older ones.
	WorkerRetention = time.Hour
	// MaxWorkersListed bounds GET /api/workers; a longer list is cut and
	// says so (truncated).
	MaxWorkersListed = 1000
	// MaxWorkerPID is the largest pid a worker registers with: 2^31-1, a
	// 32-bit signed pid (Linux pids are at most 2^22). PostgreSQL keeps it
	// in an integer column.
	MaxWorkerPID = math.MaxInt32
	// MaxWorkerCount bounds the counts of a heartbeat (in_flight, done,
	// failed): 2^53, the largest integer every JSON reader (JavaScript's
	// numbers) keeps exactly; every store keeps it in 64 bits.
	MaxWorkerCount = 1 << 53
	// workerCacheTTL is how long a claim trusts what it read of its
	// worker's command (see Service.WorkerCommand): a quiet or stop given
	// on another node reaches claims here within it.
	workerCacheTTL = time.Second
	// workerCacheMax bounds the cache; when full it starts over.
	workerCacheMax = 10000
)

// ErrWorkerNotFound: no worker is registered under that id (never was, or
// aged out): the worker registers again. It matches ErrNotFound too; the
// API answers 404 with code worker_not_found.
var ErrWorkerNotFound = fmt.Errorf("worker not registered: %w", ErrNotFound)

// WorkerStore reads the worker registry (its changes go through the
// Writer: RegisterWorker, BeatWorker, SetWorkerCommand, PruneWorkers).
type WorkerStore interface {
	// Workers returns up to limit registered workers in id order, the
	// bytes of the ids compared (COLLATE "C" on PostgreSQL).
	Workers(ctx context.Context, limit int) ([]*Worker, error)
	// Worker reads worker id, one read by primary key; none registered is
	// ErrNotFound.
	Worker(ctx context.Context, id string) (*Worker, error)
	// WorkerCommand reads the command of worker id, one read by primary
	// key (a claim's check); none registered is ErrNotFound.
	WorkerCommand(ctx context.Context, id string) (string, error)
}

// Worker is one registered worker process as the registry keeps it.
type Worker struct {
	// ID names the worker; its claims carry it as worker_id.
	ID      string `json:"id"`
	Host    string `json:"host"`
	PID     int    `json:"pid"`
	Version string `json:"version"`
	// Queues are the queues it claims from, with weights if it has any.
	Queues QueueChoice `json:"queues"`
	// Kinds, if any, are the only kinds it claims.
	Kinds       []string `json:"kinds"`
	Concurrency int      `json:"concurrency"`
	// Type is how it runs: WorkerHTTP, WorkerGo or WorkerBuiltin.
	Type string `json:"type"`
	// Command is what the operator asked of it: WorkerRun, WorkerQuiet or WorkerStop.
	Command    string    `json:"command"`
	StartedAt  time.Time `json:"started_at"`
	LastSeenAt time.Time `json:"last_seen_at"`
	// InFlight, Done and Failed are the counts it reported last: jobs
	// running now, and runs that succeeded or failed since it started.
	InFlight int   `json:"in_flight"`
	Done     int64 `json:"done"`
	Failed   int64 `json:"failed"`
	// State is derived when listed (see WorkerState); stores leave it empty.
	State string `json:"state,omitempty"`
}

// MarshalJSON writes times as every answer of the API does, and never a
// null list.
func (w Worker) MarshalJSON() ([]byte, error) {
	type plain Worker
	p := plain(w)
	if p.Kinds == nil {
		p.Kinds = []string{}
	}
	return json.Marshal(struct {
		plain
		StartedAt  string `json:"started_at"`
		LastSeenAt string `json:"last_seen_at"`
	}{p, FormatTime(w.StartedAt), FormatTime(w.LastSeenAt)})
}

// QueueNames are the names of the queues w claims from.
func (w *Worker) QueueNames() []string { return w.Queues.Names }

// WorkerState is what a worker is doing as of now: gone when it missed
// three heartbeats, else what its command makes it.
func WorkerState(w *Worker, now time.Time) string {
	switch {
	case now.Sub(w.LastSeenAt) > WorkerGoneAfter:
		return WorkerGone
	case w.Command == WorkerQuiet:
		return WorkerQuieted
	case w.Command == WorkerStop:
		return WorkerStopping
	}
	return WorkerRunning
}

// WorkerBeat is the body of POST /api/workers/{id}/heartbeat: the counts
// the worker keeps.
type WorkerBeat struct {
	InFlight int   `json:"in_flight"`
	Done     int64 `json:"done"`
	Failed   int64 `json:"failed"`
}

// WorkerInput is the body of POST /api/workers.
type WorkerInput struct {
	// ID, if empty, is made by the server (host:pid-random).
	ID          string       `json:"id"`
	Host        string       `json:"host"`
	PID         int          `json:"pid"`
	Version     string       `json:"version"`
	Queues      *QueueChoice `json:"queues"`
	Kinds       []string     `json:"kinds"`
	Concurrency int          `json:"concurrency"`
	// Type is WorkerHTTP (if empty), WorkerGo or WorkerBuiltin.
	Type string `json:"type"`
}

// WorkerRegistered is the answer to a registration.
type WorkerRegistered struct {
	ID                string   `json:"id"`
	Command           string   `json:"command"`
	HeartbeatInterval Duration `json:"heartbeat_interval"`
}

// Limits of a registration's fields.
const (
	MaxWorkerIDBytes      = 200
	maxWorkerHostBytes    = 255
	maxWorkerVersionBytes = 100
	maxWorkerKinds        = 100
)

// ValidateWorkerID checks a worker id: 1-200 bytes of printable
// characters, no spaces.
func ValidateWorkerID(id string) error {
	if id == "" || len(id) > MaxWorkerIDBytes {
		return Invalid("id", "a worker id is 1-%d bytes; this one is %d", MaxWorkerIDBytes, len(id))
	}
	if !printable(id, false) {
		return Invalid("id", "a worker id is printable characters without spaces")
	}
	return nil
}

// printable reports whether s is valid UTF-8 of printable characters
// (spaces only if spaces).
func printable(s string, spaces bool) bool {
	if !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if !unicode.IsPrint(r) || (!spaces && unicode.IsSpace(r)) {
			return false
		}
	}
	return true
}

// check validates in and makes the Worker it registers, seen at now.
func (in WorkerInput) check(now time.Time) (*Worker, error) {
	if in.ID == "" {
		in.ID = NewWorkerID(in.Host, in.PID)
	}
	if err := ValidateWorkerID(in.ID); err != nil {
		return nil, err
	}
	switch {
	case in.Host == "" || len(in.Host) > maxWorkerHostBytes || !printable(in.Host, false):
		return nil, Invalid("host", "host is 1-%d bytes of printable characters without spaces", maxWorkerHostBytes)
	case in.PID <= 0 || in.PID > MaxWorkerPID:
		return nil, Invalid("pid", "pid is the worker's process id: 1 to %d", MaxWorkerPID)
	case len(in.Version) > maxWorkerVersionBytes || !printable(in.Version, true):
		return nil, Invalid("version", "version is at most %d bytes of printable characters", maxWorkerVersionBytes)
	case in.Concurrency < 1 || in.Concurrency > MaxClaim*MaxClaimQueues:
		return nil, Invalid("concurrency", "concurrency is how many jobs the worker runs at once: 1 to %d", MaxClaim*MaxClaimQueues)
	case in.Queues == nil || len(in.Queues.Names) == 0:
		return nil, Invalid("queues", "name the queues the worker claims from: [\"default\"], or {\"critical\": 6, \"default\": 3}")
	case len(in.Kinds) > maxWorkerKinds:
		return nil, Invalid("kinds", "at most %d kinds", maxWorkerKinds)
	}
	if err := in.Queues.check(); err != nil {
		return nil, err
	}
	for _, k := range in.Kinds {
		if err := ValidateKind(k); err != nil {
			return nil, Invalid("kinds", "kind %v", err)
		}
	}
	switch in.Type {
	case "":
		in.Type = WorkerHTTP
	case WorkerHTTP, WorkerGo, WorkerBuiltin:
	default:
		return nil, Invalid("type", "type %q is not one of http, go, builtin", clip(in.Type))
	}
	return &Worker{ID: in.ID, Host: in.Host, PID: in.PID, Version: in.Version, Queues: *in.Queues,
		Kinds: slices.Clone(in.Kinds), Concurrency: in.Concurrency, Type: in.Type, Command: WorkerRun,
		StartedAt: now, LastSeenAt: now}, nil
}

// NewWorkerID makes a worker id: host:pid and a short random suffix, so a
// process that registers twice (or a pid reused by a container) gets a new
// row rather than another's.
func NewWorkerID(host string, pid int) string {
	var b [3]byte
	_, _ = rand.Read(b[:])
	if host == "" {
		host = "worker"
	}
	return fmt.Sprintf("%s:%d-%s", host, pid, hex.EncodeToString(b[:]))
}

// RegisterWorker stores a registration (a new worker, or a restart of one
// under the same id, which starts over with command run) and publishes
// worker.changed.
func RegisterWorker(ctx context.Context, w Writer, wk *Worker) error {
	err := w.Write(ctx, func(tx Tx) error {
		wk.StartedAt, wk.LastSeenAt, wk.Command = tx.Now(), tx.Now(), WorkerRun
		if err := tx.PutWorker(wk); err != nil {
			return err
		}
		tx.Publish(EventWorkerChanged, 0, "", "", workerData(wk.ID, WorkerRun))
		return nil
	})
	if err != nil {
		return fmt.Errorf("register worker %s: %w", wk.ID, err)
	}
	return nil
}

// BeatWorker notes a heartbeat of worker id and returns its row, whose
// Command the worker obeys; an unknown id is ErrWorkerNotFound.
func BeatWorker(ctx context.Context, w Writer, id string, b WorkerBeat) (*Worker, error) {
	var out *Worker
	err := w.Write(ctx, func(tx Tx) error {
		var err error
		out, err = tx.BeatWorker(id, b)
		return err
	})
	if errors.Is(err, ErrNotFound) {
		return nil, ErrWorkerNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("heartbeat of worker %s: %w", id, err)
	}
	return out, nil
}

// SetWorkerCommand stores the operator's command for worker id, audited in
// the same transaction, and publishes worker.changed. A worker told to
// stop cannot be told to quiet (it is on its way out); an unknown id is
// ErrWorkerNotFound.
func SetWorkerCommand(ctx context.Context, w Writer, id, command string, audit *AuditEntry) (*Worker, error) {
	var out *Worker
	err := w.Write(ctx, func(tx Tx) error {
		wk, err := tx.Worker(id)
		if err != nil {
			return err
		}
		if wk.Command == WorkerStop && command != WorkerStop {
			return fmt.Errorf("worker %s is told to stop already: %w", id, ErrIllegalTransition)
		}
		if err := tx.SetWorkerCommand(id, command); err != nil {
			return err
		}
		wk.Command = command
		out = wk
		tx.Publish(EventWorkerChanged, 0, "", "", workerData(id, command))
		return recordAudit(tx, audit, 1)
	})
	if errors.Is(err, ErrNotFound) {
		return nil, ErrWorkerNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("%s worker %s: %w", command, id, err)
	}
	return out, nil
}

// PruneWorkers deletes the workers last seen before before, at most limit
// a statement and 100 statements a call, and says how many went.
func PruneWorkers(ctx context.Context, w Writer, before time.Time, limit int) (int, error) {
	total := 0
	for range 100 {
		n := 0
		err := w.Write(ctx, func(tx Tx) error {
			var err error
			n, err = tx.DeleteWorkers(before, limit)
			return err
		})
		total += n
		if err != nil {
			return total, fmt.Errorf("delete old workers: %w", err)
		}
		if n < limit {
			break
		}
	}
	return total, nil
}

// EventWorkerChanged is published (not recorded) when a worker registers
// or an operator gives it a command; its data is {"id", "command"}.
const EventWorkerChanged = "worker.changed"

func workerData(id, command string) []byte {
	return eventData(map[string]any{"id": id, "command": command})
}

// RegisterWorker validates a registration and stores it: a new worker, or
// a restart of one under the same id, which starts over with command run.
func (s *Service) RegisterWorker(ctx context.Context, in WorkerInput) (*WorkerRegistered, error) {
	wk, err := in.check(s.Clock.Now())
	if err != nil {
		return nil, err
	}
	if err := RegisterWorker(ctx, s.Store, wk); err != nil {
		return nil, err
	}
	s.workerCmds.put(wk.ID, WorkerRun)
	return &WorkerRegistered{ID: wk.ID, Command: WorkerRun, HeartbeatInterval: Duration(WorkerHeartbeatInterval)}, nil
}

// WorkerHeartbeat notes that worker id is alive with counts b and returns
// the command it is to obey; an unknown (or aged-out) id is
// ErrWorkerNotFound, and the worker registers again.
func (s *Service) WorkerHeartbeat(ctx context.Context, id string, b WorkerBeat) (string, error) {
	if err := ValidateWorkerID(id); err != nil {
		return "", err
	}
	for _, c := range []struct {
		field string
		n     int64
	}{{"in_flight", int64(b.InFlight)}, {"done", b.Done}, {"failed", b.Failed}} {
		if c.n < 0 || c.n > MaxWorkerCount {
			return "", Invalid(c.field, "a count of the worker's jobs: 0 to %d", int64(MaxWorkerCount))
		}
	}
	wk, err := BeatWorker(ctx, s.Store, id, b)
	if err != nil {
		return "", err
	}
	s.workerCmds.put(id, wk.Command)
	return wk.Command, nil
}

// Worker returns worker id with its state, one read by primary key
// (whether or not the list shows it); an unknown id is ErrWorkerNotFound.
func (s *Service) Worker(ctx context.Context, id string) (*Worker, error) {
	if err := ValidateWorkerID(id); err != nil {
		return nil, err
	}
	w, err := s.Store.Worker(ctx, id)
	if errors.Is(err, ErrNotFound) {
		return nil, ErrWorkerNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("read worker %s: %w", id, err)
	}
	w.State = WorkerState(w, s.Clock.Now())
	return w, nil
}

// Workers lists the registered workers in id order (the bytes of the ids
// compared), each with its state as of now: at most MaxWorkersListed, and
// truncated says more are registered.
func (s *Service) Workers(ctx context.Context) (ws []*Worker, truncated bool, err error) {
	ws, err = s.Store.Workers(ctx, MaxWorkersListed+1)
	if err != nil {
		return nil, false, fmt.Errorf("list workers: %w", err)
	}
	if len(ws) > MaxWorkersListed {
		ws, truncated = ws[:MaxWorkersListed], true
	}
	now := s.Clock.Now()
	for _, w := range ws {
		w.State = WorkerState(w, now)
	}
	if ws == nil {
		ws = []*Worker{}
	}
	return ws, truncated, nil
}

// SetWorkerCommand tells worker id to quiet or stop, as actor (audited as
// worker.quiet or worker.stop). The worker obeys at its next heartbeat or
// claim; until then claims under its id hand out nothing.
func (s *Service) SetWorkerCommand(ctx context.Context, id, command, actor string) (*Worker, error) {
	if err := ValidateWorkerID(id); err != nil {
		return nil, err
	}
	if command != WorkerQuiet && command != WorkerStop {
		return nil, Invalid("command", "command %q is not one of quiet, stop", clip(command))
	}
	wk, err := SetWorkerCommand(ctx, s.Store, id, command, &AuditEntry{Actor: actor, Action: "worker." + command, Target: "worker " + id})
	if err != nil {
		return nil, err
	}
	s.workerCmds.put(id, command)
	wk.State = WorkerState(wk, s.Clock.Now())
	return wk, nil
}

// WorkerCommand is the command of registered worker id for a claim under
// it: "" when no worker is registered under id. It reads the store at
// most once a second per id (a short cache), so a claim of a registered
// worker costs at most one read by primary key and never a write.
func (s *Service) WorkerCommand(ctx context.Context, id string) (string, error) {
	if id == "" || len(id) > MaxWorkerIDBytes {
		return "", nil // no registered worker has such an id
	}
	if cmd, ok := s.workerCmds.get(id); ok {
		return cmd, nil
	}
	cmd, err := s.Store.WorkerCommand(ctx, id)
	switch {
	case errors.Is(err, ErrNotFound):
		cmd = ""
	case err != nil:
		return "", fmt.Errorf("read the command of worker %s: %w", id, err)
	}
	s.workerCmds.put(id, cmd)
	return cmd, nil
}

// workerHeld reports whether a claim under worker id must hand out
// nothing: its worker is registered and told to quiet or stop.
func (s *Service) workerHeld(ctx context.Context, id string) (bool, error) {
	cmd, err := s.WorkerCommand(ctx, id)
	return cmd == WorkerQuiet || cmd == WorkerStop, err
}

// sweepWorkers deletes the workers not seen for WorkerRetention (part of
// the retention sweep).
func (m *Maintainer) sweepWorkers(ctx context.Context, now time.Time) (int, error) {
	return PruneWorkers(ctx, m.Service.Store, now.Add(-WorkerRetention), BulkBatch)
}

// workerCache remembers the commands of the worker ids claims came with,
// each for workerCacheTTL ("" for an id no worker registered).
type workerCache struct {
	mu sync.Mutex
	m  map[string]cachedCommand
}

type cachedCommand struct {
	command string
	at      time.Time
}

func (c *workerCache) get(id string) (string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[id]
	if !ok || time.Since(e.at) > workerCacheTTL {
		return "", false
	}
	return e.command, true
}

func (c *workerCache) put(id, command string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || len(c.m) >= workerCacheMax {
		c.m = map[string]cachedCommand{}
	}
	c.m[id] = cachedCommand{command: command, at: time.Now()}
}

// WorkerQueuesIn reports whether every queue w claims from is one of
// allowed (a queue-scoped token sees only such workers).
func WorkerQueuesIn(w *Worker, allowed func(string) bool) bool {
	for _, q := range w.Queues.Names {
		if !allowed(q) {
			return false
		}
	}
	return true
}
