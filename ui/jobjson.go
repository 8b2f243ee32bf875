package ui

import (
	"encoding/json"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/queuehq/queue/app"
)

// jobJSON writes j as app.Job.MarshalJSON does, byte for byte, without
// reflection: the job is the answer of every submit and claim, and the
// reflecting encoder was the largest part of the server's own time on
// them. A job with attempt errors, parents, a dead letter or events (none
// of which a submit or a claim answers with) goes to Job.MarshalJSON, as
// does a string or raw value that needs escaping or compacting, so this
// only writes what it can copy. TestJobJSON holds it to Job.MarshalJSON.
func jobJSON(j *app.Job) ([]byte, error) {
	return appendJobJSON(make([]byte, 0, 512+len(j.Payload)+len(j.Result)), j)
}

// appendJobJSON appends j's JSON to b: by appendJob, or from
// Job.MarshalJSON when appendJob cannot write it.
func appendJobJSON(b []byte, j *app.Job) ([]byte, error) {
	n := len(b)
	b, ok := appendJob(b, j)
	if ok {
		return b, nil
	}
	jb, err := j.MarshalJSON()
	if err != nil {
		return nil, err
	}
	return append(b[:n], jb...), nil
}

// appendJob appends j's JSON to b; false when j needs Job.MarshalJSON.
func appendJob(b []byte, j *app.Job) ([]byte, bool) {
	if len(j.Errors) > 0 || len(j.Parents) > 0 || j.DeadLetter != nil || len(j.Events) > 0 {
		return b, false
	}
	ok := true
	str := func(name, s string, omitEmpty bool) {
		if omitEmpty && s == "" {
			return
		}
		b = append(b, name...)
		b, ok = appendPlainString(b, s, ok)
	}
	raw := func(name string, r json.RawMessage) {
		b = append(b, name...)
		if len(r) == 0 {
			b = append(b, "null"...)
			return
		}
		if !plainRaw(r) {
			ok = false
			return
		}
		b = append(b, r...)
	}
	tm := func(name string, t *time.Time, omitNil bool) {
		if t == nil {
			if !omitNil {
				b = append(b, name...)
				b = append(b, "null"...)
			}
			return
		}
		b = append(b, name...)
		b = append(b, '"')
		b = t.UTC().AppendFormat(b, timeLayout)
		b = append(b, '"')
	}
	b = append(b, `{"id":`...)
	b = strconv.AppendInt(b, j.ID, 10)
	str(`,"queue":`, j.Queue, false)
	str(`,"kind":`, j.Kind, false)
	raw(`,"payload":`, j.Payload)
	str(`,"status":`, string(j.Status), false)
	b = append(b, `,"priority":`...)
	b = strconv.AppendInt(b, int64(j.Priority), 10)
	b = append(b, `,"attempts":`...)
	b = strconv.AppendInt(b, int64(j.Attempts), 10)
	b = append(b, `,"max_attempts":`...)
	b = strconv.AppendInt(b, int64(j.MaxAttempts), 10)
	str(`,"timeout":`, j.Timeout.String(), false)
	b = append(b, `,"tags":[`...)
	for i, t := range j.Tags {
		if i > 0 {
			b = append(b, ',')
		}
		b, ok = appendPlainString(b, t, ok)
	}
	b = append(b, ']')
	str(`,"idempotency_key":`, j.IdempotencyKey, true)
	b = append(b, `,"lease":`...)
	b = strconv.AppendInt(b, j.Lease, 10)
	str(`,"worker_id":`, j.WorkerID, true)
	b = append(b, `,"cancel_requested":`...)
	b = strconv.AppendBool(b, j.CancelRequested)
	str(`,"cancel_reason":`, j.CancelReason, true)
	b = append(b, `,"errors":[]`...)
	raw(`,"result":`, j.Result)
	b = append(b, `,"replayed_from":`...)
	if j.ReplayedFrom == nil {
		b = append(b, "null"...)
	} else {
		b = strconv.AppendInt(b, *j.ReplayedFrom, 10)
	}
	if j.WorkflowID != 0 {
		b = append(b, `,"workflow_id":`...)
		b = strconv.AppendInt(b, j.WorkflowID, 10)
	}
	str(`,"step":`, j.Step, true)
	str(`,"key":`, j.Key, true)
	if j.Held {
		b = append(b, `,"waiting_for_key":true`...)
	}
	if j.ProgressPercent != nil {
		b = append(b, `,"progress":`...)
		b = strconv.AppendInt(b, int64(*j.ProgressPercent), 10)
	}
	str(`,"progress_message":`, j.ProgressMessage, true)
	str(`,"callback_url":`, j.CallbackURL, true)
	str(`,"traceparent":`, j.Traceparent, true)
	str(`,"tracestate":`, j.Tracestate, true)
	tm(`,"run_at":`, &j.RunAt, false)
	tm(`,"expires_at":`, j.ExpiresAt, false)
	tm(`,"lease_expires_at":`, j.LeaseExpiresAt, false)
	tm(`,"created_at":`, &j.CreatedAt, false)
	tm(`,"updated_at":`, &j.UpdatedAt, false)
	tm(`,"started_at":`, j.StartedAt, false)
	tm(`,"finished_at":`, j.FinishedAt, false)
	tm(`,"progress_at":`, j.ProgressAt, true)
	return append(b, '}'), ok
}

// appendPlainString appends s quoted when encoding/json would write it
// with no escapes (printable ASCII but ", \, <, > and &); otherwise it
// reports false and the caller's job goes to Job.MarshalJSON.
func appendPlainString(b []byte, s string, ok bool) ([]byte, bool) {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c >= utf8.RuneSelf || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			return b, false
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"'), ok
}

// plainRaw reports whether encoding/json would copy r as it is: no
// whitespace to compact away and nothing to escape (<, >, &, and any
// non-ASCII byte, which covers U+2028 and U+2029). The stores hold valid
// JSON, which is all a json.RawMessage of a job can be.
func plainRaw(r json.RawMessage) bool {
	for _, c := range r {
		if c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '<' || c == '>' || c == '&' || c >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// timeLayout is app's layout of times (app.FormatTime).
const timeLayout = "2006-01-02T15:04:05.000Z07:00"
