package app

import (
	"context"
	"encoding/json"
	"fmt"
	"time"
)

// Precedence says which source of a queue's policy wins, for the API's
// answer (docs/configuration.md says the same).
const Precedence = "a setting changed at runtime (API, CLI, pages; kept in the database) wins over the config file, " +
	"field by field; a field not set at runtime comes from the file's [queues.NAME], then [defaults], then the built-in default"

// QueueSettingsView is a queue's settings as GET /api/queues/{queue}/settings
// shows them: the policy in effect, the fields set at runtime, the fields
// the config file sets, and where each field of the policy comes from.
type QueueSettingsView struct {
	Queue     string            `json:"queue"`
	Effective QueueConfig       `json:"effective"`
	Runtime   map[string]any    `json:"runtime"`
	File      map[string]any    `json:"file"`
	Sources   map[string]string `json:"sources"`
	UpdatedAt *time.Time        `json:"updated_at"`
	UpdatedBy *string           `json:"updated_by"`
	// Precedence is the rule that makes Effective (see Precedence).
	Precedence string `json:"precedence"`
}

// QueueSettings returns the settings of queue as they are in effect here.
func (s *Service) QueueSettings(ctx context.Context, queue string) (*QueueSettingsView, error) {
	if err := ValidateQueue(queue); err != nil {
		return nil, Invalid("queue", "%v", err)
	}
	v := &QueueSettingsView{Queue: queue, Effective: s.Config.Queue(queue), Runtime: map[string]any{}, Precedence: Precedence}
	v.File, v.Sources = s.Config.FileSettings(queue)
	if rs, ok := s.Config.runtime().Queues[queue]; ok {
		v.Runtime = rs.Settings.Values()
		at, by := rs.UpdatedAt, rs.UpdatedBy
		v.UpdatedAt, v.UpdatedBy = &at, &by
	}
	return v, nil
}

// PatchQueueSettings changes the runtime settings of queue, audited
// (queue.settings, with the fields changed as its filter): each name of
// patch a QueueConfig json name, its value the new one or null to unset it
// (the config file's value applies again). The settings are checked as
// the config file's are (ValidateQueueSettings); an error names the field
// and changes nothing. The change takes effect here at once (the next
// claim or submission) and on the other nodes within a second; a change
// of key limits sweeps the held keys, so jobs a raised limit makes room
// for are released.
func (s *Service) PatchQueueSettings(ctx context.Context, queue string, patch map[string]json.RawMessage, actor string) (*QueueSettingsView, error) {
	if err := ValidateQueue(queue); err != nil {
		return nil, Invalid("queue", "%v", err)
	}
	if len(patch) == 0 {
		return nil, Invalid("settings", "give at least one setting, e.g. {\"concurrency\": 3}; null unsets one")
	}
	var probe QueueSettings // the patch alone: its fields' types, and what the audit shows
	if err := probe.Patch(patch); err != nil {
		return nil, err
	}
	changed := map[string]any{}
	vals := probe.Values()
	fields := make([]string, 0, len(patch))
	for _, name := range SettingNames() {
		if _, ok := patch[name]; ok {
			changed[name] = vals[name] // nil: unset
			fields = append(fields, name)
		}
	}
	filter, _ := json.Marshal(changed)
	err := s.Store.Write(ctx, func(tx Tx) error {
		cur, err := queueSettingsOf(tx, queue)
		if err != nil {
			return err
		}
		if err := cur.Patch(patch); err != nil {
			return err
		}
		eff := s.Config.fileQueue(queue)
		cur.Apply(&eff)
		if err := ValidateQueueSettings(cur, eff); err != nil {
			return err
		}
		value, err := json.Marshal(cur)
		if err != nil {
			return err
		}
		return s.writeSetting(tx, SettingsRecord{Kind: SettingQueue, Name: queue, Value: value, UpdatedBy: actor}, cur.Empty(),
			queue, map[string]any{"queue": queue, "fields": fields},
			AuditEntry{Actor: actor, Action: "queue.settings", Target: "queue " + queue, Filter: filter})
	})
	if err != nil {
		return nil, fmt.Errorf("queue settings of %s: %w", queue, err)
	}
	s.reloadAfterChange(ctx)
	if touchesKeyLimits(fields) {
		s.sweepKeys(ctx)
	}
	return s.QueueSettings(ctx, queue)
}

// ResetQueueSettings unsets every runtime setting of queue, audited
// (queue.settings.reset): the config file's policy applies again.
func (s *Service) ResetQueueSettings(ctx context.Context, queue, actor string) (*QueueSettingsView, error) {
	if err := ValidateQueue(queue); err != nil {
		return nil, Invalid("queue", "%v", err)
	}
	var fields []string
	err := s.Store.Write(ctx, func(tx Tx) error {
		cur, err := queueSettingsOf(tx, queue)
		if err != nil {
			return err
		}
		fields = cur.Fields()
		filter, _ := json.Marshal(map[string]any{"fields": fields})
		return s.writeSetting(tx, SettingsRecord{Kind: SettingQueue, Name: queue}, true,
			queue, map[string]any{"queue": queue, "fields": fields, "reset": true},
			AuditEntry{Actor: actor, Action: "queue.settings.reset", Target: "queue " + queue, Filter: filter})
	})
	if err != nil {
		return nil, fmt.Errorf("reset queue settings of %s: %w", queue, err)
	}
	s.reloadAfterChange(ctx)
	if touchesKeyLimits(fields) {
		s.sweepKeys(ctx)
	}
	return s.QueueSettings(ctx, queue)
}

// queueSettingsOf reads queue's runtime settings in tx, to change them.
func queueSettingsOf(tx Tx, queue string) (QueueSettings, error) {
	var cur QueueSettings
	r, err := tx.Setting(SettingQueue, queue)
	if err != nil || r == nil {
		return cur, err
	}
	if err := json.Unmarshal(r.Value, &cur); err != nil {
		return cur, fmt.Errorf("stored settings of queue %s: %w", queue, err)
	}
	return cur, nil
}

// writeSetting stores rec (or deletes it, with del) and records the
// change: a settings.changed event of queue with data, and audit.
func (s *Service) writeSetting(tx Tx, rec SettingsRecord, del bool, queue string, data map[string]any, audit AuditEntry) error {
	var err error
	if del {
		err = tx.DeleteSetting(rec.Kind, rec.Name)
	} else {
		rec.UpdatedAt = tx.Now()
		err = tx.PutSetting(rec)
	}
	if err != nil {
		return err
	}
	if err := tx.Fault(FaultSettingsWrite, 0); err != nil {
		return err
	}
	tx.Event(EventSettingsChanged, 0, queue, "", eventData(data))
	if rec.Kind == SettingQueue {
		tx.Wake(queue) // a claimer waiting on a limit looks again
	}
	return recordAudit(tx, &audit, 1)
}

func touchesKeyLimits(fields []string) bool {
	for _, f := range fields {
		switch f {
		case "key_concurrency", "key_rate", "fairness":
			return true
		}
	}
	return false
}

// sweepKeys releases the held jobs that changed key limits make room for.
func (s *Service) sweepKeys(ctx context.Context) {
	n, err := SweepKeys(ctx, s.Store, 1000)
	switch {
	case err != nil:
		s.Log.Warn().Err(err).Msg("key sweep after a settings change failed (the leader's sweep tries again within a minute)")
	case n > 0:
		s.Log.Info().Int("jobs", n).Msg("key sweep after a settings change released held jobs")
	}
}

// reloadAfterChange puts a change this node just committed in effect here.
func (s *Service) reloadAfterChange(ctx context.Context) {
	if err := s.ReloadSettings(context.WithoutCancel(ctx)); err != nil {
		s.Log.Warn().Err(err).Msg("reloading settings after a change (the next reload, within a second, tries again)")
	}
}

// ReloadSettings reads the runtime settings from the store and puts them
// in effect (Config.SetSettings). Serve calls it before it answers, and
// RunSettingsReload every second. A read that finds what the last one did
// changes nothing; a record that cannot be read is left out and named in
// the error, the rest applies.
func (s *Service) ReloadSettings(ctx context.Context) error {
	c := s.Config
	c.rtMu.Lock()
	defer c.rtMu.Unlock()
	recs, err := s.Store.Settings(ctx)
	if err != nil {
		return fmt.Errorf("load runtime settings: %w", err)
	}
	if cur := c.rt.Load(); cur != nil && sameRecords(cur.records, recs) {
		return nil
	}
	st, err := parseSettings(recs, c.ParseSchedule)
	c.SetSettings(st)
	return err
}

// RunSettingsReload reloads the runtime settings every interval (if zero,
// SettingsReloadEvery) until ctx ends, so that a change made on another
// node takes effect here within it.
func (s *Service) RunSettingsReload(ctx context.Context, interval time.Duration) {
	if interval <= 0 {
		interval = SettingsReloadEvery
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	failing := false
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		err := s.ReloadSettings(ctx)
		switch {
		case err != nil && ctx.Err() == nil && !failing:
			s.Log.Warn().Err(err).Msg("reloading runtime settings failed; the ones loaded before stay in effect")
		case err == nil && failing:
			s.Log.Info().Msg("runtime settings reloaded again")
		}
		failing = err != nil
	}
}

// SettingsReloadEvery is how often a server reads the runtime settings
// again: a change made on another node takes effect here within it.
const SettingsReloadEvery = time.Second
