package app

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Job is one row of the jobs table, in the form the API shows. A job that
// moved to the dead-letter queue is shown with Status StatusDeadLetter and
// DeadLetter set (see DeadJob.AsJob).
type Job struct {
	ID              int64           `json:"id"`
	Queue           string          `json:"queue"`
	Kind            string          `json:"kind"`
	Payload         json.RawMessage `json:"payload"`
	Status          Status          `json:"status"`
	Priority        int             `json:"priority"`
	RunAt           time.Time       `json:"run_at"`
	Attempts        int             `json:"attempts"`
	MaxAttempts     int             `json:"max_attempts"`
	Timeout         Duration        `json:"timeout"`
	ExpiresAt       *time.Time      `json:"expires_at"`
	Tags            []string        `json:"tags"`
	IdempotencyKey  string          `json:"idempotency_key,omitempty"`
	Lease           int64           `json:"lease"`
	LeaseExpiresAt  *time.Time      `json:"lease_expires_at"`
	WorkerID        string          `json:"worker_id,omitempty"`
	CancelRequested bool            `json:"cancel_requested"`
	CancelReason    string          `json:"cancel_reason,omitempty"`
	Errors          []AttemptError  `json:"errors"`
	Result          json.RawMessage `json:"result"`
	ReplayedFrom    *int64          `json:"replayed_from"`
	// WorkflowID and Step name the workflow step the job runs, if any.
	WorkflowID int64  `json:"workflow_id,omitempty"`
	Step       string `json:"step,omitempty"`
	// Key is the job's flow-control key (docs/flow-control.md), if any.
	Key string `json:"key,omitempty"`
	// Held: queued, but held back until its key has room (KeyLimits).
	Held bool `json:"waiting_for_key,omitempty"`
	// Dedupe is the signature a unique, debounce or throttle rule stored
	// the job under (see Dedupe); not shown.
	Dedupe string `json:"-"`
	// Parents are the steps this step depends on, with their results; set
	// in claim answers only.
	Parents    []Parent   `json:"parents,omitempty"`
	CreatedAt  time.Time  `json:"created_at"`
	UpdatedAt  time.Time  `json:"updated_at"`
	StartedAt  *time.Time `json:"started_at"`
	FinishedAt *time.Time `json:"finished_at"`
	// DeadLetter is set only when Status is StatusDeadLetter.
	DeadLetter *DeadLetterInfo `json:"dead_letter,omitempty"`
	// Events is filled only when asked for (GET /api/jobs/{id}?events=true).
	Events []Event `json:"events,omitempty"`
	// ProgressPercent (0-100), ProgressMessage and ProgressAt are what the current
	// attempt last reported (see progress.go); nil and empty when it
	// reported nothing.
	ProgressPercent *int       `json:"progress,omitempty"`
	ProgressMessage string     `json:"progress_message,omitempty"`
	ProgressAt      *time.Time `json:"progress_at,omitempty"`

	// CallbackURL is called when the job ends (docs/integrations.md).
	CallbackURL string `json:"callback_url,omitempty"`
	// Traceparent and Tracestate are the W3C trace context the job was
	// submitted in: its spans and its workers' join that trace.
	Traceparent string `json:"traceparent,omitempty"`
	Tracestate  string `json:"tracestate,omitempty"`
	// reporter carries Progress and Log calls of a handler to the queue
	// (SetReporter); nil outside a worker.
	reporter Reporter
}

// AttemptError records one failed attempt.
type AttemptError struct {
	Attempt int       `json:"attempt"`
	At      time.Time `json:"at"`
	Error   string    `json:"error"`
}

// Scheduled reports whether j is queued but not claimable before a later run_at.
func (j *Job) Scheduled(now time.Time) bool {
	return j.Status == StatusQueued && j.RunAt.After(now)
}

// DeadJob is one row of dead_letter_jobs: everything the job had, plus why
// and when it moved, and how often it was replayed.
type DeadJob struct {
	ID                 int64           `json:"id"`
	Queue              string          `json:"queue"`
	Kind               string          `json:"kind"`
	Payload            json.RawMessage `json:"payload"`
	Priority           int             `json:"priority"`
	Tags               []string        `json:"tags"`
	Attempts           int             `json:"attempts"`
	MaxAttempts        int             `json:"max_attempts"`
	Timeout            Duration        `json:"timeout"`
	Errors             []AttemptError  `json:"errors"`
	IdempotencyKey     string          `json:"idempotency_key,omitempty"`
	OriginalCreatedAt  time.Time       `json:"original_created_at"`
	ReplayedFrom       *int64          `json:"replayed_from"`
	Reason             string          `json:"dead_letter_reason"`
	LastError          string          `json:"last_error"`
	MovedAt            time.Time       `json:"moved_to_dead_letter_at"`
	OriginalLease      int64           `json:"original_lease"`
	ResurrectionCount  int             `json:"resurrection_count"`
	LastResurrectionAt *time.Time      `json:"last_resurrection_at"`
	// The failed attempt, as the job row had it: when it started, when the
	// job was due, and the worker that held it.
	StartedAt *time.Time `json:"started_at"`
	RunAt     *time.Time `json:"run_at"`
	WorkerID  string     `json:"worker_id"`
	// Note is an operator's reason for an admin move.
	Note string `json:"note"`
	// ReplayedJobID is the last job a replay made from this row; the
	// idempotency key, if any, went with it.
	ReplayedJobID *int64 `json:"replayed_job_id"`
	// WorkflowID and Step name the workflow step the job ran, if any: a
	// replay runs the step again.
	WorkflowID int64  `json:"workflow_id,omitempty"`
	Step       string `json:"step,omitempty"`
	// Key is the job's flow-control key: a replay keeps it.
	Key string `json:"key,omitempty"`
	// CallbackURL, Traceparent and Tracestate are the job's: a replay keeps them.
	CallbackURL string `json:"callback_url,omitempty"`
	Traceparent string `json:"traceparent,omitempty"`
	Tracestate  string `json:"tracestate,omitempty"`
}

// DeadLetterInfo is the dead_letter object of a job shown through GET /api/jobs/{id}.
type DeadLetterInfo struct {
	Reason             string     `json:"dead_letter_reason"`
	LastError          string     `json:"last_error"`
	MovedAt            time.Time  `json:"moved_to_dead_letter_at"`
	OriginalLease      int64      `json:"original_lease"`
	OriginalCreatedAt  time.Time  `json:"original_created_at"`
	ResurrectionCount  int        `json:"resurrection_count"`
	LastResurrectionAt *time.Time `json:"last_resurrection_at"`
	Note               string     `json:"note"`
	ReplayedJobID      *int64     `json:"replayed_job_id"`
}

// AsJob shows d as the job it was, with status dead_letter.
func (d *DeadJob) AsJob() *Job {
	return &Job{
		ID: d.ID, Queue: d.Queue, Kind: d.Kind, Payload: d.Payload,
		Status: StatusDeadLetter, Priority: d.Priority, RunAt: d.OriginalCreatedAt,
		Attempts: d.Attempts, MaxAttempts: d.MaxAttempts, Timeout: d.Timeout,
		Tags: d.Tags, IdempotencyKey: d.IdempotencyKey, Lease: d.OriginalLease,
		Errors: d.Errors, ReplayedFrom: d.ReplayedFrom, WorkerID: d.WorkerID, StartedAt: d.StartedAt,
		WorkflowID: d.WorkflowID, Step: d.Step, Key: d.Key,
		CallbackURL: d.CallbackURL, Traceparent: d.Traceparent, Tracestate: d.Tracestate,
		CreatedAt: d.OriginalCreatedAt, UpdatedAt: d.MovedAt, FinishedAt: &d.MovedAt,
		DeadLetter: &DeadLetterInfo{
			Reason: d.Reason, LastError: d.LastError, MovedAt: d.MovedAt,
			OriginalLease: d.OriginalLease, OriginalCreatedAt: d.OriginalCreatedAt,
			ResurrectionCount: d.ResurrectionCount, LastResurrectionAt: d.LastResurrectionAt,
			Note: d.Note, ReplayedJobID: d.ReplayedJobID,
		},
	}
}

// NewJob is a validated submission with every default filled in
// (see Service.Submit); stores insert it as is.
type NewJob struct {
	Queue          string
	Kind           string
	Payload        json.RawMessage
	Priority       int
	RunAt          time.Time
	MaxAttempts    int
	Timeout        time.Duration
	ExpiresAt      *time.Time
	Tags           []string
	IdempotencyKey string
	ReplayedFrom   *int64
	// WorkflowID and Step: the job runs this workflow step (0, "": none).
	WorkflowID int64
	Step       string
	// Key is the job's flow-control key ("": none); Held, set by the
	// rules (see insert), stores the job held back for its key.
	Key  string
	Held bool
	// Unique, Debounce and Throttle are the submission's dedupe rule, at
	// most one (see Dedupe); Submit sets Dedupe, the signature stored.
	Unique   *UniqueRule
	Debounce time.Duration
	Throttle time.Duration
	Dedupe   string
	// CallbackURL, Traceparent and Tracestate: see Job.
	CallbackURL string
	Traceparent string
	Tracestate  string
}

// Submitted is a store's answer for one NewJob: the stored job, and whether
// it already existed under the same idempotency key (nothing was inserted).
type Submitted struct {
	Job      *Job
	Existing bool
	// Duplicate: a unique, debounce or throttle rule answered with Job, a
	// job stored before (a debounce changed its payload and run_at).
	Duplicate bool
}

// Duration is a time.Duration that JSON shows as a duration string in the
// API's form (see FormatDuration: "30s", "5m", "30d") and reads from such a
// string or from a number of seconds.
type Duration time.Duration

// D returns d as a time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

// String writes d as FormatDuration does.
func (d Duration) String() string { return FormatDuration(time.Duration(d)) }

// MarshalJSON writes d as a duration string.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(d.String()) }

// MarshalText writes d as a duration string (the config file's form).
func (d Duration) MarshalText() ([]byte, error) { return []byte(d.String()), nil }

// FormatDuration writes d as every answer of the API does, in a form
// ParseDuration reads back: whole days as days ("30d", "7d"), anything else
// as Go writes it without trailing zero units ("5m" for 5m0s, "1h30m",
// "36h", "1.5s", "250ms", "0s").
func FormatDuration(d time.Duration) string {
	const day = 24 * time.Hour
	if d != 0 && d%day == 0 {
		return strconv.FormatInt(int64(d/day), 10) + "d"
	}
	s := d.String()
	if strings.HasSuffix(s, "m0s") { // 5m0s, 1h30m0s, 1h0m0s
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") { // 1h0m
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// UnmarshalText reads a duration as ParseDuration does ("30s", "7d"): the
// config file's form.
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := ParseDuration(string(b))
	if err != nil {
		return err
	}
	*d = Duration(v)
	return nil
}

// UnmarshalJSON reads "1m30s", "90s", "7d" or a number of seconds (90,
// 1.5). What it cannot read is a *json.UnmarshalTypeError, so that the
// decoder names the field it was given for ("wait", "jobs[0].delay").
func (d *Duration) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	bad := func(what string) error {
		return &json.UnmarshalTypeError{Value: what, Type: reflect.TypeFor[Duration]()}
	}
	if len(b) > 0 && b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		v, err := ParseDuration(s)
		if err != nil {
			return bad("string " + strconv.Quote(TruncateString(s, 40)))
		}
		*d = Duration(v)
		return nil
	}
	var secs float64
	if err := json.Unmarshal(b, &secs); err != nil {
		return bad(jsonKind(b))
	}
	if secs > float64(1<<62)/1e9 || secs < -float64(1<<62)/1e9 {
		return bad("number " + TruncateString(string(b), 40) + " (out of range)")
	}
	*d = Duration(secs * float64(time.Second))
	return nil
}

// jsonKind names the kind of the JSON value b for an error message.
func jsonKind(b []byte) string {
	switch {
	case len(b) == 0:
		return "nothing"
	case b[0] == '{':
		return "object"
	case b[0] == '[':
		return "array"
	case b[0] == 't' || b[0] == 'f':
		return "bool"
	case b[0] == 'n':
		return "null"
	}
	return "value " + TruncateString(string(b), 40)
}

// ParseDuration reads a Go duration ("1h30m", "250ms"), a plain number of
// seconds ("90"), or days ("7d", "30d"), since retention windows are often days.
func ParseDuration(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, fmt.Errorf("empty duration")
	}
	if n, err := strconv.ParseFloat(s, 64); err == nil {
		if n > float64(1<<62)/1e9 || n < -float64(1<<62)/1e9 {
			return 0, fmt.Errorf("duration %q out of range", s)
		}
		return time.Duration(n * float64(time.Second)), nil
	}
	if strings.HasSuffix(s, "d") {
		n, err := strconv.ParseFloat(strings.TrimSuffix(s, "d"), 64)
		if err != nil || n > 100000 || n < -100000 {
			return 0, fmt.Errorf("invalid duration %q (want e.g. \"30s\", \"5m\", \"7d\")", s)
		}
		return time.Duration(n * 24 * float64(time.Hour)), nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("invalid duration %q (want e.g. \"30s\", \"5m\", \"7d\")", s)
	}
	return d, nil
}

// timeLayout is how the API writes times: RFC 3339, UTC, always with milliseconds.
const timeLayout = "2006-01-02T15:04:05.000Z07:00"

// FormatTime writes t as the API does.
func FormatTime(t time.Time) string { return t.UTC().Format(timeLayout) }

// MarshalJSON writes times with fixed milliseconds in UTC and never null
// slices, so scripts can rely on the shape.
func (j Job) MarshalJSON() ([]byte, error) {
	type plain Job
	w := struct {
		plain
		RunAt          string  `json:"run_at"`
		ExpiresAt      *string `json:"expires_at"`
		LeaseExpiresAt *string `json:"lease_expires_at"`
		CreatedAt      string  `json:"created_at"`
		UpdatedAt      string  `json:"updated_at"`
		StartedAt      *string `json:"started_at"`
		FinishedAt     *string `json:"finished_at"`
		ProgressAt     *string `json:"progress_at,omitempty"`
	}{
		plain: plain(j), RunAt: FormatTime(j.RunAt), ExpiresAt: fmtPtr(j.ExpiresAt),
		LeaseExpiresAt: fmtPtr(j.LeaseExpiresAt), CreatedAt: FormatTime(j.CreatedAt),
		UpdatedAt: FormatTime(j.UpdatedAt), StartedAt: fmtPtr(j.StartedAt), FinishedAt: fmtPtr(j.FinishedAt),
		ProgressAt: fmtPtr(j.ProgressAt),
	}
	fillJSONDefaults(&w.plain.Payload, &w.plain.Tags, &w.plain.Errors)
	if w.plain.Result == nil {
		w.plain.Result = json.RawMessage("null")
	}
	return json.Marshal(w)
}

// MarshalJSON writes d like Job.MarshalJSON does.
func (d DeadJob) MarshalJSON() ([]byte, error) {
	type plain DeadJob
	w := struct {
		plain
		Status             Status  `json:"status"`
		OriginalCreatedAt  string  `json:"original_created_at"`
		MovedAt            string  `json:"moved_to_dead_letter_at"`
		LastResurrectionAt *string `json:"last_resurrection_at"`
		StartedAt          *string `json:"started_at"`
		RunAt              *string `json:"run_at"`
	}{
		plain: plain(d), Status: StatusDeadLetter, OriginalCreatedAt: FormatTime(d.OriginalCreatedAt),
		MovedAt: FormatTime(d.MovedAt), LastResurrectionAt: fmtPtr(d.LastResurrectionAt),
		StartedAt: fmtPtr(d.StartedAt), RunAt: fmtPtr(d.RunAt),
	}
	fillJSONDefaults(&w.plain.Payload, &w.plain.Tags, &w.plain.Errors)
	return json.Marshal(w)
}

// MarshalJSON writes At like the other times.
func (e AttemptError) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Attempt int    `json:"attempt"`
		At      string `json:"at"`
		Error   string `json:"error"`
	}{e.Attempt, FormatTime(e.At), e.Error})
}

// MarshalJSON writes the times like the other times.
func (d DeadLetterInfo) MarshalJSON() ([]byte, error) {
	type plain DeadLetterInfo
	return json.Marshal(struct {
		plain
		MovedAt            string  `json:"moved_to_dead_letter_at"`
		OriginalCreatedAt  string  `json:"original_created_at"`
		LastResurrectionAt *string `json:"last_resurrection_at"`
	}{plain(d), FormatTime(d.MovedAt), FormatTime(d.OriginalCreatedAt), fmtPtr(d.LastResurrectionAt)})
}

func fillJSONDefaults(payload *json.RawMessage, tags *[]string, errs *[]AttemptError) {
	if len(*payload) == 0 {
		*payload = json.RawMessage("null")
	}
	if *tags == nil {
		*tags = []string{}
	}
	if *errs == nil {
		*errs = []AttemptError{}
	}
}

func fmtPtr(t *time.Time) *string {
	if t == nil {
		return nil
	}
	s := FormatTime(*t)
	return &s
}

// EncodeList is a list (tags, attempt errors) as the SQL stores keep it in
// a text column: JSON, "[]" when empty.
func EncodeList[T any](v []T) string {
	if len(v) == 0 {
		return "[]"
	}
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // tags and attempt errors always marshal
	}
	return string(b)
}

// DecodeList reads EncodeList's text into out ("", "[]" and "null" are nil).
func DecodeList[T any](s string, out *[]T) error {
	if s == "" || s == "[]" || s == "null" {
		*out = nil
		return nil
	}
	return json.Unmarshal([]byte(s), out)
}

// Clone is a deep copy of j: nothing of it is shared.
func (j *Job) Clone() *Job {
	c := *j
	c.Payload, c.Result = slices.Clone(j.Payload), slices.Clone(j.Result)
	c.Tags, c.Errors = slices.Clone(j.Tags), slices.Clone(j.Errors)
	c.ExpiresAt, c.LeaseExpiresAt = clonePtr(j.ExpiresAt), clonePtr(j.LeaseExpiresAt)
	c.StartedAt, c.FinishedAt, c.ReplayedFrom = clonePtr(j.StartedAt), clonePtr(j.FinishedAt), clonePtr(j.ReplayedFrom)
	c.Parents = slices.Clone(j.Parents)
	c.ProgressPercent, c.ProgressAt = clonePtr(j.ProgressPercent), clonePtr(j.ProgressAt)
	return &c
}

// Clone is a deep copy of d: nothing of it is shared.
func (d *DeadJob) Clone() *DeadJob {
	c := *d
	c.Payload, c.Tags, c.Errors = slices.Clone(d.Payload), slices.Clone(d.Tags), slices.Clone(d.Errors)
	c.LastResurrectionAt, c.ReplayedFrom = clonePtr(d.LastResurrectionAt), clonePtr(d.ReplayedFrom)
	c.StartedAt, c.RunAt, c.ReplayedJobID = clonePtr(d.StartedAt), clonePtr(d.RunAt), clonePtr(d.ReplayedJobID)
	return &c
}

// Clone is a deep copy of w: nothing of it is shared.
func (w *Workflow) Clone() *Workflow {
	c := *w
	c.Tags, c.FinishedAt = slices.Clone(w.Tags), clonePtr(w.FinishedAt)
	return &c
}

// Clone is a deep copy of s (its job's too): nothing of it is shared.
func (s *WorkflowStep) Clone() *WorkflowStep {
	c := *s
	c.DependsOn, c.Result = slices.Clone(s.DependsOn), slices.Clone(s.Result)
	c.ReleasedAt, c.FinishedAt, c.StartedAt = clonePtr(s.ReleasedAt), clonePtr(s.FinishedAt), clonePtr(s.StartedAt)
	c.Job.Payload, c.Job.Tags = slices.Clone(s.Job.Payload), slices.Clone(s.Job.Tags)
	c.Job.RunAt, c.Job.ExpiresAt = clonePtr(s.Job.RunAt), clonePtr(s.Job.ExpiresAt)
	return &c
}

func clonePtr[T any](p *T) *T {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}

// Row is the job nj's insert makes at now (all but its ID), as a read
// gives it back: due now unless RunAt is set, a JSON null payload if it has
// none, times at the stores' millisecond precision.
func (nj *NewJob) Row(now time.Time) *Job {
	ms := func(t time.Time) time.Time { return t.UTC().Truncate(time.Millisecond) }
	runAt := nj.RunAt
	if runAt.IsZero() {
		runAt = now
	}
	payload := nj.Payload
	if len(payload) == 0 {
		payload = json.RawMessage("null")
	}
	j := &Job{
		Queue: nj.Queue, Kind: nj.Kind, Payload: payload, Status: StatusQueued, Priority: nj.Priority,
		RunAt: ms(runAt), MaxAttempts: nj.MaxAttempts, Timeout: Duration(nj.Timeout.Truncate(time.Millisecond)),
		Tags: nj.Tags, IdempotencyKey: nj.IdempotencyKey, ReplayedFrom: nj.ReplayedFrom, CreatedAt: now, UpdatedAt: now,
		WorkflowID: nj.WorkflowID, Step: nj.Step, Key: nj.Key, Held: nj.Held, Dedupe: nj.Dedupe,
		CallbackURL: nj.CallbackURL, Traceparent: nj.Traceparent, Tracestate: nj.Tracestate,
	}
	if nj.ExpiresAt != nil {
		at := ms(*nj.ExpiresAt)
		j.ExpiresAt = &at
	}
	return j
}
