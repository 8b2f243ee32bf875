package app

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"slices"
	"time"
)

// Unique jobs, debounce and throttle: rules a submission carries that may
// answer with a job already stored instead of a new one
// (docs/flow-control.md). Each stores its job under a signature (the
// Dedupe column) that the next submission of the same rule looks up, in the
// same transaction as its insert: the SQLite writer runs one at a time, and
// PostgreSQL locks the signature first (Tx.Dedupe), so concurrent
// submissions make one job.

// UniqueRule is a submission's "unique" object: a submission that matches
// a job of the same queue By these fields, in one of the While states,
// created within For, answers with that job.
type UniqueRule struct {
	// By: "key", "kind", "payload" (default: kind and payload, and key
	// when the job has one).
	By []string `json:"by,omitempty"`
	// While: "queued", "scheduled", "processing", "done" (default: the
	// first three, a job not yet finished).
	While []string `json:"while,omitempty"`
	// For: how far back a match counts, from its creation (0: no bound).
	For Duration `json:"for,omitempty"`
}

// The fields and states a UniqueRule may name.
var (
	uniqueBy    = []string{"key", "kind", "payload"}
	uniqueWhile = []string{"queued", "scheduled", "processing", "done"}
)

// maxDedupeMatches bounds the jobs of one signature a submission looks at.
const maxDedupeMatches = 20

// check validates r for a job with key and fills its defaults.
func (r *UniqueRule) check(key string) error {
	if len(r.By) == 0 {
		r.By = []string{"kind", "payload"}
		if key != "" {
			r.By = append(r.By, "key")
		}
	}
	for _, b := range r.By {
		if !slices.Contains(uniqueBy, b) {
			return Invalid("unique.by", "unique.by %q is not one of key, kind, payload", clip(b))
		}
		if b == "key" && key == "" {
			return Invalid("unique.by", "unique by key needs the job's key")
		}
	}
	if len(r.While) == 0 {
		r.While = []string{"queued", "scheduled", "processing"}
	}
	for _, w := range r.While {
		if !slices.Contains(uniqueWhile, w) {
			return Invalid("unique.while", "unique.while %q is not one of queued, scheduled, processing, done", clip(w))
		}
	}
	if r.For < 0 || r.For.D() > MaxDelay {
		return Invalid("unique.for", "unique.for must be between 0s and 10 years")
	}
	return nil
}

// signature is the Dedupe value of nj under its rule ("" if it has none):
// the rule's letter and a hash of what it compares.
func (nj *NewJob) signature() string {
	var rule string
	var parts [][]byte
	switch {
	case nj.Unique != nil:
		rule = "u"
		by := slices.Clone(nj.Unique.By)
		slices.Sort(by)
		for _, b := range slices.Compact(by) {
			switch b {
			case "key":
				parts = append(parts, []byte("key"), []byte(nj.Key))
			case "kind":
				parts = append(parts, []byte("kind"), []byte(nj.Kind))
			case "payload":
				var c bytes.Buffer
				if json.Compact(&c, nj.Payload) != nil {
					c.Write(nj.Payload)
				}
				parts = append(parts, []byte("payload"), c.Bytes())
			}
		}
	case nj.Debounce > 0:
		rule, parts = "d", [][]byte{[]byte(nj.Kind), []byte(nj.Key)}
	case nj.Throttle > 0:
		rule, parts = "t", [][]byte{[]byte(nj.Kind), []byte(nj.Key)}
	default:
		return ""
	}
	h := sha256.New()
	for _, p := range parts {
		var n [8]byte
		for i, l := 0, len(p); i < 8; i, l = i+1, l>>8 {
			n[i] = byte(l)
		}
		h.Write(n[:])
		h.Write(p)
	}
	return rule + ":" + hex.EncodeToString(h.Sum(nil)[:16])
}

// dedupe applies nj's rule in tx: the job a submission of nj answers with
// instead of inserting one (nil: insert nj, under its signature).
func dedupe(tx Tx, nj *NewJob) (*Job, error) {
	nj.Dedupe = nj.signature()
	if nj.Dedupe == "" {
		return nil, nil
	}
	now := tx.Now()
	var since time.Time
	switch {
	case nj.Unique != nil && nj.Unique.For > 0:
		since = now.Add(-nj.Unique.For.D())
	case nj.Throttle > 0:
		since = now.Add(-nj.Throttle)
	}
	jobs, err := tx.Dedupe(nj.Queue, nj.Dedupe, since, maxDedupeMatches)
	if err != nil {
		return nil, err
	}
	switch {
	case nj.Unique != nil:
		for _, j := range jobs {
			if slices.Contains(nj.Unique.While, uniqueState(j, now)) {
				return j, nil
			}
		}
	case nj.Throttle > 0:
		if len(jobs) > 0 {
			return jobs[0], nil // the first of the period; the rest are dropped
		}
	case nj.Debounce > 0:
		for _, j := range jobs {
			if j.Status == StatusQueued { // not started yet: the last write wins
				nj2, err := tx.Debounce(j, nj.Payload, nj.RunAt)
				if err != nil {
					return nil, err
				}
				if err := tx.Fault(FaultRequeue, j.ID); err != nil {
					return nil, err
				}
				tx.Event(EventDebounced, j.ID, j.Queue, j.Kind, eventData(map[string]any{"run_at": FormatTime(nj.RunAt)}))
				return nj2, nil
			}
		}
	}
	return nil, nil
}

// uniqueState is j's state as a UniqueRule's While names it.
func uniqueState(j *Job, now time.Time) string {
	if j.Scheduled(now) {
		return "scheduled"
	}
	return string(j.Status)
}
