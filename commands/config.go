package commands

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/BurntSushi/toml"
	"github.com/robfig/cron/v3"
	"github.com/rs/zerolog"

	"github.com/queuehq/queue/app"
	"github.com/queuehq/queue/ui"
	"github.com/queuehq/queue/worker"
)

// config is the config file (TOML, --config / QUEUE_CONFIG) with the flags
// of `queue serve` laid over it (serveConfig): the server's own settings,
// its tokens and built-in workers, and what the Service reads, which
// serviceConfig hands to package app. Flags override the file; the file
// overrides the defaults.
type config struct {
	Server      serverConfig               `toml:"server"`
	Maintenance maintenanceConfig          `toml:"maintenance"`
	Defaults    app.QueueConfig            `toml:"defaults"`
	Queues      map[string]app.QueueConfig `toml:"queues"`
	Tokens      []tokenConfig              `toml:"tokens"`
	Periodic    []app.PeriodicConfig       `toml:"periodic"`
	Workers     []workerConfig             `toml:"workers"`
	Webhooks    webhooksConfig             `toml:"webhooks"` // config_webhooks.go
	Tracing     tracingConfig              `toml:"tracing"`  // config_tracing.go

	// Path is the file the config was read from, if any.
	Path string `toml:"-"`
}

// serverConfig holds what `queue serve` flags can also set.
type serverConfig struct {
	DB        string `toml:"db"`         // database: a path, postgres://..., or memory
	Addr      string `toml:"addr"`       // listen address; default 127.0.0.1:8080
	Sync      string `toml:"sync"`       // SQLite: full (default) or normal
	LogFormat string `toml:"log_format"` // console or json; default: console on a terminal
	LogLevel  string `toml:"log_level"`  // debug, info (default), warn, error
	Insecure  bool   `toml:"insecure"`   // allow a non-loopback address without tokens
	// MaxBodyBytes caps a request body; default 64 MiB (a batch of 10,000 jobs).
	MaxBodyBytes int64 `toml:"max_body_bytes"`
	// PublicHealth, if false, puts /healthz and /readyz behind the tokens
	// when tokens are configured; unset or true, they answer anyone (they
	// reveal nothing). PublicMetrics opens /metrics without a token.
	PublicHealth  *bool `toml:"public_health"`
	PublicMetrics bool  `toml:"public_metrics"`
	// Grace is how long built-in workers may finish on shutdown; default 30s.
	Grace app.Duration `toml:"grace"`
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
	// 1024. Beyond it: 503. The Service enforces it (app.Config.MaxWaiters).
	MaxWaiters int `toml:"max_waiters"`
}

// maintenanceConfig sets the maintenance loop and the retention schedule.
type maintenanceConfig struct {
	// Interval of stale-lease recovery and TTL expiry; default 1s.
	Interval app.Duration `toml:"interval"`
	// Retention is the robfig/cron schedule of retention passes; default "@every 1m".
	Retention string `toml:"retention"`
	// EventRetention and AuditRetention keep events and audit records; default 7 days.
	EventRetention app.Duration `toml:"event_retention"`
	AuditRetention app.Duration `toml:"audit_retention"`
	// DLQAlertQueue, if set, gets a job of kind dlq.alert when a queue's
	// dead-letter rows reach DLQAlertThreshold (default 100).
	DLQAlertQueue     string `toml:"dlq_alert_queue"`
	DLQAlertThreshold int    `toml:"dlq_alert_threshold"`
}

// tokenConfig is a named API token and what it may do.
type tokenConfig struct {
	Name  string `toml:"name"`
	Token string `toml:"token"`
	// TokenFile names a file holding the token (systemd LoadCredential=),
	// read at start so the secret stays out of the config; give Token or
	// TokenFile, not both.
	TokenFile string `toml:"token_file"`
	// Role is read, submit, work or admin (each includes the ones before
	// it); default admin.
	Role ui.Role `toml:"role"`
	// Queues, if set, are the only queues the token may touch.
	Queues []string `toml:"queues"`
}

// workerConfig declares built-in command workers for a queue (SPEC section 5).
type workerConfig struct {
	Queue       string            `toml:"queue"`
	Kinds       []string          `toml:"kinds"` // empty: every kind
	Command     []string          `toml:"command"`
	Concurrency int               `toml:"concurrency"` // default 1
	Timeout     app.Duration      `toml:"timeout"`     // default: each job's timeout
	Dir         string            `toml:"dir"`
	Env         map[string]string `toml:"env"`
	// PassEnv names variables of serve's environment the command gets too
	// (e.g. AWS_REGION); never QUEUE_*. See worker.CommandConfig.PassEnv.
	PassEnv []string `toml:"pass_env"`
	// KillGrace is how long a process has between SIGTERM and SIGKILL; default 10s.
	KillGrace app.Duration `toml:"kill_grace"`
}

// serviceConfig is what the Service reads of c.
func (c *config) serviceConfig() *app.Config {
	return &app.Config{
		Defaults:       c.Defaults,
		Queues:         c.Queues,
		Periodic:       c.Periodic,
		MaxWaiters:     c.Server.MaxWaiters,
		EventRetention: c.Maintenance.EventRetention,
		AuditRetention: c.Maintenance.AuditRetention,
		DLQAlert:       app.DLQAlert{Queue: c.Maintenance.DLQAlertQueue, Threshold: c.Maintenance.DLQAlertThreshold},
		ParseSchedule:  parseSchedule, // periodic entries made through the API
		Webhooks:       c.webhookConfig(),
	}
}

// uiTokens are the tokens the HTTP layer accepts, their secrets read.
func (c *config) uiTokens() []ui.Token {
	var out []ui.Token
	for _, t := range c.Tokens {
		out = append(out, ui.Token{Name: t.Name, Secret: t.Token, Role: t.Role, Queues: t.Queues})
	}
	return out
}

// metricLabels are the queues and kinds that c names outside serviceConfig
// (the queues of tokens, the queues and kinds of built-in workers), so that
// their metrics keep labels of their own.
func (c *config) metricLabels() []ui.QueueKind {
	var out []ui.QueueKind
	for _, t := range c.Tokens {
		for _, q := range t.Queues {
			out = append(out, ui.QueueKind{Queue: q})
		}
	}
	for _, w := range c.Workers {
		out = append(out, ui.QueueKind{Queue: w.Queue})
		for _, k := range w.Kinds {
			out = append(out, ui.QueueKind{Queue: w.Queue, Kind: k})
		}
	}
	return out
}

// configError names the key and line of a problem in the config file.
type configError struct {
	Path string
	Line int
	Key  string
	Msg  string
}

func (e *configError) Error() string {
	loc := e.Path
	if e.Line > 0 {
		loc += ":" + strconv.Itoa(e.Line)
	}
	if e.Key != "" {
		return fmt.Sprintf("config %s: %s: %s", loc, e.Key, e.Msg)
	}
	return fmt.Sprintf("config %s: %s", loc, e.Msg)
}

// defaultConfig is the configuration without a file.
func defaultConfig() *config { return &config{Queues: map[string]app.QueueConfig{}} }

// loadConfig reads and validates the config file at path. Unknown keys and
// bad values are errors (*configError) naming the key and its line.
func loadConfig(path string) (*config, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, &configError{Path: path, Msg: fmt.Sprintf("cannot read it: %v (give the path of a TOML file; see docs/configuration.md)", errors.Unwrap(err))}
	}
	return parseConfig(path, b)
}

// parseConfig is loadConfig on the file's contents.
func parseConfig(path string, b []byte) (*config, error) {
	cfg := defaultConfig()
	cfg.Path = path
	lines := keyLines(b)
	md, err := toml.NewDecoder(bytes.NewReader(b)).Decode(cfg)
	if err != nil {
		var pe toml.ParseError
		if errors.As(err, &pe) {
			return nil, &configError{Path: path, Line: pe.Position.Line, Key: pe.LastKey, Msg: pe.Message}
		}
		if m := decodeErrRE.FindStringSubmatch(err.Error()); m != nil {
			line, _ := strconv.Atoi(m[1])
			return nil, &configError{Path: path, Line: line, Key: m[2], Msg: m[3]}
		}
		return nil, &configError{Path: path, Msg: err.Error()}
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
		return nil, &configError{Path: path, Line: lines.find(k), Key: k, Msg: "unknown key (see docs/configuration.md for the keys)"}
	}
	if cfg.Queues == nil {
		cfg.Queues = map[string]app.QueueConfig{}
	}
	if err := cfg.validate(); err != nil {
		var ce *configError
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

func (c *config) validate() error {
	for _, check := range []func() error{
		c.validateServer,
		c.validateMaintenance,
		c.validateQueues,
		c.Server.validateHTTP,
		c.validateTokens,
		c.validatePeriodic,
		c.validateWorkers,
		c.validateWebhooks,
		c.validateTracing,
	} {
		if err := check(); err != nil {
			return err
		}
	}
	return nil
}

// bad is a configError at key; parseConfig adds the file and line.
func bad(key, format string, args ...any) error {
	return &configError{Key: key, Msg: fmt.Sprintf(format, args...)}
}

func (c *config) validateServer() error {
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

func (c *config) validateMaintenance() error {
	if c.Maintenance.Interval < 0 || (c.Maintenance.Interval > 0 && c.Maintenance.Interval.D() < 10*time.Millisecond) {
		return bad("maintenance.interval", "must be at least 10ms")
	}
	if c.Maintenance.Retention != "" {
		if _, err := parseSchedule(c.Maintenance.Retention, time.UTC); err != nil {
			return bad("maintenance.retention", "invalid cron schedule %q: %v", c.Maintenance.Retention, err)
		}
	}
	if c.Maintenance.EventRetention < 0 || c.Maintenance.AuditRetention < 0 {
		return bad("maintenance", "retention must not be negative")
	}
	if q := c.Maintenance.DLQAlertQueue; q != "" {
		if err := app.ValidateQueue(q); err != nil {
			return bad("maintenance.dlq_alert_queue", "%v", err)
		}
	}
	if c.Maintenance.DLQAlertThreshold < 0 || (c.Maintenance.DLQAlertThreshold > 0 && c.Maintenance.DLQAlertQueue == "") {
		return bad("maintenance.dlq_alert_threshold", "must be positive, and goes with dlq_alert_queue")
	}
	return nil
}

func (c *config) validateQueues() error {
	if err := validateQueue("defaults", c.Defaults); err != nil {
		return err
	}
	names := make([]string, 0, len(c.Queues))
	for n := range c.Queues {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if err := app.ValidateQueue(n); err != nil {
			return bad("queues."+n, "invalid queue name: %v", err)
		}
		if err := validateQueue("queues."+n, c.Queues[n]); err != nil {
			return err
		}
	}
	return nil
}

// validateTokens checks each token and reads those given as token_file.
func (c *config) validateTokens() error {
	seen := map[string]bool{}
	for i := range c.Tokens {
		t := &c.Tokens[i]
		key := fmt.Sprintf("tokens[%d]", i)
		if !tokenNameRE.MatchString(t.Name) {
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
			tok, err := readTokenFile(path)
			if err != nil && errors.Is(err, os.ErrNotExist) && strings.Contains(t.TokenFile, "CREDENTIALS_DIRECTORY") {
				return bad(key+".token_file", "token %q: %v; under systemd the unit needs LoadCredential=%s:/etc/queue/SOURCE-FILE", t.Name, err, filepath.Base(path))
			}
			if err != nil {
				return bad(key+".token_file", "token %q: %v", t.Name, err)
			}
			t.Token, t.TokenFile = tok, path
		case t.Token == "":
			return bad(key+".token", "token %q needs token = \"...\" or token_file = \"...\" (make one with `openssl rand -hex 24`)", t.Name)
		case len(t.Token) < minTokenLength:
			return bad(key+".token", "token %q is too short (at least 16 characters; try `openssl rand -hex 24`, or token_file)", t.Name)
		}
		if !t.Role.Valid() {
			return bad(key+".role", "token %q: role %q is not read, submit, work or admin (each includes the ones before it; empty: admin)", t.Name, app.TruncateString(string(t.Role), 80))
		}
		for _, q := range t.Queues {
			if err := app.ValidateQueue(q); err != nil {
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
// parsed schedule and its payload as JSON (app.ValidatePeriodic, which the
// API's periodic entries go through too).
func (c *config) validatePeriodic() error {
	entries := map[string]bool{}
	for i := range c.Periodic {
		p := &c.Periodic[i]
		key := fmt.Sprintf("periodic[%d]", i)
		if err := app.ValidatePeriodic(p, parseSchedule); err != nil {
			return fieldError(key, err)
		}
		if entries[p.Name] {
			return bad(key+".name", "periodic name %q used twice", p.Name)
		}
		entries[p.Name] = true
	}
	return nil
}

// fieldError is app's *InvalidError err as a configError at key.field.
func fieldError(key string, err error) error {
	var ie *app.InvalidError
	if errors.As(err, &ie) {
		return &configError{Key: key + "." + ie.Field, Msg: ie.Message}
	}
	return &configError{Key: key, Msg: err.Error()}
}

func (c *config) validateWorkers() error {
	for i := range c.Workers {
		w := &c.Workers[i]
		key := fmt.Sprintf("workers[%d]", i)
		if w.Queue == "" {
			w.Queue = app.DefaultQueue
		}
		if err := app.ValidateQueue(w.Queue); err != nil {
			return bad(key+".queue", "%v", err)
		}
		for _, k := range w.Kinds {
			if err := app.ValidateKind(k); err != nil {
				return bad(key+".kinds", "kind %q: %v", k, err)
			}
		}
		if len(w.Command) == 0 || w.Command[0] == "" {
			return bad(key+".command", "a worker needs a command, as a list: command = [\"/usr/local/bin/job\", \"--flag\"]")
		}
		if w.Dir != "" {
			if err := worker.CheckDir(w.Dir); err != nil {
				return bad(key+".dir", "%v", err)
			}
		}
		if err := worker.CheckCommand(w.Command, w.Dir); err != nil {
			return bad(key+".command", "%v", err)
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
			if err := worker.ValidatePassEnv(name); err != nil {
				return bad(key+".pass_env", "%v", err)
			}
		}
	}
	return nil
}

// parseSchedule parses a robfig/cron spec (5 fields, or @every/@daily...) in
// loc: the cron of [[periodic]] and maintenance.retention.
func parseSchedule(spec string, loc *time.Location) (app.Schedule, error) {
	if loc != nil && loc != time.UTC && !strings.HasPrefix(spec, "@every") && !strings.HasPrefix(spec, "CRON_TZ=") && !strings.HasPrefix(spec, "TZ=") {
		spec = "CRON_TZ=" + loc.String() + " " + spec
	}
	return cron.ParseStandard(spec)
}

// validateQueue checks the policy of one queue (or [defaults]) at key,
// with app.ValidateQueueConfig, which checks runtime settings too.
func validateQueue(key string, q app.QueueConfig) error {
	if err := app.ValidateQueueConfig(q); err != nil {
		return fieldError(key, err)
	}
	return nil
}

// tokenNameRE is a token's name, as the audit trail and the pages show it.
var tokenNameRE = regexp.MustCompile(`^[A-Za-z0-9_.\-]{1,64}$`)

// minTokenLength is the shortest token accepted (SPEC section 4).
const minTokenLength = 16

// maxTokenFile caps what readTokenFile reads, so a wrong path (a log, a
// device) fails fast instead of filling memory.
const maxTokenFile = 4096

// readTokenFile reads an API token from the file at path: the file holds
// the token alone, surrounding whitespace (a trailing newline) is dropped,
// and the token needs minTokenLength characters. The errors name the file
// and the fix, never the file's contents.
func readTokenFile(path string) (string, error) {
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
		return "", fmt.Errorf("%s is empty (write a token of at least %d characters to it: `openssl rand -hex 24 > %s`)", path, minTokenLength, path)
	case strings.ContainsAny(tok, "\r\n"):
		return "", fmt.Errorf("%s holds more than one line: a token file holds the token alone", path)
	case len(tok) < minTokenLength:
		return "", fmt.Errorf("the token in %s is too short (at least %d characters; try `openssl rand -hex 24 > %s`)", path, minTokenLength, path)
	}
	return tok, nil
}

// tokenFilePath expands ${VAR} in a token_file (systemd sets
// CREDENTIALS_DIRECTORY for a unit with LoadCredential=) and resolves a
// relative path against the config file's folder.
func (c *config) tokenFilePath(p string) (string, error) {
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
func (s *serverConfig) validateHTTP() error {
	for _, h := range s.AllowedHosts {
		if err := ui.ValidateAllowedHost(h); err != nil {
			return &configError{Key: "server.allowed_hosts", Msg: err.Error()}
		}
	}
	for _, p := range s.TrustedProxies {
		if _, err := ui.ParseTrustedProxy(p); err != nil {
			return &configError{Key: "server.trusted_proxies", Msg: err.Error()}
		}
	}
	if s.MaxStreams < 0 {
		return &configError{Key: "server.max_streams", Msg: "must not be negative (0 means the default, 256)"}
	}
	if s.MaxWaiters < 0 {
		return &configError{Key: "server.max_waiters", Msg: "must not be negative (0 means the default, 1024)"}
	}
	return nil
}

// warnReadableTokens warns when the config file at path holds a token
// (token = "...") or a webhook secret ([webhooks] callback_secret,
// [[webhooks.subscriptions]] secret) inline and its mode lets group or
// others read it: a token lets whoever reads it call the API, a secret
// lets them forge deliveries that receivers take for the server's.
func warnReadableTokens(log zerolog.Logger, path string) {
	if path == "" {
		return
	}
	st, err := os.Stat(path)
	if err != nil || st.Mode().Perm()&0o044 == 0 {
		return
	}
	var f struct {
		Tokens []struct {
			Token string `toml:"token"`
		} `toml:"tokens"`
		Webhooks struct {
			CallbackSecret string `toml:"callback_secret"`
			Subscriptions  []struct {
				Secret string `toml:"secret"`
			} `toml:"subscriptions"`
		} `toml:"webhooks"`
	}
	if _, err := toml.DecodeFile(path, &f); err != nil {
		return // loadConfig read it; nothing to add
	}
	var held, files []string
	tokens := false
	for _, t := range f.Tokens {
		tokens = tokens || t.Token != ""
	}
	if tokens {
		held, files = append(held, "tokens"), append(files, "token_file")
	}
	secrets := f.Webhooks.CallbackSecret != ""
	for _, s := range f.Webhooks.Subscriptions {
		secrets = secrets || s.Secret != ""
	}
	if secrets {
		held, files = append(held, "webhook secrets"), append(files, "callback_secret_file or secret_file")
	}
	if len(held) == 0 {
		return
	}
	what := strings.Join(held, " and ")
	log.Warn().Str("path", path).Str("mode", fmt.Sprintf("%#o", st.Mode().Perm())).
		Str("fix", "chmod 600 "+path+", or move the "+what+" to "+strings.Join(files, " and ")).
		Msg("config file holding " + what + " is readable by others")
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
	// Undecoded keys of array tables come without an index: try each,
	// after each dot (webhooks.subscriptions.KEY is webhooks.subscriptions[i].KEY).
	for i := strings.Index(key, "."); i > 0; {
		for j := 0; j < 1000; j++ {
			if n, ok := l[fmt.Sprintf("%s[%d]%s", key[:i], j, key[i:])]; ok {
				return n
			}
		}
		next := strings.Index(key[i+1:], ".")
		if next < 0 {
			break
		}
		i += 1 + next
	}
	return 0
}
