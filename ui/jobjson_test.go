package ui

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/queuehq/queue/app"
)

// fullJob has every field of app.Job set that jobJSON writes itself; a
// field added to app.Job fails TestJobJSON until jobJSON writes it (or
// hands such jobs to Job.MarshalJSON) and this job sets it.
func fullJob() app.Job {
	t := time.Date(2026, 12, 2, 8, 30, 15, 123456789, time.FixedZone("x", 3600))
	t2, t3, t4, t5, t6 := t.Add(time.Second), t.Add(2*time.Second), t.Add(3*time.Second), t.Add(4*time.Second), t.Add(5*time.Second)
	from, pct := int64(7), 42
	return app.Job{
		ID: 12345, Queue: "emails", Kind: "email.send", Payload: json.RawMessage(`{"to":"a@b.c","n":[1,2]}`),
		Status: app.StatusProcessing, Priority: -5, RunAt: t, Attempts: 2, MaxAttempts: 25,
		Timeout: app.Duration(90 * time.Second), ExpiresAt: &t2, Tags: []string{"a", "b"}, IdempotencyKey: "idem-1",
		Lease: 99, LeaseExpiresAt: &t3, WorkerID: "host:1", CancelRequested: true, CancelReason: "operator",
		Result: json.RawMessage(`{"ok":true}`), ReplayedFrom: &from, WorkflowID: 3, Step: "build", Key: "customer-9",
		Held: true, Dedupe: "sig", CreatedAt: t, UpdatedAt: t4, StartedAt: &t5, FinishedAt: &t6,
		ProgressPercent: &pct, ProgressMessage: "half", ProgressAt: &t2, CallbackURL: "https://example.com/cb",
		Traceparent: "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", Tracestate: "k=v",
	}
}

// slowOnly are the fields whose jobs jobJSON hands to Job.MarshalJSON, and
// Dedupe, which no JSON shows.
var slowOnly = map[string]bool{"Errors": true, "Parents": true, "DeadLetter": true, "Events": true, "Dedupe": false}

func TestJobJSON(t *testing.T) {
	full := fullJob()
	v := reflect.ValueOf(full)
	for i := range v.NumField() {
		f := v.Type().Field(i)
		if f.IsExported() && v.Field(i).IsZero() && !slowOnly[f.Name] && f.Name != "Dedupe" {
			t.Errorf("fullJob leaves %s zero: set it, and make jobJSON write it as Job.MarshalJSON does", f.Name)
		}
	}
	same := func(name string, j app.Job) {
		t.Helper()
		want, werr := j.MarshalJSON()
		got, gerr := jobJSON(&j)
		if string(got) != string(want) || (werr == nil) != (gerr == nil) {
			t.Errorf("%s:\n got %s (%v)\nwant %s (%v)", name, got, gerr, want, werr)
		}
	}
	if _, ok := appendJob(nil, &full); !ok {
		t.Fatal("fullJob goes to Job.MarshalJSON: the test would hold nothing")
	}
	same("full", full)
	same("zero", app.Job{})
	// Each field alone at its zero value (omitempty, null, [] and "null").
	for i := range v.NumField() {
		if !v.Type().Field(i).IsExported() {
			continue
		}
		j := fullJob()
		reflect.ValueOf(&j).Elem().Field(i).SetZero()
		same("without "+v.Type().Field(i).Name, j)
	}
	// What has to be escaped or compacted goes the slow way, with the same answer.
	for name, edit := range map[string]func(*app.Job){
		"html in kind":        func(j *app.Job) { j.Kind = "a<b>&c" },
		"quote in tag":        func(j *app.Job) { j.Tags = []string{`x"y`, `back\slash`} },
		"unicode key":         func(j *app.Job) { j.Key = "kunde-ø\u2028" },
		"control in reason":   func(j *app.Job) { j.CancelReason = "line\nbreak\t" },
		"spaced payload":      func(j *app.Job) { j.Payload = json.RawMessage("{ \"a\" : [1, 2],\n\"b\":\"c d\" }") },
		"html in payload":     func(j *app.Job) { j.Payload = json.RawMessage(`{"h":"<script>&"}`) },
		"unicode payload":     func(j *app.Job) { j.Payload = json.RawMessage(`{"h":"ø\u2028"}`) },
		"string result":       func(j *app.Job) { j.Result = json.RawMessage(`"done"`) },
		"invalid result":      func(j *app.Job) { j.Result = json.RawMessage(`{"a" 1}`) },
		"errors":              func(j *app.Job) { j.Errors = []app.AttemptError{{Attempt: 1, At: j.RunAt, Error: "boom"}} },
		"events":              func(j *app.Job) { j.Events = []app.Event{{Type: "submitted", At: j.RunAt}} },
		"dead letter":         func(j *app.Job) { j.DeadLetter = &app.DeadLetterInfo{Reason: "max_attempts"} },
		"empty tags not nil":  func(j *app.Job) { j.Tags = []string{} },
		"negative progress":   func(j *app.Job) { p := -1; j.ProgressPercent = &p },
		"sub-ms time":         func(j *app.Job) { j.RunAt = time.Unix(0, 999999).UTC() },
		"fractional timeout":  func(j *app.Job) { j.Timeout = app.Duration(1500 * time.Millisecond) },
		"uncompacted number":  func(j *app.Job) { j.Payload = json.RawMessage(`1.50e+3`) },
		"parents":             func(j *app.Job) { j.Parents = []app.Parent{{}} },
		"empty payload bytes": func(j *app.Job) { j.Payload = json.RawMessage{} },
	} {
		j := fullJob()
		edit(&j)
		same(name, j)
	}
}

func TestClaimAnswerJSON(t *testing.T) {
	a, b := fullJob(), fullJob()
	b.Errors = []app.AttemptError{{Attempt: 1, At: b.RunAt, Error: "boom <x>"}}
	jobs := []*app.Job{&a, &b}
	for _, cmd := range []string{"", "stop", "<&>"} {
		want := map[string]any{"jobs": jobs}
		if cmd != "" {
			want["command"] = cmd
		}
		wb, err := json.Marshal(want)
		if err != nil {
			t.Fatal(err)
		}
		gb, err := claimAnswer{jobs: jobs, command: cmd}.MarshalJSON()
		if err != nil || string(gb) != string(wb) {
			t.Errorf("command %q:\n got %s (%v)\nwant %s", cmd, gb, err, wb)
		}
	}
	gb, _ := claimAnswer{}.MarshalJSON()
	wb, _ := json.Marshal(map[string]any{"jobs": []*app.Job{}})
	if string(gb) != string(wb) {
		t.Errorf("no jobs: got %s, want %s", gb, wb)
	}
	cb, _ := completedAnswer{5}.MarshalJSON()
	wb, _ = json.Marshal(map[string]any{"id": 5, "status": app.StatusDone})
	if string(cb) != string(wb) {
		t.Errorf("completed: got %s, want %s", cb, wb)
	}
}

func TestBatchAnswerJSON(t *testing.T) {
	a, b := fullJob(), fullJob()
	b.Kind = "html <&>"
	res := []app.Submitted{{Job: &a}, {Job: &b, Duplicate: true}}
	subs := make([]submitted, len(res))
	for i, r := range res {
		subs[i] = submitted(r)
	}
	for _, in := range [][]app.Submitted{res, {}} {
		want, err := json.Marshal(map[string]any{"jobs": subs[:len(in)]})
		if err != nil {
			t.Fatal(err)
		}
		got, err := batchAnswer(in).MarshalJSON()
		if err != nil || string(got) != string(want) {
			t.Errorf("got %s (%v)\nwant %s", got, err, want)
		}
	}
}
