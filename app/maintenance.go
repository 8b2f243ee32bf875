package app

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"time"
)

// Maintainer keeps the store tidy: every Interval it recovers expired
// leases and expires TTLs (Tick); on the retention schedule it deletes old
// rows in bounded passes (Sweep). Time comes from the Service's Clock, so
// tests call Tick and Sweep after moving a FakeClock instead of sleeping.
type Maintainer struct {
	Service *Service

	alerted   map[string]bool // queues over the DLQ alert threshold at the last check
	alertedAt time.Time       // the last check
	charts    chartPass       // the charts' roll-ups (charts.go)
}

// Tick runs one round of the every-second work: stale leases, then TTLs.
// It loops while a pass was full, so a backlog clears in one tick.
func (m *Maintainer) Tick(ctx context.Context) error {
	s := m.Service
	for i := 0; i < 100; i++ {
		ended, err := recoverStale(ctx, s.Store, BulkBatch, s.Config.Backoff)
		if err != nil {
			return err
		}
		s.traceLeaseLost(ended)
		n := len(ended)
		if n > 0 {
			s.Log.Info().Int("jobs", n).Msg("expired leases recovered")
		}
		if n < BulkBatch {
			break
		}
	}
	for i := 0; i < 100; i++ {
		n, err := ExpireTTL(ctx, s.Store, BulkBatch)
		if err != nil {
			return err
		}
		if n > 0 {
			s.Log.Info().Int("jobs", n).Msg("jobs expired")
		}
		if n < BulkBatch {
			break
		}
	}
	return nil
}

// AlertDLQ, at most once a minute, submits a job of kind AlertKind (payload
// {"queue", "dead_letter", "threshold"}) to the DLQ alert hook's queue for
// each queue whose dead-letter rows reached the threshold since the last
// check: once per crossing, and at most once a day per queue (the job's
// idempotency key), also across restarts and leaders.
func (m *Maintainer) AlertDLQ(ctx context.Context) error {
	s := m.Service
	a, now := s.Config.DLQAlert, s.Clock.Now()
	if a.Queue == "" || now.Sub(m.alertedAt) < time.Minute {
		return nil
	}
	m.alertedAt = now
	threshold := cmp.Or(a.Threshold, 100)
	stats, err := s.Store.Stats(ctx)
	if err != nil {
		return err
	}
	over := map[string]bool{}
	for _, q := range stats {
		if over[q.Queue] = q.DeadLetter >= int64(threshold); !over[q.Queue] || m.alerted[q.Queue] || q.Queue == a.Queue {
			continue
		}
		payload, _ := json.Marshal(map[string]any{"queue": q.Queue, "dead_letter": q.DeadLetter, "threshold": threshold})
		key := "dlq.alert " + q.Queue + " " + now.UTC().Format(time.DateOnly)
		if _, err := s.Submit(ctx, []SubmitInput{{Queue: a.Queue, Kind: AlertKind, Payload: payload, IdempotencyKey: key}}); err != nil {
			return err
		}
		s.Log.Warn().Str("queue", q.Queue).Int64("dead_letter", q.DeadLetter).Int("threshold", threshold).Msg("dead-letter queue over its alert threshold")
	}
	m.alerted = over
	return nil
}

// Run calls Tick every interval (if zero, 1s) until ctx is done.
func (m *Maintainer) Run(ctx context.Context, interval time.Duration) {
	if interval <= 0 {
		interval = time.Second
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		if err := m.Tick(ctx); err != nil && ctx.Err() == nil {
			m.Service.Log.Error().Err(err).Msg("maintenance tick failed")
		}
		if err := m.AlertDLQ(ctx); err != nil && ctx.Err() == nil {
			m.Service.Log.Error().Err(err).Msg("dead-letter alert check failed")
		}
		if err := m.Charts(ctx); err != nil && ctx.Err() == nil {
			m.Service.Log.Error().Err(err).Msg("chart roll-up failed")
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// SweepResult counts what one Sweep deleted.
type SweepResult struct {
	Finished, Dead, Events, Audit, Workflows, Other int
}

// Sweep deletes what retention allows: done and cancelled jobs past their
// queue's retention (default 24h), dead-letter rows past dlq_retention by
// moved_to_dead_letter_at (default 30 days), events and audit past 7 days,
// and old bookkeeping. Each statement deletes at most BulkBatch rows.
func (m *Maintainer) Sweep(ctx context.Context) (SweepResult, error) {
	s := m.Service
	now := s.Clock.Now()
	var res SweepResult
	var errs []error
	pass := func(req DeleteOldRequest, into *int) {
		req.Limit = BulkBatch
		for i := 0; i < 10000; i++ { // bounded: a huge backlog finishes on later sweeps
			n, err := s.Store.DeleteOld(ctx, req)
			*into += n
			if err != nil {
				errs = append(errs, err)
				return
			}
			if n < BulkBatch || ctx.Err() != nil {
				return
			}
		}
	}
	// Queues with their own windows get their own passes; the default pass skips them.
	def := s.Config.Queue("\x00") // no such queue: the [defaults] and built-ins
	var ownRet, ownDLQ []string
	for _, name := range s.Config.QueueNames() { // the file's and those set at runtime
		q := s.Config.Queue(name)
		if q.Retention != def.Retention {
			ownRet = append(ownRet, name)
			pass(DeleteOldRequest{What: OldFinished, Queue: name, Before: now.Add(-q.Retention.D())}, &res.Finished)
		}
		if q.DLQRetention != def.DLQRetention {
			ownDLQ = append(ownDLQ, name)
			pass(DeleteOldRequest{What: OldDead, Queue: name, Before: now.Add(-q.DLQRetention.D())}, &res.Dead)
		}
	}
	pass(DeleteOldRequest{What: OldFinished, Except: ownRet, Before: now.Add(-def.Retention.D())}, &res.Finished)
	pass(DeleteOldRequest{What: OldDead, Except: ownDLQ, Before: now.Add(-def.DLQRetention.D())}, &res.Dead)
	// A workflow's jobs stay while it runs (its steps' results are read by
	// its later steps and its page), and go with it: after the default
	// retention from the moment it finished.
	pass(DeleteOldRequest{What: OldWorkflows, Before: now.Add(-def.Retention.D())}, &res.Workflows)
	// Logs go with their job (the SQL stores' triggers); the memory store's
	// of jobs gone from both tables go here (progress.go).
	pass(DeleteOldRequest{What: OldLogs, Before: now}, &res.Other)
	evRet, auRet := s.Config.EventRetention.D(), s.Config.AuditRetention.D()
	if evRet <= 0 {
		evRet = DefaultEventRetention
	}
	if auRet <= 0 {
		auRet = DefaultEventRetention
	}
	pass(DeleteOldRequest{What: OldEvents, Before: now.Add(-evRet)}, &res.Events)
	pass(DeleteOldRequest{What: OldAudit, Before: now.Add(-auRet)}, &res.Audit)
	pass(DeleteOldRequest{What: OldOnce, Before: now.Add(-evRet)}, &res.Other)
	pass(DeleteOldRequest{What: OldPeriodic, Before: now.Add(-evRet)}, &res.Other)
	pass(DeleteOldRequest{What: OldThroughput, Before: now.Add(-SecondsKept)}, &res.Other)
	for _, r := range chartRetention(now) {
		pass(r, &res.Other)
	}
	if n, err := m.sweepWorkers(ctx, now); err != nil { // workers not seen for an hour (workers.go)
		errs = append(errs, err)
	} else {
		res.Other += n
	}
	if res.Finished+res.Dead+res.Events+res.Audit+res.Workflows > 0 {
		s.Log.Info().Int("jobs", res.Finished).Int("dead_letter", res.Dead).Int("events", res.Events).Int("workflows", res.Workflows).
			Int("audit", res.Audit).Msg("retention pass")
	}
	return res, errors.Join(errs...)
}
