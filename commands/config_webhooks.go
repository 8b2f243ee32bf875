package commands

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/queuehq/queue/app"
	"github.com/queuehq/queue/webhook"
)

// webhooksConfig is the [webhooks] table: the target policy (the SSRF
// guard), the callback secret, the sender's limits, and the subscriptions
// the file declares (read-only through the API, the CLI and the pages).
type webhooksConfig struct {
	// AllowPrivate lets deliveries reach loopback, link-local, private and
	// CGNAT addresses and localhost; Allow lets only these IPs, CIDRs and
	// host names through.
	AllowPrivate bool     `toml:"allow_private"`
	Allow        []string `toml:"allow"`
	// CallbackSecret signs the callbacks of callback_url; if empty (and no
	// CallbackSecretFile), a secret generated once and kept in the
	// database does (`queue webhooks callback-secret` prints it).
	CallbackSecret     string `toml:"callback_secret"`
	CallbackSecretFile string `toml:"callback_secret_file"`
	// Timeout of one delivery request; default 10s.
	Timeout app.Duration `toml:"timeout"`
	// MaxBody is the body size, in bytes, above which the job's payload
	// and result are left out; default 1 MiB.
	MaxBody int `toml:"max_body"`
	// Concurrency is the deliveries each node sends at once; default 4.
	Concurrency   int                   `toml:"concurrency"`
	Subscriptions []webhookSubscription `toml:"subscriptions"`
}

// webhookSubscription is one [[webhooks.subscriptions]] entry.
type webhookSubscription struct {
	Name string `toml:"name"`
	URL  string `toml:"url"`
	// Secret signs its deliveries (at least 16 characters); SecretFile
	// names a file holding it instead (a systemd credential).
	Secret     string   `toml:"secret"`
	SecretFile string   `toml:"secret_file"`
	Events     []string `toml:"events"`
	Queues     []string `toml:"queues"` // empty: every queue
	Disabled   bool     `toml:"disabled"`
}

// Bounds of [webhooks].
const (
	defaultWebhookConcurrency = 4
	maxWebhookTimeout         = 5 * time.Minute
	minWebhookMaxBody         = 4 << 10
	maxWebhookMaxBody         = 64 << 20
)

// validateWebhooks checks [webhooks] and reads its secret files; the
// subscriptions go through app.ValidateWebhook, as the API's do, so the
// file cannot declare what the API would refuse.
func (c *config) validateWebhooks() error {
	w := &c.Webhooks
	targets := app.WebhookTargets{AllowPrivate: w.AllowPrivate, Allow: w.Allow}
	if err := targets.Validate(); err != nil {
		return bad("webhooks.allow", "%v", strings.TrimPrefix(err.Error(), "[webhooks] allow: "))
	}
	secret, err := c.secretOf("webhooks.callback_secret", w.CallbackSecret, w.CallbackSecretFile)
	if err != nil {
		return err
	}
	w.CallbackSecret, w.CallbackSecretFile = secret, ""
	switch {
	case w.Timeout < 0 || w.Timeout.D() > maxWebhookTimeout || (w.Timeout != 0 && w.Timeout.D() < time.Millisecond):
		return bad("webhooks.timeout", "must be between 1ms and %s (default %s)", maxWebhookTimeout, webhook.DefaultTimeout)
	case w.MaxBody != 0 && (w.MaxBody < minWebhookMaxBody || w.MaxBody > maxWebhookMaxBody):
		return bad("webhooks.max_body", "must be between %d and %d bytes (default %d, 1 MiB)", minWebhookMaxBody, maxWebhookMaxBody, webhook.DefaultMaxBody)
	case w.Concurrency < 0 || w.Concurrency > app.MaxClaim:
		return bad("webhooks.concurrency", "must be between 1 and %d (default %d)", app.MaxClaim, defaultWebhookConcurrency)
	}
	names := map[string]bool{}
	for i := range w.Subscriptions {
		s := &w.Subscriptions[i]
		key := fmt.Sprintf("webhooks.subscriptions[%d]", i)
		secret, err := c.secretOf(key+".secret", s.Secret, s.SecretFile)
		if err != nil {
			return err
		}
		s.Secret, s.SecretFile = secret, ""
		sub := s.app()
		if err := app.ValidateWebhook(&sub, targets); err != nil {
			return fieldError(key, err)
		}
		s.Events, s.Queues = sub.Events, sub.Queues
		if names[s.Name] {
			return bad(key+".name", "webhook subscription name %q used twice", s.Name)
		}
		names[s.Name] = true
	}
	return nil
}

// app is the subscription as package app takes it.
func (s *webhookSubscription) app() app.WebhookSubscription {
	return app.WebhookSubscription{Name: s.Name, URL: s.URL, Secret: s.Secret, Events: s.Events, Queues: s.Queues,
		Disabled: s.Disabled, Source: app.WebhookFromConfig}
}

// webhookConfig is what the Service and the delivery worker read of [webhooks].
func (c *config) webhookConfig() app.WebhookConfig {
	w := c.Webhooks
	out := app.WebhookConfig{
		Targets:        app.WebhookTargets{AllowPrivate: w.AllowPrivate, Allow: w.Allow},
		CallbackSecret: w.CallbackSecret,
		Timeout:        w.Timeout.D(),
		MaxBody:        w.MaxBody,
		Concurrency:    w.Concurrency,
	}
	for i := range w.Subscriptions {
		out.Subscriptions = append(out.Subscriptions, w.Subscriptions[i].app())
	}
	return out
}

// secretOf is the secret given at key inline or in file (key + "_file"),
// at most one of them; "" when neither is.
func (c *config) secretOf(key, inline, file string) (string, error) {
	switch {
	case inline != "" && file != "":
		return "", bad(key+"_file", "give %s or %s_file, not both (the file keeps the secret out of this one)", lastKey(key), lastKey(key))
	case file != "":
		path, err := c.tokenFilePath(file)
		if err != nil {
			return "", bad(key+"_file", "%v", err)
		}
		s, err := readSecretFile(path)
		if err != nil {
			return "", bad(key+"_file", "%v", err)
		}
		return s, nil
	case inline != "" && (len(inline) < app.MinWebhookSecret || len(inline) > app.MaxWebhookSecret):
		return "", bad(key, "must be %d to %d characters (try `openssl rand -hex 32`)", app.MinWebhookSecret, app.MaxWebhookSecret)
	}
	return inline, nil
}

func lastKey(k string) string { return k[strings.LastIndex(k, ".")+1:] }

// readSecretFile reads a webhook secret from the file at path: the file
// holds the secret alone (a trailing newline dropped), at least
// app.MinWebhookSecret characters. Errors never show the contents.
func readSecretFile(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("%w (write the secret to it, e.g. `openssl rand -hex 32 > %s && chmod 600 %s`, or fix the path)", err, path, path)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, app.MaxWebhookSecret+2))
	if err != nil {
		return "", fmt.Errorf("read %s: %w", path, err)
	}
	s := strings.TrimSpace(string(b))
	switch {
	case len(b) > app.MaxWebhookSecret+1:
		return "", fmt.Errorf("%s is larger than %d bytes: a secret file holds the secret alone", path, app.MaxWebhookSecret)
	case strings.ContainsAny(s, "\r\n"):
		return "", fmt.Errorf("%s holds more than one line: a secret file holds the secret alone", path)
	case len(s) < app.MinWebhookSecret || len(s) > app.MaxWebhookSecret:
		return "", fmt.Errorf("the secret in %s must be %d to %d characters (try `openssl rand -hex 32 > %s`)", path, app.MinWebhookSecret, app.MaxWebhookSecret, path)
	}
	return s, nil
}
