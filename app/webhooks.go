package app

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"
	"time"
)

// Webhooks (issue 27, docs/integrations.md): a subscription names event
// types and queues and a URL; a job may carry a callback_url, called when
// it ends. Either way a delivery is a job of kind WebhookKind in the
// internal queue WebhookQueue, inserted by Settle in the very transaction
// that produced the event: a delivery is never lost, and never made for a
// write that rolled back. The delivery worker (package webhook) sends it,
// signed, with the queue's lease, retries, backoff and dead-letter queue.

// The delivery jobs, and the event a test delivery carries.
const (
	// WebhookQueue is the internal queue of deliveries. Users cannot submit
	// to a queue whose name starts with "_" (see SubmitInput.NewJob), and
	// events of its jobs never make deliveries (no loops).
	WebhookQueue = "_webhooks"
	// WebhookKind is the kind of every delivery job.
	WebhookKind = "webhook"
	// EventWebhookTest is the event of a test delivery (TestWebhook); no
	// subscription can subscribe to it.
	EventWebhookTest = "webhook.test"
	// CallbackTag tags the deliveries of callback_urls; a subscription's
	// are tagged WebhookTagPrefix + its name.
	CallbackTag      = "callback"
	WebhookTagPrefix = "webhook:"
)

// The delivery policy of WebhookQueue when [queues._webhooks] sets none:
// three failures then a success deliver within about ten seconds, and a
// receiver down for minutes still gets its deliveries.
const (
	DefaultWebhookMaxAttempts = 10
	DefaultWebhookBackoffBase = time.Second
)

// The kinds of runtime settings webhooks keep (see SettingsRecord).
const (
	// SettingWebhook is a subscription made through the API; Name is its name.
	SettingWebhook = "webhook"
	// SettingWebhookSecret holds generated secrets; the one named
	// "callback" signs the callbacks when the config sets none.
	SettingWebhookSecret = "webhook_secret"
	callbackSecretName   = "callback"
)

// The sources of a subscription.
const (
	WebhookFromAPI    = "api"
	WebhookFromConfig = "config"
)

// WebhookAllEvents subscribes to every event of WebhookEvents.
const WebhookAllEvents = "*"

// WebhookEvents are the event types a subscription may name, in the order
// the docs list them. Submissions and claims are left out: they are the
// hot path, and the submitter and the worker know of them already.
var WebhookEvents = []string{
	EventSucceeded, EventRetryScheduled, EventDeadLettered, EventCancelled, EventExpired, EventLeaseLost,
	EventWorkflowDone, EventDLQReplayed, EventDLQPurged, EventQueuePaused, EventQueueResumed,
}

// reservedQueue reports whether queue is internal: users cannot submit,
// replay or schedule jobs there (app inserts its own, as WebhookQueue's).
func reservedQueue(queue string) bool { return strings.HasPrefix(queue, "_") }

// jobEnds are the events that end a job: its callback_url is called.
func jobEnds(typ string) bool {
	switch typ {
	case EventSucceeded, EventDeadLettered, EventCancelled, EventExpired:
		return true
	}
	return false
}

// Limits of a subscription.
const (
	MinWebhookSecret = 16
	MaxWebhookSecret = 512
	MaxWebhookQueues = 100
)

// Errors of the webhook API.
var (
	// ErrWebhookInConfig is a change through the API of a subscription the
	// config file declares (or a new one with its name): edit the file.
	ErrWebhookInConfig = errors.New("webhook subscription is declared in the config file")
	// ErrWebhookExists is a new subscription with the name of one made before.
	ErrWebhookExists = errors.New("webhook subscription exists")
)

// WebhookSubscription is a subscription: deliver the events of Events (or
// all, "*") of the queues of Queues (empty: every queue; events without a
// queue, such as workflow.done, only then) to URL, signed with Secret.
// Its JSON (the API's answer) never carries the secret: "secret_set" says
// there is one.
type WebhookSubscription struct {
	Name     string   `json:"name"`
	URL      string   `json:"url"`
	Secret   string   `json:"-"`
	Events   []string `json:"events"`
	Queues   []string `json:"queues"`
	Disabled bool     `json:"disabled"`
	// Source is WebhookFromAPI or WebhookFromConfig (read-only through the
	// API, the CLI and the pages).
	Source    string    `json:"source"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`

	secretSet bool // read from an answer's secret_set (a client's copy has no secret)
}

// MarshalJSON writes the subscription as the API answers with it: times in
// the API's form, lists never null, "secret_set" in place of the secret.
func (w WebhookSubscription) MarshalJSON() ([]byte, error) {
	type plain WebhookSubscription
	p := plain(w)
	if p.Events == nil {
		p.Events = []string{}
	}
	if p.Queues == nil {
		p.Queues = []string{}
	}
	var created, updated *string
	if !w.CreatedAt.IsZero() {
		s := FormatTime(w.CreatedAt)
		created = &s
	}
	if !w.UpdatedAt.IsZero() {
		s := FormatTime(w.UpdatedAt)
		updated = &s
	}
	return json.Marshal(struct {
		plain
		SecretSet bool    `json:"secret_set"`
		CreatedAt *string `json:"created_at"`
		UpdatedAt *string `json:"updated_at"`
	}{p, w.Secret != "" || w.secretSet, created, updated})
}

// UnmarshalJSON reads an answer of the API (a client's): its secret_set
// is kept, so the copy writes it back as the server did.
func (w *WebhookSubscription) UnmarshalJSON(b []byte) error {
	type plain WebhookSubscription
	var v struct {
		plain
		SecretSet bool `json:"secret_set"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*w = WebhookSubscription(v.plain)
	w.secretSet = v.SecretSet
	return nil
}

// Matches reports whether w delivers e: enabled, subscribed to its type,
// and to its queue (or to every queue).
func (w *WebhookSubscription) Matches(e *Event) bool {
	if w.Disabled || e.Queue == WebhookQueue {
		return false
	}
	if !slices.Contains(w.Events, e.Type) && !slices.Contains(w.Events, WebhookAllEvents) {
		return false
	}
	return len(w.Queues) == 0 || slices.Contains(w.Queues, e.Queue)
}

// WebhookInput is a subscription as the API takes it (POST /api/webhooks,
// PUT /api/webhooks/{name}). Secret may be left out of a PUT: the stored
// one stays.
type WebhookInput struct {
	Name     string   `json:"name"`
	URL      string   `json:"url"`
	Secret   string   `json:"secret,omitempty"`
	Events   []string `json:"events"`
	Queues   []string `json:"queues,omitempty"`
	Disabled bool     `json:"disabled,omitempty"`
}

// webhookRecord is a subscription made through the API as its runtime
// setting keeps it (the secret too: the delivery worker signs with it).
type webhookRecord struct {
	URL       string    `json:"url"`
	Secret    string    `json:"secret"`
	Events    []string  `json:"events"`
	Queues    []string  `json:"queues,omitempty"`
	Disabled  bool      `json:"disabled,omitempty"`
	CreatedAt time.Time `json:"created_at"`
}

// ValidateWebhook checks subscription w (of the config file or the API)
// against the contract and the target policy t, and tidies its lists
// (duplicates dropped). An error is an *InvalidError naming the field.
func ValidateWebhook(w *WebhookSubscription, t WebhookTargets) error {
	if err := checkWebhookName(w.Name); err != nil {
		return err
	}
	if err := checkTargetURL("url", w.URL, t); err != nil {
		return err
	}
	if len(w.Secret) < MinWebhookSecret || len(w.Secret) > MaxWebhookSecret {
		return Invalid("secret", "a webhook secret is required, %d to %d characters (receivers check each request's HMAC-SHA256 signature with it)", MinWebhookSecret, MaxWebhookSecret)
	}
	if len(w.Events) == 0 {
		return Invalid("events", "give at least one event type: %s, or \"*\" for all of them", strings.Join(WebhookEvents, ", "))
	}
	for _, e := range w.Events {
		if e != WebhookAllEvents && !slices.Contains(WebhookEvents, e) {
			return Invalid("events", "%q is not an event a webhook can subscribe to; give %s, or \"*\" for all of them", clip(e), strings.Join(WebhookEvents, ", "))
		}
	}
	if len(w.Queues) > MaxWebhookQueues {
		return Invalid("queues", "%d queues; at most %d (none: every queue)", len(w.Queues), MaxWebhookQueues)
	}
	for _, q := range w.Queues {
		if err := ValidateQueue(q); err != nil {
			return Invalid("queues", "%v", err)
		}
		if strings.HasPrefix(q, "_") {
			return Invalid("queues", "queue %q is internal: its events make no deliveries", clip(q))
		}
	}
	w.Events, w.Queues = tidy(w.Events), tidy(w.Queues)
	return nil
}

// webhookNameRE is a subscription's name: a queue name's characters, but
// starting with a letter or a digit, so that no name is "." or "..": its
// pages (/webhooks/{name}) and routes would be unreachable, as browsers
// and HTTP clients resolve such a path segment away.
var webhookNameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.\-]{0,63}$`)

// checkWebhookName checks the name of a subscription (of the API, the CLI
// or the config file): an *InvalidError naming the field name.
func checkWebhookName(name string) error {
	if !webhookNameRE.MatchString(name) {
		return Invalid("name", "webhook name %q must be 1-64 characters of A-Z a-z 0-9 _ . -, the first a letter or a digit", clip(name))
	}
	return nil
}

// tidy drops the duplicates of list, keeping its order.
func tidy(list []string) []string {
	var out []string
	for _, s := range list {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

// WebhookDelivery is the payload of a delivery job: whom to send which
// event. A subscription's delivery names only the subscription: its URL
// (which may carry a token, and which read tokens must not see through the
// jobs of WebhookQueue) and its secret are looked up when it is sent
// (Service.WebhookTarget), so a delivery queued before a change goes to
// the URL the secret belongs with. A callback's carries its URL (the job's
// callback_url, which the job shows to the same readers) and no
// subscription. It never holds a secret.
type WebhookDelivery struct {
	Subscription string `json:"subscription,omitempty"`
	URL          string `json:"url,omitempty"`
	Event        Event  `json:"event"`
}

// WebhookConfig is the [webhooks] section of the config file, as the
// Service and the delivery worker read it.
type WebhookConfig struct {
	// Targets is the SSRF guard ([webhooks] allow_private and allow).
	Targets WebhookTargets
	// CallbackSecret signs the callbacks; if empty, a secret generated
	// once and kept in the database does (Service.CallbackSecret).
	CallbackSecret string
	// Subscriptions are those of [[webhooks.subscriptions]] (Source
	// WebhookFromConfig), validated by the config loader (ValidateWebhook).
	Subscriptions []WebhookSubscription
	// MaxAttempts is the delivery jobs' max_attempts when [queues._webhooks]
	// sets none; if zero, DefaultWebhookMaxAttempts.
	MaxAttempts int
	// Timeout bounds one delivery request; MaxBody the body sent (a larger
	// one leaves the job's payload and result out); Concurrency is the
	// deliveries a node sends at once. Zero: the delivery worker's defaults.
	Timeout     time.Duration
	MaxBody     int
	Concurrency int
}

// WebhookTargets is the target policy of webhooks and callbacks (the SSRF
// guard): only http and https, and no loopback, link-local, private
// (RFC 1918, fc00::/7), unspecified, multicast, CGNAT (100.64.0.0/10),
// IETF protocol (192.0.0.0/24), benchmarking (198.18.0.0/15) or reserved
// (240.0.0.0/4) address, nor the name localhost or a name under it, unless
// AllowPrivate ([webhooks] allow_private = true) or Allow ([webhooks]
// allow: IPs, CIDRs and host names) lets it. An IPv6 address holding an
// IPv4 one (IPv4-mapped, NAT64 64:ff9b::/96, IPv4-compatible ::/96) is
// judged as that IPv4 address. Submission and subscription check the URL
// (CheckURL), which also refuses, whatever the policy, a host of numbers
// that is not a dotted-decimal address (127.1, 2130706433, 0x7f000001:
// resolvers read them as IPv4 addresses); the delivery worker's dialer
// checks every address a name resolves to (CheckIP), so a name that
// resolves to a refused address (DNS rebinding) is refused too.
type WebhookTargets struct {
	AllowPrivate bool
	Allow        []string
}

// Ranges refused by default besides those netip classifies.
var (
	// cgnat is the shared address space of carrier-grade NAT (RFC 6598).
	cgnat = netip.MustParsePrefix("100.64.0.0/10")
	// thisNetwork is 0.0.0.0/8, which some systems route to the host itself.
	thisNetwork = netip.MustParsePrefix("0.0.0.0/8")
	// ietfProtocol is 192.0.0.0/24, IETF protocol assignments (RFC 6890):
	// relays and NAT64 discovery, never a receiver.
	ietfProtocol = netip.MustParsePrefix("192.0.0.0/24")
	// benchmarking is 198.18.0.0/15 (RFC 2544), for test networks.
	benchmarking = netip.MustParsePrefix("198.18.0.0/15")
	// reserved is 240.0.0.0/4, reserved for future use (RFC 1112).
	reserved = netip.MustParsePrefix("240.0.0.0/4")
	// nat64 (64:ff9b::/96, RFC 6052) and v4compat (::/96, the deprecated
	// IPv4-compatible form) hold an IPv4 address in their last 32 bits: a
	// NAT64 gateway or a host's stack may reach that address through
	// them, so they are judged as that address.
	nat64    = netip.MustParsePrefix("64:ff9b::/96")
	v4compat = netip.MustParsePrefix("::/96")
)

// embeddedIPv4 returns the IPv4 address ip stands for: the address itself
// if it is one (or IPv4-mapped), the one inside a NAT64 or IPv4-compatible
// IPv6 address (but :: and ::1, which are the unspecified and loopback
// IPv6 addresses), else ip unchanged; embedded reports the second case.
func embeddedIPv4(ip netip.Addr) (v4 netip.Addr, embedded bool) {
	ip = ip.Unmap()
	if !ip.Is6() || ip.Zone() != "" || ip == netip.IPv6Unspecified() || ip == netip.IPv6Loopback() {
		return ip, false
	}
	if nat64.Contains(ip) || v4compat.Contains(ip) {
		b := ip.As16()
		return netip.AddrFrom4([4]byte(b[12:])), true
	}
	return ip, false
}

// refusedClass names why ip is refused by default, or "" if it is not.
func refusedClass(ip netip.Addr) string {
	ip, embedded := embeddedIPv4(ip)
	why := refusedClass4(ip)
	if why != "" && embedded {
		why += " (it holds " + ip.String() + " in IPv6 form)"
	}
	return why
}

func refusedClass4(ip netip.Addr) string {
	switch {
	case ip.IsLoopback():
		return "a loopback address"
	case ip.IsUnspecified() || thisNetwork.Contains(ip):
		return "an unspecified address"
	case ip.IsLinkLocalUnicast():
		return "a link-local address"
	case ip.IsMulticast() || ip.IsLinkLocalMulticast() || ip.IsInterfaceLocalMulticast() || ip == netip.AddrFrom4([4]byte{255, 255, 255, 255}):
		return "a multicast or broadcast address"
	case ip.IsPrivate():
		return "a private address"
	case cgnat.Contains(ip):
		return "a shared (CGNAT) address"
	case ietfProtocol.Contains(ip):
		return "an IETF protocol assignment address (192.0.0.0/24)"
	case benchmarking.Contains(ip):
		return "a benchmarking address (198.18.0.0/15)"
	case reserved.Contains(ip):
		return "a reserved address (240.0.0.0/4)"
	}
	return ""
}

// numericHost reports whether every label of host is a number as
// inet_aton reads one (decimal, 0-prefixed octal or 0x hex): resolvers and
// browsers take such a host, 2130706433 or 0x7f.1 or 127.1, for an IPv4
// address, which the policy must judge as one.
func numericHost(host string) bool {
	for _, l := range strings.Split(strings.TrimSuffix(host, "."), ".") {
		digits := "0123456789"
		if len(l) >= 2 && l[0] == '0' && (l[1] == 'x' || l[1] == 'X') {
			l, digits = l[2:], "0123456789abcdefABCDEF"
			if l == "" {
				continue // "0x" is 0 to inet_aton
			}
		}
		if l == "" || strings.Trim(l, digits) != "" {
			return false
		}
	}
	return true
}

// Validate checks the entries of Allow: each an IP, a CIDR or a host name.
func (t WebhookTargets) Validate() error {
	for _, a := range t.Allow {
		if _, _, err := allowEntry(a); err != nil {
			return err
		}
	}
	return nil
}

// allowEntry parses an entry of Allow: a prefix (an IP is a prefix of its
// full length) or a host name (lower case, without a trailing dot).
func allowEntry(a string) (netip.Prefix, string, error) {
	a = strings.TrimSpace(a)
	if p, err := netip.ParsePrefix(a); err == nil {
		return p.Masked(), "", nil
	}
	if ip, err := netip.ParseAddr(a); err == nil {
		ip = ip.Unmap()
		return netip.PrefixFrom(ip, ip.BitLen()), "", nil
	}
	name := hostName(a)
	if name == "" || strings.ContainsAny(name, "/:@ ") {
		return netip.Prefix{}, "", fmt.Errorf("[webhooks] allow: %q is not an IP, a CIDR or a host name", clip(a))
	}
	return netip.Prefix{}, name, nil
}

// hostName is host as Allow compares it.
func hostName(host string) string { return strings.TrimSuffix(strings.ToLower(host), ".") }

// allowed reports whether Allow lets ip (if valid) or host name host.
func (t WebhookTargets) allowed(ip netip.Addr, host string) bool {
	host = hostName(host)
	v4, _ := embeddedIPv4(ip) // an entry may name the address or the IPv4 one it holds
	for _, a := range t.Allow {
		p, name, err := allowEntry(a)
		switch {
		case err != nil:
		case name != "" && name == host:
			return true
		case name == "" && ip.IsValid() && (p.Contains(ip.Unmap()) || p.Contains(v4)):
			return true
		}
	}
	return false
}

// refusal is the error of a refused target, naming the keys that allow it.
func refusal(target, why string) error {
	return fmt.Errorf("%s is %s, refused as a webhook target; to allow it, set [webhooks] allow_private = true "+
		"or list it in [webhooks] allow (IPs, CIDRs or host names) in the config file", clip(target), why)
}

// CheckURL checks a webhook or callback target: an absolute http or https
// URL with a host and no credentials, whose host is not a refused address
// or name (an address a name resolves to is checked at delivery).
func (t WebhookTargets) CheckURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("%q is not a URL: %v", clip(raw), errors.Unwrap(err))
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return fmt.Errorf("%q must be an absolute http:// or https:// URL", clip(raw))
	}
	host := u.Hostname()
	if u.Opaque != "" || host == "" {
		return fmt.Errorf("%q has no host", clip(raw))
	}
	if u.User != nil {
		return fmt.Errorf("%q must not carry credentials (user:password@); receivers check the request's signature", clip(u.Redacted()))
	}
	if ip, err := netip.ParseAddr(host); err == nil {
		return t.CheckIP(ip, "")
	}
	if numericHost(host) {
		// 127.0.0.1. (a trailing dot) is the address; 127.1, 0x7f000001
		// and 0177.0.0.1 are refused whatever the policy: the address
		// they stand for depends on who reads them.
		if ip, err := netip.ParseAddr(strings.TrimSuffix(host, ".")); err == nil && ip.Is4() {
			return t.CheckIP(ip, "")
		}
		return fmt.Errorf("host %q is an IPv4 address in a form other than dotted decimal; write it as four decimal numbers, e.g. 127.0.0.1", clip(host))
	}
	if t.AllowPrivate || t.allowed(netip.Addr{}, host) {
		return nil
	}
	if name := hostName(host); name == "localhost" || strings.HasSuffix(name, ".localhost") {
		return refusal(host, "a name of the local host")
	}
	return nil
}

// CheckIP checks an address the delivery worker is about to connect to,
// for host (the URL's host name, "" for a literal address): refused if it
// is of a refused class, unless AllowPrivate, or Allow lists the address,
// a prefix holding it, or the host name.
func (t WebhookTargets) CheckIP(ip netip.Addr, host string) error {
	why := refusedClass(ip)
	if why == "" || t.AllowPrivate || t.allowed(ip, host) {
		return nil
	}
	target := ip.Unmap().String()
	if host != "" {
		target = host + " (" + target + ")"
	}
	return refusal(target, why)
}

// checkTargetURL checks raw as a target URL of field under t: the URL's
// form (as ParseCallbackURL) and the policy; an *InvalidError naming field.
func checkTargetURL(field, raw string, t WebhookTargets) error {
	if len(raw) > MaxCallbackURL {
		return Invalid(field, "%s is %d bytes; at most %d", field, len(raw), MaxCallbackURL)
	}
	if err := t.CheckURL(raw); err != nil {
		return Invalid(field, "%s %v", field, err)
	}
	return nil
}

// CheckCallbackURL checks a job's callback_url against the target policy
// of c: an *InvalidError naming callback_url and the config keys that
// would allow a refused target.
func (c *Config) CheckCallbackURL(raw string) error {
	return checkTargetURL("callback_url", raw, c.Webhooks.Targets)
}

// WebhookRules is what Settle needs of the webhooks at the end of a write:
// the subscriptions in effect (config and runtime settings) and the policy
// of the delivery jobs. It is immutable once made; Config.WebhookRules
// makes a new one when the runtime settings change.
type WebhookRules struct {
	// Subscriptions are every subscription, the config file's first, each
	// in name order (disabled ones too).
	Subscriptions []WebhookSubscription
	// MaxAttempts and Timeout are the delivery jobs' (WebhookQueue's policy).
	MaxAttempts int
	Timeout     time.Duration

	wants map[string]bool // event types an enabled subscription wants
}

// Wants reports whether an enabled subscription wants events of type typ.
func (r *WebhookRules) Wants(typ string) bool { return r != nil && r.wants[typ] }

// Subscription returns the subscription called name, if any.
func (r *WebhookRules) Subscription(name string) (WebhookSubscription, bool) {
	if r != nil {
		for _, w := range r.Subscriptions {
			if w.Name == name {
				return w, true
			}
		}
	}
	return WebhookSubscription{}, false
}

// newWebhookRules builds the rules from the config's subscriptions and the
// runtime ones (a runtime one named like a config one is left out).
func newWebhookRules(file []WebhookSubscription, runtime []WebhookSubscription, q QueueConfig) *WebhookRules {
	r := &WebhookRules{MaxAttempts: q.MaxAttempts, Timeout: q.Timeout.D(), wants: map[string]bool{}}
	r.Subscriptions = append(r.Subscriptions, file...)
	for i := range r.Subscriptions {
		r.Subscriptions[i].Source = WebhookFromConfig
	}
	slices.SortFunc(r.Subscriptions, func(a, b WebhookSubscription) int { return strings.Compare(a.Name, b.Name) })
	for _, w := range runtime {
		if _, ok := r.Subscription(w.Name); !ok {
			r.Subscriptions = append(r.Subscriptions, w)
		}
	}
	for _, w := range r.Subscriptions {
		if w.Disabled {
			continue
		}
		for _, e := range w.Events {
			if e == WebhookAllEvents {
				for _, t := range WebhookEvents {
					r.wants[t] = true
				}
			} else {
				r.wants[e] = true
			}
		}
	}
	return r
}

// webhookState is what a Config keeps of webhooks between calls: the rules
// of the runtime settings in effect, and the callback secret once known.
type webhookState struct {
	rules  atomic.Pointer[webhookRulesOf]
	secret atomic.Pointer[string]
}

// webhookRulesOf is rules as made from the runtime settings rt.
type webhookRulesOf struct {
	rt    *Settings
	rules *WebhookRules
	errs  error
}

// WebhookRules returns the rules in effect: the config's subscriptions,
// those of the runtime settings in effect (reloaded every second), and
// WebhookQueue's policy. The stores call it (StoreOptions.Webhooks) at the
// end of every write that published an event.
func (c *Config) WebhookRules() *WebhookRules {
	rt := c.runtime()
	if cur := c.webhooks.rules.Load(); cur != nil && cur.rt == rt {
		return cur.rules
	}
	subs, errs := runtimeWebhooks(rt.records)
	made := &webhookRulesOf{rt: rt, rules: newWebhookRules(c.Webhooks.Subscriptions, subs, c.Queue(WebhookQueue)), errs: errs}
	c.webhooks.rules.Store(made)
	return made.rules
}

// runtimeWebhooks reads the subscriptions among the runtime settings recs.
// A record that cannot be read is left out and reported in the error.
func runtimeWebhooks(recs []SettingsRecord) ([]WebhookSubscription, error) {
	var out []WebhookSubscription
	var errs []error
	for _, r := range recs {
		if r.Kind != SettingWebhook {
			continue
		}
		w, err := webhookOf(r)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		out = append(out, w)
	}
	slices.SortFunc(out, func(a, b WebhookSubscription) int { return strings.Compare(a.Name, b.Name) })
	return out, errors.Join(errs...)
}

// webhookOf is the subscription stored as runtime setting r.
func webhookOf(r SettingsRecord) (WebhookSubscription, error) {
	var v webhookRecord
	if err := json.Unmarshal(r.Value, &v); err != nil {
		return WebhookSubscription{}, fmt.Errorf("webhook subscription %s: %w", r.Name, err)
	}
	return WebhookSubscription{Name: r.Name, URL: v.URL, Secret: v.Secret, Events: v.Events, Queues: v.Queues,
		Disabled: v.Disabled, Source: WebhookFromAPI, CreatedAt: v.CreatedAt, UpdatedAt: r.UpdatedAt}, nil
}

// webhookQueue lays the delivery policy's defaults under [queues._webhooks]
// (q): its fields win, the defaults fill what it leaves unset.
func (c *Config) webhookQueue(q QueueConfig) QueueConfig {
	if q.MaxAttempts == 0 {
		q.MaxAttempts = cmpOr(c.Webhooks.MaxAttempts, DefaultWebhookMaxAttempts)
	}
	if q.BackoffBase == 0 {
		q.BackoffBase = Duration(DefaultWebhookBackoffBase)
	}
	return q
}

func cmpOr(v, def int) int {
	if v != 0 {
		return v
	}
	return def
}

// Settle is what every store runs at the end of every write, before it
// commits (where it ran SettleKeys): the held jobs the write made room for
// are released (SettleKeys), then the webhooks of the events the write
// published since the last Settle are inserted as delivery jobs, in the
// same transaction (see settleWebhooks).
func Settle(tx Tx) error {
	if err := SettleKeys(tx); err != nil {
		return err
	}
	return settleWebhooks(tx)
}

// settleWebhooks inserts a delivery job for each event of the write (since
// the last settle) that a subscription matches, for each subscription, and
// for each event that ends a job with a callback_url. Events of delivery
// jobs make none.
func settleWebhooks(tx Tx) error {
	events := tx.Unsettled()
	if len(events) == 0 {
		return nil
	}
	rules := tx.WebhookRules()
	var ending []int64
	var deliveries []*NewJob
	for i := range events {
		e := &events[i]
		if e.Queue == WebhookQueue {
			continue
		}
		if e.JobID != 0 && jobEnds(e.Type) {
			ending = append(ending, e.JobID)
		}
		if !rules.Wants(e.Type) {
			continue
		}
		for j := range rules.Subscriptions {
			if w := &rules.Subscriptions[j]; w.Matches(e) {
				deliveries = append(deliveries, deliveryJob(rules, WebhookDelivery{Subscription: w.Name, Event: *e}, tx.Now()))
			}
		}
	}
	if len(ending) > 0 {
		urls, err := tx.Callbacks(ending)
		if err != nil {
			return fmt.Errorf("callback urls: %w", err)
		}
		for i := range events {
			e := &events[i]
			if u := urls[e.JobID]; u != "" && e.Queue != WebhookQueue && jobEnds(e.Type) {
				deliveries = append(deliveries, deliveryJob(rules, WebhookDelivery{URL: u, Event: *e}, tx.Now()))
			}
		}
	}
	if len(deliveries) == 0 {
		return nil
	}
	if _, err := tx.Insert(deliveries...); err != nil {
		return fmt.Errorf("insert webhook deliveries: %w", err)
	}
	return nil
}

// deliveryJob is the job that delivers d (a subscription's, without its
// URL, or a callback's), under rules' policy (nil: the built-in one).
func deliveryJob(rules *WebhookRules, d WebhookDelivery, now time.Time) *NewJob {
	tag := CallbackTag
	if d.Subscription != "" {
		tag = WebhookTagPrefix + d.Subscription
		d.URL = "" // looked up when sent: never in a job
	}
	payload, _ := json.Marshal(d)
	nj := &NewJob{Queue: WebhookQueue, Kind: WebhookKind, Payload: payload, RunAt: now, Tags: []string{tag},
		MaxAttempts: DefaultWebhookMaxAttempts, Timeout: DefaultTimeout}
	if rules != nil && rules.MaxAttempts > 0 {
		nj.MaxAttempts = rules.MaxAttempts
	}
	if rules != nil && rules.Timeout > 0 {
		nj.Timeout = rules.Timeout
	}
	return nj
}
