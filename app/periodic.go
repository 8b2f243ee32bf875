package app

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"
)

// Periodic jobs come from the config file ([[periodic]], Config.Periodic)
// and from the API (stored as runtime settings of kind SettingPeriodic).
// Entries of either source can be paused, resumed and run at once; only
// those made through the API can be changed or deleted there (a file's
// entry is changed in the file). The Scheduler runs them all.

// ScheduleParser parses a cron spec in loc (robfig/cron's, injected by
// package commands: app does not import it).
type ScheduleParser func(spec string, loc *time.Location) (Schedule, error)

// Errors of the periodic API.
var (
	// ErrPeriodicInConfig is a change through the API of an entry the
	// config file declares (or a new entry with its name): edit the file.
	ErrPeriodicInConfig = errors.New("periodic entry is declared in the config file")
	// ErrPeriodicExists is a new entry with the name of one made before.
	ErrPeriodicExists = errors.New("periodic entry exists")
)

// The sources of a periodic entry.
const (
	PeriodicFromFile = "file"
	PeriodicFromAPI  = "api"
)

// PeriodicInput is a periodic entry as the API takes it (POST
// /api/periodic, PUT /api/periodic/{name}): the fields of [[periodic]].
type PeriodicInput struct {
	Name          string          `json:"name"`
	Cron          string          `json:"cron"`
	Timezone      string          `json:"timezone,omitempty"`
	Queue         string          `json:"queue,omitempty"`
	Kind          string          `json:"kind"`
	Payload       json.RawMessage `json:"payload,omitempty"`
	Priority      int             `json:"priority,omitempty"`
	MaxAttempts   int             `json:"max_attempts,omitempty"`
	Timeout       Duration        `json:"timeout,omitempty"`
	Tags          []string        `json:"tags,omitempty"`
	Key           string          `json:"key,omitempty"`
	CatchUp       string          `json:"catch_up,omitempty"`
	SkipIfPending bool            `json:"skip_if_pending,omitempty"`
}

// Config is in as a PeriodicConfig (not yet validated).
func (in PeriodicInput) Config() PeriodicConfig {
	p := PeriodicConfig{Name: in.Name, Cron: in.Cron, Timezone: in.Timezone, Queue: in.Queue, Kind: in.Kind,
		Priority: in.Priority, MaxAttempts: in.MaxAttempts, Timeout: in.Timeout, Tags: in.Tags, Key: in.Key,
		CatchUp: in.CatchUp, SkipIfPending: in.SkipIfPending}
	if len(in.Payload) > 0 {
		p.Payload, p.PayloadJSON = in.Payload, in.Payload
	}
	return p
}

// periodicInput is p as stored (after ValidatePeriodic filled its defaults).
func periodicInput(p PeriodicConfig) PeriodicInput {
	return PeriodicInput{Name: p.Name, Cron: p.Cron, Timezone: p.Timezone, Queue: p.Queue, Kind: p.Kind,
		Payload: p.PayloadJSON, Priority: p.Priority, MaxAttempts: p.MaxAttempts, Timeout: p.Timeout, Tags: p.Tags,
		Key: p.Key, CatchUp: p.CatchUp, SkipIfPending: p.SkipIfPending}
}

// ValidatePeriodic checks periodic entry p (of the config file or the API)
// and fills its defaults (queue, catch_up, name), its parsed Schedule and
// its PayloadJSON. An error is an *InvalidError naming the field.
func ValidatePeriodic(p *PeriodicConfig, parse ScheduleParser) error {
	if p.Queue == "" {
		p.Queue = DefaultQueue
	}
	if err := ValidateQueue(p.Queue); err != nil {
		return Invalid("queue", "%v", err)
	}
	if reservedQueue(p.Queue) {
		return Invalid("queue", "queue names starting with _ are reserved for the server's own jobs")
	}
	if err := ValidateKind(p.Kind); err != nil {
		return Invalid("kind", "%v", err)
	}
	if p.Cron == "" {
		return Invalid("cron", "a periodic job needs a cron schedule (e.g. \"*/5 * * * *\" or \"@every 1m\")")
	}
	loc := time.UTC
	if p.Timezone != "" {
		l, err := time.LoadLocation(p.Timezone)
		if err != nil || strings.ContainsAny(p.Timezone, " \n") {
			return Invalid("timezone", "unknown time zone %q", clip(p.Timezone))
		}
		loc = l
	}
	if parse == nil {
		return Invalid("cron", "this server has no cron parser for periodic jobs")
	}
	s, err := parse(p.Cron, loc)
	if err != nil {
		return Invalid("cron", "invalid cron schedule %q: %v", clip(p.Cron), err)
	}
	if s.Next(time.Now().In(loc)).IsZero() { // robfig/cron: nothing matches within five years
		return Invalid("cron", "cron schedule %q never fires: no time matches it (a date that does not exist, like 30 February?)", clip(p.Cron))
	}
	p.Schedule = s
	switch p.CatchUp {
	case "":
		p.CatchUp = "one"
	case "one", "none":
	default:
		return Invalid("catch_up", "%q is not one or none", clip(p.CatchUp))
	}
	if p.Name == "" {
		p.Name = p.Queue + "/" + p.Kind + "/" + p.Cron
	}
	if p.Priority < -1000 || p.Priority > 1000 {
		return Invalid("priority", "must be between -1000 and 1000")
	}
	if p.MaxAttempts < 0 || p.MaxAttempts > 1000 {
		return Invalid("max_attempts", "must be between 1 and 1000")
	}
	if p.Timeout < 0 || p.Timeout.D() > MaxTimeout {
		return Invalid("timeout", "must be positive")
	}
	for _, t := range p.Tags {
		if err := ValidateKind(t); err != nil {
			return Invalid("tags", "tag %q: %v", clip(t), err)
		}
	}
	if len(p.Key) > MaxKeyLength || strings.ContainsRune(p.Key, 0) {
		return Invalid("key", "a key is at most %d bytes, without NUL bytes (this one is %d)", MaxKeyLength, len(p.Key))
	}
	if p.PayloadJSON == nil {
		b, err := json.Marshal(p.Payload)
		if err != nil {
			return Invalid("payload", "cannot be JSON: %v", err)
		}
		p.PayloadJSON = b
	} else if !json.Valid(p.PayloadJSON) {
		return Invalid("payload", "is not JSON")
	}
	if len(p.PayloadJSON) > MaxPayloadBytes {
		return TooLarge("payload", "payload is %d bytes; the limit is %d", len(p.PayloadJSON), MaxPayloadBytes)
	}
	return nil
}

// PeriodicEntry is a periodic job as the Scheduler runs it.
type PeriodicEntry struct {
	PeriodicConfig
	Source string // PeriodicFromFile or PeriodicFromAPI
	Paused bool
	// Since is when the entry last began to fire (its last resume, or its
	// last change through the API): fires before it are not caught up.
	Since time.Time
	// State is the entry's paused state, if it was ever paused.
	State *PeriodicState
	// Record is the stored entry of one made through the API.
	Record *PeriodicRecord
}

// PeriodicEntries lists the periodic entries in effect: the config file's
// in its order, then those made through the API by name, each with its
// paused state.
func (c *Config) PeriodicEntries() []PeriodicEntry {
	rt := c.runtime()
	out := make([]PeriodicEntry, 0, len(c.Periodic)+len(rt.Periodic))
	add := func(e PeriodicEntry) {
		if st, ok := rt.States[e.Name]; ok {
			e.State, e.Paused = &st, st.Paused
			if !st.Paused && st.ChangedAt.After(e.Since) {
				e.Since = st.ChangedAt
			}
		}
		out = append(out, e)
	}
	inFile := map[string]bool{}
	for _, p := range c.Periodic {
		inFile[p.Name] = true
		add(PeriodicEntry{PeriodicConfig: p, Source: PeriodicFromFile})
	}
	for _, name := range slices.Sorted(maps.Keys(rt.Periodic)) {
		if inFile[name] { // the file took the name after the entry was made: the file wins
			continue
		}
		r := rt.Periodic[name]
		add(PeriodicEntry{PeriodicConfig: r.Entry, Source: PeriodicFromAPI, Since: r.UpdatedAt, Record: &r})
	}
	return out
}

// PeriodicEntry returns the entry called name, if there is one.
func (c *Config) PeriodicEntry(name string) (PeriodicEntry, bool) {
	for _, e := range c.PeriodicEntries() {
		if e.Name == name {
			return e, true
		}
	}
	return PeriodicEntry{}, false
}

// Scheduler enqueues the periodic jobs of the config file and the API.
// Each fire time is enqueued at most once across restarts and nodes: the
// store keys it by (entry, fire time) under a unique index. It picks up
// entries created, changed, paused, resumed or deleted within a second.
type Scheduler struct {
	Service *Service

	mu   sync.Mutex
	next map[string]time.Time // each running entry's next fire
	spec map[string]string    // each entry's schedule and state as last seen, to tell a change
}

// PeriodicStatus is an entry as GET /api/periodic shows it: its fields,
// source, paused state, last and next fire (none while paused).
type PeriodicStatus struct {
	PeriodicConfig
	Source    string     `json:"source"`
	Paused    bool       `json:"paused"`
	PausedAt  *time.Time `json:"paused_at,omitempty"`
	LastFire  *time.Time `json:"last_fire"`
	NextFire  *time.Time `json:"next_fire"`
	UpdatedAt *time.Time `json:"updated_at,omitempty"`
	UpdatedBy string     `json:"updated_by,omitempty"`
}

// specKey is what makes an entry's fire times: a change of it (or a
// resume) starts its schedule again from now.
func (e PeriodicEntry) specKey() string {
	return fmt.Sprintf("%s\x00%s\x00%t\x00%d", e.Cron, e.Timezone, e.Paused, e.Since.UnixMilli())
}

// Start computes each entry's next fire and catches up a fire missed while
// the server was down (catch_up "one": the latest missed fire, once;
// "none": skip). Fires from before an entry's Since (missed while it was
// paused, or before it was made or changed) are not caught up. A zero
// next fire (Schedule.Next found none) means the entry never fires.
func (p *Scheduler) Start(ctx context.Context) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := p.Service
	now := s.Clock.Now()
	p.next, p.spec = map[string]time.Time{}, map[string]string{}
	for _, e := range s.Config.PeriodicEntries() {
		p.spec[e.Name] = e.specKey()
		if e.Schedule == nil || e.Paused {
			continue
		}
		last, err := s.Store.LastFire(ctx, e.Name)
		if err != nil {
			return err
		}
		if e.Since.After(last) {
			last = e.Since
		}
		if last.IsZero() {
			p.next[e.Name] = e.Schedule.Next(now)
			continue
		}
		t := e.Schedule.Next(last)
		var missed time.Time
		for i := 0; !t.IsZero() && !t.After(now) && i < 10_000_000; i++ {
			missed, t = t, e.Schedule.Next(t)
		}
		if t.IsZero() { // none after last (or missed): look again from now
			t = e.Schedule.Next(now)
		}
		if !missed.IsZero() && e.CatchUp == "one" {
			if err := p.fire(ctx, e, missed); err != nil {
				return err
			}
		}
		p.next[e.Name] = t
	}
	return nil
}

// Due enqueues every fire whose time has come and returns the earliest
// next fire (zero if none). An entry new, changed or resumed since the
// last call starts from now; a paused or deleted one is dropped; one
// whose next fire is zero (Schedule.Next found none) never fires.
func (p *Scheduler) Due(ctx context.Context) (time.Time, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := p.Service
	now := s.Clock.Now()
	if p.next == nil {
		p.next, p.spec = map[string]time.Time{}, map[string]string{}
	}
	var earliest time.Time
	var errs []error
	seen := map[string]bool{}
	for _, e := range s.Config.PeriodicEntries() {
		seen[e.Name] = true
		key := e.specKey()
		if e.Schedule == nil || e.Paused {
			delete(p.next, e.Name)
			p.spec[e.Name] = key
			continue
		}
		t, ok := p.next[e.Name]
		if !ok || p.spec[e.Name] != key {
			t, p.spec[e.Name] = e.Schedule.Next(now), key
		}
		for !t.IsZero() && !t.After(now) {
			if err := p.fire(ctx, e, t); err != nil {
				errs = append(errs, err)
				break // try this fire again next time
			}
			t = e.Schedule.Next(t)
		}
		p.next[e.Name] = t // zero: never, until the entry changes
		if !t.IsZero() && (earliest.IsZero() || t.Before(earliest)) {
			earliest = t
		}
	}
	for name := range p.spec {
		if !seen[name] {
			delete(p.next, name)
			delete(p.spec, name)
		}
	}
	return earliest, errors.Join(errs...)
}

func (p *Scheduler) fire(ctx context.Context, e PeriodicEntry, at time.Time) error {
	s := p.Service
	nj, err := periodicJob(s, e.PeriodicConfig)
	if err != nil {
		return err
	}
	job, created, err := FirePeriodic(ctx, s.Store, PeriodicFire{Entry: e.Name, FireAt: at, Job: nj, SkipIfPending: e.SkipIfPending,
		API: e.Source == PeriodicFromAPI})
	if err != nil {
		return err
	}
	if created {
		s.Log.Info().Str("periodic", e.Name).Time("fire_at", at).Int64("job_id", job.ID).Msg("periodic job enqueued")
	}
	return nil
}

// periodicJob is the job entry e enqueues, with its queue's policy.
func periodicJob(s *Service, e PeriodicConfig) (NewJob, error) {
	in := SubmitInput{Queue: e.Queue, Kind: e.Kind, Payload: e.PayloadJSON, Tags: e.Tags, Key: e.Key}
	if e.Priority != 0 {
		in.Priority = &e.Priority
	}
	if e.MaxAttempts != 0 {
		in.MaxAttempts = &e.MaxAttempts
	}
	if e.Timeout > 0 {
		in.Timeout = &e.Timeout
	}
	return in.NewJob(s.Config, s.Clock.Now())
}

// firePaused reports whether a fire of fire.Entry must enqueue nothing
// because, as stored now, the entry is paused or (one made through the
// API) deleted: a pause or delete on another node counts from its commit,
// not from when this node reloads its settings.
func firePaused(tx Tx, fire PeriodicFire) (bool, error) {
	r, err := tx.Setting(SettingPeriodicState, fire.Entry)
	if err != nil {
		return false, err
	}
	if r != nil {
		var st PeriodicState
		if json.Unmarshal(r.Value, &st) == nil && st.Paused {
			return true, nil
		}
	}
	if !fire.API {
		return false, nil
	}
	r, err = tx.Setting(SettingPeriodic, fire.Entry)
	return r == nil, err
}

// Run fires entries on time until ctx is done, looking at the entries at
// least every second.
func (p *Scheduler) Run(ctx context.Context) {
	for {
		next, err := p.Due(ctx)
		if err != nil && ctx.Err() == nil {
			p.Service.Log.Error().Err(err).Msg("periodic jobs")
		}
		wait := time.Second
		if !next.IsZero() {
			wait = min(max(next.Sub(p.Service.Clock.Now()), 0), time.Second)
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
	}
}

// Status returns each entry with its source, state, last and next fire.
func (p *Scheduler) Status(ctx context.Context) ([]PeriodicStatus, error) {
	return p.Service.PeriodicStatus(ctx)
}

// PeriodicStatus returns each periodic entry with its source, state, last
// and next fire.
func (s *Service) PeriodicStatus(ctx context.Context) ([]PeriodicStatus, error) {
	out := []PeriodicStatus{}
	for _, e := range s.Config.PeriodicEntries() {
		st, err := s.periodicStatus(ctx, e)
		if err != nil {
			return nil, err
		}
		out = append(out, st)
	}
	return out, nil
}

func (s *Service) periodicStatus(ctx context.Context, e PeriodicEntry) (PeriodicStatus, error) {
	st := PeriodicStatus{PeriodicConfig: e.PeriodicConfig, Source: e.Source, Paused: e.Paused}
	last, err := s.Store.LastFire(ctx, e.Name)
	if err != nil {
		return st, err
	}
	if !last.IsZero() {
		st.LastFire = &last
	}
	if e.Schedule != nil && !e.Paused {
		if next := e.Schedule.Next(s.Clock.Now()); !next.IsZero() { // zero: never
			st.NextFire = &next
		}
	}
	if e.Paused && e.State != nil {
		at := e.State.ChangedAt
		st.PausedAt = &at
	}
	if e.Record != nil {
		at := e.Record.UpdatedAt
		st.UpdatedAt, st.UpdatedBy = &at, e.Record.UpdatedBy
	}
	return st, nil
}

// GetPeriodic returns the entry called name with its state; ErrNotFound
// if there is none.
func (s *Service) GetPeriodic(ctx context.Context, name string) (*PeriodicStatus, error) {
	e, ok := s.Config.PeriodicEntry(name)
	if !ok {
		return nil, fmt.Errorf("periodic entry %q: %w", clip(name), ErrNotFound)
	}
	st, err := s.periodicStatus(ctx, e)
	return &st, err
}

// CreatePeriodic makes a periodic entry through the API, audited
// (periodic.create). Its name is required, and may not be one of the
// config file's (ErrPeriodicInConfig) or of an entry made before
// (ErrPeriodicExists).
func (s *Service) CreatePeriodic(ctx context.Context, in PeriodicInput, actor string) (*PeriodicStatus, error) {
	if in.Name == "" {
		return nil, Invalid("name", "a periodic job made through the API needs a name")
	}
	return s.savePeriodic(ctx, in, actor, "periodic.create")
}

// UpdatePeriodic replaces the entry called name (one made through the
// API) with in, audited (periodic.update). An entry of the config file is
// ErrPeriodicInConfig; none, ErrNotFound.
func (s *Service) UpdatePeriodic(ctx context.Context, name string, in PeriodicInput, actor string) (*PeriodicStatus, error) {
	if in.Name != "" && in.Name != name {
		return nil, Invalid("name", "the body names %q, the path %q: an entry cannot be renamed (delete it and create another)", clip(in.Name), clip(name))
	}
	in.Name = name
	return s.savePeriodic(ctx, in, actor, "periodic.update")
}

func (s *Service) savePeriodic(ctx context.Context, in PeriodicInput, actor, action string) (*PeriodicStatus, error) {
	if err := ValidateKind(in.Name); err != nil {
		return nil, Invalid("name", "periodic name: %v", err)
	}
	if s.inFile(in.Name) {
		return nil, periodicInConfig(in.Name)
	}
	e := in.Config()
	if err := ValidatePeriodic(&e, s.Config.ParseSchedule); err != nil {
		return nil, err
	}
	value, err := json.Marshal(periodicInput(e))
	if err != nil {
		return nil, err
	}
	err = s.Store.Write(ctx, func(tx Tx) error {
		old, err := tx.Setting(SettingPeriodic, e.Name)
		switch {
		case err != nil:
			return err
		case old != nil && action == "periodic.create":
			return fmt.Errorf("periodic entry %q: %w (change it with PUT /api/periodic/%s)", e.Name, ErrPeriodicExists, e.Name)
		case old == nil && action == "periodic.update":
			return fmt.Errorf("periodic entry %q: %w", e.Name, ErrNotFound)
		}
		return s.writeSetting(tx, SettingsRecord{Kind: SettingPeriodic, Name: e.Name, Value: value, UpdatedBy: actor}, false,
			e.Queue, map[string]any{"periodic": e.Name, "action": strings.TrimPrefix(action, "periodic.")},
			AuditEntry{Actor: actor, Action: action, Target: "periodic " + e.Name, Filter: value})
	})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", action, err)
	}
	s.reloadAfterChange(ctx)
	return s.GetPeriodic(ctx, e.Name)
}

// DeletePeriodic deletes the entry called name (one made through the API)
// with its paused state, audited (periodic.delete).
func (s *Service) DeletePeriodic(ctx context.Context, name, actor string) error {
	if s.inFile(name) {
		return periodicInConfig(name)
	}
	err := s.Store.Write(ctx, func(tx Tx) error {
		old, err := tx.Setting(SettingPeriodic, name)
		if err != nil {
			return err
		}
		if old == nil {
			return fmt.Errorf("periodic entry %q: %w", clip(name), ErrNotFound)
		}
		var in PeriodicInput
		_ = json.Unmarshal(old.Value, &in)
		if err := tx.DeleteSetting(SettingPeriodicState, name); err != nil {
			return err
		}
		return s.writeSetting(tx, SettingsRecord{Kind: SettingPeriodic, Name: name}, true,
			cmp.Or(in.Queue, DefaultQueue), map[string]any{"periodic": name, "action": "delete"},
			AuditEntry{Actor: actor, Action: "periodic.delete", Target: "periodic " + name})
	})
	if err != nil {
		return fmt.Errorf("periodic.delete: %w", err)
	}
	s.reloadAfterChange(ctx)
	return nil
}

// SetPeriodicPaused pauses or resumes the entry called name (of either
// source), audited (periodic.pause, periodic.resume). The state is
// stored, so it holds across restarts and nodes; a paused entry fires
// nothing, and a resumed one fires next at its first fire time from now
// (what it missed while paused is not caught up).
func (s *Service) SetPeriodicPaused(ctx context.Context, name string, paused bool, actor string) (*PeriodicStatus, error) {
	e, ok := s.Config.PeriodicEntry(name)
	if !ok {
		return nil, fmt.Errorf("periodic entry %q: %w", clip(name), ErrNotFound)
	}
	action := "periodic.resume"
	if paused {
		action = "periodic.pause"
	}
	value, _ := json.Marshal(PeriodicState{Paused: paused})
	err := s.Store.Write(ctx, func(tx Tx) error {
		// The state first, as a fire reads it (firePaused): on PostgreSQL
		// reading a setting takes its lock, so a fire that read "not
		// paused" commits before the pause does, and a later one sees it.
		if _, err := tx.Setting(SettingPeriodicState, name); err != nil {
			return err
		}
		if e.Source == PeriodicFromAPI {
			if r, err := tx.Setting(SettingPeriodic, name); err != nil || r == nil {
				return cmp.Or(err, fmt.Errorf("periodic entry %q: %w", clip(name), ErrNotFound))
			}
		}
		return s.writeSetting(tx, SettingsRecord{Kind: SettingPeriodicState, Name: name, Value: value, UpdatedBy: actor}, false,
			e.Queue, map[string]any{"periodic": name, "action": strings.TrimPrefix(action, "periodic.")},
			AuditEntry{Actor: actor, Action: action, Target: "periodic " + name})
	})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", action, err)
	}
	s.reloadAfterChange(ctx)
	return s.GetPeriodic(ctx, name)
}

// RunPeriodic enqueues one job of the entry called name at once ("run
// now"), paused or not, audited (periodic.run) in the job's transaction.
// It counts as a fire (the entry's last fire; skip_if_pending of the next
// scheduled fire sees its job) but is never skipped itself.
func (s *Service) RunPeriodic(ctx context.Context, name, actor string) (*Job, error) {
	e, ok := s.Config.PeriodicEntry(name)
	if !ok {
		return nil, fmt.Errorf("periodic entry %q: %w", clip(name), ErrNotFound)
	}
	nj, err := periodicJob(s, e.PeriodicConfig)
	if err != nil {
		return nil, err
	}
	var job *Job
	err = s.Store.Write(ctx, func(tx Tx) error {
		job = nil
		n := nj
		jobs, err := insert(tx, &n)
		if err != nil {
			return err
		}
		job = jobs[0]
		if first, err := tx.RecordFire(name, tx.Now()); err != nil {
			return err
		} else if first {
			if err := tx.SetFireJob(name, tx.Now(), job.ID); err != nil {
				return err
			}
		}
		return recordAudit(tx, &AuditEntry{Actor: actor, Action: "periodic.run", Target: "periodic " + name,
			Filter: eventData(map[string]any{"job_id": job.ID})}, 1)
	})
	if err != nil {
		return nil, fmt.Errorf("periodic.run %s: %w", name, err)
	}
	s.Log.Info().Str("periodic", name).Int64("job_id", job.ID).Str("actor", actor).Msg("periodic job run now")
	return job, nil
}

func (s *Service) inFile(name string) bool {
	for _, p := range s.Config.Periodic {
		if p.Name == name {
			return true
		}
	}
	return false
}

func periodicInConfig(name string) error {
	return fmt.Errorf("periodic entry %q is declared in the config file: %w; edit the file's [[periodic]] entry and restart (pause, resume and run now work on it here)",
		clip(name), ErrPeriodicInConfig)
}
