package commands

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/queuehq/queue/app"
	"github.com/queuehq/queue/ui"
)

// A bad key or value stops with the key and its line.
func TestConfigErrorsNameKeyAndLine(t *testing.T) {
	for _, tc := range []struct {
		name, text, want string
		line             int
	}{
		{"unknown key", "[queues.mail]\nmax_attempts = 3\ntimeot = \"5s\"\n", "queues.mail.timeot: unknown key", 3},
		{"unknown section", "[server]\naddr = \"127.0.0.1:1\"\n\n[sever]\nx = 1\n", "sever", 4},
		{"bad duration", "[queues.mail]\ntimeout = \"five seconds\"\n", "invalid duration", 2},
		{"wrong type", "[queues.mail]\nmax_attempts = \"three\"\n", "max_attempts", 2},
		{"out of range", "[defaults]\nretention = \"1h\"\n\n[queues.q]\nmax_attempts = 5000\n", "queues.q.max_attempts: 5000 is not between 1 and 1000", 5},
		{"negative limit", "[queues.q]\nconcurrency = -1\n", "queues.q.concurrency", 2},
		{"bad queue name", "[queues.\"a b\"]\nmax_attempts = 1\n", "invalid queue name", 1},
		{"bad cron", "[[periodic]]\nkind = \"k\"\ncron = \"every tuesday\"\n", "periodic[0].cron: invalid cron schedule", 3},
		{"bad timezone", "[[periodic]]\nkind = \"k\"\ncron = \"@daily\"\ntimezone = \"Mars/Olympus\"\n", "unknown time zone", 4},
		{"unknown periodic key", "[[periodic]]\nkind = \"k\"\ncron = \"@daily\"\n\n[[periodic]]\nkind = \"k2\"\ncron = \"@daily\"\nskip_if_pendng = true\n", "skip_if_pendng: unknown key", 8},
		{"short token", "[[tokens]]\nname = \"ci\"\ntoken = \"short\"\n", "too short", 3},
		{"worker without command", "[[workers]]\nqueue = \"q\"\n", "workers[0].command", 1},
		{"syntax", "[queues.mail\nmax_attempts = 3\n", "to end table name", 2}, // the parser reports the line it stopped on
		{"bad sync", "[server]\nsync = \"sometimes\"\n", "server.sync", 2},
	} {
		_, err := parseConfig("queue.toml", []byte(tc.text))
		var ce *configError
		if !errors.As(err, &ce) {
			t.Errorf("%s: err %v, want a ConfigError", tc.name, err)
			continue
		}
		if !strings.Contains(err.Error(), tc.want) || ce.Line != tc.line {
			t.Errorf("%s: %q (line %d), want %q at line %d", tc.name, err, ce.Line, tc.want, tc.line)
		}
	}
}

// The file's queue sections and periodic entries reach the Service's
// config with their defaults filled, the schedule parsed and the payload as
// JSON; so do the server and maintenance keys it reads.
func TestConfigFileReachesTheService(t *testing.T) {
	file, err := parseConfig("q.toml", []byte(`
[server]
max_waiters = 50

[maintenance]
event_retention = "2d"
audit_retention = "30d"
dlq_alert_queue = "alerts"
dlq_alert_threshold = 25

[defaults]
max_attempts = 8
timeout = "1m"

[queues.mail]
max_attempts = 3
retention = "2s"
dlq_retention = "90d"
concurrency = 2
rate = 10
max_queued = 100

[[periodic]]
name = "tick"
cron = "@every 1s"
kind = "tick"
payload = { n = 1, tags = ["a"] }
skip_if_pending = true
`))
	if err != nil {
		t.Fatal(err)
	}
	cfg := file.serviceConfig()
	if cfg.MaxWaiters != 50 || cfg.EventRetention.D() != 48*time.Hour || cfg.AuditRetention.D() != 30*24*time.Hour ||
		cfg.DLQAlert != (app.DLQAlert{Queue: "alerts", Threshold: 25}) {
		t.Fatalf("max_waiters %d, event_retention %s, audit_retention %s, dlq alert %+v", cfg.MaxWaiters, cfg.EventRetention.D(), cfg.AuditRetention.D(), cfg.DLQAlert)
	}
	mail, other := cfg.Queue("mail"), cfg.Queue("other")
	if mail.MaxAttempts != 3 || mail.Timeout.D() != time.Minute || mail.Retention.D() != 2*time.Second ||
		mail.DLQRetention.D() != 90*24*time.Hour || mail.Concurrency != 2 || mail.Rate != 10 || mail.MaxQueued != 100 {
		t.Fatalf("mail policy %+v", mail)
	}
	if other.MaxAttempts != 8 || other.Timeout.D() != time.Minute || other.Retention.D() != 24*time.Hour ||
		other.DLQRetention.D() != 30*24*time.Hour || other.BackoffBase.D() != time.Second || other.BackoffMax.D() != time.Hour {
		t.Fatalf("default policy %+v", other)
	}
	p := cfg.Periodic[0]
	if p.Queue != "default" || p.CatchUp != "one" || !p.SkipIfPending || string(p.PayloadJSON) != `{"n":1,"tags":["a"]}` || p.Schedule == nil {
		t.Fatalf("periodic %+v %s", p, p.PayloadJSON)
	}
	if got := cfg.MaxQueued(); got["mail"] != 100 || len(got) != 1 {
		t.Fatalf("MaxQueued %v", got)
	}
}

// loadTestConfig writes text as queue.toml in dir and loads it.
func loadTestConfig(t *testing.T, dir, text string) (*config, error) {
	t.Helper()
	path := filepath.Join(dir, "queue.toml")
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return loadConfig(path)
}

// A token_file is read at load: an absolute path, a path relative to the
// config file's folder, and ${VAR} expanded first (systemd's
// CREDENTIALS_DIRECTORY); surrounding whitespace is dropped.
func TestConfigTokenFile(t *testing.T) {
	const secret = "s3cret-0123456789abcdef"
	dir, creds := t.TempDir(), t.TempDir()
	os.WriteFile(filepath.Join(dir, "admin.token"), []byte(secret+"\n"), 0o600)
	os.MkdirAll(filepath.Join(dir, "tokens"), 0o700)
	os.WriteFile(filepath.Join(dir, "tokens", "ci"), []byte("  "+secret+"-ci \r\n"), 0o600)
	os.WriteFile(filepath.Join(creds, "queue-admin-token"), []byte(secret+"-cred"), 0o600)
	t.Setenv("CREDENTIALS_DIRECTORY", creds)
	cfg, err := loadTestConfig(t, dir, fmt.Sprintf(`
[[tokens]]
name = "abs"
token_file = %q

[[tokens]]
name = "rel"
token_file = "tokens/ci"
role = "work"
queues = ["email", "mail.eu"]

[[tokens]]
name = "cred"
token_file = "${CREDENTIALS_DIRECTORY}/queue-admin-token"
role = "read"
`, filepath.Join(dir, "admin.token")))
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []string{secret, secret + "-ci", secret + "-cred"} {
		if got := cfg.Tokens[i].Token; got != want {
			t.Errorf("tokens[%d].Token = %q, want %q", i, got, want)
		}
	}
	if got, want := cfg.Tokens[2].TokenFile, filepath.Join(creds, "queue-admin-token"); got != want {
		t.Errorf("tokens[2].TokenFile = %q, want the expanded path %q", got, want)
	}
	if r := cfg.Tokens[1]; r.Role != ui.RoleWork || !slices.Contains(r.Queues, "mail.eu") || slices.Contains(r.Queues, "other") {
		t.Errorf("tokens[1] = role %q queues %v", r.Role, r.Queues)
	}
}

// A token_file that cannot be used stops the load with the key, the line
// and the fix, and never shows the secret.
func TestConfigTokenFileErrors(t *testing.T) {
	const secret = "0123456789ab" // 12 characters: too short
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "short"), []byte(secret+"\n"), 0o600)
	os.WriteFile(filepath.Join(dir, "empty"), []byte("\n"), 0o600)
	os.WriteFile(filepath.Join(dir, "two"), []byte("0123456789abcdef0123\nsecond-line-0123456789\n"), 0o600)
	os.WriteFile(filepath.Join(dir, "big"), bytes.Repeat([]byte("a"), 5000), 0o600)
	t.Setenv("CREDENTIALS_DIRECTORY", "") // restored after the test
	os.Unsetenv("CREDENTIALS_DIRECTORY")
	for _, tc := range []struct{ name, entry, want string }{
		{"missing", `token_file = "nope"`, "nope: no such file or directory"},
		{"missing credential", `token_file = "${CREDENTIALS_DIRECTORY}/x"`, "$CREDENTIALS_DIRECTORY is not set (systemd sets it for a unit with LoadCredential="},
		{"short", `token_file = "short"`, "is too short (at least 16 characters"},
		{"empty", `token_file = "empty"`, "empty is empty"},
		{"two lines", `token_file = "two"`, "more than one line"},
		{"too large", `token_file = "big"`, "larger than 4096 bytes"},
		{"a folder", `token_file = "."`, "is a directory"},
		{"both", `token = "0123456789abcdef0"` + "\n" + `token_file = "short"`, "has both token and token_file: keep one"},
		{"neither", `role = "read"`, `needs token = "..." or token_file`},
	} {
		_, err := loadTestConfig(t, dir, "[[tokens]]\nname = \"ops\"\n"+tc.entry+"\n")
		var ce *configError
		if !errors.As(err, &ce) || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(ce.Key, "tokens[0].token") || ce.Line == 0 {
			t.Errorf("%s: %v, want a ConfigError at tokens[0].token* with a line saying %q", tc.name, err, tc.want)
			continue
		}
		for _, s := range []string{secret, "0123456789abcdef"} {
			if strings.Contains(err.Error(), s) {
				t.Errorf("%s: the error shows the secret: %v", tc.name, err)
			}
		}
	}
	os.Setenv("CREDENTIALS_DIRECTORY", dir)
	_, err := loadTestConfig(t, dir, "[[tokens]]\nname = \"ops\"\ntoken_file = \"${CREDENTIALS_DIRECTORY}/queue-admin-token\"\n")
	if err == nil || !strings.Contains(err.Error(), "the unit needs LoadCredential=queue-admin-token:") {
		t.Errorf("missing credential: %v, want the LoadCredential= hint", err)
	}
}

// role, queues, allowed_hosts, trusted_proxies, max_streams and
// max_waiters: what each accepts and refuses.
func TestConfigAuthAndHTTPKeys(t *testing.T) {
	const tok = "[[tokens]]\nname = \"t\"\ntoken = \"0123456789abcdef\"\n"
	for _, text := range []string{
		tok + `role = "read"`, tok + `role = "submit"`, tok + `role = "work"`, tok + `role = "admin"`, tok + `role = ""`,
		tok + `queues = ["email", "mail.eu", "a_b-c"]`, tok + `queues = []`,
		"[server]\nallowed_hosts = [\"queue.example.com\", \"*.example.com\", \"*\", \"localhost\", \"192.0.2.7\", \"2001:db8::7\", \"queue_1\"]",
		"[server]\ntrusted_proxies = [\"10.0.0.5\", \"10.0.0.0/8\", \"fd00::/8\", \"::1\"]",
		"[server]\nmax_streams = 0\nmax_waiters = 0", "[server]\nmax_streams = 10\nmax_waiters = 5000",
	} {
		if _, err := parseConfig("queue.toml", []byte(text)); err != nil {
			t.Errorf("%q: %v", text, err)
		}
	}
	for _, tc := range []struct{ text, want string }{
		{tok + `role = "owner"`, `tokens[0].role: token "t": role "owner" is not read, submit, work or admin`},
		{tok + `role = "Admin"`, "is not read, submit, work or admin"},
		{tok + `queues = ["a b"]`, "tokens[0].queues: token \"t\": queue name \"a b\""},
		{tok + `queues = [""]`, "tokens[0].queues"},
		{"[server]\nallowed_hosts = [\"queue.example.com:8080\"]", `server.allowed_hosts: allowed host "queue.example.com:8080": give the host without the port ("queue.example.com")`},
		{"[server]\nallowed_hosts = [\"[::1]:8080\"]", "without the port"},
		{"[server]\nallowed_hosts = [\"[::1]\"]", "without brackets"},
		{"[server]\nallowed_hosts = [\"https://queue.example.com\"]", `without a scheme ("queue.example.com")`},
		{"[server]\nallowed_hosts = [\"queue.example.com/ui\"]", "without a path"},
		{"[server]\nallowed_hosts = [\"\"]", "an allowed host is empty"},
		{"[server]\nallowed_hosts = [\"a.*.com\"]", "is not a host name"},
		{"[server]\nallowed_hosts = [\"*example.com\"]", "is not a host name"},
		{"[server]\nallowed_hosts = [\"-bad.example.com\"]", "is not a host name"},
		{"[server]\nallowed_hosts = [\"a..b\"]", "is not a host name"},
		{"[server]\ntrusted_proxies = [\"10.0.0.0/33\"]", `server.trusted_proxies: trusted proxy "10.0.0.0/33" is not an IP address`},
		{"[server]\ntrusted_proxies = [\"proxy.local\"]", "is not an IP address"},
		{"[server]\ntrusted_proxies = [\"10.0.0.1-10.0.0.9\"]", "CIDR range"},
		{"[server]\ntrusted_proxies = [\"fe80::1%eth0\"]", "is not an IP address"},
		{"[server]\nallowed_hosts = [\"fe80::1%eth0\"]", "is not a host name"},
		{"[server]\nmax_streams = -1", "server.max_streams: must not be negative"},
		{"[server]\nmax_waiters = -1", "server.max_waiters: must not be negative"},
	} {
		_, err := parseConfig("queue.toml", []byte(tc.text))
		var ce *configError
		if !errors.As(err, &ce) || !strings.Contains(err.Error(), tc.want) || ce.Line == 0 {
			t.Errorf("%q: %v, want a ConfigError with a line saying %q", tc.text, err, tc.want)
		}
	}
	for _, h := range []string{"queue.example.com", "*.example.com", "*", "192.0.2.7"} {
		if err := ui.ValidateAllowedHost(h); err != nil {
			t.Errorf("ValidateAllowedHost(%q) = %v", h, err)
		}
	}
}

// pass_env names variables of serve's environment; QUEUE_* (the token, the
// database DSN) are refused with the key and its line.
func TestConfigWorkerPassEnv(t *testing.T) {
	const head = "[[workers]]\nqueue = \"q\"\ncommand = [\"env\"]\n"
	cfg, err := parseConfig("queue.toml", []byte(head+"env = { A = \"1\" }\npass_env = [\"AWS_REGION\", \"_X1\"]\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.Workers[0].PassEnv; len(got) != 2 || got[0] != "AWS_REGION" || got[1] != "_X1" {
		t.Fatalf("PassEnv = %q, want [AWS_REGION _X1]", got)
	}
	for _, tc := range []struct{ passEnv, want string }{
		{`["QUEUE_TOKEN"]`, `"QUEUE_TOKEN": QUEUE_* variables`},
		{`["AWS_REGION", "QUEUE_DB"]`, `"QUEUE_DB"`},
		{`["1X"]`, "not a variable name"},
		{`["A-B"]`, "not a variable name"},
		{`["A=B"]`, "not a variable name"},
		{`[""]`, "not a variable name"},
	} {
		_, err := parseConfig("queue.toml", []byte(head+"\npass_env = "+tc.passEnv+"\n"))
		var ce *configError
		if !errors.As(err, &ce) || ce.Key != "workers[0].pass_env" || ce.Line != 5 || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("pass_env = %s: err %v, want a ConfigError at workers[0].pass_env, line 5, with %q", tc.passEnv, err, tc.want)
		}
	}
}

// Whatever the file holds, parseConfig answers a configError or a config
// within the contract; `go test -fuzz=FuzzParseConfig ./commands` explores.
func FuzzParseConfig(f *testing.F) {
	for _, s := range []string{
		"[queues.mail]\nmax_attempts = 3\n",
		"[[periodic]]\nkind = \"k\"\ncron = \"@every 1s\"\npayload = { a = 1 }\n",
		"[server]\naddr = \"127.0.0.1:1\"\n[[tokens]]\nname = \"a\"\ntoken = \"0123456789abcdef\"\n",
		"[[workers]]\ncommand = [\"true\"]\n",
		"[queues.\"a.b\"]\nrate = 1.5\n", "= 1", "[a\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		cfg, err := parseConfig("fuzz.toml", b)
		if err != nil {
			var ce *configError
			if !errors.As(err, &ce) || !utf8.ValidString(err.Error()) {
				t.Fatalf("error is not a ConfigError: %T %v", err, err)
			}
			return
		}
		for name := range cfg.Queues {
			if app.ValidateQueue(name) != nil {
				t.Fatalf("accepted queue name %q", name)
			}
			q := cfg.serviceConfig().Queue(name)
			if q.MaxAttempts < 1 || q.MaxAttempts > 1000 || q.Timeout <= 0 || q.Concurrency < 0 || q.Rate < 0 {
				t.Fatalf("accepted policy %+v", q)
			}
		}
	})
}
