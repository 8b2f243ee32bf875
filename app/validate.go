package app

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"time"
	"unicode/utf8"
)

var (
	queueRE = regexp.MustCompile(`^[A-Za-z0-9_.\-]{1,64}$`)
	kindRE  = regexp.MustCompile(`^[A-Za-z0-9_.:\-]{1,128}$`)
)

// Limits of the contract that validation enforces.
const (
	MaxPriority  = 1000
	MaxTags      = 16
	MaxKeyLength = 255
	MaxTimeout   = 24 * time.Hour
	MaxWait      = 60 * time.Second
	MaxDelay     = 10 * 365 * 24 * time.Hour
	// MaxCallbackURL bounds a job's callback_url, as browsers and most
	// servers bound a URL.
	MaxCallbackURL = 2048
	// MaxTracestate bounds a job's tracestate: W3C trace context asks
	// propagators to pass on at least 512 characters of it.
	MaxTracestate = 512
)

// traceparentForm is the one form of traceparent a job takes (W3C trace
// context, version 00), told in the refusal.
const traceparentForm = "00-<32 lowercase hex trace id, not all zero>-<16 lowercase hex parent id, not all zero>-<2 lowercase hex flags>"

var traceparentRE = regexp.MustCompile(`^00-([0-9a-f]{32})-([0-9a-f]{16})-[0-9a-f]{2}$`)

// ValidateQueue checks a queue name: 1-64 characters of [A-Za-z0-9_.-].
func ValidateQueue(q string) error {
	if !queueRE.MatchString(q) {
		return fmt.Errorf("queue name %q must be 1-64 characters of A-Z a-z 0-9 _ . -", clip(q))
	}
	return nil
}

// ValidateKind checks a kind (or tag): 1-128 characters of [A-Za-z0-9_.:-].
func ValidateKind(k string) error {
	if !kindRE.MatchString(k) {
		return fmt.Errorf("%q must be 1-128 characters of A-Z a-z 0-9 _ . : -", clip(k))
	}
	return nil
}

func clip(s string) string { return TruncateString(s, 80) }

// SubmitInput is one job as POST /api/jobs takes it. Optional fields are
// pointers so that "absent" and "zero" differ.
type SubmitInput struct {
	Queue          string          `json:"queue,omitempty"`
	Kind           string          `json:"kind"`
	Payload        json.RawMessage `json:"payload,omitempty"`
	Priority       *int            `json:"priority,omitempty"`
	RunAt          *time.Time      `json:"run_at,omitempty"`
	Delay          *Duration       `json:"delay,omitempty"`
	MaxAttempts    *int            `json:"max_attempts,omitempty"`
	Timeout        *Duration       `json:"timeout,omitempty"`
	TTL            *Duration       `json:"ttl,omitempty"`
	ExpiresAt      *time.Time      `json:"expires_at,omitempty"`
	Tags           []string        `json:"tags,omitempty"`
	IdempotencyKey string          `json:"idempotency_key,omitempty"`
	// Key, Unique, Debounce and Throttle: flow control by key
	// (docs/flow-control.md).
	Key      string      `json:"key,omitempty"`
	Unique   *UniqueRule `json:"unique,omitempty"`
	Debounce *Duration   `json:"debounce,omitempty"`
	Throttle *Duration   `json:"throttle,omitempty"`
	// CallbackURL is called when the job ends; Traceparent and Tracestate
	// (or the request's traceparent and tracestate headers) put the job in
	// a trace (docs/integrations.md).
	CallbackURL string `json:"callback_url,omitempty"`
	Traceparent string `json:"traceparent,omitempty"`
	Tracestate  string `json:"tracestate,omitempty"`
}

// NewJob validates in and fills the defaults of its queue's policy.
func (in *SubmitInput) NewJob(cfg *Config, now time.Time) (NewJob, error) {
	nj := NewJob{Queue: in.Queue, Kind: in.Kind, Payload: in.Payload, Tags: in.Tags, IdempotencyKey: in.IdempotencyKey}
	if nj.Queue == "" {
		nj.Queue = DefaultQueue
	}
	if err := ValidateQueue(nj.Queue); err != nil {
		return nj, Invalid("queue", "%v", err)
	}
	if reservedQueue(nj.Queue) { // internal queues (WebhookQueue); their jobs are inserted by app itself
		return nj, Invalid("queue", "queue names starting with _ are reserved for the server's own jobs (%s: webhook deliveries)", WebhookQueue)
	}
	if in.Kind == "" {
		return nj, Invalid("kind", "kind is required")
	}
	if err := ValidateKind(in.Kind); err != nil {
		return nj, Invalid("kind", "kind %v", err)
	}
	if len(nj.Payload) == 0 {
		nj.Payload = json.RawMessage("null")
	}
	if len(nj.Payload) > MaxPayloadBytes {
		return nj, TooLarge("payload", "payload is %d bytes; the limit is %d (1 MiB)", len(nj.Payload), MaxPayloadBytes)
	}
	if !json.Valid(nj.Payload) {
		return nj, Invalid("payload", "payload is not valid JSON")
	}
	if in.Priority != nil {
		if *in.Priority < -MaxPriority || *in.Priority > MaxPriority {
			return nj, Invalid("priority", "priority %d is not between -1000 and 1000", *in.Priority)
		}
		nj.Priority = *in.Priority
	}
	switch {
	case in.RunAt != nil && in.Delay != nil:
		return nj, Invalid("delay", "give run_at or delay, not both")
	case in.RunAt != nil:
		if in.RunAt.Year() < 2000 || in.RunAt.Sub(now) > MaxDelay {
			return nj, Invalid("run_at", "run_at %s is out of range", in.RunAt.Format(time.RFC3339))
		}
		nj.RunAt = in.RunAt.UTC()
	case in.Delay != nil:
		if *in.Delay < 0 || in.Delay.D() > MaxDelay {
			return nj, Invalid("delay", "delay must be between 0s and 10 years")
		}
		nj.RunAt = now.Add(in.Delay.D())
	default:
		nj.RunAt = now
	}
	q := cfg.Queue(nj.Queue)
	nj.MaxAttempts = q.MaxAttempts
	if in.MaxAttempts != nil {
		if *in.MaxAttempts < 1 || *in.MaxAttempts > 1000 {
			return nj, Invalid("max_attempts", "max_attempts %d is not between 1 and 1000", *in.MaxAttempts)
		}
		nj.MaxAttempts = *in.MaxAttempts
	}
	nj.Timeout = q.Timeout.D()
	if in.Timeout != nil {
		if in.Timeout.D() < time.Millisecond || in.Timeout.D() > MaxTimeout {
			return nj, Invalid("timeout", "timeout must be between 1ms and 24h")
		}
		nj.Timeout = in.Timeout.D()
	}
	switch {
	case in.TTL != nil && in.ExpiresAt != nil:
		return nj, Invalid("ttl", "give ttl or expires_at, not both")
	case in.TTL != nil:
		if in.TTL.D() <= 0 || in.TTL.D() > MaxDelay {
			return nj, Invalid("ttl", "ttl must be positive and at most 10 years")
		}
		t := now.Add(in.TTL.D())
		nj.ExpiresAt = &t
	case in.ExpiresAt != nil:
		if in.ExpiresAt.Year() < 2000 || in.ExpiresAt.Sub(now) > MaxDelay {
			return nj, Invalid("expires_at", "expires_at is out of range")
		}
		t := in.ExpiresAt.UTC()
		nj.ExpiresAt = &t
	}
	if len(in.Tags) > MaxTags {
		return nj, Invalid("tags", "%d tags; at most 16", len(in.Tags))
	}
	for _, t := range in.Tags {
		if err := ValidateKind(t); err != nil {
			return nj, Invalid("tags", "tag %v", err)
		}
	}
	if in.IdempotencyKey != "" && len(in.IdempotencyKey) > MaxKeyLength {
		return nj, Invalid("idempotency_key", "idempotency key is %d bytes; at most 255", len(in.IdempotencyKey))
	}
	if err := in.integrations(&nj); err != nil {
		return nj, err
	}
	if nj.CallbackURL != "" {
		if err := cfg.CheckCallbackURL(nj.CallbackURL); err != nil { // the target policy (webhooks.go)
			return nj, err
		}
	}
	return nj, in.flow(&nj, now)
}

// integrations validates in's callback_url and trace context into nj
// (docs/integrations.md). They reach HTTP headers, a command's environment
// and every job answer, so only their documented forms are stored.
func (in *SubmitInput) integrations(nj *NewJob) error {
	if in.Traceparent != "" {
		if err := ValidateTraceparent(in.Traceparent); err != nil {
			return err
		}
	}
	if len(in.Tracestate) > MaxTracestate {
		return Invalid("tracestate", "tracestate is %d characters; at most %d", len(in.Tracestate), MaxTracestate)
	}
	for _, c := range []byte(in.Tracestate) {
		if c < 0x20 || c > 0x7e {
			return Invalid("tracestate", "tracestate holds a character outside printable ASCII (W3C trace context: key=value pairs separated by commas)")
		}
	}
	if in.CallbackURL != "" {
		if _, err := ParseCallbackURL(in.CallbackURL); err != nil {
			return err
		}
		// The target policy (the SSRF guard: loopback, private and
		// link-local targets refused unless the config allows them) is
		// NewJob's next check, Config.CheckCallbackURL.
	}
	nj.CallbackURL, nj.Traceparent = in.CallbackURL, in.Traceparent
	if in.Traceparent != "" { // W3C: a tracestate without a traceparent is ignored
		nj.Tracestate = in.Tracestate
	}
	return nil
}

// ValidateTraceparent checks a W3C traceparent (version 00): its trace id
// and parent id in lowercase hex and not all zero, as the spec requires of
// a valid one. A 400 invalid_field otherwise, naming the form.
func ValidateTraceparent(tp string) error {
	m := traceparentRE.FindStringSubmatch(tp)
	if m == nil || strings.Trim(m[1], "0") == "" || strings.Trim(m[2], "0") == "" {
		return Invalid("traceparent", "traceparent %q is not a W3C traceparent: it must be %s", clip(tp), traceparentForm)
	}
	return nil
}

// ParseCallbackURL checks a callback_url: an absolute http or https URL
// with a host, at most MaxCallbackURL bytes, without credentials (the job
// and its answers show the URL; a receiver checks the request's signature
// instead). A 400 invalid_field otherwise.
func ParseCallbackURL(raw string) (*url.URL, error) {
	if len(raw) > MaxCallbackURL {
		return nil, Invalid("callback_url", "callback_url is %d bytes; at most %d", len(raw), MaxCallbackURL)
	}
	if !utf8.ValidString(raw) {
		return nil, Invalid("callback_url", "callback_url is not UTF-8")
	}
	u, err := url.Parse(raw)
	if err != nil {
		return nil, Invalid("callback_url", "callback_url %q is not a URL: %v", clip(raw), errors.Unwrap(err))
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, Invalid("callback_url", "callback_url %q must be an absolute http:// or https:// URL", clip(raw))
	}
	if u.Opaque != "" || u.Hostname() == "" {
		return nil, Invalid("callback_url", "callback_url %q has no host", clip(raw))
	}
	if u.User != nil {
		return nil, Invalid("callback_url", "callback_url must not carry credentials (user:password@): every job answer shows it; check the request's Queue-Signature instead")
	}
	return u, nil
}

// flow validates in's key and dedupe rule into nj.
func (in *SubmitInput) flow(nj *NewJob, now time.Time) error {
	if len(in.Key) > MaxKeyLength {
		return Invalid("key", "key is %d bytes; at most 255", len(in.Key))
	}
	if strings.ContainsRune(in.Key, 0) || !utf8.ValidString(in.Key) {
		return Invalid("key", "key holds a NUL byte or is not UTF-8")
	}
	nj.Key = in.Key
	rules := 0
	for _, set := range []bool{in.Unique != nil, in.Debounce != nil, in.Throttle != nil} {
		if set {
			rules++
		}
	}
	if rules > 1 {
		return Invalid("unique", "give one of unique, debounce and throttle")
	}
	if in.Unique != nil {
		u := *in.Unique
		u.By, u.While = slices.Clone(u.By), slices.Clone(u.While)
		if err := u.check(nj.Key); err != nil {
			return err
		}
		nj.Unique = &u
	}
	for _, r := range []struct {
		field string
		d     *Duration
		to    *time.Duration
	}{{"debounce", in.Debounce, &nj.Debounce}, {"throttle", in.Throttle, &nj.Throttle}} {
		if r.d == nil {
			continue
		}
		if nj.Key == "" {
			return Invalid(r.field, "%s needs the job's key: it applies per key", r.field)
		}
		if r.d.D() < time.Millisecond || r.d.D() > MaxDelay {
			return Invalid(r.field, "%s must be between 1ms and 10 years", r.field)
		}
		*r.to = r.d.D()
	}
	if nj.Debounce > 0 {
		if in.RunAt != nil || in.Delay != nil {
			return Invalid("debounce", "give debounce or run_at/delay, not both: a debounced job runs debounce after its last submission")
		}
		nj.RunAt = now.Add(nj.Debounce)
	}
	return nil
}

// ValidateTags checks a list of tags given as a filter.
func ValidateTag(t string) error {
	if t == "" {
		return nil
	}
	if err := ValidateKind(t); err != nil {
		return Invalid("tag", "tag %v", err)
	}
	return nil
}

// ValidateReason checks a dead-letter reason given as a filter.
func ValidateReason(r string) error {
	switch r {
	case "", ReasonMaxAttempts, ReasonPermanentFailure, ReasonLeaseExpired, ReasonAdminMove:
		return nil
	}
	return Invalid("reason", "reason %q is not one of max_attempts, permanent_failure, lease_expired, admin_move", clip(r))
}
