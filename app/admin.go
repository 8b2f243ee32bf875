package app

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"
)

// DeadListInput is the query of GET /api/dlq.
type DeadListInput struct {
	Queue, Kind, Tag, Reason string
	Limit                    int
	Cursor                   string
	Asc                      bool
}

// DeadPage is one page of the dead-letter queue.
type DeadPage struct {
	Jobs       []*DeadJob `json:"jobs"`
	NextCursor string     `json:"next_cursor"`
}

// ListDead returns one page of dead-letter rows, newest first unless in.Asc.
func (s *Service) ListDead(ctx context.Context, in DeadListInput) (*DeadPage, error) {
	f := DeadFilter{Queue: in.Queue, Kind: in.Kind, Tag: in.Tag, Reason: in.Reason, Asc: in.Asc, Limit: in.Limit}
	if err := validateFilter(f.Queue, f.Kind, f.Tag, f.Reason); err != nil {
		return nil, err
	}
	if f.Limit == 0 {
		f.Limit = 50
	}
	if f.Limit < 1 || f.Limit > 1000 {
		return nil, Invalid("limit", "limit must be between 1 and 1000")
	}
	if in.Cursor != "" {
		id, asc, err := DecodeCursor(in.Cursor)
		if err != nil {
			return nil, err
		}
		f.AfterID, f.Asc = id, asc
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
		page.NextCursor = EncodeCursor(rows[len(rows)-1].ID, f.Asc)
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

// GetDead returns dead-letter row id.
// CountDead counts the dead-letter rows that match a list's filters.
func (s *Service) CountDead(ctx context.Context, in DeadListInput) (int, error) {
	if err := validateFilter(in.Queue, in.Kind, in.Tag, in.Reason); err != nil {
		return 0, err
	}
	return s.Store.CountDead(ctx, DeadFilter{Queue: in.Queue, Kind: in.Kind, Tag: in.Tag, Reason: in.Reason})
}

// DeadByIDs returns the dead-letter rows of ids that exist (at most 1,000).
func (s *Service) DeadByIDs(ctx context.Context, ids []int64) ([]*DeadJob, error) {
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

// ReplayInput is the body of POST /api/dlq/{id}/replay.
type ReplayInput struct {
	RunAt *time.Time `json:"run_at"`
	Delay *Duration  `json:"delay"`
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
func (s *Service) Replay(ctx context.Context, id int64, in ReplayInput, actor string) (*Job, error) {
	at, err := in.runAt(s.Clock.Now())
	if err != nil {
		return nil, err
	}
	jobs, err := Replay(ctx, s.Store, ReplayRequest{Filter: DeadFilter{IDs: []int64{id}, Limit: 1}, RunAt: at,
		Audit: &AuditEntry{Actor: actor, Action: "dlq.replay", Target: "dead_letter " + strconv.FormatInt(id, 10)}})
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
	Queue     string     `json:"queue,omitempty"`
	Kind      string     `json:"kind,omitempty"`
	Tag       string     `json:"tag,omitempty"`
	Reason    string     `json:"reason,omitempty"`     // replay and purge
	OlderThan *Duration  `json:"older_than,omitempty"` // purge: rows moved longer ago than this
	AllowAll  bool       `json:"allow_all,omitempty"`
	DryRun    bool       `json:"dry_run,omitempty"`
	Rate      float64    `json:"rate,omitempty"` // replay: new jobs per second
	RunAt     *time.Time `json:"run_at,omitempty"`
	Delay     *Duration  `json:"delay,omitempty"`
}

// BulkResult answers a bulk action: how many rows it touched (or would
// touch, with DryRun, plus a sample of up to 10 of them).
type BulkResult struct {
	Count  int        `json:"count"`
	DryRun bool       `json:"dry_run,omitempty"`
	Sample []*DeadJob `json:"sample,omitempty"`
	Jobs   []*Job     `json:"sample_jobs,omitempty"`
}

// Bulk actions.
const (
	BulkReplay = "replay"
	BulkPurge  = "purge"
	BulkMove   = "move"
)

func (in *BulkInput) check(action string) error {
	if err := validateFilter(in.Queue, in.Kind, in.Tag, in.Reason); err != nil {
		return err
	}
	if action == BulkMove && in.Reason != "" {
		return Invalid("reason", "move takes queue, kind and tag (queued jobs have no reason)")
	}
	if in.OlderThan != nil && (action != BulkPurge || *in.OlderThan < 0) {
		return Invalid("older_than", "older_than is for purge, and positive")
	}
	if in.Rate < 0 || in.Rate > 1e6 || (in.Rate > 0 && action != BulkReplay) {
		return Invalid("rate", "rate is for replay: new jobs per second, positive")
	}
	if in.Queue == "" && in.Kind == "" && in.Tag == "" && in.Reason == "" && in.OlderThan == nil && !in.AllowAll {
		return ErrFilterRequired
	}
	return nil
}

func (in *BulkInput) deadFilter(now time.Time) DeadFilter {
	f := DeadFilter{Queue: in.Queue, Kind: in.Kind, Tag: in.Tag, Reason: in.Reason}
	if in.OlderThan != nil {
		f.OlderThan = now.Add(-in.OlderThan.D())
	}
	return f
}

func (in *BulkInput) auditFilter() json.RawMessage {
	b, _ := json.Marshal(struct {
		Queue     string    `json:"queue,omitempty"`
		Kind      string    `json:"kind,omitempty"`
		Tag       string    `json:"tag,omitempty"`
		Reason    string    `json:"reason,omitempty"`
		OlderThan *Duration `json:"older_than,omitempty"`
		AllowAll  bool      `json:"allow_all,omitempty"`
		Rate      float64   `json:"rate,omitempty"`
	}{in.Queue, in.Kind, in.Tag, in.Reason, in.OlderThan, in.AllowAll, in.Rate})
	return b
}

// BulkDead runs a bulk replay, purge or move (queued jobs into the DLQ)
// for actor. It needs a filter or AllowAll (else ErrFilterRequired), works
// in transactions of at most BulkBatch rows so other writers never wait
// long, acts only on rows that existed when it started, and records one
// audit entry with the count. It runs to the end even if ctx is cancelled,
// so a client that goes away leaves a whole, audited action.
func (s *Service) BulkDead(ctx context.Context, action string, in BulkInput, actor string) (*BulkResult, error) {
	if err := in.check(action); err != nil {
		return nil, err
	}
	now := s.Clock.Now()
	if action == BulkMove {
		return s.bulkJobs(ctx, action, JobFilter{Queue: in.Queue, Kind: in.Kind, Tag: in.Tag}, in, actor)
	}
	if action != BulkReplay && action != BulkPurge {
		return nil, Invalid("action", "unknown bulk action %q", action)
	}
	start, err := ReplayInput{RunAt: in.RunAt, Delay: in.Delay}.runAt(now)
	if err != nil {
		return nil, err
	}
	f := in.deadFilter(now)
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
		return &BulkResult{Count: n, DryRun: true, Sample: sample}, nil
	}
	ctx = context.WithoutCancel(ctx)
	top, err := s.Store.ListDead(ctx, DeadFilter{Queue: f.Queue, Kind: f.Kind, Tag: f.Tag, Reason: f.Reason, OlderThan: f.OlderThan, Limit: 1})
	if err != nil {
		return nil, err
	}
	total := 0
	if len(top) > 0 {
		f.MaxID, f.Asc, f.Limit = top[0].ID, true, BulkBatch
		var spacing time.Duration
		if in.Rate > 0 {
			spacing = time.Duration(float64(time.Second) / in.Rate)
		}
		for {
			var n int
			var last int64
			if action == BulkReplay {
				jobs, err := Replay(ctx, s.Store, ReplayRequest{Filter: f, RunAt: start.Add(spacing * time.Duration(total)), Spacing: spacing})
				if err != nil {
					return &BulkResult{Count: total}, err
				}
				n = len(jobs)
				if n > 0 {
					last = *jobs[n-1].ReplayedFrom
				}
			} else {
				ids, err := Purge(ctx, s.Store, f, nil)
				if err != nil {
					return &BulkResult{Count: total}, err
				}
				n = len(ids)
				if n > 0 {
					last = ids[n-1]
				}
			}
			total += n
			if n < BulkBatch {
				break
			}
			f.AfterID = last
		}
	}
	if err := RecordAudit(ctx, s.Store, AuditEntry{Actor: actor, Action: "dlq." + action, Filter: in.auditFilter(), Count: total}); err != nil {
		return &BulkResult{Count: total}, err
	}
	return &BulkResult{Count: total}, nil
}

// bulkJobs runs a bulk action over queued jobs: move to the DLQ, or drain.
func (s *Service) bulkJobs(ctx context.Context, action string, f JobFilter, in BulkInput, actor string) (*BulkResult, error) {
	f.StatusIn = []Status{StatusQueued}
	if in.DryRun {
		n, err := s.Store.CountJobs(ctx, f)
		if err != nil {
			return nil, err
		}
		f.Limit = 10
		sample, err := s.Store.List(ctx, f)
		if err != nil {
			return nil, err
		}
		return &BulkResult{Count: n, DryRun: true, Jobs: sample}, nil
	}
	ctx = context.WithoutCancel(ctx)
	top, err := s.Store.List(ctx, JobFilter{Queue: f.Queue, Kind: f.Kind, Tag: f.Tag, StatusIn: f.StatusIn, Limit: 1})
	if err != nil {
		return nil, err
	}
	total := 0
	if len(top) > 0 {
		f.MaxID, f.Asc, f.Limit = top[0].ID, true, BulkBatch
		for {
			var ids []int64
			if action == BulkMove {
				ids, err = MoveToDead(ctx, s.Store, f, nil)
			} else {
				ids, err = Drain(ctx, s.Store, f, nil)
			}
			if err != nil {
				return &BulkResult{Count: total}, err
			}
			total += len(ids)
			if len(ids) < BulkBatch {
				break
			}
			f.AfterID = ids[len(ids)-1]
		}
	}
	name := "dlq.move"
	if action != BulkMove {
		name = "queue.drain"
	}
	if err := RecordAudit(ctx, s.Store, AuditEntry{Actor: actor, Action: name, Filter: in.auditFilter(), Count: total}); err != nil {
		return &BulkResult{Count: total}, err
	}
	return &BulkResult{Count: total}, nil
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
	for name := range s.Config.Queues {
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

// Stats is GET /api/stats: every queue, and the total.
type Stats struct {
	Queues []QueueStats `json:"queues"`
	Total  QueueStats   `json:"total"`
	At     time.Time    `json:"at"`
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
	return &Stats{Queues: qs, Total: TotalStats(qs), At: s.Clock.Now()}, nil
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
