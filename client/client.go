// Package client is the Go package of queue: a Client that submits and
// manages jobs over the HTTP API, and a Worker that runs Go handler
// functions for the jobs of a queue, over HTTP or in the same process.
//
// The job types are those of package app (app.Job, app.SubmitInput, ...),
// so what the server answers is what a Go program gets.
package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/queuehq/queue/app"
	"github.com/queuehq/queue/worker"
)

// Errors the server reports, for errors.Is on what a Client returns.
var (
	ErrNotFound            = app.ErrNotFound
	ErrLeaseLost           = app.ErrLeaseLost
	ErrIllegalTransition   = app.ErrIllegalTransition
	ErrIdempotencyConflict = app.ErrIdempotencyConflict
	ErrQueueFull           = app.ErrQueueFull
	ErrFilterRequired      = app.ErrFilterRequired
	ErrUnavailable         = app.ErrUnavailable
	ErrOnceHeld            = app.ErrOnceHeld
)

// Client talks to a queue server. The zero value is not usable; use New.
type Client struct {
	base  string
	token string
	http  *http.Client
}

// transport keeps connections to the server open for reuse: a worker holds
// long polls while it heartbeats and acknowledges, and Go's default of two
// idle connections per host would open (and leave in TIME_WAIT) a new
// connection for most calls.
var transport = func() *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConns = 256
	t.MaxIdleConnsPerHost = 128
	t.IdleConnTimeout = 90 * time.Second
	return t
}()

// Option configures New.
type Option func(*Client)

// WithToken sends token as a Bearer token with every request.
func WithToken(token string) Option { return func(c *Client) { c.token = token } }

// WithHTTPClient uses hc instead of a client with a 90s timeout (long polls
// last up to 60s).
func WithHTTPClient(hc *http.Client) Option { return func(c *Client) { c.http = hc } }

// New returns a Client for the server at baseURL (e.g. "http://127.0.0.1:8080").
func New(baseURL string, opts ...Option) *Client {
	c := &Client{base: strings.TrimRight(baseURL, "/"), http: &http.Client{Timeout: 90 * time.Second, Transport: transport}}
	for _, o := range opts {
		o(c)
	}
	return c
}

// Error is an error answer of the server.
type Error struct {
	Status  int    `json:"-"`
	Code    string `json:"code"`
	Message string `json:"message"`
	Field   string `json:"field,omitempty"`
	// RetryAfter is the server's Retry-After, if it sent one.
	RetryAfter time.Duration `json:"-"`
}

func (e *Error) Error() string {
	return fmt.Sprintf("%s (%d %s)", e.Message, e.Status, e.Code)
}

// Retryable reports whether the call is worth repeating later: the server
// was unavailable or overloaded (429, 5xx).
func (e *Error) Retryable() bool {
	return e.Status == http.StatusTooManyRequests || e.Status == http.StatusRequestTimeout || e.Status >= 500
}

// Unwrap maps the error code to the sentinel of package app.
func (e *Error) Unwrap() error {
	switch e.Code {
	case "not_found":
		return app.ErrNotFound
	case "lease_lost":
		return app.ErrLeaseLost
	case "illegal_transition":
		return app.ErrIllegalTransition
	case "idempotency_conflict":
		return app.ErrIdempotencyConflict
	case "queue_full":
		return app.ErrQueueFull
	case "filter_required":
		return app.ErrFilterRequired
	case "unavailable":
		return app.ErrUnavailable
	case "once_held":
		return app.ErrOnceHeld
	}
	return nil
}

// do sends a request with a JSON body (if in is not nil) and decodes a
// JSON answer into out (if not nil). It returns the status code.
func (c *Client) do(ctx context.Context, method, path string, in, out any, hdr http.Header) (int, http.Header, error) {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return 0, nil, fmt.Errorf("%s %s: encode: %w", method, path, err)
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, body)
	if err != nil {
		return 0, nil, fmt.Errorf("%s %s: %w", method, path, err)
	}
	for k, v := range hdr {
		req.Header[k] = v
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json")
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return 0, nil, fmt.Errorf("%s %s: %w", method, path, err)
	}
	defer drain(resp.Body)
	if resp.StatusCode >= 400 {
		var eb struct {
			Error *Error `json:"error"`
		}
		raw, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		if json.Unmarshal(raw, &eb) != nil || eb.Error == nil {
			eb.Error = &Error{Code: "http_" + strconv.Itoa(resp.StatusCode), Message: strings.TrimSpace(string(raw))}
			if eb.Error.Message == "" {
				eb.Error.Message = http.StatusText(resp.StatusCode)
			}
		}
		eb.Error.Status = resp.StatusCode
		if ra, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil {
			eb.Error.RetryAfter = time.Duration(ra) * time.Second
		}
		return resp.StatusCode, resp.Header, eb.Error
	}
	if out != nil && resp.StatusCode != http.StatusNoContent {
		if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
			return resp.StatusCode, resp.Header, fmt.Errorf("%s %s: decode answer: %w", method, path, err)
		}
	}
	return resp.StatusCode, resp.Header, nil
}

// drain reads what is left of an answer's body (the newline after its
// JSON, which a json.Decoder stops short of) before closing it: a body
// closed before its end closes the connection with it, and the next call
// opens a new one.
func drain(body io.ReadCloser) {
	io.Copy(io.Discard, io.LimitReader(body, 64<<10))
	body.Close()
}

// Submitted is the answer to a submission.
type Submitted struct {
	Job *app.Job
	// Replayed is true when a job with the same idempotency key existed;
	// nothing new was stored.
	Replayed bool
	// Duplicate is true when the submission's unique, debounce or throttle
	// rule (SubmitInput.Unique, Debounce, Throttle) answered with Job, a
	// job stored before: nothing new was stored (a debounce replaced Job's
	// payload and run_at). See docs/flow-control.md.
	Duplicate bool
}

// submitAnswer is the answer to POST /api/jobs: the job, and
// "duplicate": true when a rule answered with one stored before; one
// decoding pass reads both.
type submitAnswer struct {
	app.Job
	Duplicate bool `json:"duplicate"`
}

// Submit stores one job. With a flow-control Key it is subject to its
// queue's key limits; with Unique, Debounce or Throttle it may answer with
// a job stored before (Submitted.Duplicate) instead of a new one. A job
// without a Traceparent joins the trace of ctx's span, if any (trace.go).
func (c *Client) Submit(ctx context.Context, in app.SubmitInput) (*Submitted, error) {
	var a submitAnswer
	_, hdr, err := c.do(ctx, http.MethodPost, "/api/jobs", traced(ctx, in), &a, nil) // ctx's trace (trace.go)
	if err != nil {
		return nil, err
	}
	return &Submitted{Job: &a.Job, Replayed: hdr.Get("Idempotent-Replayed") == "true", Duplicate: a.Duplicate}, nil
}

// SubmitBatch stores up to 10,000 jobs all or nothing.
func (c *Client) SubmitBatch(ctx context.Context, ins []app.SubmitInput) ([]*app.Job, error) {
	var out struct {
		Jobs []*app.Job `json:"jobs"`
	}
	_, _, err := c.do(ctx, http.MethodPost, "/api/jobs/batch", map[string]any{"jobs": tracedAll(ctx, ins)}, &out, nil)
	return out.Jobs, err
}

// GetOptions tunes Get.
type GetOptions struct {
	// Wait holds the answer until the job is terminal, for up to 60s.
	Wait time.Duration
	// Events includes the job's lifecycle events.
	Events bool
}

// Get returns a job (its dead-letter form if it moved to the DLQ).
func (c *Client) Get(ctx context.Context, id int64, o GetOptions) (*app.Job, error) {
	q := url.Values{}
	if o.Wait > 0 {
		q.Set("wait", o.Wait.String())
	}
	if o.Events {
		q.Set("events", "true")
	}
	var job app.Job
	_, _, err := c.do(ctx, http.MethodGet, "/api/jobs/"+strconv.FormatInt(id, 10)+query(q), nil, &job, nil)
	if err != nil {
		return nil, err
	}
	return &job, nil
}

func query(q url.Values) string {
	if len(q) == 0 {
		return ""
	}
	return "?" + q.Encode()
}

// ListOptions filters List.
type ListOptions struct {
	Queue, Kind, Status, Tag string
	// Key lists the jobs of one flow-control key ("": no filter).
	Key string
	// ReplayedFrom lists the jobs replayed from a dead-letter row; Workflow
	// the jobs of a workflow's released steps (0: no filter).
	ReplayedFrom, Workflow int64
	// Query filters by payload fields, error text and time ranges.
	Query  app.JobQuery
	Limit  int
	Cursor string
	Asc    bool
}

func (o ListOptions) values() url.Values {
	q := o.Query.Values()
	for k, v := range map[string]string{"queue": o.Queue, "kind": o.Kind, "status": o.Status, "tag": o.Tag, "key": o.Key, "cursor": o.Cursor} {
		if v != "" {
			q.Set(k, v)
		}
	}
	for k, v := range map[string]int64{"replayed_from": o.ReplayedFrom, "workflow": o.Workflow} {
		if v > 0 {
			q.Set(k, strconv.FormatInt(v, 10))
		}
	}
	if o.Limit > 0 {
		q.Set("limit", strconv.Itoa(o.Limit))
	}
	if o.Asc {
		q.Set("order", "asc")
	}
	return q
}

// List returns one page of jobs.
func (c *Client) List(ctx context.Context, o ListOptions) (*app.JobPage, error) {
	var page app.JobPage
	_, _, err := c.do(ctx, http.MethodGet, "/api/jobs"+query(o.values()), nil, &page, nil)
	return &page, err
}

// Cancel cancels a queued job, or asks the worker of a processing one to stop.
func (c *Client) Cancel(ctx context.Context, id int64) (*app.Job, error) {
	var job app.Job
	_, _, err := c.do(ctx, http.MethodPost, "/api/jobs/"+strconv.FormatInt(id, 10)+"/cancel", nil, &job, nil)
	if err != nil {
		return nil, err
	}
	return &job, nil
}

// AckCancel ends a processing job whose cancel was requested, as the worker holding lease.
func (c *Client) AckCancel(ctx context.Context, id, lease int64) error {
	_, _, err := c.do(ctx, http.MethodPost, "/api/jobs/"+strconv.FormatInt(id, 10)+"/cancel", map[string]int64{"lease": lease}, nil, nil)
	return err
}

// Claim takes up to in.Limit jobs of queue, waiting up to in.Wait for one.
func (c *Client) Claim(ctx context.Context, queue string, in app.ClaimInput) ([]*app.Job, error) {
	var out struct {
		Jobs []*app.Job `json:"jobs"`
	}
	_, _, err := c.do(ctx, http.MethodPost, "/api/queues/"+url.PathEscape(queue)+"/claim", in, &out, nil)
	return out.Jobs, err
}

// ClaimQueues takes up to in.Limit jobs of the queues in.Queues names
// (POST /api/claim): with weights, each claim draws the queues in
// proportion to them; without, in a strict order, a queue asked only when
// those before it have nothing. It waits up to in.Wait for a job to land
// in any of them. Build in.Queues with app.ParseQueueChoice
// ("critical=6,default=3" or "critical,default") or by hand.
func (c *Client) ClaimQueues(ctx context.Context, in app.ClaimInput) ([]*app.Job, error) {
	if in.Queues == nil {
		return nil, app.Invalid("queues", "name the queues to claim from (ClaimInput.Queues); for one queue, Claim")
	}
	var out struct {
		Jobs []*app.Job `json:"jobs"`
	}
	_, _, err := c.do(ctx, http.MethodPost, "/api/claim", in, &out, nil)
	return out.Jobs, err
}

// Lease is the answer to a heartbeat: when the lease now expires, and
// whether an operator asked to cancel the job.
type Lease = worker.Lease

// Heartbeat extends the lease of a job (by extend, or its timeout if zero).
func (c *Client) Heartbeat(ctx context.Context, id, lease int64, extend time.Duration) (*Lease, error) {
	body := map[string]any{"lease": lease}
	if extend > 0 {
		body["extend"] = extend.String()
	}
	var out Lease
	_, _, err := c.do(ctx, http.MethodPost, "/api/jobs/"+strconv.FormatInt(id, 10)+"/heartbeat", body, &out, nil)
	if err != nil {
		return nil, err
	}
	return &out, nil
}

// Complete marks a job done with result (any JSON value; nil for none).
func (c *Client) Complete(ctx context.Context, id, lease int64, result json.RawMessage) error {
	_, _, err := c.do(ctx, http.MethodPost, "/api/jobs/"+strconv.FormatInt(id, 10)+"/complete",
		map[string]any{"lease": lease, "result": result}, nil, nil)
	return err
}

// CompleteBatch acknowledges many jobs at once; each is fenced on its own,
// and the errors match the items one to one.
func (c *Client) CompleteBatch(ctx context.Context, items []app.Completion) ([]error, error) {
	var out struct {
		Results []struct {
			ID    int64  `json:"id"`
			OK    bool   `json:"ok"`
			Error *Error `json:"error"`
		} `json:"results"`
	}
	if _, _, err := c.do(ctx, http.MethodPost, "/api/jobs/complete", map[string]any{"jobs": items}, &out, nil); err != nil {
		return nil, err
	}
	if len(out.Results) != len(items) {
		return nil, fmt.Errorf("complete batch: %d results for %d items", len(out.Results), len(items))
	}
	errs := make([]error, len(items))
	for i, r := range out.Results {
		if !r.OK && r.Error != nil {
			r.Error.Status = http.StatusConflict
			errs[i] = r.Error
		}
	}
	return errs, nil
}

// FailResult is the answer to Fail: its Outcome ("retry_scheduled",
// "dead_lettered" or "cancelled") and the Job as it is now (its dead-letter
// form when it moved to the DLQ; Dead stays nil over HTTP).
type FailResult = app.FailResult

// Fail reports a failed attempt. retry=false sends the job straight to the
// DLQ; retryIn > 0 replaces the backoff.
func (c *Client) Fail(ctx context.Context, id, lease int64, msg string, retry bool, retryIn time.Duration) (*FailResult, error) {
	body := map[string]any{"lease": lease, "error": msg, "retry": retry}
	if retryIn > 0 {
		body["retry_in"] = retryIn.String()
	}
	var out FailResult
	_, _, err := c.do(ctx, http.MethodPost, "/api/jobs/"+strconv.FormatInt(id, 10)+"/fail", body, &out, nil)
	if err != nil {
		return nil, err
	}
	return &out, nil
}

// Snooze puts a job back for delay without counting the attempt; a zero
// delay gives the lease back (on shutdown).
func (c *Client) Snooze(ctx context.Context, id, lease int64, delay time.Duration) error {
	_, _, err := c.do(ctx, http.MethodPost, "/api/jobs/"+strconv.FormatInt(id, 10)+"/snooze",
		map[string]any{"lease": lease, "delay": delay.String()}, nil, nil)
	return err
}

// DeadListOptions filters ListDead.
type DeadListOptions struct {
	Queue, Kind, Tag, Reason string
	// MovedAfter and MovedBefore bound the time of the move; Replayed, if
	// set, keeps rows replayed at least once (true) or never (false).
	MovedAfter, MovedBefore *time.Time
	Replayed                *bool
	Limit                   int
	Cursor                  string
}

// ListDead returns one page of the dead-letter queue.
func (c *Client) ListDead(ctx context.Context, o DeadListOptions) (*app.DeadPage, error) {
	q := url.Values{}
	for k, v := range map[string]string{"queue": o.Queue, "kind": o.Kind, "tag": o.Tag, "reason": o.Reason, "cursor": o.Cursor} {
		if v != "" {
			q.Set(k, v)
		}
	}
	if o.Limit > 0 {
		q.Set("limit", strconv.Itoa(o.Limit))
	}
	for k, t := range map[string]*time.Time{"moved_after": o.MovedAfter, "moved_before": o.MovedBefore} {
		if t != nil {
			q.Set(k, t.UTC().Format(time.RFC3339Nano))
		}
	}
	if o.Replayed != nil {
		q.Set("replayed", strconv.FormatBool(*o.Replayed))
	}
	var page app.DeadPage
	_, _, err := c.do(ctx, http.MethodGet, "/api/dlq"+query(q), nil, &page, nil)
	return &page, err
}

// GetDead returns one dead-letter row.
func (c *Client) GetDead(ctx context.Context, id int64) (*app.DeadJob, error) {
	var d app.DeadJob
	_, _, err := c.do(ctx, http.MethodGet, "/api/dlq/"+strconv.FormatInt(id, 10), nil, &d, nil)
	if err != nil {
		return nil, err
	}
	return &d, nil
}

// Replay puts a dead-letter row back as a fresh job; the row stays.
func (c *Client) Replay(ctx context.Context, id int64, in app.ReplayInput) (*app.Job, error) {
	var job app.Job
	var hdr http.Header
	if in.IdempotencyKey != "" { // a retry of the request answers with the first one's job
		hdr = http.Header{"Idempotency-Key": {in.IdempotencyKey}}
	}
	_, _, err := c.do(ctx, http.MethodPost, "/api/dlq/"+strconv.FormatInt(id, 10)+"/replay", in, &job, hdr)
	if err != nil {
		return nil, err
	}
	return &job, nil
}

// Purge deletes a dead-letter row.
func (c *Client) Purge(ctx context.Context, id int64) error {
	_, _, err := c.do(ctx, http.MethodDelete, "/api/dlq/"+strconv.FormatInt(id, 10), nil, nil, nil)
	return err
}

// DeadStats counts the dead-letter rows by queue, kind, reason and day.
func (c *Client) DeadStats(ctx context.Context) (*app.DeadStats, error) {
	var st app.DeadStats
	_, _, err := c.do(ctx, http.MethodGet, "/api/dlq/stats", nil, &st, nil)
	return &st, err
}

// Bulk runs a bulk DLQ action: "replay", "purge" or "move" (queued jobs into the DLQ).
func (c *Client) Bulk(ctx context.Context, action string, in app.BulkInput) (*app.BulkResult, error) {
	var out app.BulkResult
	_, _, err := c.do(ctx, http.MethodPost, "/api/dlq/"+url.PathEscape(action), in, &out, nil)
	return &out, err
}

// Queues lists the queues with their config and paused state.
func (c *Client) Queues(ctx context.Context) ([]app.QueueInfo, error) {
	var out struct {
		Queues []app.QueueInfo `json:"queues"`
	}
	_, _, err := c.do(ctx, http.MethodGet, "/api/queues", nil, &out, nil)
	return out.Queues, err
}

// KeyStats is the answer of QueueKeys: a queue's key limits, as its
// config sets them, and what app.KeyStats counts of its keys.
type KeyStats struct {
	Queue  string    `json:"queue"`
	Limits KeyLimits `json:"limits"`
	app.KeyStats
}

// KeyLimits is how a queue limits the jobs of one key (zero: no limit;
// KeyRate "N/period", Fairness "round_robin" or "").
type KeyLimits struct {
	KeyConcurrency int    `json:"key_concurrency"`
	KeyRate        string `json:"key_rate"`
	Fairness       string `json:"fairness"`
}

// QueueKeys reads the keys of queue (GET /api/queues/{queue}/keys): its
// key limits, how many of its jobs wait for their key to have room, the
// keys holding jobs back and the busiest keys, up to limit of each (0: the
// server's default, 20; at most 100).
func (c *Client) QueueKeys(ctx context.Context, queue string, limit int) (*KeyStats, error) {
	q := url.Values{}
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	var out KeyStats
	_, _, err := c.do(ctx, http.MethodGet, "/api/queues/"+url.PathEscape(queue)+"/keys"+query(q), nil, &out, nil)
	if err != nil {
		return nil, err
	}
	return &out, nil
}

// SetPaused pauses or resumes a queue.
func (c *Client) SetPaused(ctx context.Context, queue string, paused bool) error {
	action := "/resume"
	if paused {
		action = "/pause"
	}
	_, _, err := c.do(ctx, http.MethodPost, "/api/queues/"+url.PathEscape(queue)+action, nil, nil, nil)
	return err
}

// Drain cancels every queued job of a queue (dryRun: only counts).
func (c *Client) Drain(ctx context.Context, queue string, dryRun bool) (*app.BulkResult, error) {
	var out app.BulkResult
	_, _, err := c.do(ctx, http.MethodPost, "/api/queues/"+url.PathEscape(queue)+"/drain", map[string]bool{"dry_run": dryRun}, &out, nil)
	return &out, err
}

// Stats is GET /api/stats.
type Stats struct {
	Queues map[string]app.QueueStats `json:"queues"`
	Total  app.QueueStats            `json:"total"`
	At     time.Time                 `json:"at"`
}

// Stats counts jobs per queue and in total.
func (c *Client) Stats(ctx context.Context) (*Stats, error) {
	var out Stats
	_, _, err := c.do(ctx, http.MethodGet, "/api/stats", nil, &out, nil)
	return &out, err
}

// Audit lists admin actions, newest first.
func (c *Client) Audit(ctx context.Context, limit int) ([]app.AuditEntry, error) {
	var out struct {
		Entries []app.AuditEntry `json:"entries"`
	}
	q := url.Values{}
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	_, _, err := c.do(ctx, http.MethodGet, "/api/audit"+query(q), nil, &out, nil)
	return out.Entries, err
}

// Ready reports whether the server answers /readyz.
func (c *Client) Ready(ctx context.Context) error {
	_, _, err := c.do(ctx, http.MethodGet, "/readyz", nil, nil, nil)
	return err
}

// IsRetryable reports whether err is worth retrying later: the server was
// unreachable, unavailable or overloaded.
func IsRetryable(err error) bool {
	var e *Error
	if errors.As(err, &e) {
		return e.Status == http.StatusServiceUnavailable || e.Status == http.StatusTooManyRequests || e.Status >= 500
	}
	return err != nil && !errors.Is(err, context.Canceled)
}
