package memory

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"time"

	"github.com/queuehq/queue/app"
)

// ListDead implements app.Store.
func (s *Store) ListDead(ctx context.Context, f app.DeadFilter) ([]*app.DeadJob, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rows := pick(s.dead, f.Conds(), deadFields, byMove, f.Asc, f.Limit, 50)
	var out []*app.DeadJob
	for _, d := range rows {
		out = append(out, d.Clone())
	}
	return out, nil
}

// CountDead implements app.Store.
func (s *Store) CountDead(ctx context.Context, f app.DeadFilter) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f.AfterID, f.Limit = 0, len(s.dead)+1
	return len(s.selectDead(f, 0)), nil
}

// DeadGroups implements app.Store.
func (s *Store) DeadGroups(ctx context.Context) ([]app.DeadGroup, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return app.GroupDead(maps.Values(s.dead)), nil
}

// Waiting implements app.Store.
func (s *Store) Waiting(ctx context.Context, dueBefore time.Time) ([]app.KindWait, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return app.GroupWaiting(maps.Values(s.jobs), s.clock.Now(), dueBefore), nil
}

// Queues implements app.Store.
func (s *Store) Queues(ctx context.Context) ([]app.QueueState, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []app.QueueState
	for name, q := range s.queues {
		out = append(out, app.QueueState{Name: name, Paused: q.paused, PausedAt: copyTime(q.pausedAt)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// Stats implements app.Store.
func (s *Store) Stats(ctx context.Context) ([]app.QueueStats, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.clock.Now()
	t := app.NewTally()
	for name := range s.queues {
		t.Queue(name)
	}
	for _, j := range s.jobs {
		t.Job(j, now)
	}
	for _, d := range s.dead {
		t.Add(d.Queue, string(app.StatusDeadLetter), 1)
	}
	for k, c := range s.throughput {
		if k.Second > now.Unix()-60 {
			t.LastMinute(k.Queue, c.Completed, c.Failed)
		}
	}
	return t.Stats(now), nil
}

// Throughput implements app.Store.
func (s *Store) Throughput(ctx context.Context, since time.Time) ([]app.MinuteCount, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sum := map[app.CountKey]*app.MinuteCount{} // by queue and minute
	for k, c := range s.throughput {
		mk := app.CountKey{Queue: k.Queue, Second: k.Second / 60 * 60}
		if m := sum[mk]; m != nil && k.Second >= since.Unix() {
			m.Completed, m.Failed = m.Completed+c.Completed, m.Failed+c.Failed
		} else if k.Second >= since.Unix() {
			sum[mk] = &app.MinuteCount{Queue: k.Queue, Minute: time.Unix(mk.Second, 0).UTC(), Completed: c.Completed, Failed: c.Failed}
		}
	}
	out := make([]app.MinuteCount, 0, len(sum))
	for _, m := range sum {
		out = append(out, *m)
	}
	sort.Slice(out, func(i, j int) bool {
		return out[i].Minute.Before(out[j].Minute) || out[i].Minute.Equal(out[j].Minute) && out[i].Queue < out[j].Queue
	})
	return out, nil
}

// DeleteOld implements app.Store.
func (s *Store) DeleteOld(ctx context.Context, req app.DeleteOldRequest) (int, error) {
	if req.What == app.OldLogs {
		return s.deleteOldLogs(ctx, req)
	}
	if req.What == app.OldWorkflows {
		return app.DeleteOldWorkflows(ctx, s, req.Before, req.Limit)
	}
	limit := min(max(req.Limit, 1), app.BulkBatch)
	inScope := func(queue string) bool {
		return (req.Queue == "" || queue == req.Queue) && !slices.Contains(req.Except, queue)
	}
	n := 0
	err := s.write(ctx, func(t *tx) error {
		n = 0
		switch req.What {
		case app.OldFinished:
			for _, j := range s.selectJobs(app.JobFilter{StatusIn: []app.Status{app.StatusDone, app.StatusCancelled}, Asc: true}, t.now, len(s.jobs)+1) {
				if n < limit && inScope(j.Queue) && j.WorkflowID == 0 && j.FinishedAt != nil && j.FinishedAt.Before(req.Before) {
					t.deleteJob(j.ID)
					n++
				}
			}
			return t.Fault(app.FaultDelete, 0)
		case app.OldDead:
			for _, d := range s.selectDead(app.DeadFilter{OlderThan: req.Before, Asc: true}, len(s.dead)+1) {
				if n < limit && inScope(d.Queue) {
					t.deleteDead(d.ID)
					n++
				}
			}
			return t.Fault(app.FaultDelete, 0)
		case app.OldEvents:
			n = dropOld(t, &s.events, limit, func(e app.Event) bool { return e.At.Before(req.Before) })
		case app.OldAudit:
			n = dropOld(t, &s.audit, limit, func(e app.AuditEntry) bool { return e.At.Before(req.Before) })
		case app.OldOnce:
			n = dropKeys(t, s.once, limit, func(_ string, r *app.OnceRecord) bool {
				return r.Done && r.DoneAt != nil && r.DoneAt.Before(req.Before)
			})
		case app.OldPeriodic:
			latest := map[string]int64{}
			for k := range s.fires {
				latest[k.entry] = max(latest[k.entry], k.at)
			}
			n = dropKeys(t, s.fires, limit, func(k fireKey, _ int64) bool {
				return k.at < req.Before.UnixMilli() && k.at < latest[k.entry]
			})
		case app.OldThroughput:
			n = dropKeys(t, s.throughput, limit, func(k app.CountKey, _ *app.CountVal) bool { return k.Second < req.Before.Unix() })
		case app.OldMinutes, app.OldHours:
			step := map[string]int64{app.OldMinutes: 60, app.OldHours: 3600}[req.What]
			n = dropKeys(t, s.series, limit, func(k seriesKey, _ *app.SeriesRow) bool { return k.step == step && k.at < req.Before.Unix() })
		default:
			return fmt.Errorf("delete old: unknown kind %q", req.What)
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("delete old %s: %w", req.What, err)
	}
	return n, nil
}

// dropOld deletes from *list up to limit entries old says are old, oldest
// first, and returns how many.
func dropOld[T any](t *tx, list *[]T, limit int, old func(T) bool) int {
	prev := *list
	keep, n := prev[:0:0], 0
	for _, e := range prev {
		if n < limit && old(e) {
			n++
			continue
		}
		keep = append(keep, e)
	}
	*list = keep
	t.undo = append(t.undo, func() { *list = prev })
	return n
}

// dropKeys deletes from m up to limit entries old says are old, and
// returns how many.
func dropKeys[K comparable, V any](t *tx, m map[K]V, limit int, old func(K, V) bool) int {
	n := 0
	for k, v := range m {
		if n < limit && old(k, v) {
			delete(m, k)
			t.undo = append(t.undo, func() { m[k] = v })
			n++
		}
	}
	return n
}

// LastFire implements app.Store.
func (s *Store) LastFire(ctx context.Context, entry string) (time.Time, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var last int64
	found := false
	for k := range s.fires {
		if k.entry == entry && (!found || k.at > last) {
			last, found = k.at, true
		}
	}
	if !found {
		return time.Time{}, nil
	}
	return time.UnixMilli(last).UTC(), nil
}

// ListAudit implements app.Store.
func (s *Store) ListAudit(ctx context.Context, f app.AuditFilter) ([]app.AuditEntry, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	limit := f.Limit
	if limit <= 0 {
		limit = 50
	}
	var out []app.AuditEntry
	for i := len(s.audit) - 1; i >= 0 && len(out) < limit; i-- {
		e := s.audit[i]
		if (f.Action != "" && e.Action != f.Action) || (f.BeforeID > 0 && e.ID >= f.BeforeID) {
			continue
		}
		e.Filter = slices.Clone(e.Filter)
		out = append(out, e)
	}
	return out, nil
}

// Once implements app.Tx.
func (t *tx) Once(key string) (*app.OnceRecord, error) {
	r, ok := t.s.once[key]
	if !ok {
		r = &app.OnceRecord{Key: key, CreatedAt: t.now}
		put(t, t.s.once, key, r)
	}
	c := *r
	return &c, nil
}

// SaveOnce implements app.Tx.
func (t *tx) SaveOnce(r *app.OnceRecord) error {
	c := *r
	c.Result, c.Acquired = slices.Clone(r.Result), false
	put(t, t.s.once, r.Key, &c)
	return nil
}
