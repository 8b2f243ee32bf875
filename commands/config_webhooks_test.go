package commands

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/queuehq/queue/app"
)

// [webhooks] reaches the Service's config: the target policy, the
// secrets (inline or read from their files), the sender's limits and the
// subscriptions of the file, marked as the config's.
func TestWebhooksConfigReachesTheService(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "cb.secret"), []byte("callback-secret-from-a-file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "ops.secret"), []byte("ops-secret-from-a-file-000\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := parseConfig(filepath.Join(dir, "queue.toml"), []byte(`
[webhooks]
allow = ["127.0.0.1", "10.0.0.0/8", "hooks.internal"]
callback_secret_file = "cb.secret"
timeout = "3s"
max_body = 65536
concurrency = 8

[[webhooks.subscriptions]]
name = "dead"
url = "http://127.0.0.1:9000/hook"
secret = "dead-secret-0123456789"
events = ["job.dead_lettered", "job.dead_lettered"]
queues = ["emails"]

[[webhooks.subscriptions]]
name = "ops"
url = "https://hooks.internal/queue"
secret_file = "ops.secret"
events = ["*"]
disabled = true
`))
	if err != nil {
		t.Fatal(err)
	}
	w := cfg.serviceConfig().Webhooks
	if w.Targets.AllowPrivate || len(w.Targets.Allow) != 3 || w.CallbackSecret != "callback-secret-from-a-file" ||
		w.Timeout != 3*time.Second || w.MaxBody != 65536 || w.Concurrency != 8 || len(w.Subscriptions) != 2 {
		t.Fatalf("webhooks config: %+v", w)
	}
	dead, ops := w.Subscriptions[0], w.Subscriptions[1]
	if dead.Name != "dead" || dead.Secret != "dead-secret-0123456789" || len(dead.Events) != 1 || dead.Queues[0] != "emails" ||
		dead.Source != app.WebhookFromConfig || dead.Disabled {
		t.Fatalf("subscription dead: %+v", dead)
	}
	if ops.Secret != "ops-secret-from-a-file-000" || !ops.Disabled || ops.Events[0] != "*" {
		t.Fatalf("subscription ops: %+v", ops)
	}
	// Without [webhooks]: nothing allowed beyond the default policy, the
	// defaults of the sender.
	cfg, err = parseConfig("queue.toml", []byte("[server]\naddr = \"127.0.0.1:1\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	if w := cfg.serviceConfig().Webhooks; w.Targets.AllowPrivate || len(w.Targets.Allow) != 0 || w.CallbackSecret != "" || len(w.Subscriptions) != 0 {
		t.Fatalf("webhooks config without [webhooks]: %+v", w)
	}
}

// A bad [webhooks] stops with the key, its line and what to do.
func TestWebhooksConfigErrors(t *testing.T) {
	sub := func(lines string) string {
		return "[[webhooks.subscriptions]]\nname = \"a\"\nurl = \"https://hooks.example.com/x\"\nsecret = \"0123456789abcdef\"\nevents = [\"job.succeeded\"]\n" + lines
	}
	for _, tc := range []struct {
		name, text, want string
		line             int
	}{
		{"unknown key", "[webhooks]\nallow_privat = true\n", "webhooks.allow_privat: unknown key", 2},
		{"unknown subscription key", sub("event = [\"x\"]\n"), "event: unknown key", 6},
		{"bad allow entry", "[webhooks]\nallow = [\"http://x/y\"]\n", "webhooks.allow: \"http://x/y\" is not an IP, a CIDR or a host name", 2},
		{"short callback secret", "[webhooks]\ncallback_secret = \"short\"\n", "webhooks.callback_secret: must be 16 to 512 characters", 2},
		{"both callback secrets", "[webhooks]\ncallback_secret = \"0123456789abcdef\"\ncallback_secret_file = \"x\"\n", "webhooks.callback_secret_file: give callback_secret or callback_secret_file, not both", 3},
		{"missing secret file", "[webhooks]\ncallback_secret_file = \"/nonexistent/cb\"\n", "webhooks.callback_secret_file: open /nonexistent/cb", 2},
		{"timeout", "[webhooks]\ntimeout = \"1h\"\n", "webhooks.timeout: must be between 1ms and 5m0s", 2},
		{"max_body", "[webhooks]\nmax_body = 10\n", "webhooks.max_body: must be between 4096", 2},
		{"concurrency", "[webhooks]\nconcurrency = -1\n", "webhooks.concurrency", 2},
		{"unknown event", strings.Replace(sub(""), `"job.succeeded"`, `"job.finished"`, 1), `webhooks.subscriptions[0].events: "job.finished" is not an event a webhook can subscribe to`, 5},
		{"no events", strings.Replace(sub(""), `events = ["job.succeeded"]`, `events = []`, 1), "webhooks.subscriptions[0].events: give at least one event type", 5},
		{"short secret", strings.Replace(sub(""), `"0123456789abcdef"`, `"0123"`, 1), "webhooks.subscriptions[0].secret: must be 16 to 512 characters", 4},
		{"no secret", strings.Replace(sub(""), "secret = \"0123456789abcdef\"\n", "", 1), "webhooks.subscriptions[0].secret: a webhook secret is required", 1},
		{"refused target", strings.Replace(sub(""), "https://hooks.example.com/x", "http://127.0.0.1:9000/x", 1), "webhooks.subscriptions[0].url: url 127.0.0.1 is a loopback address, refused as a webhook target; to allow it, set [webhooks] allow_private = true or list it in [webhooks] allow", 3},
		{"localhost", strings.Replace(sub(""), "https://hooks.example.com/x", "http://localhost/x", 1), "a name of the local host", 3},
		{"not http", strings.Replace(sub(""), "https://hooks.example.com/x", "ftp://hooks.example.com/x", 1), "webhooks.subscriptions[0].url", 3},
		{"bad name", strings.Replace(sub(""), `name = "a"`, `name = "a b"`, 1), "webhooks.subscriptions[0].name", 2},
		{"dots for a name", strings.Replace(sub(""), `name = "a"`, `name = ".."`, 1), "webhooks.subscriptions[0].name: webhook name \"..\" must be 1-64 characters of A-Z a-z 0-9 _ . -, the first a letter or a digit", 2},
		{"name twice", sub("") + strings.TrimPrefix(sub(""), ""), `webhooks.subscriptions[1].name: webhook subscription name "a" used twice`, 7},
		{"internal queue", sub("queues = [\"_webhooks\"]\n"), "webhooks.subscriptions[0].queues", 6},
	} {
		_, err := parseConfig("queue.toml", []byte(tc.text))
		var ce *configError
		if !errors.As(err, &ce) {
			t.Errorf("%s: err %v, want a configError", tc.name, err)
			continue
		}
		if !strings.Contains(err.Error(), tc.want) || ce.Line != tc.line {
			t.Errorf("%s: %q (line %d), want %q at line %d", tc.name, err, ce.Line, tc.want, tc.line)
		}
	}
	// With allow, the refused target loads; a secret never shows in an error.
	text := "[webhooks]\nallow = [\"127.0.0.1\"]\n" + strings.Replace(sub("queues = [\"a b\"]\n"), "https://hooks.example.com/x", "http://127.0.0.1:9000/x", 1)
	_, err := parseConfig("queue.toml", []byte(text))
	if err == nil || !strings.Contains(err.Error(), "queues") || strings.Contains(err.Error(), "0123456789abcdef") {
		t.Fatalf("with allow and a bad queue: %v, want the queue named and the secret not shown", err)
	}
	text = "[webhooks]\nallow = [\"127.0.0.1\"]\n" + strings.Replace(sub(""), "https://hooks.example.com/x", "http://127.0.0.1:9000/x", 1)
	if _, err := parseConfig("queue.toml", []byte(text)); err != nil {
		t.Fatalf("an allowed target: %v", err)
	}
}
