package app_test

import (
	"encoding/json"
	"errors"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/queuehq/queue/app"
)

// The target policy refuses loopback, private, link-local, unspecified,
// multicast and CGNAT addresses and the local host's names, naming the
// config keys that allow them; allow_private and allow (IPs, CIDRs, host
// names) let them in; public addresses and names pass.
func TestWebhookTargets(t *testing.T) {
	refused := []string{
		"http://127.0.0.1/", "http://127.1.2.3:8080/x", "http://[::1]/", "http://10.0.0.1/", "http://172.16.5.4/",
		"http://192.168.1.1/", "http://169.254.169.254/latest/meta-data", "http://[fe80::1]/", "http://[fc00::1]/",
		"http://[fd12:3456::1]/", "http://0.0.0.0/", "http://[::]/", "http://100.64.0.1/", "http://224.0.0.1/",
		"http://[::ffff:127.0.0.1]/", "http://[::ffff:10.0.0.1]/", "http://localhost/", "http://LocalHost./",
		"http://foo.localhost/", "https://a.b.localhost:8443/",
		// An IPv6 address holding a refused IPv4 one: NAT64, IPv4-compatible.
		"http://[64:ff9b::7f00:1]/", "http://[64:ff9b::a9fe:a9fe]/", "http://[64:ff9b::10.1.2.3]/", "http://[::7f00:1]/",
		"http://[::a9fe:a9fe]/", "http://[::192.168.0.1]/",
		// IETF protocol assignments, benchmarking, reserved, CGNAT's ends.
		"http://192.0.0.8/", "http://192.0.0.255/", "http://198.18.0.1/", "http://198.19.255.254/", "http://240.0.0.1/",
		"http://254.1.2.3/", "http://100.127.255.255/", "http://[64:ff9b::c612:1]/",
		// A dotted quad with the trailing dot of a fully qualified name.
		"http://127.0.0.1./",
	}
	var none app.WebhookTargets
	for _, u := range refused {
		err := none.CheckURL(u)
		if err == nil || !strings.Contains(err.Error(), "[webhooks] allow_private") || !strings.Contains(err.Error(), "[webhooks] allow ") {
			t.Errorf("CheckURL(%s) = %v, want a refusal naming [webhooks] allow and allow_private", u, err)
		}
		if err := (app.WebhookTargets{AllowPrivate: true}).CheckURL(u); err != nil {
			t.Errorf("CheckURL(%s) with allow_private: %v", u, err)
		}
	}
	for _, u := range []string{"https://hooks.example.com/x", "http://93.184.216.34/", "https://[2606:4700::1111]/", "http://100.128.0.1/", "http://172.32.0.1/",
		"http://[64:ff9b::5db8:d822]/", "http://[::ffff:93.184.216.34]/", "http://192.0.1.1/", "http://198.17.255.255/", "http://198.20.0.1/",
		"http://223.255.255.255/", "http://1.2.3.example/", "http://0x7f.example/", "http://123abc/", "http://8.8.8.8./"} {
		if err := none.CheckURL(u); err != nil {
			t.Errorf("CheckURL(%s) = %v, want nil (a public target)", u, err)
		}
	}
	// A host of numbers that is not a dotted quad is an IPv4 address to a
	// resolver (inet_aton): refused whatever the policy, saying how to
	// write it.
	for _, u := range []string{"http://2130706433/", "http://0x7f000001/", "http://127.1/", "http://0177.0.0.1/", "http://0x7f.1/",
		"http://0X7F.0.0.1/", "http://134744072/", "http://0/", "http://1.2.3.4.5/", "http://08.8.8.8/", "http://127.0.1./", "http://0x/"} {
		for _, pol := range []app.WebhookTargets{none, {AllowPrivate: true}, {Allow: []string{"0.0.0.0/0"}}} {
			if err := pol.CheckURL(u); err == nil || !strings.Contains(err.Error(), "dotted decimal") {
				t.Errorf("CheckURL(%s) under %+v = %v, want a refusal asking for dotted decimal", u, pol, err)
			}
		}
	}
	for _, u := range []string{"ftp://hooks.example/", "hooks.example/x", "http:///x", "mailto:a@b.example", "https://user:pw@hooks.example/", "://x"} {
		if err := none.CheckURL(u); err == nil {
			t.Errorf("CheckURL(%s) = nil, want an error", u)
		}
	}
	allow := app.WebhookTargets{Allow: []string{"127.0.0.1", "10.0.0.0/8", "hooks.internal", "::1"}}
	if err := allow.Validate(); err != nil {
		t.Fatalf("Validate: %v", err)
	}
	for _, u := range []string{"http://127.0.0.1:9000/", "http://10.20.30.40/", "http://hooks.internal/", "http://HOOKS.internal./", "http://[::1]/"} {
		if err := allow.CheckURL(u); err != nil {
			t.Errorf("CheckURL(%s) with allow %v: %v", u, allow.Allow, err)
		}
	}
	for _, u := range []string{"http://127.0.0.2/", "http://192.168.0.1/", "http://localhost/"} {
		if err := allow.CheckURL(u); err == nil {
			t.Errorf("CheckURL(%s) with allow %v = nil, want a refusal", u, allow.Allow)
		}
	}
	// The dialer's check: a name allowed by name may resolve to anything;
	// another name resolving to a refused address is refused (rebinding).
	if err := allow.CheckIP(netip.MustParseAddr("192.168.7.7"), "hooks.internal"); err != nil {
		t.Errorf("CheckIP of an allowed name: %v", err)
	}
	if err := allow.CheckIP(netip.MustParseAddr("192.168.7.7"), "evil.example"); err == nil || !strings.Contains(err.Error(), "evil.example (192.168.7.7)") {
		t.Errorf("CheckIP of a name resolving to a private address: %v", err)
	}
	if err := none.CheckIP(netip.MustParseAddr("::ffff:169.254.1.1"), "x.example"); err == nil {
		t.Errorf("CheckIP of a mapped link-local address passed")
	}
	if err := none.CheckIP(netip.MustParseAddr("8.8.8.8"), "dns.example"); err != nil {
		t.Errorf("CheckIP of a public address: %v", err)
	}
	for ip, why := range map[string]string{
		"64:ff9b::a9fe:a9fe": "a link-local address (it holds 169.254.169.254 in IPv6 form)",
		"::7f00:1":           "a loopback address (it holds 127.0.0.1 in IPv6 form)",
		"::1":                "a loopback address",
		"::":                 "an unspecified address",
		"198.18.3.4":         "a benchmarking address",
		"240.1.2.3":          "a reserved address",
		"192.0.0.170":        "an IETF protocol assignment address",
		"100.64.0.1":         "a shared (CGNAT) address",
	} {
		if err := none.CheckIP(netip.MustParseAddr(ip), "x.example"); err == nil || !strings.Contains(err.Error(), "x.example ("+ip+") is "+why) {
			t.Errorf("CheckIP(%s) = %v, want a refusal: %s", ip, err, why)
		}
	}
	for _, ip := range []string{"64:ff9b::808:808", "2001:db8::7f00:1", "64:ff9b:1::7f00:1"} {
		if err := none.CheckIP(netip.MustParseAddr(ip), "x.example"); err != nil {
			t.Errorf("CheckIP(%s) = %v, want nil (no refused IPv4 address inside)", ip, err)
		}
	}
	// An allowed IPv4 address is allowed in the IPv6 forms that hold it.
	for _, ip := range []string{"64:ff9b::7f00:1", "::ffff:127.0.0.1", "::127.0.0.1"} {
		if err := allow.CheckIP(netip.MustParseAddr(ip), "x.example"); err != nil {
			t.Errorf("CheckIP(%s) with allow %v: %v", ip, allow.Allow, err)
		}
	}
	for _, bad := range []string{"http://x", "a b", "10.0.0.0/33", ""} {
		if err := (app.WebhookTargets{Allow: []string{bad}}).Validate(); err == nil {
			t.Errorf("Validate(allow %q) = nil, want an error", bad)
		}
	}
}

// A subscription's name is 1-64 of A-Z a-z 0-9 _ . -, the first a letter
// or a digit: "." and ".." (whose pages browsers resolve away) and names
// starting with . _ or - are refused, naming the field and the rule.
func TestWebhookName(t *testing.T) {
	sub := func(name string) *app.WebhookSubscription {
		return &app.WebhookSubscription{Name: name, URL: "https://hooks.example/x", Secret: "0123456789abcdef", Events: []string{"*"}}
	}
	for _, name := range []string{".", "..", "...", ".hidden", "-x", "_x", "", "a b", "a/b", strings.Repeat("a", 65)} {
		var ie *app.InvalidError
		err := app.ValidateWebhook(sub(name), app.WebhookTargets{})
		if !errors.As(err, &ie) || ie.Field != "name" || !strings.Contains(err.Error(), "the first a letter or a digit") {
			t.Errorf("ValidateWebhook(name %q) = %v, want an invalid name stating the rule", name, err)
		}
	}
	for _, name := range []string{"a", "0", "ops", "a.b", "A_-.9..", "ops-alerts.v2", strings.Repeat("a", 64)} {
		if err := app.ValidateWebhook(sub(name), app.WebhookTargets{}); err != nil {
			t.Errorf("ValidateWebhook(name %q) = %v, want nil", name, err)
		}
	}
}

// Users cannot submit to a queue starting with "_"; a callback_url is
// checked against the target policy of the config.
func TestSubmitReservedQueueAndCallbackTarget(t *testing.T) {
	cfg := app.DefaultConfig()
	now := time.Now()
	for _, q := range []string{app.WebhookQueue, "_x"} {
		in := app.SubmitInput{Queue: q, Kind: "k"}
		_, err := in.NewJob(cfg, now)
		var ie *app.InvalidError
		if !errors.As(err, &ie) || ie.Field != "queue" || !strings.Contains(err.Error(), "queue names starting with _ are reserved") {
			t.Errorf("submit to %s: %v, want invalid queue, reserved", q, err)
		}
	}
	in := app.SubmitInput{Kind: "k", CallbackURL: "http://127.0.0.1:9/cb"}
	var ie *app.InvalidError
	if _, err := in.NewJob(cfg, now); !errors.As(err, &ie) || ie.Field != "callback_url" || !strings.Contains(err.Error(), "[webhooks] allow") {
		t.Fatalf("callback_url to loopback: %v", err)
	}
	odd := app.SubmitInput{Kind: "k", CallbackURL: "http://0x7f000001:9/cb"}
	if _, err := odd.NewJob(cfg, now); !errors.As(err, &ie) || ie.Field != "callback_url" || !strings.Contains(err.Error(), "dotted decimal") {
		t.Fatalf("callback_url to a hex address: %v, want invalid callback_url asking for dotted decimal", err)
	}
	cfg.Webhooks.Targets.AllowPrivate = true
	if nj, err := in.NewJob(cfg, now); err != nil || nj.CallbackURL != in.CallbackURL {
		t.Fatalf("callback_url with allow_private: %v %q", err, nj.CallbackURL)
	}
}

// The delivery queue retries 10 times with exponential backoff from 1s
// unless [queues._webhooks] says otherwise ([defaults] does not); the
// rules carry that policy to the delivery jobs.
func TestWebhookQueuePolicy(t *testing.T) {
	cfg := app.DefaultConfig()
	cfg.Defaults = app.QueueConfig{MaxAttempts: 3, BackoffBase: app.Duration(time.Minute)}
	q := cfg.Queue(app.WebhookQueue)
	if q.MaxAttempts != 10 || q.BackoffBase.D() != time.Second {
		t.Fatalf("_webhooks policy: %+v, want 10 attempts from 1s", q)
	}
	if other := cfg.Queue("other"); other.MaxAttempts != 3 {
		t.Fatalf("another queue's policy changed: %+v", other)
	}
	if r := cfg.WebhookRules(); r.MaxAttempts != 10 {
		t.Fatalf("rules: %d attempts, want 10", r.MaxAttempts)
	}
	cfg2 := app.DefaultConfig()
	cfg2.Queues[app.WebhookQueue] = app.QueueConfig{MaxAttempts: 4, BackoffBase: app.Duration(2 * time.Second), Timeout: app.Duration(time.Minute)}
	q = cfg2.Queue(app.WebhookQueue)
	if q.MaxAttempts != 4 || q.BackoffBase.D() != 2*time.Second || q.Timeout.D() != time.Minute {
		t.Fatalf("[queues._webhooks] did not win: %+v", q)
	}
	if r := cfg2.WebhookRules(); r.MaxAttempts != 4 || r.Timeout != time.Minute {
		t.Fatalf("rules under [queues._webhooks]: %+v", r)
	}
	if d := cfg.Backoff(app.WebhookQueue, 4); d < 6*time.Second || d > 10*time.Second {
		t.Fatalf("backoff of the 4th failure: %s, want about 8s", d)
	}
}

// A subscription's answer never carries its secret; it says secret_set.
// Matching: event type or "*", its queues (none: every queue, also events
// without one), never when disabled nor for a delivery job's event.
func TestWebhookSubscriptionJSONAndMatch(t *testing.T) {
	w := app.WebhookSubscription{Name: "n", URL: "https://h.example/", Secret: "topsecret-topsecret", Events: []string{app.EventSucceeded}}
	b, err := json.Marshal(w)
	if err != nil || strings.Contains(string(b), "topsecret") || !strings.Contains(string(b), `"secret_set":true`) || !strings.Contains(string(b), `"queues":[]`) {
		t.Fatalf("JSON: %s %v", b, err)
	}
	ev := func(typ, queue string) *app.Event { return &app.Event{Type: typ, Queue: queue, JobID: 1} }
	for _, c := range []struct {
		w    app.WebhookSubscription
		e    *app.Event
		want bool
	}{
		{w, ev(app.EventSucceeded, "q"), true},
		{w, ev(app.EventCancelled, "q"), false},
		{w, ev(app.EventSucceeded, app.WebhookQueue), false},
		{app.WebhookSubscription{Events: []string{"*"}}, ev(app.EventWorkflowDone, ""), true},
		{app.WebhookSubscription{Events: []string{"*"}, Queues: []string{"a"}}, ev(app.EventWorkflowDone, ""), false},
		{app.WebhookSubscription{Events: []string{"*"}, Queues: []string{"a"}}, ev(app.EventQueuePaused, "a"), true},
		{app.WebhookSubscription{Events: []string{"*"}, Disabled: true}, ev(app.EventQueuePaused, "a"), false},
	} {
		if got := c.w.Matches(c.e); got != c.want {
			t.Errorf("%+v matches %+v: %v, want %v", c.w, *c.e, got, c.want)
		}
	}
	r := app.DefaultConfig()
	r.Webhooks.Subscriptions = []app.WebhookSubscription{{Name: "all", Events: []string{"*"}}, {Name: "off", Events: []string{app.EventExpired}, Disabled: true}}
	rules := r.WebhookRules()
	if !rules.Wants(app.EventDLQPurged) || rules.Wants(app.EventSubmitted) || rules.Wants(app.EventStarted) {
		t.Fatalf("rules of \"*\" want the subscribable events only")
	}
	var nilRules *app.WebhookRules
	if nilRules.Wants(app.EventSucceeded) {
		t.Fatalf("nil rules want something")
	}
}

// Periodic jobs cannot be scheduled into an internal queue.
func TestPeriodicRefusesReservedQueue(t *testing.T) {
	p := app.PeriodicConfig{Name: "x", Cron: "@every 1m", Queue: app.WebhookQueue, Kind: app.WebhookKind}
	var ie *app.InvalidError
	if err := app.ValidatePeriodic(&p, nil); !errors.As(err, &ie) || ie.Field != "queue" || !strings.Contains(err.Error(), "reserved") {
		t.Fatalf("ValidatePeriodic into %s: %v, want an invalid queue", app.WebhookQueue, err)
	}
}
