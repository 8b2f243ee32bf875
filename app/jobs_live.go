package app

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/big"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// Finding live jobs (issue 26): filters that look inside jobs (payload
// fields, the text of their errors, time ranges), shared by GET /api/jobs,
// the jobs page, the CLI and the live bulk actions (jobs_bulk.go). What a
// filter matches is written here once: the memory store evaluates it with
// Match, the SQL stores render the same meaning (sqlite/jobs_live.go,
// postgres/jobs_live.go), and the conformance suite holds all three to it.
//
// A payload field matches (PayloadHolds):
//   - a JSON number equal to the value when the value is a number in JSON's
//     grammar that fits a float64 (42 matches 42, 42.0 and 4.2e1);
//   - a JSON string equal to the value, byte for byte (42 matches "42");
//   - the literal true, false or null when the value is that word (and the
//     string "true", ...);
//   - nothing at all when the path is missing, or leads to an object or array.
//
// Error text matches a job one of whose attempts' errors (Job.Errors)
// contains it, ASCII letters compared without case (the same on every
// store: SQLite's lower folds only those); % and _ are plain characters.
// A payload value or error text may hold neither NUL nor U+FFFD: so a NUL
// byte in a stored string (PostgreSQL reads it as U+FFFD) matches nothing
// on every store.

// Operators of the live filters (see Cond).
const (
	// OpPayload: the JSON document in the field (payload) holds a
	// PayloadMatch (the Cond's Value).
	OpPayload Op = "payload"
	// OpContains: one of the attempt errors in the field (errors) contains
	// the Value, a string already folded by FoldASCII.
	OpContains Op = "contains"
)

// Limits of the live filters.
const (
	// MaxPayloadFilters is how many payload fields one filter may name.
	MaxPayloadFilters = 10
	// MaxPayloadDepth is how many steps one payload path may take.
	MaxPayloadDepth = 8
	// MaxMatchText caps a payload value and an error text, in bytes.
	MaxMatchText = 1024
)

// PayloadMatch is one payload filter: the value at Path must match Value.
type PayloadMatch struct {
	// Path is the steps into the payload: object keys, or array indexes
	// (a step of digits only is an index, never an object key).
	Path  []string `json:"path"`
	Value string   `json:"value"`
}

// JobMatch is the resolved form of the live filters, part of a JobFilter.
// Zero fields match everything.
type JobMatch struct {
	// Payload: every one of these must hold.
	Payload []PayloadMatch
	// Error: one of the job's attempt errors contains it (see FoldASCII).
	Error string
	// The time ranges: *After is at or after, *Before strictly before. A job
	// that has not finished matches neither finished bound.
	CreatedAfter, CreatedBefore   time.Time
	RunAfter, RunBefore           time.Time
	FinishedAfter, FinishedBefore time.Time
}

// IsZero reports whether m filters by nothing.
func (m JobMatch) IsZero() bool {
	return len(m.Payload) == 0 && m.Error == "" && m.CreatedAfter.IsZero() && m.CreatedBefore.IsZero() &&
		m.RunAfter.IsZero() && m.RunBefore.IsZero() && m.FinishedAfter.IsZero() && m.FinishedBefore.IsZero()
}

// conds is m as conditions on jobs.
func (m JobMatch) conds() []Cond {
	var c []Cond
	for _, p := range m.Payload {
		c = append(c, Cond{"payload", OpPayload, p})
	}
	if m.Error != "" {
		c = append(c, Cond{"errors", OpContains, FoldASCII(m.Error)})
	}
	for _, b := range []struct {
		field string
		op    Op
		t     time.Time
	}{
		{"created_at", OpGe, m.CreatedAfter}, {"created_at", OpLt, m.CreatedBefore},
		{"run_at", OpGe, m.RunAfter}, {"run_at", OpLt, m.RunBefore},
		{"finished_at", OpGe, m.FinishedAfter}, {"finished_at", OpLt, m.FinishedBefore},
	} {
		if !b.t.IsZero() {
			c = append(c, Cond{b.field, b.op, b.t})
		}
	}
	return c
}

// holdsLive is Cond.holds for the live operators: v is the job's payload
// (json.RawMessage) or its errors ([]AttemptError).
func (c Cond) holdsLive(v any) bool {
	switch c.Op {
	case OpPayload:
		return PayloadHolds(v.(json.RawMessage), c.Value.(PayloadMatch))
	case OpContains:
		return ErrorsContain(v.([]AttemptError), c.Value.(string))
	}
	return false
}

// FoldASCII lowers the ASCII letters of s and nothing else: the case
// folding every store does alike for an error-text filter.
func FoldASCII(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

// unNUL is s with NUL bytes read as U+FFFD, as PostgreSQL must.
func unNUL(s string) string {
	if strings.IndexByte(s, 0) < 0 {
		return s
	}
	return strings.ReplaceAll(s, "\x00", "\uFFFD")
}

// ErrorsContain reports whether one of errs contains folded (an error
// text already folded by FoldASCII).
func ErrorsContain(errs []AttemptError, folded string) bool {
	for _, e := range errs {
		if strings.Contains(FoldASCII(unNUL(e.Error)), folded) {
			return true
		}
	}
	return false
}

// jsonNumber is JSON's grammar of a number; bigExponent is one whose
// exponent has four digits or more (no store compares those: PostgreSQL's
// numeric cannot hold them all, and a big.Rat of one is huge).
var (
	jsonNumber  = regexp.MustCompile(`^-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?$`)
	bigExponent = regexp.MustCompile(`[eE][+-]?0*[0-9]{4,}$`)
)

// PayloadNumber reports whether a payload filter's value compares as a
// number: JSON's grammar, finite as a float64, an exponent of at most three
// digits.
func PayloadNumber(v string) bool {
	if len(v) > 64 || !jsonNumber.MatchString(v) || bigExponent.MatchString(v) {
		return false
	}
	_, err := strconv.ParseFloat(v, 64)
	return err == nil
}

// PayloadHolds reports whether payload holds pm (see the rules above).
func PayloadHolds(payload json.RawMessage, pm PayloadMatch) bool {
	dec := json.NewDecoder(bytes.NewReader(payload))
	dec.UseNumber()
	var doc any
	if err := dec.Decode(&doc); err != nil {
		return false
	}
	for _, step := range pm.Path {
		switch node := doc.(type) {
		case map[string]any:
			if isIndex(step) {
				return false
			}
			v, ok := node[step]
			if !ok {
				return false
			}
			doc = v
		case []any:
			if !isIndex(step) {
				return false
			}
			i, _ := strconv.Atoi(step)
			if i >= len(node) {
				return false
			}
			doc = node[i]
		default:
			return false
		}
	}
	switch v := doc.(type) {
	case string:
		return unNUL(v) == pm.Value
	case bool:
		return strconv.FormatBool(v) == pm.Value
	case nil:
		return pm.Value == "null"
	case json.Number:
		if !PayloadNumber(pm.Value) || bigExponent.MatchString(string(v)) {
			return false
		}
		a, ok1 := new(big.Rat).SetString(string(v))
		b, ok2 := new(big.Rat).SetString(pm.Value)
		return ok1 && ok2 && a.Cmp(b) == 0
	}
	return false
}

// isIndex reports whether a path step is an array index: digits only.
func isIndex(step string) bool {
	if step == "" {
		return false
	}
	for i := 0; i < len(step); i++ {
		if step[i] < '0' || step[i] > '9' {
			return false
		}
	}
	return true
}

// payloadKey is what a payload path step may be.
var payloadKey = regexp.MustCompile(`^[A-Za-z0-9_-]{1,128}$`)

// ParsePayloadPath reads "address.city" or "items.0.sku" (the part after
// "payload." of a query parameter); param names the parameter in errors.
func ParsePayloadPath(param, path string) ([]string, error) {
	steps := strings.Split(path, ".")
	if len(steps) > MaxPayloadDepth {
		return nil, Invalid(param, "a payload path takes at most %d steps", MaxPayloadDepth)
	}
	for _, s := range steps {
		if !payloadKey.MatchString(s) {
			return nil, Invalid(param, "each step of a payload path is an object key of A-Z, a-z, 0-9, _ and - or an array index (payload.address.city, payload.items.0.sku)")
		}
		if isIndex(s) && (len(s) > 9 || (len(s) > 1 && s[0] == '0')) {
			return nil, Invalid(param, "array index %q is not a plain number below a billion", s)
		}
	}
	return steps, nil
}

// JobQuery is the live filters as text, in the form GET /api/jobs takes
// them (payload.PATH=VALUE, error=, created_after=, ...), the jobs page's
// form, the CLI's flags and the body of a live bulk action. Match resolves
// it; the one parser of them all.
type JobQuery struct {
	// Payload maps a path ("customer", "address.city", "items.0.sku") to
	// the value it must match.
	Payload PayloadValues `json:"payload,omitempty"`
	Error   string        `json:"error,omitempty"`
	// The time bounds: an RFC 3339 time, or a duration back from now ("1h"
	// is an hour ago, "7d" a week).
	CreatedAfter   string `json:"created_after,omitempty"`
	CreatedBefore  string `json:"created_before,omitempty"`
	RunAfter       string `json:"run_after,omitempty"`
	RunBefore      string `json:"run_before,omitempty"`
	FinishedAfter  string `json:"finished_after,omitempty"`
	FinishedBefore string `json:"finished_before,omitempty"`
}

// JobQueryParams are the query parameters of the live filters (besides
// payload.PATH).
var JobQueryParams = []string{"error", "created_after", "created_before", "run_after", "run_before", "finished_after", "finished_before"}

// PayloadParam is the prefix of a payload filter's query parameter.
const PayloadParam = "payload."

// ParseJobQuery picks the live filters out of query parameters (the rest
// is left to the caller). A parameter given twice keeps its first value;
// the API refuses repeats before (ui's checkQuery).
func ParseJobQuery(q url.Values) JobQuery {
	var out JobQuery
	for name, vs := range q {
		if path, ok := strings.CutPrefix(name, PayloadParam); ok && len(vs) > 0 {
			if out.Payload == nil {
				out.Payload = PayloadValues{}
			}
			out.Payload[path] = vs[0]
		}
	}
	for _, f := range out.fields() {
		*f.v = q.Get(f.name)
	}
	return out
}

type queryField struct {
	name string
	v    *string
}

func (q *JobQuery) fields() []queryField {
	return []queryField{{"error", &q.Error}, {"created_after", &q.CreatedAfter}, {"created_before", &q.CreatedBefore},
		{"run_after", &q.RunAfter}, {"run_before", &q.RunBefore}, {"finished_after", &q.FinishedAfter}, {"finished_before", &q.FinishedBefore}}
}

// Values is q as query parameters (empty ones left out), for links and
// the client.
func (q JobQuery) Values() url.Values {
	v := url.Values{}
	for path, val := range q.Payload {
		v.Set(PayloadParam+path, val)
	}
	for _, f := range q.fields() {
		if *f.v != "" {
			v.Set(f.name, *f.v)
		}
	}
	return v
}

// IsZero reports whether q filters by nothing.
func (q JobQuery) IsZero() bool {
	if len(q.Payload) > 0 {
		return false
	}
	for _, f := range q.fields() {
		if *f.v != "" {
			return false
		}
	}
	return true
}

// Match resolves q at now: each bad value is an *InvalidError naming its
// parameter (payload.PATH, error, created_after, ...).
func (q JobQuery) Match(now time.Time) (JobMatch, error) {
	var m JobMatch
	if len(q.Payload) > MaxPayloadFilters {
		return m, Invalid("payload", "at most %d payload fields at once", MaxPayloadFilters)
	}
	paths := make([]string, 0, len(q.Payload))
	for p := range q.Payload {
		paths = append(paths, p)
	}
	slices.Sort(paths) // one order, so a filter renders the same SQL every time
	for _, p := range paths {
		param := PayloadParam + p
		steps, err := ParsePayloadPath(param, p)
		if err != nil {
			return m, err
		}
		v := q.Payload[p]
		if err := matchText(param, v); err != nil {
			return m, err
		}
		m.Payload = append(m.Payload, PayloadMatch{Path: steps, Value: v})
	}
	if err := matchText("error", q.Error); err != nil {
		return m, err
	}
	m.Error = q.Error
	for _, t := range []struct {
		name string
		text string
		dst  *time.Time
	}{
		{"created_after", q.CreatedAfter, &m.CreatedAfter}, {"created_before", q.CreatedBefore, &m.CreatedBefore},
		{"run_after", q.RunAfter, &m.RunAfter}, {"run_before", q.RunBefore, &m.RunBefore},
		{"finished_after", q.FinishedAfter, &m.FinishedAfter}, {"finished_before", q.FinishedBefore, &m.FinishedBefore},
	} {
		at, err := ParseTimeBound(t.name, t.text, now)
		if err != nil {
			return m, err
		}
		*t.dst = at
	}
	return m, nil
}

// matchText checks a payload value or an error text: UTF-8 without NUL
// (PostgreSQL could not compare it) or U+FFFD (a stored NUL reads as one
// on PostgreSQL alone), at most MaxMatchText bytes.
func matchText(param, v string) error {
	switch {
	case len(v) > MaxMatchText:
		return Invalid(param, "%s is %d bytes; at most %d", clip(param), len(v), MaxMatchText)
	case strings.IndexByte(v, 0) >= 0 || strings.ContainsRune(v, utf8.RuneError) || !utf8.ValidString(v):
		return Invalid(param, "%s holds a NUL byte or U+FFFD, or is not UTF-8", clip(param))
	}
	return nil
}

// ParseTimeBound reads a time filter: an RFC 3339 time, or a duration back
// from now ("1h": an hour ago). Empty is the zero time (no bound).
func ParseTimeBound(param, s string, now time.Time) (time.Time, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return time.Time{}, nil
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		if t.Year() < 1970 || t.Year() > 9999 {
			return time.Time{}, Invalid(param, "%s %q is out of range", param, clip(s))
		}
		return t.UTC(), nil
	}
	d, err := ParseDuration(s)
	if err != nil || d < 0 || d > 100*365*24*time.Hour {
		return time.Time{}, Invalid(param, "%s %q is neither an RFC 3339 time (2026-12-01T15:04:05Z) nor a duration back from now (30m, 1h, 7d)", param, clip(s))
	}
	return now.Add(-d).UTC(), nil
}

// Describe writes q for people: "payload.customer = 42, error contains
// \"timeout\"", in a fixed order.
func (q JobQuery) Describe() []string {
	var out []string
	paths := make([]string, 0, len(q.Payload))
	for p := range q.Payload {
		paths = append(paths, p)
	}
	slices.Sort(paths)
	for _, p := range paths {
		out = append(out, fmt.Sprintf("payload.%s = %s", p, q.Payload[p]))
	}
	if q.Error != "" {
		out = append(out, fmt.Sprintf("error contains %q", q.Error))
	}
	for _, f := range q.fields()[1:] {
		if *f.v != "" {
			out = append(out, strings.ReplaceAll(f.name, "_", " ")+" "+*f.v)
		}
	}
	return out
}

// PayloadValues maps payload paths to the values they must match. In JSON
// (a bulk action's body) a value may be a string, a number, true, false or
// null: 42 and "42" are both the text 42, as in a query string.
type PayloadValues map[string]string

// UnmarshalJSON reads {"customer": 42, "address.city": "Oslo"}.
func (p *PayloadValues) UnmarshalJSON(b []byte) error {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		return fmt.Errorf("payload: want an object of paths and values: %w", err)
	}
	out := PayloadValues{}
	for path, v := range raw {
		v = bytes.TrimSpace(v)
		switch {
		case len(v) > 0 && v[0] == '"':
			var s string
			if err := json.Unmarshal(v, &s); err != nil {
				return fmt.Errorf("payload.%s: %w", path, err)
			}
			out[path] = s
		case len(v) > 0 && (v[0] == '{' || v[0] == '['):
			return Invalid(PayloadParam+path, "a payload value is a string, number, true, false or null, not an object or array")
		default:
			out[path] = string(v)
		}
	}
	*p = out
	return nil
}
