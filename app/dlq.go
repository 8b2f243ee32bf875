package app

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"iter"
	"strconv"
	"strings"
	"time"

	jsonpatch "github.com/evanphx/json-patch/v5"
)

// ReplayOverride changes what a replayed job gets from its dead-letter row:
// another queue, priority or max_attempts, and (one row only) a new
// payload or a JSON merge patch (RFC 7396) of the old one.
type ReplayOverride struct {
	Queue        string          `json:"queue,omitempty"`
	Priority     *int            `json:"priority,omitempty"`
	MaxAttempts  *int            `json:"max_attempts,omitempty"`
	Payload      json.RawMessage `json:"payload,omitempty"`
	PayloadPatch json.RawMessage `json:"payload_patch,omitempty"`
}

// check validates o; one is false for a bulk replay, which takes no payload.
func (o *ReplayOverride) check(one bool) error {
	if o == nil {
		return nil
	}
	if o.Queue != "" {
		if err := ValidateQueue(o.Queue); err != nil {
			return Invalid("queue", "%v", err)
		}
		if reservedQueue(o.Queue) {
			return Invalid("queue", "queue names starting with _ are reserved for the server's own jobs: a replay cannot move a job there")
		}
	}
	if o.Priority != nil && (*o.Priority < -MaxPriority || *o.Priority > MaxPriority) {
		return Invalid("priority", "priority %d is not between -1000 and 1000", *o.Priority)
	}
	if o.MaxAttempts != nil && (*o.MaxAttempts < 1 || *o.MaxAttempts > 1000) {
		return Invalid("max_attempts", "max_attempts %d is not between 1 and 1000", *o.MaxAttempts)
	}
	switch {
	case !one && (o.Payload != nil || o.PayloadPatch != nil):
		return Invalid("payload", "a bulk replay keeps each row's payload; replace or patch it one row at a time")
	case o.Payload != nil && o.PayloadPatch != nil:
		return Invalid("payload_patch", "give payload or payload_patch, not both")
	case len(o.Payload) > MaxPayloadBytes || len(o.PayloadPatch) > MaxPayloadBytes:
		return TooLarge("payload", "the payload is larger than %d bytes (1 MiB)", MaxPayloadBytes)
	case o.Payload != nil && !json.Valid(o.Payload):
		return Invalid("payload", "payload is not valid JSON")
	case o.PayloadPatch != nil && !json.Valid(o.PayloadPatch):
		return Invalid("payload_patch", "payload_patch is not valid JSON")
	}
	return nil
}

// apply changes nj as o says.
func (o *ReplayOverride) apply(nj *NewJob) error {
	if o == nil {
		return nil
	}
	if o.Queue != "" {
		nj.Queue = o.Queue
	}
	if o.Priority != nil {
		nj.Priority = *o.Priority
	}
	if o.MaxAttempts != nil {
		nj.MaxAttempts = *o.MaxAttempts
	}
	if nj.Queue == WebhookQueue && (o.Payload != nil || o.PayloadPatch != nil) {
		// It names the subscription whose secret signs it, and the URL.
		return Invalid("payload", "a webhook delivery's payload cannot be changed; replay it as it is")
	}
	if o.Payload != nil {
		nj.Payload = o.Payload
	}
	if o.PayloadPatch != nil {
		p, err := jsonpatch.MergePatch(nj.Payload, o.PayloadPatch)
		if err != nil {
			return Invalid("payload_patch", "payload_patch does not apply: %v", err)
		}
		if len(p) > MaxPayloadBytes {
			return TooLarge("payload_patch", "the patched payload is larger than %d bytes (1 MiB)", MaxPayloadBytes)
		}
		nj.Payload = p
	}
	return nil
}

// EncodeDeadCursor makes the next_cursor of a DLQ listing: the place of
// its last row (the time of the move, then id) and the direction.
func EncodeDeadCursor(k *DeadKey, asc bool) string {
	dir := "d"
	if asc {
		dir = "a"
	}
	return base64.RawURLEncoding.EncodeToString([]byte(dir + strconv.FormatInt(k.MovedAt.UnixMilli(), 10) + "." + strconv.FormatInt(k.ID, 10)))
}

// DecodeDeadCursor reads a cursor made by EncodeDeadCursor (or a dry run's
// bound); anything else is an *InvalidError naming field.
func DecodeDeadCursor(c, field string) (*DeadKey, bool, error) {
	bad := Invalid(field, "%s is not one this server made; start again without it", field)
	if len(c) > 64 {
		return nil, false, bad
	}
	b, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil || len(b) < 4 || (b[0] != 'a' && b[0] != 'd') {
		return nil, false, bad
	}
	at, id, ok := strings.Cut(string(b[1:]), ".")
	ms, err1 := strconv.ParseInt(at, 10, 64)
	n, err2 := strconv.ParseInt(id, 10, 64)
	if !ok || err1 != nil || err2 != nil || n <= 0 {
		return nil, false, bad
	}
	return &DeadKey{MovedAt: time.UnixMilli(ms).UTC(), ID: n}, b[0] == 'a', nil
}

// DeadStats is GET /api/dlq/stats: the rows of the dead-letter queue by
// queue, kind, reason and day of the move (UTC), each adding up to Total.
type DeadStats struct {
	Total    int64            `json:"total"`
	ByQueue  map[string]int64 `json:"by_queue"`
	ByKind   map[string]int64 `json:"by_kind"`
	ByReason map[string]int64 `json:"by_reason"`
	ByDay    map[string]int64 `json:"by_day"`
	// OldestAge is how long ago the oldest row moved (0 with none).
	OldestAge float64 `json:"oldest_age_seconds"`
	// Replayed counts the rows replayed at least once; Replays, the
	// replays in all.
	Replayed int64     `json:"replayed"`
	Replays  int64     `json:"replays"`
	At       time.Time `json:"at"`
}

// DeadStats counts the dead-letter rows of the queues inScope says yes to
// (nil: all).
func (s *Service) DeadStats(ctx context.Context, inScope func(queue string) bool) (*DeadStats, error) {
	groups, err := s.Store.DeadGroups(ctx)
	if err != nil {
		return nil, err
	}
	now := s.Clock.Now()
	st := &DeadStats{ByQueue: map[string]int64{}, ByKind: map[string]int64{}, ByReason: map[string]int64{}, ByDay: map[string]int64{}, At: now}
	for _, g := range groups {
		if inScope != nil && !inScope(g.Queue) {
			continue
		}
		st.Total, st.Replayed, st.Replays = st.Total+g.Rows, st.Replayed+g.Replayed, st.Replays+g.Replays
		st.ByQueue[g.Queue] += g.Rows
		st.ByKind[g.Kind] += g.Rows
		st.ByReason[g.Reason] += g.Rows
		st.ByDay[g.Day] += g.Rows
		st.OldestAge = max(st.OldestAge, now.Sub(g.Oldest).Seconds())
	}
	return st, nil
}

// GroupDead counts rows as DeadGroups does, in Go: the definition the SQL
// stores' GROUP BY follows (the memory store uses it as it is).
func GroupDead(rows iter.Seq[*DeadJob]) []DeadGroup {
	by := map[DeadGroup]*DeadGroup{} // keyed by queue, kind, reason and day only
	for d := range rows {
		k := DeadGroup{Queue: d.Queue, Kind: d.Kind, Reason: d.Reason, Day: d.MovedAt.UTC().Format(time.DateOnly)}
		g := by[k]
		if g == nil {
			g = &DeadGroup{Queue: k.Queue, Kind: k.Kind, Reason: k.Reason, Day: k.Day, Oldest: d.MovedAt}
			by[k] = g
		}
		g.Rows, g.Replays, g.Oldest = g.Rows+1, g.Replays+int64(d.ResurrectionCount), minTime(g.Oldest, d.MovedAt)
		if d.ResurrectionCount > 0 {
			g.Replayed++
		}
	}
	out := make([]DeadGroup, 0, len(by))
	for _, g := range by {
		out = append(out, *g)
	}
	return out
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

// auditOverride is o for an audit entry's filter document.
func auditOverride(o *ReplayOverride) map[string]any {
	if o == nil {
		return nil
	}
	m := map[string]any{}
	if o.Queue != "" {
		m["queue"] = o.Queue
	}
	if o.Priority != nil {
		m["priority"] = *o.Priority
	}
	if o.MaxAttempts != nil {
		m["max_attempts"] = *o.MaxAttempts
	}
	if o.Payload != nil {
		m["payload"] = "replaced"
	}
	if o.PayloadPatch != nil {
		m["payload_patch"] = o.PayloadPatch
	}
	if len(m) == 0 {
		return nil
	}
	return m
}

// DeadCSVColumns are the columns of the DLQ's CSV export (the CLI's and the
// web UI's alike).
var DeadCSVColumns = []string{"id", "queue", "kind", "dead_letter_reason", "moved_to_dead_letter_at", "attempts",
	"last_error", "note", "resurrection_count", "replayed_job_id", "payload"}

// CSVRecord is d as a row of DeadCSVColumns. Free text (last_error, note)
// starting with = + - @ gets a leading ' so a spreadsheet shows it as text
// rather than running it as a formula; the JSON lines export is exact.
func (d *DeadJob) CSVRecord() []string {
	replayed := ""
	if d.ReplayedJobID != nil {
		replayed = strconv.FormatInt(*d.ReplayedJobID, 10)
	}
	payload := string(d.Payload)
	var b bytes.Buffer
	if json.Compact(&b, d.Payload) == nil {
		payload = b.String()
	}
	return []string{strconv.FormatInt(d.ID, 10), d.Queue, d.Kind, d.Reason, FormatTime(d.MovedAt), strconv.Itoa(d.Attempts),
		cellText(d.LastError), cellText(d.Note), strconv.Itoa(d.ResurrectionCount), replayed, payload}
}

func cellText(s string) string {
	if s != "" && strings.ContainsRune("=+-@\t\r", rune(s[0])) {
		return "'" + s
	}
	return s
}
