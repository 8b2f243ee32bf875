package app

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/BurntSushi/toml"
)

// Config is the config file (TOML, --config / QUEUE_CONFIG): server
// settings, per-queue policy, tokens, periodic jobs and command workers.
// Flags override the file; the file overrides the defaults of this package.
type Config struct {
	Server      ServerConfig           `toml:"server"`
	Maintenance MaintenanceConfig      `toml:"maintenance"`
	Defaults    QueueConfig            `toml:"defaults"`
	Queues      map[string]QueueConfig `toml:"queues"`
	Tokens      []TokenConfig          `toml:"tokens"`
	Periodic    []PeriodicConfig       `toml:"periodic"`
	Workers     []WorkerConfig         `toml:"workers"`

	// Path is the file the config was read from, if any.
	Path string `toml:"-"`
}

// ServerConfig holds what `queue serve` flags can also set.
type ServerConfig struct {
	DB        string `toml:"db"`         // database: a path, postgres://..., or memory
	Addr      string `toml:"addr"`       // listen address; default 127.0.0.1:8080
	Sync      string `toml:"sync"`       // SQLite: full (default) or normal
	LogFormat string `toml:"log_format"` // console or json; default: console on a terminal
	LogLevel  string `toml:"log_level"`  // debug, info (default), warn, error
	Insecure  bool   `toml:"insecure"`   // allow a non-loopback address without tokens
	// MaxBodyBytes caps a request body; default 64 MiB (a batch of 10,000 jobs).
	MaxBodyBytes int64 `toml:"max_body_bytes"`
	// PublicHealth and PublicMetrics open /healthz + /readyz and /metrics
	// without a token when tokens are configured.
	PublicHealth  bool `toml:"public_health"`
	PublicMetrics bool `toml:"public_metrics"`
	// Grace is how long built-in workers may finish on shutdown; default 30s.
	Grace Duration `toml:"grace"`
	// AllowedHosts are the Host names (besides loopback names, this
	// machine's own names and addresses, and the listen address) that
	// requests may carry; "*.example.com" matches subdomains. Anything
	// else is refused (421), so a DNS-rebinding page cannot reach the API.
	AllowedHosts []string `toml:"allowed_hosts"`
	// TrustedProxies are the addresses or CIDR ranges whose
	// X-Forwarded-For is believed for the client address; empty: the
	// direct peer is the client.
	TrustedProxies []string `toml:"trusted_proxies"`
	// MaxStreams caps open event streams (GET /api/events) server-wide;
	// default 256. Beyond it: 503.
	MaxStreams int `toml:"max_streams"`
	// MaxWaiters caps claims waiting in a long poll server-wide; default
	// 1024. Beyond it: 503.
	MaxWaiters int `toml:"max_waiters"`
}

// MaintenanceConfig sets the maintenance loop and the retention schedule.
type MaintenanceConfig struct {
	// Interval of stale-lease recovery and TTL expiry; default 1s.
	Interval Duration `toml:"interval"`
	// Retention is the robfig/cron schedule of retention passes; default "@every 1m".
	Retention string `toml:"retention"`
	// EventRetention and AuditRetention keep events and audit records; default 7 days.
	EventRetention Duration `toml:"event_retention"`
	AuditRetention Duration `toml:"audit_retention"`
}

// QueueConfig is the policy of one queue. Zero fields take the [defaults]
// section, then the built-in defaults.
type QueueConfig struct {
	MaxAttempts  int      `toml:"max_attempts"`  // 1..1000; default 5
	Timeout      Duration `toml:"timeout"`       // lease of one execution; default 30s
	BackoffBase  Duration `toml:"backoff_base"`  // default 1s
	BackoffMax   Duration `toml:"backoff_max"`   // default 1h
	Retention    Duration `toml:"retention"`     // keep done/cancelled jobs; default 24h
	DLQRetention Duration `toml:"dlq_retention"` // keep dead-letter rows; default 30 days
	Concurrency  int      `toml:"concurrency"`   // max processing at once across all workers; 0: no limit
	Rate         float64  `toml:"rate"`          // max claims per second; 0: no limit
	Burst        int      `toml:"burst"`         // claims allowed at once under Rate; default max(1, rate)
	MaxQueued    int      `toml:"max_queued"`    // submissions beyond it get 429; 0: no limit
}

// TokenConfig is a named API token and what it may do.
type TokenConfig struct {
	Name  string `toml:"name"`
	Token string `toml:"token"`
	// TokenFile names a file holding the token (systemd LoadCredential=),
	// read at start so the secret stays out of the config; give Token or
	// TokenFile, not both.
	TokenFile string `toml:"token_file"`
	// Role is read, submit, work or admin (each includes the ones before
	// it); default admin.
	Role Role `toml:"role"`
	// Queues, if set, are the only queues the token may touch.
	Queues []string `toml:"queues"`
}

// Role is what a token may do. Each role includes the ones before it:
// read < submit < work < admin.
type Role string

// The roles, weakest first.
const (
	RoleRead   Role = "read"   // list and show jobs, the DLQ, queues, stats, events
	RoleSubmit Role = "submit" // and submit jobs
	RoleWork   Role = "work"   // and claim, heartbeat, complete, fail, snooze, once
	RoleAdmin  Role = "admin"  // and cancel, pause, resume, drain, every DLQ action
)

// roleRank orders the roles; an unknown role ranks 0 (nothing).
var roleRank = map[Role]int{RoleRead: 1, RoleSubmit: 2, RoleWork: 3, RoleAdmin: 4}

// Allows reports whether role r includes need. The empty role is admin
// (a token configured without one, as before roles existed).
func (r Role) Allows(need Role) bool {
	if r == "" {
		r = RoleAdmin
	}
	return roleRank[r] >= roleRank[need] && roleRank[need] > 0
}

// Valid reports whether r is one of the roles (or empty: admin).
func (r Role) Valid() bool { return r == "" || roleRank[r] > 0 }

// PeriodicConfig declares a job enqueued on a cron schedule.
type PeriodicConfig struct {
	Name          string   `toml:"name"`     // unique; default "<queue>/<kind>/<cron>"
	Cron          string   `toml:"cron"`     // robfig/cron: 5 fields, or @every 1m, @daily, ...
	Timezone      string   `toml:"timezone"` // IANA name; default UTC
	Queue         string   `toml:"queue"`
	Kind          string   `toml:"kind"`
	Payload       any      `toml:"payload"`
	Priority      int      `toml:"priority"`
	MaxAttempts   int      `toml:"max_attempts"`
	Timeout       Duration `toml:"timeout"`
	Tags          []string `toml:"tags"`
	CatchUp       string   `toml:"catch_up"` // "one" (default) or "none"
	SkipIfPending bool     `toml:"skip_if_pending"`

	// Schedule is the parsed Cron, set by LoadConfig.
	Schedule Schedule `toml:"-"`
	// PayloadJSON is Payload as JSON, set by LoadConfig.
	PayloadJSON json.RawMessage `toml:"-"`
}

// WorkerConfig declares built-in command workers for a queue (SPEC section 5).
type WorkerConfig struct {
	Queue       string            `toml:"queue"`
	Kinds       []string          `toml:"kinds"` // empty: every kind
	Command     []string          `toml:"command"`
	Concurrency int               `toml:"concurrency"` // default 1
	Timeout     Duration          `toml:"timeout"`     // default: each job's timeout
	Dir         string            `toml:"dir"`
	Env         map[string]string `toml:"env"`
	// PassEnv names variables of serve's environment the command gets too
	// (e.g. AWS_REGION); never QUEUE_*. See CommandConfig.PassEnv.
	PassEnv []string `toml:"pass_env"`
	// KillGrace is how long a process has between SIGTERM and SIGKILL; default 10s.
	KillGrace Duration `toml:"kill_grace"`
}

// Schedule gives the next fire time after a time (robfig/cron's Schedule
// satisfies it; package app does not import cron).
type Schedule interface {
	Next(time.Time) time.Time
}

// ScheduleParser parses a cron spec in a time zone. main passes robfig/cron's.
type ScheduleParser func(spec string, loc *time.Location) (Schedule, error)

// UnmarshalText reads a duration from the config file ("30s", "7d").
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := ParseDuration(string(b))
	if err != nil {
		return err
	}
	*d = Duration(v)
	return nil
}

// MarshalText writes d as a duration string.
func (d Duration) MarshalText() ([]byte, error) { return []byte(time.Duration(d).String()), nil }

// ConfigError names the key and line of a problem in the config file.
type ConfigError struct {
	Path string
	Line int
	Key  string
	Msg  string
}

func (e *ConfigError) Error() string {
	loc := e.Path
	if e.Line > 0 {
		loc += ":" + strconv.Itoa(e.Line)
	}
	if e.Key != "" {
		return fmt.Sprintf("config %s: %s: %s", loc, e.Key, e.Msg)
	}
	return fmt.Sprintf("config %s: %s", loc, e.Msg)
}

// DefaultConfig is the configuration without a file.
func DefaultConfig() *Config { return &Config{Queues: map[string]QueueConfig{}} }

// LoadConfig reads and validates the config file at path. Unknown keys and
// bad values are errors (*ConfigError) naming the key and its line.
func LoadConfig(path string, parse ScheduleParser) (*Config, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	return ParseConfig(path, b, parse)
}

// ParseConfig is LoadConfig on the file's contents.
func ParseConfig(path string, b []byte, parse ScheduleParser) (*Config, error) {
	cfg := DefaultConfig()
	cfg.Path = path
	lines := keyLines(b)
	md, err := toml.NewDecoder(bytes.NewReader(b)).Decode(cfg)
	if err != nil {
		var pe toml.ParseError
		if errors.As(err, &pe) {
			return nil, &ConfigError{Path: path, Line: pe.Position.Line, Key: pe.LastKey, Msg: pe.Message}
		}
		if m := decodeErrRE.FindStringSubmatch(err.Error()); m != nil {
			line, _ := strconv.Atoi(m[1])
			return nil, &ConfigError{Path: path, Line: line, Key: m[2], Msg: m[3]}
		}
		return nil, &ConfigError{Path: path, Msg: err.Error()}
	}
	var und []toml.Key
	for _, k := range md.Undecoded() {
		if len(k) >= 2 && k[0] == "periodic" && k[1] == "payload" {
			continue // a payload is free-form JSON
		}
		und = append(und, k)
	}
	if len(und) > 0 {
		k := und[0].String()
		return nil, &ConfigError{Path: path, Line: lines.find(k), Key: k, Msg: "unknown key (see docs/configuration.md for the keys)"}
	}
	if cfg.Queues == nil {
		cfg.Queues = map[string]QueueConfig{}
	}
	if err := cfg.validate(parse); err != nil {
		var ce *ConfigError
		if errors.As(err, &ce) {
			ce.Path = path
			if ce.Line == 0 {
				ce.Line = lines.find(ce.Key)
			}
		}
		return nil, err
	}
	return cfg, nil
}

func (c *Config) validate(parse ScheduleParser) error {
	for _, check := range []func() error{
		c.validateServer,
		func() error { return c.validateMaintenance(parse) },
		c.validateQueues,
		c.Server.validateHTTP,
		c.validateTokens,
		func() error { return c.validatePeriodic(parse) },
		c.validateWorkers,
	} {
		if err := check(); err != nil {
			return err
		}
	}
	return nil
}

// bad is a ConfigError at key; LoadConfig adds the file and line.
func bad(key, format string, args ...any) error {
	return &ConfigError{Key: key, Msg: fmt.Sprintf(format, args...)}
}

func (c *Config) validateServer() error {
	switch strings.ToLower(c.Server.Sync) {
	case "", "full", "normal":
	default:
		return bad("server.sync", "%q is not full or normal", c.Server.Sync)
	}
	switch c.Server.LogFormat {
	case "", "console", "json":
	default:
		return bad("server.log_format", "%q is not console or json", c.Server.LogFormat)
	}
	switch c.Server.LogLevel {
	case "", "debug", "info", "warn", "error":
	default:
		return bad("server.log_level", "%q is not debug, info, warn or error", c.Server.LogLevel)
	}
	if c.Server.MaxBodyBytes < 0 {
		return bad("server.max_body_bytes", "must be positive")
	}
	if c.Server.Grace < 0 {
		return bad("server.grace", "must not be negative")
	}
	return nil
}

func (c *Config) validateMaintenance(parse ScheduleParser) error {
	if c.Maintenance.Interval < 0 || (c.Maintenance.Interval > 0 && c.Maintenance.Interval.D() < 10*time.Millisecond) {
		return bad("maintenance.interval", "must be at least 10ms")
	}
	if c.Maintenance.Retention != "" && parse != nil {
		if _, err := parse(c.Maintenance.Retention, time.UTC); err != nil {
			return bad("maintenance.retention", "invalid cron schedule %q: %v", c.Maintenance.Retention, err)
		}
	}
	if c.Maintenance.EventRetention < 0 || c.Maintenance.AuditRetention < 0 {
		return bad("maintenance", "retention must not be negative")
	}
	return nil
}

func (c *Config) validateQueues() error {
	if err := c.Defaults.validate("defaults"); err != nil {
		return err
	}
	names := make([]string, 0, len(c.Queues))
	for n := range c.Queues {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if err := ValidateQueue(n); err != nil {
			return bad("queues."+n, "invalid queue name: %v", err)
		}
		q := c.Queues[n]
		if err := q.validate("queues." + n); err != nil {
			return err
		}
	}
	return nil
}

// validateTokens checks each token and reads those given as token_file.
func (c *Config) validateTokens() error {
	seen := map[string]bool{}
	for i := range c.Tokens {
		t := &c.Tokens[i]
		key := fmt.Sprintf("tokens[%d]", i)
		if t.Name == "" || !nameRE.MatchString(t.Name) {
			return bad(key+".name", "a token needs a name of letters, digits, '_', '.', '-'")
		}
		switch {
		case t.Token != "" && t.TokenFile != "":
			return bad(key+".token_file", "token %q has both token and token_file: keep one (token_file keeps the secret out of this file)", t.Name)
		case t.TokenFile != "":
			path, err := c.tokenFilePath(t.TokenFile)
			if err != nil {
				return bad(key+".token_file", "token %q: %v", t.Name, err)
			}
			tok, err := ReadTokenFile(path)
			if err != nil && errors.Is(err, os.ErrNotExist) && strings.Contains(t.TokenFile, "CREDENTIALS_DIRECTORY") {
				return bad(key+".token_file", "token %q: %v; under systemd the unit needs LoadCredential=%s:/etc/queue/SOURCE-FILE", t.Name, err, filepath.Base(path))
			}
			if err != nil {
				return bad(key+".token_file", "token %q: %v", t.Name, err)
			}
			t.Token, t.TokenFile = tok, path
		case t.Token == "":
			return bad(key+".token", "token %q needs token = \"...\" or token_file = \"...\" (make one with `openssl rand -hex 24`)", t.Name)
		case len(t.Token) < MinTokenLength:
			return bad(key+".token", "token %q is too short (at least 16 characters; try `openssl rand -hex 24`, or token_file)", t.Name)
		}
		if !t.Role.Valid() {
			return bad(key+".role", "token %q: role %q is not read, submit, work or admin (each includes the ones before it; empty: admin)", t.Name, clip(string(t.Role)))
		}
		for _, q := range t.Queues {
			if err := ValidateQueue(q); err != nil {
				return bad(key+".queues", "token %q: %v", t.Name, err)
			}
		}
		if seen[t.Name] {
			return bad(key+".name", "token name %q used twice", t.Name)
		}
		seen[t.Name] = true
	}
	return nil
}

// validatePeriodic checks each periodic entry and fills its defaults, its
// parsed schedule and its payload as JSON.
func (c *Config) validatePeriodic(parse ScheduleParser) error {
	entries := map[string]bool{}
	for i := range c.Periodic {
		p := &c.Periodic[i]
		key := fmt.Sprintf("periodic[%d]", i)
		if p.Queue == "" {
			p.Queue = DefaultQueue
		}
		if err := ValidateQueue(p.Queue); err != nil {
			return bad(key+".queue", "%v", err)
		}
		if err := ValidateKind(p.Kind); err != nil {
			return bad(key+".kind", "%v", err)
		}
		if p.Cron == "" {
			return bad(key+".cron", "a periodic job needs a cron schedule (e.g. \"*/5 * * * *\" or \"@every 1m\")")
		}
		loc := time.UTC
		if p.Timezone != "" {
			l, err := time.LoadLocation(p.Timezone)
			if err != nil {
				return bad(key+".timezone", "unknown time zone %q", p.Timezone)
			}
			loc = l
		}
		if parse != nil {
			s, err := parse(p.Cron, loc)
			if err != nil {
				return bad(key+".cron", "invalid cron schedule %q: %v", p.Cron, err)
			}
			p.Schedule = s
		}
		switch p.CatchUp {
		case "":
			p.CatchUp = "one"
		case "one", "none":
		default:
			return bad(key+".catch_up", "%q is not one or none", p.CatchUp)
		}
		if p.Name == "" {
			p.Name = p.Queue + "/" + p.Kind + "/" + p.Cron
		}
		if entries[p.Name] {
			return bad(key+".name", "periodic name %q used twice", p.Name)
		}
		entries[p.Name] = true
		if p.Priority < -1000 || p.Priority > 1000 {
			return bad(key+".priority", "must be between -1000 and 1000")
		}
		if p.MaxAttempts < 0 || p.MaxAttempts > 1000 {
			return bad(key+".max_attempts", "must be between 1 and 1000")
		}
		if p.Timeout < 0 {
			return bad(key+".timeout", "must be positive")
		}
		for _, t := range p.Tags {
			if err := ValidateKind(t); err != nil {
				return bad(key+".tags", "tag %q: %v", t, err)
			}
		}
		b, err := json.Marshal(p.Payload)
		if err != nil {
			return bad(key+".payload", "cannot be JSON: %v", err)
		}
		p.PayloadJSON = b
	}
	return nil
}

func (c *Config) validateWorkers() error {
	for i := range c.Workers {
		w := &c.Workers[i]
		key := fmt.Sprintf("workers[%d]", i)
		if w.Queue == "" {
			w.Queue = DefaultQueue
		}
		if err := ValidateQueue(w.Queue); err != nil {
			return bad(key+".queue", "%v", err)
		}
		for _, k := range w.Kinds {
			if err := ValidateKind(k); err != nil {
				return bad(key+".kinds", "kind %q: %v", k, err)
			}
		}
		if len(w.Command) == 0 || w.Command[0] == "" {
			return bad(key+".command", "a worker needs a command, as a list: command = [\"/usr/local/bin/job\", \"--flag\"]")
		}
		if w.Concurrency < 0 || w.Concurrency > 1000 {
			return bad(key+".concurrency", "must be between 1 and 1000")
		}
		if w.Concurrency == 0 {
			w.Concurrency = 1
		}
		if w.Timeout < 0 || w.KillGrace < 0 {
			return bad(key+".timeout", "must be positive")
		}
		for _, name := range w.PassEnv {
			if err := ValidatePassEnv(name); err != nil {
				return bad(key+".pass_env", "%v", err)
			}
		}
	}
	return nil
}

// MinTokenLength is the shortest token accepted (SPEC section 4).
const MinTokenLength = 16

// maxTokenFile caps what ReadTokenFile reads, so a wrong path (a log, a
// device) fails fast instead of filling memory.
const maxTokenFile = 4096

// ReadTokenFile reads an API token from the file at path: the file holds
// the token alone, surrounding whitespace (a trailing newline) is dropped,
// and the token needs MinTokenLength characters. The errors name the file
// and the fix, never the file's contents.
func ReadTokenFile(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("%w (write the token to it, e.g. `openssl rand -hex 24 > %s && chmod 600 %s`, or fix the path)", err, path, path)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxTokenFile+1))
	if err != nil {
		return "", fmt.Errorf("read %s: %w", path, err)
	}
	if len(b) > maxTokenFile {
		return "", fmt.Errorf("%s is larger than %d bytes: a token file holds the token alone", path, maxTokenFile)
	}
	tok := strings.TrimSpace(string(b))
	switch {
	case tok == "":
		return "", fmt.Errorf("%s is empty (write a token of at least %d characters to it: `openssl rand -hex 24 > %s`)", path, MinTokenLength, path)
	case strings.ContainsAny(tok, "\r\n"):
		return "", fmt.Errorf("%s holds more than one line: a token file holds the token alone", path)
	case len(tok) < MinTokenLength:
		return "", fmt.Errorf("the token in %s is too short (at least %d characters; try `openssl rand -hex 24 > %s`)", path, MinTokenLength, path)
	}
	return tok, nil
}

// tokenFilePath expands ${VAR} in a token_file (systemd sets
// CREDENTIALS_DIRECTORY for a unit with LoadCredential=) and resolves a
// relative path against the config file's folder.
func (c *Config) tokenFilePath(p string) (string, error) {
	var unset []string
	path := os.Expand(p, func(name string) string {
		v, ok := os.LookupEnv(name)
		if !ok {
			unset = append(unset, name)
		}
		return v
	})
	if len(unset) > 0 {
		hint := ""
		if unset[0] == "CREDENTIALS_DIRECTORY" {
			hint = " (systemd sets it for a unit with LoadCredential=; outside systemd give the file's path)"
		}
		return "", fmt.Errorf("%q: $%s is not set%s", p, unset[0], hint)
	}
	if path == "" {
		return "", fmt.Errorf("%q is empty after expanding variables", p)
	}
	if !filepath.IsAbs(path) {
		path = filepath.Join(filepath.Dir(c.Path), path)
	}
	return path, nil
}

// validateHTTP checks the keys the HTTP layer reads: allowed_hosts,
// trusted_proxies, max_streams and max_waiters.
func (s *ServerConfig) validateHTTP() error {
	for _, h := range s.AllowedHosts {
		if err := ValidateAllowedHost(h); err != nil {
			return &ConfigError{Key: "server.allowed_hosts", Msg: err.Error()}
		}
	}
	for _, p := range s.TrustedProxies {
		if err := ValidateTrustedProxy(p); err != nil {
			return &ConfigError{Key: "server.trusted_proxies", Msg: err.Error()}
		}
	}
	if s.MaxStreams < 0 {
		return &ConfigError{Key: "server.max_streams", Msg: "must not be negative (0 means the default, 256)"}
	}
	if s.MaxWaiters < 0 {
		return &ConfigError{Key: "server.max_waiters", Msg: "must not be negative (0 means the default, 1024)"}
	}
	return nil
}

// hostLabelRE is one label of a host name. An underscore is allowed:
// container and compose service names carry them.
var hostLabelRE = regexp.MustCompile(`^[A-Za-z0-9_]([A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?$`)

// ValidateAllowedHost checks one entry of server.allowed_hosts (or
// --allowed-hosts): a host name ("queue.example.com"), an IP address
// ("192.0.2.7", "2001:db8::7", without brackets), "*.example.com" (any
// subdomain of example.com, not example.com itself) or "*" (any host).
// An entry names a host only: the port of a request's Host is not
// compared, so "host:port" is refused with a hint, as are a scheme and a path.
func ValidateAllowedHost(h string) error {
	switch {
	case h == "*":
		return nil
	case h == "":
		return errors.New(`an allowed host is empty (give a host name, an IP address, "*.example.com" or "*")`)
	case strings.Contains(h, "://"):
		return fmt.Errorf("allowed host %q: give the host name alone, without a scheme (%q)", clip(h), clip(h[strings.Index(h, "://")+3:]))
	case strings.ContainsAny(h, "/?#"):
		return fmt.Errorf("allowed host %q: give the host name alone, without a path", clip(h))
	case strings.HasPrefix(h, "[") && strings.HasSuffix(h, "]"):
		return fmt.Errorf("allowed host %q: write an IPv6 address without brackets (%q)", clip(h), clip(h[1:len(h)-1]))
	}
	if net.ParseIP(h) != nil {
		return nil
	}
	if host, _, err := net.SplitHostPort(h); err == nil {
		return fmt.Errorf("allowed host %q: give the host without the port (%q); an allowed host is allowed on any port", clip(h), clip(host))
	}
	name := strings.TrimPrefix(h, "*.")
	if len(name) > 253 {
		return fmt.Errorf("allowed host %q is longer than 253 characters", clip(h))
	}
	for _, l := range strings.Split(name, ".") {
		if !hostLabelRE.MatchString(l) {
			return fmt.Errorf("allowed host %q is not a host name, an IP address, \"*.example.com\" or \"*\"", clip(h))
		}
	}
	return nil
}

// ValidateTrustedProxy checks one entry of server.trusted_proxies: an IP
// address ("10.0.0.5") or a CIDR range ("10.0.0.0/8", "fd00::/8").
func ValidateTrustedProxy(p string) error {
	_, err := ParseTrustedProxy(p)
	return err
}

// ParseTrustedProxy reads a trusted_proxies entry: an address is the range
// of that address alone.
func ParseTrustedProxy(p string) (*net.IPNet, error) {
	if ip := net.ParseIP(p); ip != nil {
		bits := 128
		if ip.To4() != nil {
			ip, bits = ip.To4(), 32
		}
		return &net.IPNet{IP: ip, Mask: net.CIDRMask(bits, bits)}, nil
	}
	if _, n, err := net.ParseCIDR(p); err == nil {
		return n, nil
	}
	return nil, fmt.Errorf("trusted proxy %q is not an IP address (10.0.0.5) or a CIDR range (10.0.0.0/8)", clip(p))
}

func (q *QueueConfig) validate(key string) error {
	bad := func(field, format string, args ...any) error {
		return &ConfigError{Key: key + "." + field, Msg: fmt.Sprintf(format, args...)}
	}
	switch {
	case q.MaxAttempts < 0 || q.MaxAttempts > 1000:
		return bad("max_attempts", "%d is not between 1 and 1000", q.MaxAttempts)
	case q.Timeout < 0 || q.Timeout.D() > MaxTimeout:
		return bad("timeout", "must be between 1ms and %s", MaxTimeout)
	case q.BackoffBase < 0:
		return bad("backoff_base", "must be positive")
	case q.BackoffMax < 0:
		return bad("backoff_max", "must be positive")
	case q.BackoffMax > 0 && q.BackoffBase > q.BackoffMax:
		return bad("backoff_base", "is larger than backoff_max")
	case q.Retention < 0:
		return bad("retention", "must be positive")
	case q.DLQRetention < 0:
		return bad("dlq_retention", "must be positive")
	case q.Concurrency < 0:
		return bad("concurrency", "must be positive (0 means no limit)")
	case q.Rate < 0:
		return bad("rate", "must be positive (0 means no limit)")
	case q.Burst < 0:
		return bad("burst", "must be positive")
	case q.MaxQueued < 0:
		return bad("max_queued", "must be positive (0 means no limit)")
	}
	return nil
}

// Queue returns the policy of queue name: its section, then [defaults],
// then the built-in defaults, merged field by field.
func (c *Config) Queue(name string) QueueConfig {
	q := c.Queues[name]
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

// MaxQueued maps each queue with a max_queued limit to it.
func (c *Config) MaxQueued() map[string]int {
	m := map[string]int{}
	for n := range c.Queues {
		if v := c.Queue(n).MaxQueued; v > 0 {
			m[n] = v
		}
	}
	return m
}

// lineIndex maps dotted key paths ("queues.emails.timeout",
// "periodic[1].cron") to their line in the file, so errors can name it.
type lineIndex map[string]int

// decodeErrRE picks line and key out of BurntSushi/toml's type errors.
var decodeErrRE = regexp.MustCompile(`^toml: line (\d+) \(last key "([^"]*)"\): (.*)$`)

var (
	tableRE = regexp.MustCompile(`^\s*\[\s*([^\[\]]+?)\s*\]\s*(#.*)?$`)
	arrayRE = regexp.MustCompile(`^\s*\[\[\s*([^\[\]]+?)\s*\]\]\s*(#.*)?$`)
	keyRE   = regexp.MustCompile(`^\s*("?[A-Za-z0-9_.\-]+"?)\s*=`)
)

func keyLines(b []byte) lineIndex {
	idx := lineIndex{}
	arrays := map[string]int{}
	table := ""
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if m := arrayRE.FindStringSubmatch(line); m != nil {
			name := unquoteKey(m[1])
			table = fmt.Sprintf("%s[%d]", name, arrays[name])
			arrays[name]++
			idx.set(table, n)
			continue
		}
		if m := tableRE.FindStringSubmatch(line); m != nil {
			table = unquoteKey(m[1])
			idx.set(table, n)
			continue
		}
		if m := keyRE.FindStringSubmatch(line); m != nil {
			k := unquoteKey(m[1])
			if table != "" {
				k = table + "." + k
			}
			idx.set(k, n)
		}
	}
	return idx
}

func (l lineIndex) set(k string, n int) {
	if _, ok := l[k]; !ok {
		l[k] = n
	}
}

func unquoteKey(k string) string { return strings.ReplaceAll(strings.TrimSpace(k), `"`, "") }

// find returns the line of key, or of its closest enclosing table.
func (l lineIndex) find(key string) int {
	for k := key; k != ""; {
		if n, ok := l[k]; ok {
			return n
		}
		i := strings.LastIndexAny(k, ".[")
		if i < 0 {
			break
		}
		k = k[:i]
	}
	// Undecoded keys of array tables come without an index: try each.
	if i := strings.Index(key, "."); i > 0 {
		for j := 0; j < 1000; j++ {
			if n, ok := l[fmt.Sprintf("%s[%d]%s", key[:i], j, key[i:])]; ok {
				return n
			}
		}
	}
	return 0
}

// ValidatePassEnv checks a name to copy from the worker's environment into
// a command's: letters, digits and '_', not starting with a digit, and not
// QUEUE_*: those are the queue's own settings and secrets (QUEUE_TOKEN,
// QUEUE_DB); give a job one on purpose as a configured variable instead.
func ValidatePassEnv(name string) error {
	if !envNameRE.MatchString(name) {
		return fmt.Errorf("%q is not a variable name (letters, digits and '_', not starting with a digit)", name)
	}
	if strings.HasPrefix(name, "QUEUE_") {
		return fmt.Errorf("%q: QUEUE_* variables are the queue's own settings and secrets and are never passed on; to give jobs such a value on purpose, set it with env in [[workers]] or --env of queue work", name)
	}
	return nil
}

var envNameRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
