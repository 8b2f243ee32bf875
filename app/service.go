package app

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/rs/zerolog"
)

// Service is the queue as its callers see it: the HTTP API, the CLI and the
// in-process Go worker. It validates input, applies the per-queue policy of
// the Config, waits (long-poll claims, submit-and-wait), and runs bulk
// actions in bounded batches. It keeps no state of its own beyond the
// Store and a count of the waits in progress, so several servers may share
// one database.
type Service struct {
	Store  Store
	Config *Config
	Clock  Clock
	Bus    *Bus
	Log    zerolog.Logger
	// Tracer, if set, records the spans of traced jobs (trace.go); nil
	// when no collector is configured, and then tracing costs nothing.
	Tracer Tracer

	attempts attemptCache // the attempts this node handed out, for their spans (trace.go)

	stopOnce sync.Once
	stop     chan struct{}
	waiters  atomic.Int64 // long polls waiting now (see holdWait)
	// workerCmds caches the registered workers' commands for claims
	// (see WorkerCommand in workers.go).
	workerCmds workerCache

	// unclaimed caches unclaimedKinds for UnclaimedEvery: every Stats
	// (each /metrics scrape, each page) would otherwise scan the queued
	// jobs again.
	unclaimed struct {
		mu    sync.Mutex
		at    time.Time
		kinds []UnclaimedKind
		took  time.Duration // the last look (see unclaimedKinds)
	}
}

// DefaultMaxWaiters caps the long polls of a server when
// Config.MaxWaiters is zero.
const DefaultMaxWaiters = 1024

// Waiting reports how many long polls (claims and gets with a wait) are
// waiting now, server-wide.
func (s *Service) Waiting() int { return int(s.waiters.Load()) }

// holdWait takes one of the server's Config.MaxWaiters long-poll
// places for a wait about to begin, or returns ErrTooManyWaiters when all
// are taken. Whoever took one gives it back with releaseWait. Each wait
// holds a subscription or a wake-up entry and a connection; the cap keeps
// clients from holding them without bound.
func (s *Service) holdWait() error {
	limit := int64(s.Config.MaxWaiters)
	if limit <= 0 {
		limit = DefaultMaxWaiters
	}
	for {
		n := s.waiters.Load()
		if n >= limit {
			return ErrTooManyWaiters
		}
		if s.waiters.CompareAndSwap(n, n+1) {
			return nil
		}
	}
}

func (s *Service) releaseWait() { s.waiters.Add(-1) }

// NewService returns a Service over store. A nil cfg means the defaults;
// clock and bus must be the ones the store was opened with.
func NewService(store Store, cfg *Config, clock Clock, bus *Bus, log zerolog.Logger) *Service {
	if cfg == nil {
		cfg = DefaultConfig()
	}
	if clock == nil {
		clock = SystemClock{}
	}
	if bus == nil {
		bus = NewBus()
	}
	return &Service{Store: store, Config: cfg, Clock: clock, Bus: bus, Log: log, stop: make(chan struct{})}
}

// Stop ends every wait in progress (long-poll claims answer what they have,
// submit-and-wait answers the job as it is), so a server can shut down
// without holding connections for a minute.
func (s *Service) Stop() { s.stopOnce.Do(func() { close(s.stop) }) }

// Submit validates and stores jobs all or nothing. With one input the
// field names in errors are plain; with more they are prefixed jobs[i].
func (s *Service) Submit(ctx context.Context, ins []SubmitInput) ([]Submitted, error) {
	if len(ins) == 0 {
		return nil, Invalid("jobs", "no jobs given")
	}
	if len(ins) > MaxBatch {
		return nil, Invalid("jobs", "%d jobs; a batch holds at most %d", len(ins), MaxBatch)
	}
	now := s.Clock.Now()
	req := SubmitRequest{Jobs: make([]NewJob, len(ins)), MaxQueued: s.Config.MaxQueued(), KeyLimits: s.Config.KeyLimits}
	for i := range ins {
		nj, err := ins[i].NewJob(s.Config, now)
		if err != nil {
			var ie *InvalidError
			if len(ins) > 1 && errors.As(err, &ie) {
				ie.Field = fmt.Sprintf("jobs[%d].%s", i, ie.Field)
			}
			return nil, err
		}
		req.Jobs[i] = nj
	}
	end := s.traceSubmit(req.Jobs) // the jobs store their submit span's context
	out, err := Submit(ctx, s.Store, req)
	end(out, err)
	return out, err
}

// Get returns job id as the API shows it: from the jobs table, or in its
// dead-letter form. A positive wait holds the answer until the job is
// terminal (done, cancelled or dead-lettered) or wait passes; a wait that
// would begin while the server holds Config.MaxWaiters of them
// returns ErrTooManyWaiters instead.
func (s *Service) Get(ctx context.Context, id int64, wait time.Duration, events bool) (*Job, error) {
	if wait < 0 || wait > MaxWait {
		return nil, Invalid("wait", "wait must be between 0s and 60s")
	}
	held := false
	defer func() {
		if held {
			s.releaseWait()
		}
	}()
	var sub *Subscription
	if wait > 0 {
		sub = s.Bus.Subscribe(64, func(e *Event) bool { return e.JobID == id })
		defer sub.Close()
	}
	deadline := time.Now().Add(wait)
	for {
		job, dead, err := s.Store.Lookup(ctx, id)
		if err != nil {
			return nil, err
		}
		if job == nil {
			job = dead.AsJob()
		}
		left := time.Until(deadline)
		if wait <= 0 || left <= 0 || job.Status.Terminal() || job.Status == StatusDeadLetter {
			if events {
				recorded, err := s.Store.JobEvents(ctx, id)
				if err != nil {
					return nil, err
				}
				job.Events = Timeline(job, recorded)
			}
			return job, nil
		}
		if !held {
			if err := s.holdWait(); err != nil {
				return nil, err
			}
			held = true
		}
		t := time.NewTimer(min(left, time.Second)) // the second: a change made by another node
		select {
		case _, ok := <-sub.C:
			if !ok { // dropped for falling behind: poll from here on
				sub = s.Bus.Subscribe(64, func(e *Event) bool { return e.JobID == id })
				defer sub.Close()
			}
		case <-t.C:
		case <-s.stop:
			wait = 0
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		}
		t.Stop()
	}
}

// Events returns the lifecycle of job id, oldest first (see Timeline).
func (s *Service) Events(ctx context.Context, id int64) ([]Event, error) {
	job, err := s.Get(ctx, id, 0, true)
	if err != nil {
		return nil, err
	}
	return job.Events, nil
}

// ListInput is the query of GET /api/jobs.
type ListInput struct {
	Queue, Kind, Status, Tag string
	ReplayedFrom             int64  // the dead-letter row the jobs were replayed from
	Workflow                 int64  // the workflow whose steps the jobs run
	Key                      string // the flow-control key of the jobs
	// JobQuery: payload fields, error text and time ranges (jobs_live.go).
	JobQuery
	// KindPrefix matches the kinds that start with it (the UI's search).
	KindPrefix string
	// Order is "" (by id, newest first unless Asc) or "run_at" (by run
	// time, then id: the order scheduled and retrying jobs run in).
	Order string
	// Count asks for the total the filter matches (JobPage.Total).
	Count bool
	// CountCap, if positive, bounds the count (Go callers only: the
	// console's page; the API's count=true is exact): past it, Total is
	// CountCap and TotalCapped is set.
	CountCap int
	Limit    int
	Cursor   string
	Asc      bool
}

// JobPage is one page of a job listing.
type JobPage struct {
	Jobs       []*Job `json:"jobs"`
	NextCursor string `json:"next_cursor"`
	// Total is how many jobs the filter matches, when asked (count=true).
	Total *int `json:"total,omitempty"`
	// TotalCapped: the filter matches more than ListInput.CountCap jobs;
	// Total is the cap.
	TotalCapped bool `json:"-"`
}

// List returns one page of jobs, newest first unless in.Asc; with Order
// "run_at", by run_at then id (ascending if in.Asc). Status may be one of
// the four, "scheduled", "retrying", or "dead_letter" (rows of the DLQ).
// With in.Count, page.Total is how many jobs the filter matches.
func (s *Service) List(ctx context.Context, in ListInput) (*JobPage, error) {
	f, err := in.filter(s.Clock.Now())
	if err != nil {
		return nil, err
	}
	page := &JobPage{Jobs: []*Job{}}
	if in.Status == string(StatusDeadLetter) {
		if !in.JobQuery.IsZero() {
			return nil, Invalid("status", "the dead-letter rows are not filtered by payload, error or times here; use GET /api/dlq, or leave out status dead_letter")
		}
		dl := DeadListInput{Queue: f.Queue, Kind: f.Kind, KindPrefix: f.KindPrefix, Tag: f.Tag, Limit: f.Limit, Cursor: in.Cursor, Asc: in.Asc}
		dp, err := s.ListDead(ctx, dl)
		if err != nil {
			return nil, err
		}
		for _, d := range dp.Jobs {
			page.Jobs = append(page.Jobs, d.AsJob())
		}
		page.NextCursor = dp.NextCursor
		if in.Count {
			df, _ := dl.filter()
			n, err := s.Store.CountDead(ctx, df)
			if err != nil {
				return nil, err
			}
			page.Total = &n
		}
		return page, nil
	} else if page.Jobs, err = s.Store.List(ctx, f); err != nil {
		return nil, err
	}
	if page.Jobs == nil {
		page.Jobs = []*Job{}
	}
	if last := len(page.Jobs) - 1; last+1 == f.Limit && f.Order == OrderRunAt {
		page.NextCursor = EncodeRunCursor(page.Jobs[last].RunAt, page.Jobs[last].ID, f.Asc)
	} else if last+1 == f.Limit {
		page.NextCursor = EncodeCursor(page.Jobs[last].ID, f.Asc)
	}
	if in.Count {
		f.CountCap = max(in.CountCap, 0)
		n, err := s.Store.CountJobs(ctx, f)
		if err != nil {
			return nil, err
		}
		if f.CountCap > 0 && n > f.CountCap {
			n, page.TotalCapped = f.CountCap, true
		}
		page.Total = &n
	}
	return page, nil
}

func (in ListInput) filter(now time.Time) (JobFilter, error) {
	f := JobFilter{Queue: in.Queue, Kind: in.Kind, Tag: in.Tag, Status: in.Status, ReplayedFrom: in.ReplayedFrom,
		Workflow: in.Workflow, Key: in.Key, KindPrefix: in.KindPrefix, Order: in.Order, Asc: in.Asc, Limit: in.Limit}
	if len(f.Key) > MaxKeyLength {
		return f, Invalid("key", "key is %d bytes; at most %d", len(f.Key), MaxKeyLength)
	}
	if strings.ContainsRune(f.Key, 0) || !utf8.ValidString(f.Key) {
		return f, Invalid("key", "key holds a NUL byte or is not UTF-8")
	}
	if f.Key != "" && f.Status == string(StatusDeadLetter) {
		return f, Invalid("key", "the dead-letter rows are not filtered by key; leave out key or status dead_letter")
	}
	if f.Queue != "" {
		if err := ValidateQueue(f.Queue); err != nil {
			return f, Invalid("queue", "%v", err)
		}
	}
	if f.Kind != "" {
		if err := ValidateKind(f.Kind); err != nil {
			return f, Invalid("kind", "kind %v", err)
		}
	}
	if f.KindPrefix != "" {
		if err := ValidateKind(f.KindPrefix); err != nil { // the start of a kind is a kind's characters
			return f, Invalid("kind_prefix", "kind_prefix %v", err)
		}
	}
	if err := ValidateTag(f.Tag); err != nil {
		return f, err
	}
	switch f.Status {
	case "", "queued", "scheduled", StatusRetrying, "processing", "done", "cancelled", "dead_letter":
	default:
		return f, Invalid("status", "status %q is not one of queued, scheduled, retrying, processing, done, cancelled, dead_letter", clip(f.Status))
	}
	switch f.Order {
	case "":
	case OrderRunAt:
		if f.Status == string(StatusDeadLetter) {
			return f, Invalid("sort", "the dead-letter rows are listed by the time of their move; leave out sort=run_at or status dead_letter")
		}
	default:
		return f, Invalid("sort", "sort %q is not one of id (the default), run_at", clip(f.Order))
	}
	switch {
	case f.Workflow < 0:
		return f, Invalid("workflow", "workflow must be a workflow's id")
	case f.Workflow > 0 && f.Status == string(StatusDeadLetter):
		return f, Invalid("workflow", "the dead-letter rows of a workflow's steps are on GET /api/workflows/{id} (status dead_letter, job_id)")
	}
	var err error
	if f.JobMatch, err = in.JobQuery.Match(now); err != nil {
		return f, err
	}
	if f.Limit == 0 {
		f.Limit = 50
	}
	if f.Limit < 1 || f.Limit > 1000 {
		return f, Invalid("limit", "limit must be between 1 and 1000")
	}
	if in.Cursor != "" && f.Order == OrderRunAt {
		if f.AfterRunAt, f.AfterID, f.Asc, err = DecodeRunCursor(in.Cursor); err != nil {
			return f, err
		}
	} else if in.Cursor != "" && f.Status != string(StatusDeadLetter) { // the DLQ's cursor is its own (ListDead)
		id, asc, err := DecodeCursor(in.Cursor)
		if err != nil {
			return f, err
		}
		f.AfterID, f.Asc = id, asc
	}
	return f, nil
}

// EncodeCursor makes the opaque next_cursor of a listing.
func EncodeCursor(afterID int64, asc bool) string {
	dir := "d"
	if asc {
		dir = "a"
	}
	return base64.RawURLEncoding.EncodeToString([]byte(dir + strconv.FormatInt(afterID, 10)))
}

// DecodeCursor reads a cursor made by EncodeCursor; anything else is an
// *InvalidError, so a cursor can never reach SQL as text.
func DecodeCursor(c string) (int64, bool, error) {
	bad := Invalid("cursor", "cursor is not one this server made; start again without it")
	if len(c) > 64 {
		return 0, false, bad
	}
	b, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil || len(b) < 2 || (b[0] != 'a' && b[0] != 'd') {
		return 0, false, bad
	}
	id, err := strconv.ParseInt(string(b[1:]), 10, 64)
	if err != nil || id <= 0 {
		return 0, false, bad
	}
	return id, b[0] == 'a', nil
}

// EncodeRunCursor makes the opaque next_cursor of a listing in run_at
// order: the last job's run_at (in milliseconds, as stored) and id.
func EncodeRunCursor(runAt time.Time, id int64, asc bool) string {
	dir := "rd"
	if asc {
		dir = "ra"
	}
	return base64.RawURLEncoding.EncodeToString([]byte(dir + strconv.FormatInt(runAt.UnixMilli(), 10) + "." + strconv.FormatInt(id, 10)))
}

// DecodeRunCursor reads a cursor made by EncodeRunCursor; anything else
// (an id order's cursor too) is an *InvalidError, so a cursor can never
// reach SQL as text.
func DecodeRunCursor(c string) (time.Time, int64, bool, error) {
	bad := Invalid("cursor", "cursor is not one this server made for sort=run_at; start again without it")
	if len(c) > 64 {
		return time.Time{}, 0, false, bad
	}
	b, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil || len(b) < 5 || b[0] != 'r' || (b[1] != 'a' && b[1] != 'd') {
		return time.Time{}, 0, false, bad
	}
	at, id, ok := strings.Cut(string(b[2:]), ".")
	ms, err1 := strconv.ParseInt(at, 10, 64)
	n, err2 := strconv.ParseInt(id, 10, 64)
	if !ok || err1 != nil || err2 != nil || n <= 0 {
		return time.Time{}, 0, false, bad
	}
	return time.UnixMilli(ms).UTC(), n, b[1] == 'a', nil
}

// ClaimInput is the body of POST /api/queues/{queue}/claim.
type ClaimInput struct {
	WorkerID string    `json:"worker_id"`
	Limit    int       `json:"limit"`
	Wait     *Duration `json:"wait"`
	Kinds    []string  `json:"kinds"`
	Timeout  *Duration `json:"timeout"`
	// Queues, for POST /api/claim, names the queues to claim from, with
	// weights or in a strict order (see QueueChoice).
	Queues *QueueChoice `json:"queues,omitempty"`
}

// Claim hands out up to in.Limit jobs of queue. With a wait it holds the
// answer until a job lands (woken by the store at once, never by polling
// for submissions) or the wait ends, then answers what it has (maybe none).
// A claim that finds nothing and would wait while the server holds
// Config.MaxWaiters waits already returns ErrTooManyWaiters.
func (s *Service) Claim(ctx context.Context, queue string, in ClaimInput) ([]*Job, error) {
	return s.claim(ctx, &QueueChoice{Names: []string{queue}}, in, true)
}

// ClaimQueues is Claim over several queues (in.Queues): by weight, each
// queue's share of the claim drawn at random in proportion, or in a strict
// order, each queue emptied before the next. A wait wakes on any of them.
func (s *Service) ClaimQueues(ctx context.Context, in ClaimInput) ([]*Job, error) {
	if in.Queues == nil || len(in.Queues.Names) == 0 {
		return nil, Invalid("queues", "name the queues to claim from: {\"queues\": {\"critical\": 6, \"default\": 3}} or [\"critical\", \"default\"]")
	}
	return s.claim(ctx, in.Queues, in, true)
}

// ClaimQueuesLocal is ClaimQueues for the in-process workers: like
// ClaimLocal, its wait does not count against Config.MaxWaiters.
func (s *Service) ClaimQueuesLocal(ctx context.Context, in ClaimInput) ([]*Job, error) {
	if in.Queues == nil || len(in.Queues.Names) == 0 {
		return nil, Invalid("queues", "name the queues to claim from")
	}
	return s.claim(ctx, in.Queues, in, false)
}

// ClaimLocal is Claim for the in-process workers (package worker's
// LocalBackend): its wait does not count against Config.MaxWaiters,
// since their number is set by the config, not by clients.
func (s *Service) ClaimLocal(ctx context.Context, queue string, in ClaimInput) ([]*Job, error) {
	return s.claim(ctx, &QueueChoice{Names: []string{queue}}, in, false)
}

// Stopping is closed once Stop was called: in-process workers stop claiming.
func (s *Service) Stopping() <-chan struct{} { return s.stop }

// claim is Claim over the queues of qs; capped says whether its wait
// counts against Config.MaxWaiters. The in-process workers' waits do not:
// their number is set by the config, not by clients.
func (s *Service) claim(ctx context.Context, qs *QueueChoice, in ClaimInput, capped bool) ([]*Job, error) {
	if err := qs.check(); err != nil {
		return nil, err
	}
	if in.Limit == 0 {
		in.Limit = 1
	}
	if in.Limit < 1 || in.Limit > MaxClaim {
		return nil, Invalid("limit", "limit must be between 1 and %d", MaxClaim)
	}
	if len(in.WorkerID) > 255 {
		return nil, Invalid("worker_id", "worker_id is at most 255 bytes")
	}
	if len(in.Kinds) > 100 {
		return nil, Invalid("kinds", "at most 100 kinds")
	}
	for _, k := range in.Kinds {
		if err := ValidateKind(k); err != nil {
			return nil, Invalid("kinds", "kind %v", err)
		}
	}
	var wait time.Duration
	if in.Wait != nil {
		wait = in.Wait.D()
		if wait < 0 || wait > MaxWait {
			return nil, Invalid("wait", "wait must be between 0s and 60s")
		}
	}
	reqs := make([]ClaimRequest, len(qs.Names))
	recheck := time.Second // scheduled jobs coming due; changes made on another node
	// plain: no queue limits what a claim takes, so one that takes fewer
	// than it asks for found the queue drained (Store.Drained), which only
	// a claim of every kind can tell.
	plain := len(in.Kinds) == 0
	for i, queue := range qs.Names {
		q := s.Config.Queue(queue)
		reqs[i] = ClaimRequest{Queue: queue, WorkerID: in.WorkerID, Kinds: in.Kinds,
			Concurrency: q.Concurrency, Rate: q.Rate, Burst: q.Burst}
		plain = plain && q.Concurrency == 0 && q.Rate == 0 && !q.KeyLimits().Keyed()
		for _, r := range []float64{q.Rate, q.KeyRate.PerSecond()} { // compared as floats: no overflow
			if r > 0 && float64(time.Second)/r < float64(recheck) {
				recheck = time.Duration(float64(time.Second) / r)
			}
		}
	}
	recheck = max(recheck, 10*time.Millisecond) // a huge rate must not make the wait spin; the timer takes min(left, recheck)
	if in.Timeout != nil {
		if in.Timeout.D() < time.Millisecond || in.Timeout.D() > MaxTimeout {
			return nil, Invalid("timeout", "timeout must be between 1ms and 24h")
		}
		for i := range reqs {
			reqs[i].Timeout = in.Timeout.D()
		}
	}
	held := false
	defer func() {
		if held {
			s.releaseWait()
		}
	}()
	deadline := time.Now().Add(wait)
	first := true
	wakes := make([]<-chan struct{}, len(reqs))
	// woken[i]: a wake-up of reqs[i] came that no look has used yet.
	woken := make([]bool, len(reqs))
	unwake := func() {
		for i, c := range wakes {
			if c != nil && closed(c) {
				woken[i] = true
			}
			s.unwake(reqs[i].Queue, c)
			wakes[i] = nil
		}
	}
	// done ends the waits of a claim that returns. Waiters are woken in
	// proportion to the work (Notifier): a wake-up this claim did not use
	// goes on to the next waiter, and so does a full batch (more may be
	// left), or a job would wait for a recheck.
	done := func(full bool) {
		unwake()
		for i := range reqs {
			if woken[i] || full {
				s.Store.PassWake(reqs[i].Queue)
			}
		}
	}
	for {
		// A registered worker told to quiet or stop gets nothing, also
		// while it waits (workers.go; a cached read, never a write).
		if held, err := s.workerHeld(ctx, in.WorkerID); held || err != nil {
			done(false)
			return []*Job{}, err
		}
		if wait > 0 { // before looking: a job landing in between still wakes us
			for i := range reqs {
				wakes[i] = s.Store.Wake(reqs[i].Queue, in.Limit)
			}
		}
		// A claimer that would wait skips its first look when a look just
		// found its queues drained and no work came since (Notifier.Dry).
		skip := first && wait > 0 && s.allDry(reqs)
		first = false
		var jobs []*Job
		var err error
		if !skip {
			jobs, err = s.claimFrom(ctx, qs, reqs, in.Limit)
		}
		if err == nil && !skip { // this look saw what earlier wake-ups were for
			clear(woken)
			if plain && wait > 0 && len(jobs) < in.Limit {
				for i := range reqs {
					s.Store.Drained(reqs[i].Queue, wakes[i])
				}
			}
		}
		if err != nil || len(jobs) > 0 {
			done(err == nil && len(jobs) >= in.Limit)
			if err == nil {
				s.traceClaimed(jobs)
				err = s.withParents(ctx, jobs)
			}
			return jobs, err
		}
		left := time.Until(deadline)
		if left <= 0 {
			done(false)
			return []*Job{}, nil
		}
		if capped && !held {
			if err := s.holdWait(); err != nil {
				done(false)
				return nil, err
			}
			held = true
		}
		t := time.NewTimer(min(left, recheck))
		switch waitAny(ctx, wakes, t.C, s.stop) {
		case waitStop:
			deadline = time.Now()
		case waitGone:
			t.Stop()
			done(false)
			return []*Job{}, nil // the claimer left; nothing was handed out
		}
		t.Stop()
		unwake()
	}
}

// allDry reports whether every queue of reqs is Dry.
func (s *Service) allDry(reqs []ClaimRequest) bool {
	for _, r := range reqs {
		if !s.Store.Dry(r.Queue) {
			return false
		}
	}
	return true
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

// claimFrom claims up to limit jobs from the queues of reqs as qs orders
// them: one claim per queue, each its own transaction.
func (s *Service) claimFrom(ctx context.Context, qs *QueueChoice, reqs []ClaimRequest, limit int) ([]*Job, error) {
	if len(reqs) == 1 {
		reqs[0].Limit = limit
		return s.Store.Claim(ctx, reqs[0])
	}
	var out []*Job
	order, shares := qs.plan(limit)
	for pass := 0; pass < 2 && len(out) < limit; pass++ {
		for _, i := range order {
			n := limit - len(out)
			if pass == 0 {
				n = min(n, shares[i])
			}
			if n <= 0 {
				continue
			}
			reqs[i].Limit = n
			jobs, err := s.Store.Claim(ctx, reqs[i])
			if err != nil {
				if len(out) > 0 { // what was claimed is handed out; the error waits
					return out, nil
				}
				return nil, err
			}
			out = append(out, jobs...)
		}
		if qs.Weights == nil {
			break // strict order: one pass took all it could
		}
	}
	return out, nil
}

// What waitAny saw.
const (
	waitWoken = iota
	waitStop
	waitGone
)

// waitAny waits for one of wakes (nil ones never), the timer, the
// service's stop or the caller leaving.
func waitAny(ctx context.Context, wakes []<-chan struct{}, timer <-chan time.Time, stop <-chan struct{}) int {
	if len(wakes) == 1 {
		select {
		case <-wakes[0]:
		case <-timer:
		case <-stop:
			return waitStop
		case <-ctx.Done():
			return waitGone
		}
		return waitWoken
	}
	cases := []reflect.SelectCase{
		{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(timer)},
		{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(stop)},
		{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(ctx.Done())},
	}
	for _, c := range wakes {
		if c != nil {
			cases = append(cases, reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(c)})
		}
	}
	switch i, _, _ := reflect.Select(cases); i {
	case 1:
		return waitStop
	case 2:
		return waitGone
	}
	return waitWoken
}

// unwake lets go of a channel Store.Wake gave (if any).
func (s *Service) unwake(queue string, c <-chan struct{}) {
	if c != nil {
		s.Store.Unwake(queue, c)
	}
}

// Heartbeat extends a lease by extend (if zero, the job's timeout).
func (s *Service) Heartbeat(ctx context.Context, id, lease int64, extend time.Duration) (*Job, error) {
	if extend < 0 || extend > MaxTimeout {
		return nil, Invalid("extend", "extend must be between 0s and 24h")
	}
	return Heartbeat(ctx, s.Store, id, lease, extend)
}

// Complete acknowledges one job.
func (s *Service) Complete(ctx context.Context, id, lease int64, result json.RawMessage) error {
	errs, err := s.CompleteBatch(ctx, []Completion{{ID: id, Lease: lease, Result: result}})
	if err != nil {
		return err
	}
	return errs[0]
}

// CompleteBatch acknowledges many jobs, each fenced on its own.
func (s *Service) CompleteBatch(ctx context.Context, items []Completion) ([]error, error) {
	if len(items) == 0 {
		return nil, Invalid("jobs", "no jobs given")
	}
	if len(items) > MaxCompleteBatch {
		return nil, Invalid("jobs", "%d jobs; at most %d", len(items), MaxCompleteBatch)
	}
	for i, it := range items {
		if len(it.Result) > MaxResultBytes {
			return nil, TooLarge("result", "result of job %d is %d bytes; the limit is 1 MiB", it.ID, len(it.Result))
		}
		if len(it.Result) > 0 && !json.Valid(it.Result) {
			return nil, Invalid(fmt.Sprintf("jobs[%d].result", i), "result is not valid JSON")
		}
	}
	if s.Tracer == nil {
		return s.Store.Complete(ctx, items)
	}
	traced := make([]*Job, len(items))
	for i, it := range items {
		traced[i] = s.traceAttempt(ctx, it.ID, it.Lease)
	}
	errs, err := s.Store.Complete(ctx, items)
	for i := range errs {
		if err == nil && errs[i] == nil {
			s.traceEnded(traced[i], EndedOK, "")
		}
	}
	return errs, err
}

// FailInput is the body of POST /api/jobs/{id}/fail.
type FailInput struct {
	Lease   int64     `json:"lease"`
	Error   string    `json:"error"`
	Retry   *bool     `json:"retry"`
	RetryIn *Duration `json:"retry_in"`
}

// Fail reports a failed attempt of job id.
func (s *Service) Fail(ctx context.Context, id int64, in FailInput) (*FailResult, error) {
	req := FailRequest{ID: id, Lease: in.Lease, Error: in.Error, Retry: true, Backoff: s.Config.Backoff}
	if in.Retry != nil {
		req.Retry = *in.Retry
	}
	if in.RetryIn != nil {
		if in.RetryIn.D() < 0 || in.RetryIn.D() > MaxDelay {
			return nil, Invalid("retry_in", "retry_in must be between 0s and 10 years")
		}
		req.RetryIn = max(in.RetryIn.D(), time.Millisecond) // "0s" means now, not "use the backoff"
	}
	if req.Error == "" {
		req.Error = "failed"
	}
	traced := s.traceAttempt(ctx, id, in.Lease)
	res, err := Fail(ctx, s.Store, req)
	if err == nil {
		s.traceEnded(traced, EndedError, req.Error)
	}
	return res, err
}

// Snooze puts a processing job back for delay without counting the attempt.
func (s *Service) Snooze(ctx context.Context, id, lease int64, delay time.Duration) (*Job, error) {
	if delay < 0 || delay > MaxDelay {
		return nil, Invalid("delay", "delay must be between 0s and 10 years")
	}
	traced := s.traceAttempt(ctx, id, lease)
	job, err := Snooze(ctx, s.Store, id, lease, delay)
	if err == nil {
		outcome := EndedSnoozed
		if job.Status == StatusCancelled { // a cancel was requested: the snooze finished it
			outcome = EndedCancelled
		}
		s.traceEnded(traced, outcome, "")
	}
	return job, err
}

// Cancel cancels job id. Without a lease it is an operator's request (and
// audited as actor's); with one, the worker acknowledges a cancel.
func (s *Service) Cancel(ctx context.Context, id int64, lease *int64, actor string) (*Job, error) {
	req := CancelRequest{ID: id, Lease: lease}
	if lease == nil {
		req.Audit = &AuditEntry{Actor: actor, Action: "job.cancel", Target: "job " + strconv.FormatInt(id, 10)}
		return Cancel(ctx, s.Store, req)
	}
	traced := s.traceAttempt(ctx, id, *lease)
	job, err := Cancel(ctx, s.Store, req)
	if err == nil {
		s.traceEnded(traced, EndedCancelled, "")
	}
	return job, err
}

// Once takes the once-record key (SPEC section 5) for holdFor (default 5m).
func (s *Service) Once(ctx context.Context, key string, holdFor time.Duration) (*OnceRecord, error) {
	if err := validateOnceKey(key); err != nil {
		return nil, err
	}
	if holdFor == 0 {
		holdFor = 5 * time.Minute
	}
	if holdFor < 0 || holdFor > MaxTimeout {
		return nil, Invalid("hold_for", "hold_for must be between 1s and 24h")
	}
	return OnceAcquire(ctx, s.Store, key, holdFor)
}

// OnceDone stores the result of the side effect held with token.
func (s *Service) OnceDone(ctx context.Context, key, token string, result json.RawMessage) (*OnceRecord, error) {
	if err := validateOnceKey(key); err != nil {
		return nil, err
	}
	if token == "" {
		return nil, Invalid("token", "token is required (the one POST /api/once/{key} gave)")
	}
	if len(result) > MaxResultBytes {
		return nil, TooLarge("result", "result is %d bytes; the limit is 1 MiB", len(result))
	}
	return OnceDone(ctx, s.Store, key, token, result)
}

func validateOnceKey(key string) error {
	if key == "" || len(key) > MaxKeyLength || strings.ContainsAny(key, "\x00") {
		return Invalid("key", "once key must be 1-255 bytes")
	}
	return nil
}
