// Package memory is the app.Store in Go maps, for tests and throwaway runs
// (--db memory). It keeps the same rules as the databases: every write
// checks app.Transition, and every change that touches several records runs
// under one lock and puts the prior state back if any step fails, so it is
// all or nothing like a transaction. It hands out copies, never its own
// pointers. Nothing survives the process.
package memory

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/queuehq/queue/app"
)

var _ app.Store = (*Store)(nil)

// Store is an app.Store in memory.
type Store struct {
	mu     sync.Mutex
	opts   app.StoreOptions
	clock  app.Clock
	notify *app.Notifier

	nextID     int64
	jobs       map[int64]*app.Job
	dead       map[int64]*app.DeadJob
	events     []app.Event
	nextEvent  int64
	audit      []app.AuditEntry
	queues     map[string]*queueState
	fires      map[fireKey]int64 // periodic fire -> job id (0: skipped)
	once       map[string]*app.OnceRecord
	throughput map[app.CountKey]*app.CountVal
	series     map[seriesKey]*app.SeriesRow // the charts' rows (charts.go)
	flows      flows
	buckets    map[app.QueueKey]app.KeyBucket
	workers    map[string]*app.Worker // the worker registry (workers.go)
	closed     bool

	settings map[settingKey]app.SettingsRecord // runtime settings (settings.go)
	live     live                              // progress and logs (progress.go)
}

type queueState struct {
	paused   bool
	pausedAt *time.Time
	tokens   float64
	rateAt   time.Time
}

type fireKey struct {
	entry string
	at    int64
}

// New returns an empty Store.
func New(opts app.StoreOptions) *Store {
	return &Store{
		opts: opts, clock: opts.ClockOrSystem(), notify: app.NewNotifier(),
		jobs: map[int64]*app.Job{}, dead: map[int64]*app.DeadJob{},
		queues: map[string]*queueState{}, fires: map[fireKey]int64{},
		once: map[string]*app.OnceRecord{}, throughput: map[app.CountKey]*app.CountVal{},
		flows: newFlows(), buckets: map[app.QueueKey]app.KeyBucket{},
	}
}

// tx is one write under the lock: it collects its app.Effects, and the
// undo steps that put back what it changed if it fails.
type tx struct {
	app.Effects
	s    *Store
	now  time.Time
	undo []func()
}

// write runs fn under the lock as one all-or-nothing change.
func (s *Store) write(ctx context.Context, fn func(*tx) error) (err error) {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return fmt.Errorf("%w: store closed", app.ErrUnavailable)
	}
	t := &tx{s: s, now: s.clock.Now().Truncate(time.Millisecond)}
	t.Effects.Reset(t.now)
	t.Effects.Use(&s.opts)
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("write panicked: %v", p)
		}
		if err != nil {
			for i := len(t.undo) - 1; i >= 0; i-- {
				t.undo[i]()
			}
			s.mu.Unlock()
			return
		}
		for _, e := range t.Published { // every event, also those the rows tell
			if app.Transient(e.Type) {
				continue
			}
			s.nextEvent++
			e.ID = s.nextEvent
			s.events = append(s.events, e)
		}
		for k, v := range t.Counts {
			c := s.throughput[k]
			if c == nil {
				c = &app.CountVal{}
				s.throughput[k] = c
			}
			c.Add(*v)
		}
		s.mu.Unlock()
		s.opts.Bus.Publish(t.Published...)
		s.notify.Notify(t.Woken...)
	}()
	if err := fn(t); err != nil {
		return err
	}
	return app.Settle(t) // held jobs the write made room for, webhook deliveries: in the same write
}

// putJob stores j (checking the status guard against the stored row) and
// remembers how to undo it.
func (t *tx) putJob(j *app.Job) error {
	old, ok := t.s.jobs[j.ID]
	if ok {
		if err := app.Transition(old.Status, j.Status); err != nil {
			return fmt.Errorf("job %d: %w", j.ID, err)
		}
	} else if err := app.InsertStatus(j.Status); err != nil {
		return fmt.Errorf("job %d: %w", j.ID, err)
	}
	put(t, t.s.jobs, j.ID, j)
	return nil
}

func (t *tx) deleteJob(id int64) { del(t, t.s.jobs, id) }

func (t *tx) putDead(d *app.DeadJob) { put(t, t.s.dead, d.ID, d) }

func (t *tx) deleteDead(id int64) { del(t, t.s.dead, id) }

// put sets m[k] to v, and how to undo it.
func put[K comparable, V any](t *tx, m map[K]V, k K, v V) {
	old, ok := m[k]
	m[k] = v
	t.undo = append(t.undo, func() {
		if ok {
			m[k] = old
		} else {
			delete(m, k)
		}
	})
}

// del deletes m[k], if there, and how to undo it.
func del[K comparable, V any](t *tx, m map[K]V, k K) {
	if old, ok := m[k]; ok {
		delete(m, k)
		t.undo = append(t.undo, func() { m[k] = old })
	}
}

func (t *tx) queue(name string) *queueState {
	q, ok := t.s.queues[name]
	if !ok {
		q = &queueState{}
		t.s.queues[name] = q
		t.undo = append(t.undo, func() { delete(t.s.queues, name) })
	}
	return q
}

func (t *tx) setQueue(name string, fn func(q *queueState)) {
	q := t.queue(name)
	old := *q
	fn(q)
	t.undo = append(t.undo, func() { *q = old })
}

// The methods below make tx an app.Tx, the steps of the lifecycle that
// package app writes once. Each changes one row through putJob, putDead or
// deleteJob (so the status guard and the undo log apply) and hands back
// copies, never the store's own pointers.
var _ app.Tx = (*tx)(nil)

// Now implements app.Tx.
func (t *tx) Now() time.Time { return t.now }

// Job implements app.Tx.
func (t *tx) Job(id int64) (*app.Job, error) {
	if j, ok := t.s.jobs[id]; ok {
		return j.Clone(), nil
	}
	_, dead := t.s.dead[id]
	return nil, app.MissingError(id, dead)
}

// Processing implements app.Tx.
func (t *tx) Processing(id, lease int64) (*app.Job, error) {
	j, err := t.s.fenced(id, lease)
	if err != nil {
		return nil, err
	}
	return j.Clone(), nil
}

// Stale implements app.Tx.
func (t *tx) Stale(limit int) ([]*app.Job, error) {
	var stale []*app.Job
	for _, j := range t.s.jobs {
		if j.Status == app.StatusProcessing && j.LeaseExpiresAt != nil && !j.LeaseExpiresAt.After(t.now) {
			stale = append(stale, j)
		}
	}
	sort.Slice(stale, func(a, b int) bool { return stale[a].LeaseExpiresAt.Before(*stale[b].LeaseExpiresAt) })
	return copyJobs(stale[:min(len(stale), max(limit, 1))]), nil
}

// Jobs implements app.Tx. Like the databases', it reads in ascending id order.
func (t *tx) Jobs(f app.JobFilter) ([]*app.Job, error) {
	f.Asc = true
	return copyJobs(t.s.selectJobs(f, t.now, app.BulkBatch)), nil
}

// Dead implements app.Tx.
func (t *tx) Dead(f app.DeadFilter) ([]*app.DeadJob, error) {
	f.Asc = true
	var out []*app.DeadJob
	for _, d := range t.s.selectDead(f, app.BulkBatch) {
		out = append(out, d.Clone())
	}
	return out, nil
}

// Resurrected implements app.Tx.
func (t *tx) Resurrected(dead []*app.DeadJob, jobs []*app.Job) error {
	for i, old := range dead {
		d := t.s.dead[old.ID].Clone()
		d.ResurrectionCount, d.LastResurrectionAt = d.ResurrectionCount+1, ptr(t.now)
		d.ReplayedJobID, d.IdempotencyKey = &jobs[i].ID, ""
		t.putDead(d)
	}
	return nil
}

// Insert implements app.Tx.
func (t *tx) Insert(njs ...*app.NewJob) ([]*app.Job, error) {
	out := make([]*app.Job, len(njs))
	for i, nj := range njs {
		j, err := t.insert(nj)
		if err != nil {
			return nil, err
		}
		out[i] = j.Clone()
	}
	return out, nil
}

// RecordFire implements app.Tx.
func (t *tx) RecordFire(entry string, at time.Time) (bool, error) {
	k := fireKey{entry, at.UnixMilli()}
	if _, done := t.s.fires[k]; done {
		return false, nil
	}
	put(t, t.s.fires, k, 0)
	return true, nil
}

// FirePending implements app.Tx.
func (t *tx) FirePending(entry string) (bool, error) {
	for fk, id := range t.s.fires {
		if j, ok := t.s.jobs[id]; ok && fk.entry == entry && (j.Status == app.StatusQueued || j.Status == app.StatusProcessing) {
			return true, nil
		}
	}
	return false, nil
}

// SetFireJob implements app.Tx (RecordFire's undo covers it).
func (t *tx) SetFireJob(entry string, at time.Time, id int64) error {
	t.s.fires[fireKey{entry, at.UnixMilli()}] = id
	return nil
}

// SetQueuePaused implements app.Tx.
func (t *tx) SetQueuePaused(queue string, paused bool) error {
	t.setQueue(queue, func(q *queueState) {
		q.paused, q.pausedAt = paused, nil
		if paused {
			q.pausedAt = ptr(t.now)
		}
	})
	return nil
}

// ExpireDue implements app.Tx.
func (t *tx) ExpireDue(limit int) ([]app.Ref, error) {
	var due []*app.Job
	for _, j := range t.s.jobs {
		if j.Status == app.StatusQueued && j.ExpiresAt != nil && !j.ExpiresAt.After(t.now) {
			due = append(due, j)
		}
	}
	slices.SortFunc(due, func(a, b *app.Job) int { // the earliest expiry first, as the databases do
		return cmp.Or(a.ExpiresAt.Compare(*b.ExpiresAt), cmp.Compare(a.ID, b.ID))
	})
	var refs []app.Ref
	for _, j := range due[:min(len(due), max(limit, 1))] {
		if _, err := t.Cancel(j, app.CancelExpired); err != nil {
			return nil, err
		}
		refs = append(refs, app.Ref{ID: j.ID, Queue: j.Queue, Kind: j.Kind, WorkflowID: j.WorkflowID, Step: j.Step, Key: j.Key})
	}
	return refs, nil
}

// DeleteDead implements app.Tx.
func (t *tx) DeleteDead(f app.DeadFilter) ([]app.Ref, error) {
	f.Asc = true
	var refs []app.Ref
	for _, d := range t.s.selectDead(f, app.BulkBatch) {
		t.deleteDead(d.ID)
		refs = append(refs, app.Ref{ID: d.ID, Queue: d.Queue, Kind: d.Kind})
	}
	return refs, nil
}

// change stores a copy of j changed by fn (and updated now), and returns a
// copy of what it stored.
func (t *tx) change(j *app.Job, fn func(nj *app.Job)) (*app.Job, error) {
	nj := j.Clone()
	fn(nj)
	nj.UpdatedAt = t.now
	if err := t.putJob(nj); err != nil {
		return nil, err
	}
	return nj.Clone(), nil
}

// Extend implements app.Tx.
func (t *tx) Extend(j *app.Job, until time.Time) (*app.Job, error) {
	return t.change(j, func(nj *app.Job) { nj.LeaseExpiresAt = &until })
}

// Requeue implements app.Tx.
func (t *tx) Requeue(j *app.Job, runAt time.Time, giveBack bool) (*app.Job, error) {
	return t.change(j, func(nj *app.Job) {
		nj.Status, nj.RunAt, nj.LeaseExpiresAt, nj.WorkerID = app.StatusQueued, runAt.Truncate(time.Millisecond), nil, ""
		if giveBack {
			nj.Attempts--
		}
	})
}

// Cancel implements app.Tx.
func (t *tx) Cancel(j *app.Job, reason string) (*app.Job, error) {
	return t.change(j, func(nj *app.Job) {
		nj.Status, nj.CancelReason, nj.FinishedAt, nj.LeaseExpiresAt, nj.Held = app.StatusCancelled, reason, ptr(t.now), nil, false
	})
}

// RequestCancel implements app.Tx.
func (t *tx) RequestCancel(j *app.Job, reason string) (*app.Job, error) {
	return t.change(j, func(nj *app.Job) {
		nj.CancelRequested = true
		if nj.CancelReason == "" {
			nj.CancelReason = reason
		}
	})
}

// InsertDead implements app.Tx. Like the databases' primary key, an id
// that has a row already is refused, never overwritten.
func (t *tx) InsertDead(d *app.DeadJob) error {
	if _, ok := t.s.dead[d.ID]; ok {
		return fmt.Errorf("dead-letter row %d exists already", d.ID)
	}
	t.putDead(d.Clone())
	return nil
}

// DeleteJob implements app.Tx.
func (t *tx) DeleteJob(id int64) error {
	if _, ok := t.s.jobs[id]; !ok {
		return fmt.Errorf("job %d: %w", id, app.ErrNotFound)
	}
	t.deleteJob(id)
	return nil
}

// Moved implements app.Tx; Stats counts the maps, so there is nothing to keep.
func (t *tx) Moved(queue string, from, to app.Status, n int) {}

// Audit implements app.Tx.
func (t *tx) Audit(e app.AuditEntry) error {
	e.ID = 1
	if k := len(t.s.audit); k > 0 {
		e.ID = t.s.audit[k-1].ID + 1
	}
	t.s.audit = append(t.s.audit, e)
	size := len(t.s.audit)
	t.undo = append(t.undo, func() { t.s.audit = t.s.audit[:size-1] })
	return nil
}

// Fault implements app.Tx.
func (t *tx) Fault(point app.FaultPoint, id int64) error {
	if f := t.s.opts.Fault; f != nil {
		return f(context.Background(), point, id)
	}
	return nil
}

// Write implements app.Writer: fn runs under the lock as one all-or-nothing
// change.
func (s *Store) Write(ctx context.Context, fn func(app.Tx) error) error {
	return s.write(ctx, func(t *tx) error { return fn(t) })
}

func copyJobs(js []*app.Job) []*app.Job {
	out := make([]*app.Job, len(js))
	for i, j := range js {
		out[i] = j.Clone()
	}
	return out
}

func copyTime(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	v := *t
	return &v
}

func ptr[T any](v T) *T { return &v }

// InsertJobs implements app.JobStore.
func (s *Store) InsertJobs(ctx context.Context, jobs []app.NewJob) ([]app.Submitted, error) {
	return app.InsertAll(ctx, s, jobs)
}

func (t *tx) insert(nj *app.NewJob) (*app.Job, error) {
	s := t.s
	t.queue(nj.Queue)
	s.nextID++
	id := s.nextID
	t.undo = append(t.undo, func() {
		if s.nextID == id {
			s.nextID--
		}
	})
	j := nj.Row(t.now).Clone()
	j.ID = id
	if err := t.putJob(j); err != nil {
		return nil, err
	}
	if err := t.Fault(app.FaultJobInsert, id); err != nil {
		return nil, err
	}
	t.Publish(app.EventSubmitted, id, j.Queue, j.Kind, nil)
	t.Wake(j.Queue)
	return j, nil
}

// ByKey implements app.Tx.
func (t *tx) ByKey(queue, key string) (*app.Job, error) {
	for _, j := range t.s.jobs {
		if j.Queue == queue && j.IdempotencyKey == key {
			return j.Clone(), nil
		}
	}
	for _, d := range t.s.dead {
		if d.Queue == queue && d.IdempotencyKey == key {
			return d.Clone().AsJob(), nil
		}
	}
	return nil, nil
}

// Queued implements app.Tx.
func (t *tx) Queued(queue string, limit int) (int, error) {
	n := 0
	for _, j := range t.s.jobs {
		if j.Queue == queue && j.Status == app.StatusQueued {
			n++
		}
	}
	return min(n, limit), nil
}

// Lookup implements app.Store.
func (s *Store) Lookup(ctx context.Context, id int64) (job *app.Job, dead *app.DeadJob, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if j, ok := s.jobs[id]; ok {
		job = s.showProgress(j.Clone())
	}
	if d, ok := s.dead[id]; ok {
		dead = d.Clone()
	}
	return app.Found(id, job, dead, nil)
}

// List implements app.Store.
func (s *Store) List(ctx context.Context, f app.JobFilter) ([]*app.Job, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []*app.Job
	for _, j := range s.selectJobs(f, s.clock.Now(), 50) {
		out = append(out, s.showProgress(j.Clone()))
	}
	return out, nil
}

// CountJobs implements app.Store.
func (s *Store) CountJobs(ctx context.Context, f app.JobFilter) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f.AfterID, f.Limit = 0, len(s.jobs)+1
	n := len(s.selectJobs(f, s.clock.Now(), 0))
	if f.CountCap > 0 {
		n = min(n, f.CountCap+1)
	}
	return n, nil
}

// JobEvents implements app.Store.
func (s *Store) JobEvents(ctx context.Context, id int64) ([]app.Event, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []app.Event
	for _, e := range s.events {
		if e.JobID == id {
			out = append(out, e)
		}
	}
	return out, nil
}

// Claim implements app.Store.
func (s *Store) Claim(ctx context.Context, req app.ClaimRequest) ([]*app.Job, error) {
	return app.Claim(ctx, s, req)
}

// ClaimQueue implements app.Tx.
func (t *tx) ClaimQueue(queue string, busy bool) (app.QueueLimits, error) {
	var l app.QueueLimits
	if q := t.s.queues[queue]; q != nil {
		l = app.QueueLimits{Paused: q.paused, Tokens: q.tokens, RateAt: q.rateAt}
	}
	for _, j := range t.s.jobs {
		if !busy {
			break // no concurrency limit: no need to count
		}
		if j.Queue == queue && j.Status == app.StatusProcessing {
			l.Busy++
		}
	}
	return l, nil
}

// Take implements app.Tx.
func (t *tx) Take(req app.ClaimRequest, n int) ([]*app.Job, error) {
	var cands []*app.Job
	for _, j := range t.s.jobs {
		if j.Queue == req.Queue && j.Status == app.StatusQueued && !j.Held && !j.RunAt.After(t.now.Add(req.Ahead)) &&
			(j.ExpiresAt == nil || j.ExpiresAt.After(t.now)) && (len(req.Kinds) == 0 || slices.Contains(req.Kinds, j.Kind)) {
			cands = append(cands, j)
		}
	}
	slices.SortFunc(cands, app.ClaimOrder)
	out := make([]*app.Job, 0, min(n, len(cands)))
	for _, old := range cands[:min(n, len(cands))] {
		j := old.Clone()
		timeout := j.Timeout.D()
		if req.Timeout > 0 {
			timeout = req.Timeout.Truncate(time.Millisecond)
		}
		j.Status, j.Attempts, j.Lease, j.WorkerID = app.StatusProcessing, j.Attempts+1, j.Lease+1, req.WorkerID
		j.LeaseExpiresAt, j.StartedAt, j.UpdatedAt = ptr(t.now.Add(timeout)), ptr(t.now), t.now
		if err := t.putJob(j); err != nil {
			return nil, err
		}
		out = append(out, j.Clone())
	}
	return out, nil
}

// SetRate implements app.Tx.
func (t *tx) SetRate(queue string, tokens float64) error {
	t.setQueue(queue, func(q *queueState) { q.tokens, q.rateAt = tokens, t.now })
	return nil
}

// fenced returns the stored job id if it is processing under lease.
func (s *Store) fenced(id, lease int64) (*app.Job, error) {
	j, ok := s.jobs[id]
	if ok && j.Status == app.StatusProcessing && j.Lease == lease {
		return j, nil
	}
	_, dead := s.dead[id]
	return nil, app.FenceError(id, ok || dead)
}

// Complete implements app.Store.
func (s *Store) Complete(ctx context.Context, items []app.Completion) ([]error, error) {
	return app.Complete(ctx, s, items)
}

// Finish implements app.Tx.
func (t *tx) Finish(j *app.Job, result json.RawMessage) (*app.Job, error) {
	return t.change(j, func(nj *app.Job) {
		nj.Status, nj.Result, nj.FinishedAt, nj.LeaseExpiresAt = app.StatusDone, slices.Clone(result), ptr(t.now), nil
		if len(nj.Result) == 0 {
			nj.Result = json.RawMessage("null")
		}
	})
}

// Ping implements app.Store.
func (s *Store) Ping(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return fmt.Errorf("%w: store closed", app.ErrUnavailable)
	}
	return nil
}

// Wake implements app.Store.
func (s *Store) Wake(queue string, want int) <-chan struct{} {
	return s.notify.Wait(queue, want)
}

// Unwake implements app.Store.
func (s *Store) Unwake(queue string, c <-chan struct{}) { s.notify.Leave(queue, c) }

// PassWake implements app.Store.
func (s *Store) PassWake(queue string) { s.notify.Pass(queue) }

// Drained implements app.Store.
func (s *Store) Drained(queue string, c <-chan struct{}) { s.notify.Drained(queue, c) }

// Dry implements app.Store.
func (s *Store) Dry(queue string) bool { return s.notify.Dry(queue) }

// Close implements app.Store.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	return nil
}
