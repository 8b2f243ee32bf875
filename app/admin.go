package app

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"time"
)

// DeadListInput is the query of GET /api/dlq.
type DeadListInput struct {
	Queue, Kind, Tag, Reason string
	// KindPrefix matches the kinds that start with it.
	KindPrefix string
	// MovedAfter and MovedBefore, if set, bound the time of the move;
	// Replayed, if set, keeps rows replayed at least once (true) or never.
	MovedAfter, MovedBefore *time.Time
	Replayed                *bool
	Limit                   int
	Cursor                  string
	Asc                     bool
}

// DeadPage is one page of the dead-letter queue.
type DeadPage struct {
	Jobs       []*DeadJob `json:"jobs"`
	NextCursor string     `json:"next_cursor"`
}

func (in *DeadListInput) filter() (DeadFilter, error) {
	f := DeadFilter{Queue: in.Queue, Kind: in.Kind, KindPrefix: in.KindPrefix, Tag: in.Tag, Reason: in.Reason, Replayed: in.Replayed, Asc: in.Asc, Limit: in.Limit}
	if in.MovedAfter != nil {
		f.MovedSince = in.MovedAfter.UTC()
	}
	if in.MovedBefore != nil {
		f.OlderThan = in.MovedBefore.UTC()
	}
	if f.KindPrefix != "" {
		if err := ValidateKind(f.KindPrefix); err != nil {
			return f, Invalid("kind_prefix", "kind_prefix %v", err)
		}
	}
	return f, validateFilter(f.Queue, f.Kind, f.Tag, f.Reason)
}

// ListDead returns one page of dead-letter rows, the newest move first
// unless in.Asc; its cursor continues after the page's last row.
func (s *Service) ListDead(ctx context.Context, in DeadListInput) (*DeadPage, error) {
	f, err := in.filter()
	if err != nil {
		return nil, err
	}
	if f.Limit == 0 {
		f.Limit = 50
	}
	if f.Limit < 1 || f.Limit > 1000 {
		return nil, Invalid("limit", "limit must be between 1 and 1000")
	}
	if in.Cursor != "" {
		if f.After, f.Asc, err = DecodeDeadCursor(in.Cursor, "cursor"); err != nil {
			return nil, err
		}
	}
	rows, err := s.Store.ListDead(ctx, f)
	if err != nil {
		return nil, err
	}
	page := &DeadPage{Jobs: rows}
	if page.Jobs == nil {
		page.Jobs = []*DeadJob{}
	}
	if len(rows) == f.Limit {
		page.NextCursor = EncodeDeadCursor(rows[len(rows)-1].Place(), f.Asc)
	}
	return page, nil
}

func validateFilter(queue, kind, tag, reason string) error {
	if queue != "" {
		if err := ValidateQueue(queue); err != nil {
			return Invalid("queue", "%v", err)
		}
	}
	if kind != "" {
		if err := ValidateKind(kind); err != nil {
			return Invalid("kind", "kind %v", err)
		}
	}
	if err := ValidateTag(tag); err != nil {
		return err
	}
	return ValidateReason(reason)
}

// CountDead counts the dead-letter rows that match a list's filters.
func (s *Service) CountDead(ctx context.Context, in DeadListInput) (int, error) {
	f, err := in.filter()
	if err != nil {
		return 0, err
	}
	return s.Store.CountDead(ctx, f)
}

// DeadByIDs returns the dead-letter rows of ids that exist (at most 1,000).
func (s *Service) DeadByIDs(ctx context.Context, ids []int64) ([]*DeadJob, error) {
	if len(ids) == 0 { // no ids would be no filter: a page of unrelated rows
		return nil, nil
	}
	if len(ids) > 1000 {
		return nil, Invalid("id", "at most 1000 rows at once")
	}
	return s.Store.ListDead(ctx, DeadFilter{IDs: ids, Limit: len(ids)})
}

// Throughput counts completed and failed attempts per queue and minute since.
func (s *Service) Throughput(ctx context.Context, since time.Time) ([]MinuteCount, error) {
	return s.Store.Throughput(ctx, since)
}

// JobQueues maps each of ids (at most MaxCompleteBatch) that is in the jobs
// table to its queue, in one read; ids it does not know are left out.
func (s *Service) JobQueues(ctx context.Context, ids []int64) (map[int64]string, error) {
	if len(ids) > MaxCompleteBatch {
		return nil, Invalid("jobs", "%d jobs; at most %d", len(ids), MaxCompleteBatch)
	}
	if len(ids) == 0 {
		return map[int64]string{}, nil
	}
	jobs, err := s.Store.List(ctx, JobFilter{IDs: ids, Limit: len(ids), Asc: true})
	if err != nil {
		return nil, err
	}
	out := make(map[int64]string, len(jobs))
	for _, j := range jobs {
		out[j.ID] = j.Queue
	}
	return out, nil
}

// Ping reports whether the store answers (readiness).
func (s *Service) Ping(ctx context.Context) error { return s.Store.Ping(ctx) }

// GetDead returns dead-letter row id.
func (s *Service) GetDead(ctx context.Context, id int64) (*DeadJob, error) {
	_, dead, err := s.Store.Lookup(ctx, id)
	if err != nil {
		return nil, err
	}
	if dead == nil {
		return nil, fmt.Errorf("dead-letter row %d: %w", id, ErrNotFound)
	}
	return dead, nil
}

// ReplayInput is the body of POST /api/dlq/{id}/replay: when the new job
// runs, and what it takes other than its row's.
type ReplayInput struct {
	RunAt *time.Time `json:"run_at"`
	Delay *Duration  `json:"delay"`
	ReplayOverride
	// IdempotencyKey (the request's Idempotency-Key header) makes a retried
	// replay answer with the job the first one made.
	IdempotencyKey string `json:"-"`
}

func (in ReplayInput) runAt(now time.Time) (time.Time, error) {
	switch {
	case in.RunAt != nil && in.Delay != nil:
		return now, Invalid("delay", "give run_at or delay, not both")
	case in.RunAt != nil:
		if in.RunAt.Year() < 2000 || in.RunAt.Sub(now) > MaxDelay {
			return now, Invalid("run_at", "run_at is out of range")
		}
		return in.RunAt.UTC(), nil
	case in.Delay != nil:
		if *in.Delay < 0 || in.Delay.D() > MaxDelay {
			return now, Invalid("delay", "delay must be between 0s and 10 years")
		}
		return now.Add(in.Delay.D()), nil
	}
	return now, nil
}

// Replay replays dead-letter row id into a fresh queued job, as actor.
// With an idempotency key, a repeat of a finished replay answers with the
// job it made, and one racing a running replay gets ErrOnceHeld.
func (s *Service) Replay(ctx context.Context, id int64, in ReplayInput, actor string) (*Job, error) {
	at, err := in.runAt(s.Clock.Now())
	if err != nil {
		return nil, err
	}
	if err := in.ReplayOverride.check(true); err != nil {
		return nil, err
	}
	var onceKey string
	if in.IdempotencyKey != "" {
		if len(in.IdempotencyKey) > MaxKeyLength {
			return nil, Invalid("Idempotency-Key", "the Idempotency-Key header is longer than %d bytes", MaxKeyLength)
		}
		onceKey = "dlq.replay " + strconv.FormatInt(id, 10) + " " + in.IdempotencyKey
	}
	override := &in.ReplayOverride
	target := "dead_letter " + strconv.FormatInt(id, 10)
	var filter json.RawMessage
	if set := auditOverride(override); set != nil {
		filter, _ = json.Marshal(map[string]any{"set": set})
	}
	jobs, err := Replay(ctx, s.Store, ReplayRequest{Filter: DeadFilter{IDs: []int64{id}, Limit: 1}, RunAt: at, Override: override,
		OnceKey: onceKey, Audit: &AuditEntry{Actor: actor, Action: "dlq.replay", Target: target, Filter: filter}})
	if err != nil {
		return nil, err
	}
	if len(jobs) == 0 {
		return nil, ErrNotFound
	}
	return jobs[0], nil
}

// Purge deletes dead-letter row id, as actor.
func (s *Service) Purge(ctx context.Context, id int64, actor string) error {
	_, err := Purge(ctx, s.Store, DeadFilter{IDs: []int64{id}, Limit: 1},
		&AuditEntry{Actor: actor, Action: "dlq.purge", Target: "dead_letter " + strconv.FormatInt(id, 10)})
	return err
}

// BulkInput is the body of the bulk DLQ actions and of drain.
type BulkInput struct {
	// The rows (or, for move, jobs) acted on: at least one of IDs, Queue,
	// Kind or Tag, or AllowAll.
	IDs      []int64 `json:"ids,omitempty"`
	Queue    string  `json:"queue,omitempty"`
	Kind     string  `json:"kind,omitempty"`
	Tag      string  `json:"tag,omitempty"`
	AllowAll bool    `json:"allow_all,omitempty"`
	// Narrowing only (replay, purge): the DLQ reason, the time of the move.
	Reason      string     `json:"reason,omitempty"`
	OlderThan   *Duration  `json:"older_than,omitempty"`
	MovedAfter  *time.Time `json:"moved_after,omitempty"`
	MovedBefore *time.Time `json:"moved_before,omitempty"`
	// IncludeReplayed lets a bulk replay take rows replayed before (it
	// skips them otherwise, so a repeated "replay all" makes no second job).
	IncludeReplayed bool `json:"include_replayed,omitempty"`
	// Bound is a dry run's bound: the confirmed action takes no row (job)
	// that arrived after the dry run counted.
	Bound  string  `json:"bound,omitempty"`
	DryRun bool    `json:"dry_run,omitempty"`
	Rate   float64 `json:"rate,omitempty"` // replay: new jobs per second
	// Set overrides what the replayed jobs get from their rows.
	Set   *ReplayOverride `json:"set,omitempty"`
	RunAt *time.Time      `json:"run_at,omitempty"`
	Delay *Duration       `json:"delay,omitempty"`
	// Move: the statuses a job may have (queued, scheduled, cancelled; the
	// default queued and scheduled), and the operator's note on the rows
	// (reason is taken as the note too).
	Statuses []string `json:"statuses,omitempty"`
	Note     string   `json:"note,omitempty"`
}

// BulkResult answers a bulk action: how many rows it touched (or would
// touch, with DryRun, plus a sample of up to 10 of them and the bound to
// confirm with).
type BulkResult struct {
	Count  int        `json:"count"`
	DryRun bool       `json:"dry_run,omitempty"`
	Bound  string     `json:"bound,omitempty"`
	Sample []*DeadJob `json:"sample,omitempty"`
	Jobs   []*Job     `json:"sample_jobs,omitempty"`
}

// Bulk actions.
const (
	BulkReplay = "replay"
	BulkPurge  = "purge"
	BulkMove   = "move"
)

// MaxNote is the longest operator's note an admin move keeps.
const MaxNote = 1024

func (in *BulkInput) check(action string) error {
	if action == BulkMove && in.Note == "" {
		in.Note, in.Reason = in.Reason, "" // move's reason is the operator's text
	}
	if err := validateFilter(in.Queue, in.Kind, in.Tag, in.Reason); err != nil {
		return err
	}
	if len(in.IDs) > 1000 {
		return Invalid("ids", "at most 1000 ids at once")
	}
	if len(in.Note) > MaxNote || (in.Note != "" && action != BulkMove) {
		return Invalid("note", "note is for move, at most %d bytes", MaxNote)
	}
	if action != BulkMove && len(in.Statuses) > 0 {
		return Invalid("statuses", "statuses are for move")
	}
	for _, st := range in.Statuses {
		if st != "queued" && st != "scheduled" && st != "cancelled" {
			return Invalid("statuses", "a job moves from queued, scheduled or cancelled, not %q", clip(st))
		}
	}
	if in.OlderThan != nil && (action == BulkMove || *in.OlderThan < 0) {
		return Invalid("older_than", "older_than is for replay and purge, and positive")
	}
	if (in.MovedAfter != nil || in.MovedBefore != nil) && action == BulkMove {
		return Invalid("moved_after", "moved_after and moved_before are for replay and purge")
	}
	if in.Rate != 0 && action != BulkReplay {
		return Invalid("rate", "rate is for replay: new jobs per second, positive")
	}
	if err := checkRate(in.Rate); err != nil {
		return err
	}
	if (in.Set != nil || in.IncludeReplayed) && action != BulkReplay {
		return Invalid("set", "set and include_replayed are for replay")
	}
	if err := in.Set.check(false); err != nil {
		return err
	}
	if len(in.IDs) == 0 && in.Queue == "" && in.Kind == "" && in.Tag == "" && !in.AllowAll {
		return ErrFilterRequired
	}
	return nil
}

func (in *BulkInput) deadFilter(now time.Time) (DeadFilter, error) {
	f := DeadFilter{IDs: in.IDs, Queue: in.Queue, Kind: in.Kind, Tag: in.Tag, Reason: in.Reason}
	if in.OlderThan != nil {
		f.OlderThan = now.Add(-in.OlderThan.D())
	}
	if in.MovedBefore != nil && (f.OlderThan.IsZero() || in.MovedBefore.Before(f.OlderThan)) {
		f.OlderThan = in.MovedBefore.UTC()
	}
	if in.MovedAfter != nil {
		f.MovedSince = in.MovedAfter.UTC()
	}
	if !in.IncludeReplayed {
		never := false
		f.Replayed = &never
	}
	if in.Bound != "" {
		k, _, err := DecodeDeadCursor(in.Bound, "bound")
		if err != nil {
			return f, err
		}
		f.Upto = k
	}
	return f, nil
}

func (in *BulkInput) auditFilter() json.RawMessage {
	b, _ := json.Marshal(struct {
		IDs             []int64        `json:"ids,omitempty"`
		Queue           string         `json:"queue,omitempty"`
		Kind            string         `json:"kind,omitempty"`
		Tag             string         `json:"tag,omitempty"`
		Reason          string         `json:"reason,omitempty"`
		OlderThan       *Duration      `json:"older_than,omitempty"`
		MovedAfter      *time.Time     `json:"moved_after,omitempty"`
		MovedBefore     *time.Time     `json:"moved_before,omitempty"`
		AllowAll        bool           `json:"allow_all,omitempty"`
		IncludeReplayed bool           `json:"include_replayed,omitempty"`
		Bound           string         `json:"bound,omitempty"`
		Rate            float64        `json:"rate,omitempty"`
		Set             map[string]any `json:"set,omitempty"`
		Statuses        []string       `json:"statuses,omitempty"`
		Note            string         `json:"note,omitempty"`
	}{in.IDs, in.Queue, in.Kind, in.Tag, in.Reason, in.OlderThan, in.MovedAfter, in.MovedBefore, in.AllowAll,
		in.IncludeReplayed, in.Bound, in.Rate, auditOverride(in.Set), in.Statuses, in.Note})
	return b
}

// BulkDead runs a bulk replay, purge or move (jobs into the DLQ) for actor.
// It needs ids, a queue, kind or tag, or AllowAll (else
// ErrFilterRequired); the other filters only narrow. It works in
// transactions of at most BulkBatch rows so other writers never wait long,
// acts only on rows that existed when it started (or when the dry run
// whose bound it carries counted), skips rows replayed before unless
// asked, and records one audit entry with the count. It runs to the end
// even if ctx is cancelled, so a client that goes away leaves a whole,
// audited action.
func (s *Service) BulkDead(ctx context.Context, action string, in BulkInput, actor string) (*BulkResult, error) {
	if err := in.check(action); err != nil {
		return nil, err
	}
	now := s.Clock.Now()
	if action == BulkMove {
		return s.bulkJobs(ctx, action, JobFilter{IDs: in.IDs, Queue: in.Queue, Kind: in.Kind, Tag: in.Tag}, in, actor)
	}
	if action != BulkReplay && action != BulkPurge {
		return nil, Invalid("action", "unknown bulk action %q", action)
	}
	start, err := ReplayInput{RunAt: in.RunAt, Delay: in.Delay}.runAt(now)
	if err != nil {
		return nil, err
	}
	f, err := in.deadFilter(now)
	if err != nil {
		return nil, err
	}
	if action == BulkPurge {
		f.Replayed = nil // a purge takes replayed rows too
	}
	top, err := s.Store.ListDead(context.WithoutCancel(ctx), DeadFilter{IDs: f.IDs, Queue: f.Queue, Kind: f.Kind, Tag: f.Tag, Reason: f.Reason,
		OlderThan: f.OlderThan, MovedSince: f.MovedSince, Replayed: f.Replayed, Upto: f.Upto, Limit: 1})
	if err != nil {
		return nil, err
	}
	if len(top) == 0 && in.DryRun {
		return &BulkResult{DryRun: true}, nil
	}
	if len(top) > 0 {
		f.Upto = top[0].Place()
	}
	if in.DryRun {
		n, err := s.Store.CountDead(ctx, f)
		if err != nil {
			return nil, err
		}
		f.Limit = 10
		sample, err := s.Store.ListDead(ctx, f)
		if err != nil {
			return nil, err
		}
		return &BulkResult{Count: n, DryRun: true, Bound: EncodeDeadCursor(f.Upto, false), Sample: sample}, nil
	}
	ctx = context.WithoutCancel(ctx)
	total := 0
	f.Asc, f.Limit = true, BulkBatch
	spacing := rateSpacing(in.Rate)
	audit := AuditEntry{Actor: actor, Action: "dlq." + action, Filter: in.auditFilter()}
	for len(top) > 0 {
		var n int
		var last int64
		if action == BulkReplay {
			at, sp, fit := spreadBatch(start, now, spacing, total) // saturates at now + MaxDelay
			f.Limit = fit
			jobs, err := Replay(ctx, s.Store, ReplayRequest{Filter: f, RunAt: at, Spacing: sp, Override: in.Set})
			if err != nil {
				return &BulkResult{Count: total}, auditStopped(ctx, s.Store, audit, total, err)
			}
			n = len(jobs)
			if n > 0 {
				last = *jobs[n-1].ReplayedFrom
			}
		} else {
			ids, err := Purge(ctx, s.Store, f, nil)
			if err != nil {
				return &BulkResult{Count: total}, auditStopped(ctx, s.Store, audit, total, err)
			}
			n = len(ids)
			if n > 0 {
				last = ids[n-1]
			}
		}
		total += n
		if n < f.Limit {
			break
		}
		f.AfterID = last
	}
	audit.Count = total
	if err := RecordAudit(ctx, s.Store, audit); err != nil {
		return &BulkResult{Count: total}, err
	}
	return &BulkResult{Count: total}, nil
}

// bulkJobs runs a bulk action over jobs: move to the DLQ (queued and
// scheduled jobs, or the statuses asked for), or drain (queued jobs).
func (s *Service) bulkJobs(ctx context.Context, action string, f JobFilter, in BulkInput, actor string) (*BulkResult, error) {
	f.StatusIn = []Status{StatusQueued}
	if action == BulkMove && len(in.Statuses) == 0 && len(in.IDs) > 0 {
		in.Statuses = []string{"queued", "cancelled"} // jobs named by id move from any status that may
	}
	if slices.Contains(in.Statuses, "cancelled") {
		f.StatusIn = []Status{StatusCancelled}
		if slices.Contains(in.Statuses, "queued") || slices.Contains(in.Statuses, "scheduled") {
			f.StatusIn = append(f.StatusIn, StatusQueued)
		}
	}
	if in.Bound != "" {
		id, _, err := DecodeCursor(in.Bound)
		if err != nil {
			return nil, Invalid("bound", "bound is not one this server made; run the dry run again")
		}
		f.MaxID = id
	}
	top, err := s.Store.List(context.WithoutCancel(ctx), JobFilter{IDs: f.IDs, Queue: f.Queue, Kind: f.Kind, Tag: f.Tag, StatusIn: f.StatusIn, MaxID: f.MaxID, Limit: 1})
	if err != nil {
		return nil, err
	}
	if len(top) > 0 {
		f.MaxID = top[0].ID
	}
	if in.DryRun {
		n, err := s.Store.CountJobs(ctx, f)
		if err != nil || n == 0 {
			return &BulkResult{DryRun: true}, err
		}
		f.Limit = 10
		sample, err := s.Store.List(ctx, f)
		if err != nil {
			return nil, err
		}
		return &BulkResult{Count: n, DryRun: true, Bound: EncodeCursor(f.MaxID, false), Jobs: sample}, nil
	}
	if len(in.IDs) == 1 && len(top) == 0 {
		return nil, s.cannotMove(ctx, in.IDs[0])
	}
	ctx = context.WithoutCancel(ctx)
	total := 0
	f.Asc, f.Limit = true, BulkBatch
	name := "dlq.move"
	if action != BulkMove {
		name = "queue.drain"
	}
	audit := AuditEntry{Actor: actor, Action: name, Filter: in.auditFilter()}
	for len(top) > 0 {
		var ids []int64
		if action == BulkMove {
			ids, err = MoveToDead(ctx, s.Store, f, in.Note, nil)
		} else {
			ids, err = Drain(ctx, s.Store, f, nil)
		}
		if err != nil {
			return &BulkResult{Count: total}, auditStopped(ctx, s.Store, audit, total, err)
		}
		total += len(ids)
		if len(ids) < BulkBatch {
			break
		}
		f.AfterID = ids[len(ids)-1]
	}
	audit.Count = total
	if err := RecordAudit(ctx, s.Store, audit); err != nil {
		return &BulkResult{Count: total}, err
	}
	return &BulkResult{Count: total}, nil
}

// cannotMove says why job id, named alone, cannot move to the DLQ.
func (s *Service) cannotMove(ctx context.Context, id int64) error {
	job, dead, err := s.Store.Lookup(ctx, id)
	switch {
	case err != nil:
		return err
	case dead != nil:
		return fmt.Errorf("job %d is in the dead-letter queue already: %w", id, ErrIllegalTransition)
	}
	return fmt.Errorf("job %d is %s; a job moves to the dead-letter queue from queued, scheduled or cancelled (statuses): %w",
		id, job.Status, ErrIllegalTransition)
}

// Drain cancels every queued job of queue (reason drained), as actor.
func (s *Service) Drain(ctx context.Context, queue string, dryRun bool, actor string) (*BulkResult, error) {
	if err := ValidateQueue(queue); err != nil {
		return nil, Invalid("queue", "%v", err)
	}
	return s.bulkJobs(ctx, "drain", JobFilter{Queue: queue}, BulkInput{Queue: queue, DryRun: dryRun}, actor)
}

// QueueInfo is a queue as GET /api/queues shows it.
type QueueInfo struct {
	Name     string      `json:"name"`
	Paused   bool        `json:"paused"`
	PausedAt *time.Time  `json:"paused_at,omitempty"`
	Config   QueueConfig `json:"config"`
}

// Queues lists the queues the store knows and those the config names.
func (s *Service) Queues(ctx context.Context) ([]QueueInfo, error) {
	states, err := s.Store.Queues(ctx)
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	out := []QueueInfo{}
	for _, q := range states {
		seen[q.Name] = true
		out = append(out, QueueInfo{Name: q.Name, Paused: q.Paused, PausedAt: q.PausedAt, Config: s.Config.Queue(q.Name)})
	}
	for _, name := range s.Config.QueueNames() {
		if !seen[name] {
			out = append(out, QueueInfo{Name: name, Config: s.Config.Queue(name)})
		}
	}
	sortQueues(out)
	return out, nil
}

func sortQueues(qs []QueueInfo) {
	for i := 1; i < len(qs); i++ {
		for j := i; j > 0 && qs[j].Name < qs[j-1].Name; j-- {
			qs[j], qs[j-1] = qs[j-1], qs[j]
		}
	}
}

// SetPaused pauses or resumes queue, as actor.
func (s *Service) SetPaused(ctx context.Context, queue string, paused bool, actor string) error {
	if err := ValidateQueue(queue); err != nil {
		return Invalid("queue", "%v", err)
	}
	action := "queue.resume"
	if paused {
		action = "queue.pause"
	}
	return SetPaused(ctx, s.Store, queue, paused, &AuditEntry{Actor: actor, Action: action, Target: "queue " + queue})
}

// Stats is GET /api/stats: every queue, and the total, and the kinds no
// worker claims.
type Stats struct {
	Queues         []QueueStats    `json:"queues"`
	Total          QueueStats      `json:"total"`
	UnclaimedKinds []UnclaimedKind `json:"unclaimed_kinds"`
	At             time.Time       `json:"at"`
}

// Stats counts jobs per queue and in total.
func (s *Service) Stats(ctx context.Context) (*Stats, error) {
	qs, err := s.Store.Stats(ctx)
	if err != nil {
		return nil, err
	}
	if qs == nil {
		qs = []QueueStats{}
	}
	now := s.Clock.Now()
	unclaimed, err := s.unclaimedKinds(ctx, now)
	if err != nil {
		return nil, err
	}
	return &Stats{Queues: qs, Total: TotalStats(qs), UnclaimedKinds: unclaimed, At: now}, nil
}

// RecordDenied audits a request that actor's token was not allowed to make
// (target names it: "POST /api/queues/:queue/pause"), so the trail shows
// who tried what, not only what was done.
func (s *Service) RecordDenied(ctx context.Context, actor, target string) error {
	return RecordAudit(ctx, s.Store, AuditEntry{Actor: actor, Action: "auth.denied", Target: target})
}

// Audit lists admin actions, newest first.
func (s *Service) Audit(ctx context.Context, f AuditFilter) ([]AuditEntry, error) {
	if f.Limit == 0 {
		f.Limit = 100
	}
	if f.Limit < 1 || f.Limit > 1000 {
		return nil, Invalid("limit", "limit must be between 1 and 1000")
	}
	out, err := s.Store.ListAudit(ctx, f)
	if out == nil {
		out = []AuditEntry{}
	}
	return out, err
}
