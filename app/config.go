package app

import (
	"encoding/json"
	"sync"
	"sync/atomic"
	"time"
)

// Config is what the Service reads of the configuration: the policy of each
// queue, the periodic jobs, and the limits and retention it enforces.
// Package commands fills it from the config file and the flags; the server's
// own settings (listen address, tokens, built-in workers) stay there.
type Config struct {
	Defaults QueueConfig            // what a queue's zero fields take
	Queues   map[string]QueueConfig // queues with a policy of their own
	Periodic []PeriodicConfig       // jobs enqueued on a cron schedule

	// MaxWaiters caps long polls (claims and gets with a wait) server-wide;
	// if zero, DefaultMaxWaiters is used. Beyond it: ErrTooManyWaiters.
	MaxWaiters int
	// EventRetention and AuditRetention keep events and audit records; if
	// zero, DefaultEventRetention is used.
	EventRetention Duration
	AuditRetention Duration
	// DLQAlert, if its Queue is set, submits a job there when a queue's
	// dead-letter rows reach Threshold (see Maintainer.AlertDLQ).
	DLQAlert DLQAlert
	// ParseSchedule parses the cron of periodic entries made at runtime
	// (package commands sets robfig/cron's, as for [[periodic]]); if nil,
	// such entries cannot be made and stored ones are left out.
	ParseSchedule ScheduleParser
	// Webhooks is the [webhooks] section: the target policy, the callback
	// secret, the subscriptions of the file (webhooks.go).
	Webhooks WebhookConfig

	rt       atomic.Pointer[Settings] // the runtime settings (settings.go)
	rtMu     sync.Mutex               // one reload at a time (Service.ReloadSettings)
	webhooks webhookState             // the webhook rules in effect, the callback secret (webhooks.go)
}

// DLQAlert is the alert hook of the dead-letter queue: a job of kind
// AlertKind in Queue, for an operator's own worker (mail, chat, a pager) to
// carry out.
type DLQAlert struct {
	Queue     string
	Threshold int // rows in one queue's DLQ; if zero, 100
}

// AlertKind is the kind of the jobs the DLQ alert hook submits.
const AlertKind = "dlq.alert"

// QueueConfig is the policy of one queue. Zero fields take the [defaults]
// section, then the built-in defaults. The toml tags are its keys in the
// config file, which package commands decodes into it; the json tags are
// the same names, as GET /api/queues shows them (durations as
// FormatDuration writes them: "30s", "30d").
type QueueConfig struct {
	MaxAttempts  int      `toml:"max_attempts" json:"max_attempts"`   // 1..1000; default 5
	Timeout      Duration `toml:"timeout" json:"timeout"`             // lease of one execution; default 30s
	BackoffBase  Duration `toml:"backoff_base" json:"backoff_base"`   // default 1s
	BackoffMax   Duration `toml:"backoff_max" json:"backoff_max"`     // default 1h
	Retention    Duration `toml:"retention" json:"retention"`         // keep done/cancelled jobs; default 24h
	DLQRetention Duration `toml:"dlq_retention" json:"dlq_retention"` // keep dead-letter rows; default 30 days
	Concurrency  int      `toml:"concurrency" json:"concurrency"`     // max processing at once across all workers; 0: no limit
	Rate         float64  `toml:"rate" json:"rate"`                   // max claims per second; 0: no limit
	Burst        int      `toml:"burst" json:"burst"`                 // claims allowed at once under Rate; default max(1, rate)
	MaxQueued    int      `toml:"max_queued" json:"max_queued"`       // submissions beyond it get 429; 0: no limit
	// Flow control by key (docs/flow-control.md): at most KeyConcurrency
	// jobs of one key at once, KeyRate jobs of one key per period, and
	// Fairness "round_robin" to hand out keys in turn.
	KeyConcurrency int     `toml:"key_concurrency" json:"key_concurrency,omitempty"`
	KeyRate        KeyRate `toml:"key_rate" json:"key_rate,omitzero"`
	Fairness       string  `toml:"fairness" json:"fairness,omitempty"`
	// LogKiB keeps the last this many KiB of each attempt's log (lines of
	// the command worker's stdout and stderr, and lines workers send).
	LogKiB int `toml:"log_kib" json:"log_kib"` // default 64
}

// DefaultLogKiB is the log kept of each attempt when no config sets log_kib.
const DefaultLogKiB = 64

// PeriodicConfig declares a job enqueued on a cron schedule ([[periodic]]
// in the config file, which package commands decodes and checks). The json
// tags are its keys, as GET /api/periodic shows them.
type PeriodicConfig struct {
	Name          string   `toml:"name" json:"name"`         // unique; default "<queue>/<kind>/<cron>"
	Cron          string   `toml:"cron" json:"cron"`         // robfig/cron: 5 fields, or @every 1m, @daily, ...
	Timezone      string   `toml:"timezone" json:"timezone"` // IANA name; default UTC
	Queue         string   `toml:"queue" json:"queue"`
	Kind          string   `toml:"kind" json:"kind"`
	Payload       any      `toml:"payload" json:"payload"`
	Priority      int      `toml:"priority" json:"priority"`
	MaxAttempts   int      `toml:"max_attempts" json:"max_attempts"`
	Timeout       Duration `toml:"timeout" json:"timeout"`
	Tags          []string `toml:"tags" json:"tags"`
	Key           string   `toml:"key" json:"key,omitempty"` // the jobs' flow-control key
	CatchUp       string   `toml:"catch_up" json:"catch_up"` // "one" (default) or "none"
	SkipIfPending bool     `toml:"skip_if_pending" json:"skip_if_pending"`

	// Schedule is the parsed Cron, set by the config loader.
	Schedule Schedule `toml:"-" json:"-"`
	// PayloadJSON is Payload as JSON, set by the config loader.
	PayloadJSON json.RawMessage `toml:"-" json:"-"`
}

// Schedule gives the next fire time after a time (robfig/cron's Schedule
// satisfies it; package app does not import cron).
type Schedule interface {
	Next(time.Time) time.Time
}

// DefaultConfig is the configuration without a file.
func DefaultConfig() *Config { return &Config{Queues: map[string]QueueConfig{}} }

// fileQueue returns the policy of queue name in the config file: its
// section, then [defaults], then the built-in defaults, merged field by
// field (Queue lays the runtime settings over it).
func (c *Config) fileQueue(name string) QueueConfig {
	q := c.Queues[name]
	if name == WebhookQueue {
		q = c.webhookQueue(q) // the delivery policy's defaults, under [queues._webhooks]
	}
	d := c.Defaults
	pick := func(v, def Duration, builtin time.Duration) Duration {
		if v > 0 {
			return v
		}
		if def > 0 {
			return def
		}
		return Duration(builtin)
	}
	out := QueueConfig{
		MaxAttempts:  firstInt(q.MaxAttempts, d.MaxAttempts, DefaultMaxAttempts),
		Timeout:      pick(q.Timeout, d.Timeout, DefaultTimeout),
		BackoffBase:  pick(q.BackoffBase, d.BackoffBase, DefaultBackoffBase),
		BackoffMax:   pick(q.BackoffMax, d.BackoffMax, DefaultBackoffMax),
		Retention:    pick(q.Retention, d.Retention, DefaultRetention),
		DLQRetention: pick(q.DLQRetention, d.DLQRetention, DefaultDLQRetention),
		Concurrency:  firstInt(q.Concurrency, d.Concurrency, 0),
		Burst:        firstInt(q.Burst, d.Burst, 0),
		MaxQueued:    firstInt(q.MaxQueued, d.MaxQueued, 0),
		Rate:         q.Rate,

		LogKiB: firstInt(q.LogKiB, d.LogKiB, DefaultLogKiB),

		KeyConcurrency: firstInt(q.KeyConcurrency, d.KeyConcurrency, 0),
		KeyRate:        q.KeyRate,
		Fairness:       q.Fairness,
	}
	if out.KeyRate.N == 0 {
		out.KeyRate = d.KeyRate
	}
	if out.Fairness == "" {
		out.Fairness = d.Fairness
	}
	if out.Rate == 0 {
		out.Rate = d.Rate
	}
	return out
}

func firstInt(vs ...int) int {
	for _, v := range vs {
		if v != 0 {
			return v
		}
	}
	return 0
}

// Backoff is the BackoffFunc of this config's per-queue policy.
func (c *Config) Backoff(queue string, attempt int) time.Duration {
	q := c.Queue(queue)
	return Backoff(attempt, q.BackoffBase.D(), q.BackoffMax.D())
}

// KeyLimits is how queue limits the jobs of one key (see QueueConfig).
func (c *Config) KeyLimits(queue string) KeyLimits {
	return c.Queue(queue).KeyLimits()
}

// Capped is whether queue has a concurrency limit (StoreOptions.Capped).
func (c *Config) Capped(queue string) bool { return c.Queue(queue).Concurrency > 0 }

// MaxQueued maps each queue with a max_queued limit to it.
func (c *Config) MaxQueued() map[string]int {
	m := map[string]int{}
	c.eachQueue(func(n string) {
		if v := c.Queue(n).MaxQueued; v > 0 {
			m[n] = v
		}
	})
	return m
}
