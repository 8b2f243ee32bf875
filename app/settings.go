package app

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Runtime settings (issue 26): a queue's policy and the periodic jobs can
// be changed through the API, the CLI and the pages, without a restart.
// What is changed that way is kept in the store (SettingsStore, written
// through Tx.PutSetting in the transaction of its audit entry) and laid
// over the config file field by field: a field set at runtime wins; one
// not set comes from the file's [queues.NAME], then [defaults], then the
// built-in default. Every Service loads them before it serves and again
// every second (ReloadSettings), so every node of a PostgreSQL cluster
// sees a change within a second.

// The kinds of SettingsRecord.
const (
	SettingQueue         = "queue"          // a queue's QueueSettings; Name is the queue
	SettingPeriodic      = "periodic"       // a periodic entry made through the API (PeriodicInput)
	SettingPeriodicState = "periodic_state" // the paused state of an entry of either source
)

// SettingsRecord is one runtime setting as the store keeps it: its value
// as JSON (app encodes and decodes it; stores keep it as it is), when and
// by whom it last changed.
type SettingsRecord struct {
	Kind      string
	Name      string
	Value     json.RawMessage
	UpdatedAt time.Time
	UpdatedBy string
}

// SettingsStore reads the runtime settings.
type SettingsStore interface {
	// Settings reads every runtime setting (of every kind), in kind and
	// name order.
	Settings(ctx context.Context) ([]SettingsRecord, error)
}

// FaultSettingsWrite follows the write (or delete) of a runtime setting,
// before its audit entry and event.
const FaultSettingsWrite FaultPoint = "settings.after_write"

// EventSettingsChanged is published (and recorded) when a runtime setting
// changes: a queue's settings or a periodic entry. Its data names what
// changed: {"queue": ..., "fields": [...]} or {"periodic": ..., "action": ...}.
const EventSettingsChanged = "settings.changed"

// QueueSettings is the part of a queue's policy set at runtime: each field
// that is not nil overrides the config file's, also with a zero (a runtime
// concurrency, rate or max_queued of 0 means no limit, over a file's
// limit); a nil field leaves it to the file. The json names are
// QueueConfig's.
type QueueSettings struct {
	MaxAttempts    *int      `json:"max_attempts,omitempty"`
	Timeout        *Duration `json:"timeout,omitempty"`
	BackoffBase    *Duration `json:"backoff_base,omitempty"`
	BackoffMax     *Duration `json:"backoff_max,omitempty"`
	Retention      *Duration `json:"retention,omitempty"`
	DLQRetention   *Duration `json:"dlq_retention,omitempty"`
	Concurrency    *int      `json:"concurrency,omitempty"`
	Rate           *float64  `json:"rate,omitempty"`
	Burst          *int      `json:"burst,omitempty"`
	MaxQueued      *int      `json:"max_queued,omitempty"`
	KeyConcurrency *int      `json:"key_concurrency,omitempty"`
	KeyRate        *KeyRate  `json:"key_rate,omitempty"`
	Fairness       *string   `json:"fairness,omitempty"`
	LogKiB         *int      `json:"log_kib,omitempty"`
}

// settingFields are the json names of QueueSettings, in declaration order,
// with their field index (QueueConfig has a field of the same Go name).
var settingFields = func() []settingField {
	t := reflect.TypeFor[QueueSettings]()
	qt := reflect.TypeFor[QueueConfig]()
	out := make([]settingField, t.NumField())
	for i := range out {
		f := t.Field(i)
		qf, ok := qt.FieldByName(f.Name)
		if !ok || qf.Type != f.Type.Elem() {
			panic("app: QueueSettings." + f.Name + " has no QueueConfig field of its type")
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		out[i] = settingField{name: name, index: i, config: qf.Index[0]}
	}
	return out
}()

type settingField struct {
	name   string
	index  int // in QueueSettings
	config int // in QueueConfig
}

// SettingNames are the names of the queue settings, in the order the API
// and the pages show them.
func SettingNames() []string {
	out := make([]string, len(settingFields))
	for i, f := range settingFields {
		out[i] = f.name
	}
	return out
}

func settingByName(name string) (settingField, bool) {
	for _, f := range settingFields {
		if f.name == name {
			return f, true
		}
	}
	return settingField{}, false
}

// Fields names the fields set in s, in SettingNames order.
func (s QueueSettings) Fields() []string {
	v := reflect.ValueOf(s)
	var out []string
	for _, f := range settingFields {
		if !v.Field(f.index).IsNil() {
			out = append(out, f.name)
		}
	}
	return out
}

// Empty reports whether s sets nothing.
func (s QueueSettings) Empty() bool { return len(s.Fields()) == 0 }

// Apply lays the fields set in s over q.
func (s QueueSettings) Apply(q *QueueConfig) {
	v, qv := reflect.ValueOf(s), reflect.ValueOf(q).Elem()
	for _, f := range settingFields {
		if p := v.Field(f.index); !p.IsNil() {
			qv.Field(f.config).Set(p.Elem())
		}
	}
}

// Values returns the fields set in s by name, as the API shows them.
func (s QueueSettings) Values() map[string]any {
	v := reflect.ValueOf(s)
	out := map[string]any{}
	for _, f := range settingFields {
		if p := v.Field(f.index); !p.IsNil() {
			out[f.name] = p.Elem().Interface()
		}
	}
	return out
}

// Patch applies a PATCH of settings to s: each name a QueueConfig json
// name, each value its JSON (durations as "30s", key_rate as "10/1m"), or
// null to unset it. An unknown name or a value of the wrong type is an
// *InvalidError naming it; s is changed only if all of patch is good.
func (s *QueueSettings) Patch(patch map[string]json.RawMessage) error {
	out := *s
	v := reflect.ValueOf(&out).Elem()
	for _, name := range slices.Sorted(maps.Keys(patch)) {
		f, ok := settingByName(name)
		if !ok {
			return Invalid(name, "unknown queue setting %q; the settings are: %s", clip(name), strings.Join(SettingNames(), ", "))
		}
		raw := bytes.TrimSpace(patch[name])
		field := v.Field(f.index)
		if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
			field.Set(reflect.Zero(field.Type()))
			continue
		}
		p := reflect.New(field.Type().Elem())
		if err := json.Unmarshal(raw, p.Interface()); err != nil {
			return Invalid(name, "%s: %s", name, settingTypeError(f, err))
		}
		field.Set(p)
	}
	*s = out
	return nil
}

// settingTypeError explains a value of the wrong type for setting f.
func settingTypeError(f settingField, err error) string {
	switch reflect.TypeFor[QueueConfig]().Field(f.config).Type {
	case reflect.TypeFor[Duration]():
		return "give a duration, like \"30s\", \"5m\" or \"7d\""
	case reflect.TypeFor[KeyRate]():
		var ue *json.UnmarshalTypeError
		if !errors.As(err, &ue) {
			return err.Error()
		}
		return "give jobs per period, like \"10/1m\" (\"0\": no limit)"
	case reflect.TypeFor[string]():
		return "give a string"
	case reflect.TypeFor[float64]():
		return "give a number"
	}
	return "give a whole number"
}

// SettingsPatchFromText turns name=value pairs (the CLI's `queue queues
// set`, the pages' form) into a PATCH: an empty value unsets the field;
// numbers stay numbers, anything else becomes a JSON string.
func SettingsPatchFromText(kv map[string]string) (map[string]json.RawMessage, error) {
	out := map[string]json.RawMessage{}
	for name, val := range kv {
		f, ok := settingByName(name)
		if !ok {
			return nil, Invalid(name, "unknown queue setting %q; the settings are: %s", clip(name), strings.Join(SettingNames(), ", "))
		}
		val = strings.TrimSpace(val)
		if val == "" {
			out[name] = json.RawMessage("null")
			continue
		}
		switch reflect.TypeFor[QueueConfig]().Field(f.config).Type.Kind() {
		case reflect.Int, reflect.Float64:
			if _, err := strconv.ParseFloat(val, 64); err != nil {
				return nil, Invalid(name, "%s: %q is not a number", name, clip(val))
			}
			out[name] = json.RawMessage(val)
		default:
			b, _ := json.Marshal(val)
			out[name] = b
		}
	}
	return out, nil
}

// Source names where the value of a queue setting comes from.
const (
	SourceRuntime      = "runtime"       // set through the API, CLI or pages (kept in the database)
	SourceFile         = "file"          // the config file's [queues.NAME]
	SourceFileDefaults = "file_defaults" // the config file's [defaults]
	SourceBuiltin      = "builtin"       // the built-in default
)

// Settings is the runtime settings as loaded from the store: immutable
// once made (a reload makes a new one), so readers need no lock.
type Settings struct {
	// Queues maps a queue to its runtime settings.
	Queues map[string]QueueSettingsRecord
	// Periodic maps a name to a periodic entry made through the API.
	Periodic map[string]PeriodicRecord
	// States maps an entry's name (of either source) to its paused state.
	States map[string]PeriodicState

	records []SettingsRecord // as read: a reload that reads the same keeps this Settings
}

// QueueSettingsRecord is a queue's runtime settings with when and by whom
// they last changed.
type QueueSettingsRecord struct {
	Settings  QueueSettings
	UpdatedAt time.Time
	UpdatedBy string
}

// PeriodicRecord is a periodic entry made through the API.
type PeriodicRecord struct {
	Entry     PeriodicConfig
	UpdatedAt time.Time
	UpdatedBy string
}

// PeriodicState is whether an entry is paused, since ChangedAt (a pause or
// a resume), by ChangedBy.
type PeriodicState struct {
	Paused    bool      `json:"paused"`
	ChangedAt time.Time `json:"-"`
	ChangedBy string    `json:"-"`
}

// parseSettings builds Settings from the store's records. A record that
// cannot be read (written by a newer version, or damaged) is left out and
// reported in the error, so the rest still applies.
func parseSettings(recs []SettingsRecord, parse ScheduleParser) (*Settings, error) {
	s := &Settings{Queues: map[string]QueueSettingsRecord{}, Periodic: map[string]PeriodicRecord{},
		States: map[string]PeriodicState{}, records: recs}
	var errs []error
	for _, r := range recs {
		switch r.Kind {
		case SettingQueue:
			var qs QueueSettings
			if err := json.Unmarshal(r.Value, &qs); err != nil {
				errs = append(errs, fmt.Errorf("settings of queue %s: %w", r.Name, err))
				continue
			}
			s.Queues[r.Name] = QueueSettingsRecord{Settings: qs, UpdatedAt: r.UpdatedAt, UpdatedBy: r.UpdatedBy}
		case SettingPeriodic:
			var in PeriodicInput
			if err := json.Unmarshal(r.Value, &in); err != nil {
				errs = append(errs, fmt.Errorf("periodic entry %s: %w", r.Name, err))
				continue
			}
			e := in.Config()
			e.Name = r.Name
			if err := ValidatePeriodic(&e, parse); err != nil {
				errs = append(errs, fmt.Errorf("periodic entry %s: %w", r.Name, err))
				continue
			}
			s.Periodic[r.Name] = PeriodicRecord{Entry: e, UpdatedAt: r.UpdatedAt, UpdatedBy: r.UpdatedBy}
		case SettingPeriodicState:
			var st PeriodicState
			if err := json.Unmarshal(r.Value, &st); err != nil {
				errs = append(errs, fmt.Errorf("state of periodic entry %s: %w", r.Name, err))
				continue
			}
			st.ChangedAt, st.ChangedBy = r.UpdatedAt, r.UpdatedBy
			s.States[r.Name] = st
		}
	}
	return s, errors.Join(errs...)
}

// sameRecords reports whether a and b hold the same records.
func sameRecords(a, b []SettingsRecord) bool {
	return slices.EqualFunc(a, b, func(x, y SettingsRecord) bool {
		return x.Kind == y.Kind && x.Name == y.Name && bytes.Equal(x.Value, y.Value) &&
			x.UpdatedAt.Equal(y.UpdatedAt) && x.UpdatedBy == y.UpdatedBy
	})
}

// runtime returns the runtime settings in effect (never nil).
func (c *Config) runtime() *Settings {
	if s := c.rt.Load(); s != nil {
		return s
	}
	return emptySettings
}

var emptySettings = &Settings{Queues: map[string]QueueSettingsRecord{}, Periodic: map[string]PeriodicRecord{}, States: map[string]PeriodicState{}}

// SetSettings puts s in effect (a Service's ReloadSettings calls it; tests
// may too). Readers see the old or the new settings whole, never a mix.
func (c *Config) SetSettings(s *Settings) { c.rt.Store(s) }

// Settings returns the runtime settings in effect.
func (c *Config) Settings() *Settings { return c.runtime() }

// Queue returns the policy of queue name: each field from its runtime
// settings if set there, else its section of the config file, then
// [defaults], then the built-in defaults.
func (c *Config) Queue(name string) QueueConfig {
	q := c.fileQueue(name)
	if rs, ok := c.runtime().Queues[name]; ok {
		rs.Settings.Apply(&q)
	}
	return q
}

// FileQueue is the policy of queue name as the config file alone gives it
// (runtime settings left out).
func (c *Config) FileQueue(name string) QueueConfig { return c.fileQueue(name) }

// QueueNames names the queues with a policy of their own, in the config
// file or at runtime, in name order.
func (c *Config) QueueNames() []string {
	names := map[string]bool{}
	for n := range c.Queues {
		names[n] = true
	}
	for n, rs := range c.runtime().Queues {
		if !rs.Settings.Empty() {
			names[n] = true
		}
	}
	return slices.Sorted(maps.Keys(names))
}

// eachQueue calls fn with each queue that has a policy of its own (as
// QueueNames, in no order, without sorting: Submit calls it).
func (c *Config) eachQueue(fn func(string)) {
	for n := range c.Queues {
		fn(n)
	}
	for n, rs := range c.runtime().Queues {
		if _, ok := c.Queues[n]; !ok && !rs.Settings.Empty() {
			fn(n)
		}
	}
}

// FileSettings returns the fields the config file sets for queue name
// (its section, else [defaults]) with their values, and where each field
// of the effective policy comes from.
func (c *Config) FileSettings(name string) (file map[string]any, sources map[string]string) {
	own, def := reflect.ValueOf(c.Queues[name]), reflect.ValueOf(c.Defaults)
	var set reflect.Value
	if rs, ok := c.runtime().Queues[name]; ok {
		set = reflect.ValueOf(rs.Settings)
	}
	file, sources = map[string]any{}, map[string]string{}
	for _, f := range settingFields {
		switch {
		case !own.Field(f.config).IsZero():
			file[f.name] = own.Field(f.config).Interface()
			sources[f.name] = SourceFile
		case !def.Field(f.config).IsZero():
			file[f.name] = def.Field(f.config).Interface()
			sources[f.name] = SourceFileDefaults
		default:
			sources[f.name] = SourceBuiltin
		}
		if set.IsValid() && !set.Field(f.index).IsNil() {
			sources[f.name] = SourceRuntime
		}
	}
	return file, sources
}

// ValidateQueueConfig checks the policy of one queue (or [defaults]) as
// the config file gives it, where zero fields mean "not set". An error is
// an *InvalidError naming the field (its json and toml name); the config
// loader prefixes its section.
func ValidateQueueConfig(q QueueConfig) error {
	switch {
	case q.MaxAttempts < 0 || q.MaxAttempts > 1000:
		return Invalid("max_attempts", "%d is not between 1 and 1000", q.MaxAttempts)
	case q.Timeout != 0 && (q.Timeout.D() < time.Millisecond || q.Timeout.D() > MaxTimeout):
		return Invalid("timeout", "must be between 1ms and %s", FormatDuration(MaxTimeout))
	case q.BackoffBase < 0:
		return Invalid("backoff_base", "must be positive")
	case q.BackoffMax < 0:
		return Invalid("backoff_max", "must be positive")
	case q.BackoffMax > 0 && q.BackoffBase > q.BackoffMax:
		return Invalid("backoff_base", "is larger than backoff_max")
	case q.Retention < 0:
		return Invalid("retention", "must be positive")
	case q.DLQRetention < 0:
		return Invalid("dlq_retention", "must be positive")
	case q.Concurrency < 0:
		return Invalid("concurrency", "must be positive (0 means no limit)")
	case q.Rate != 0 && !(q.Rate >= MinRate && q.Rate <= MaxRate): // also NaN; the bounds of a bulk spread's rate
		return Invalid("rate", "must be between %g and %d claims per second (0 means no limit)", MinRate, int(MaxRate))
	case q.Burst < 0:
		return Invalid("burst", "must be positive")
	case q.MaxQueued < 0:
		return Invalid("max_queued", "must be positive (0 means no limit)")
	case q.LogKiB < 0 || q.LogKiB > 1024:
		return Invalid("log_kib", "must be between 1 and 1024: the KiB of each attempt's log kept (default 64)")
	case q.KeyConcurrency < 0:
		return Invalid("key_concurrency", "must be positive: at most this many jobs of one key at once (0 means no limit; 1 runs a key's jobs one after another)")
	case q.KeyRate.N < 0 || q.KeyRate.N > 1_000_000 || (q.KeyRate.N > 0 && (q.KeyRate.Per < time.Millisecond || q.KeyRate.Per > 30*24*time.Hour)):
		return Invalid("key_rate", "give at most 1000000 jobs per period between 1ms and 30d, like \"10/1m\" (0 means no limit)")
	}
	switch q.Fairness {
	case "", FairnessRoundRobin:
	default:
		return Invalid("fairness", "%q is not %q (hand out keys in turn) or \"\" (claim order, the default)", TruncateString(q.Fairness, 80), FairnessRoundRobin)
	}
	return nil
}

// ValidateQueueSettings checks runtime settings s of queue as the config
// file's are checked, and on top: a field whose zero means "the default"
// in the file (max_attempts, timeout, the backoffs, the retentions,
// log_kib) cannot be set to zero (unset it instead), and the policy they
// make with the file's (effective) must hold together (backoff_base not
// above backoff_max).
func ValidateQueueSettings(s QueueSettings, effective QueueConfig) error {
	var q QueueConfig
	s.Apply(&q)
	if err := ValidateQueueConfig(q); err != nil {
		return err
	}
	v := reflect.ValueOf(s)
	for _, name := range []string{"max_attempts", "timeout", "backoff_base", "backoff_max", "retention", "dlq_retention", "log_kib"} {
		f, _ := settingByName(name)
		if p := v.Field(f.index); !p.IsNil() && p.Elem().IsZero() {
			return Invalid(name, "%s cannot be 0 (unset it with null to use the config file's value)", name)
		}
	}
	return ValidateQueueConfig(effective)
}
