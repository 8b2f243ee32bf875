package webhook

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/rs/zerolog"

	"github.com/queuehq/queue/app"
	"github.com/queuehq/queue/worker"
)

// Deliverer sends deliveries: it is the worker.Handler of the jobs of
// kind app.WebhookKind in queue app.WebhookQueue, which app inserts in the
// transaction of the event they tell about. Each run sends one signed
// POST; the job's outcome is the delivery's: completed on a 2xx, failed
// and retried with the queue's backoff on anything else, dead-lettered at
// once when the policy refuses the target.
type Deliverer struct {
	// Service looks up the job an event is about and the secrets.
	Service *app.Service
	// Targets is the policy of the addresses deliveries may reach.
	Targets app.WebhookTargets
	// Timeout of one request. If zero, DefaultTimeout.
	Timeout time.Duration
	// MaxBody is the body size above which the job's payload and result
	// are left out ("truncated": true). If zero, DefaultMaxBody.
	MaxBody int
	// Version is the server's, sent as User-Agent: queue/<Version>.
	Version string
	// Log receives a line per failed delivery (never a secret or a body).
	Log zerolog.Logger
	// Client sends the requests. If nil, NewHTTPClient over Targets.
	Client *http.Client
	// Now is the clock of the signature's timestamp. If nil, time.Now.
	Now func() time.Time
}

// Body is what a delivery POSTs (as JSON): the event, and the job it is
// about as it stands when sent.
type Body struct {
	// ID is the delivery job's id: the same on every retry of a delivery.
	ID    string          `json:"id"`
	Type  string          `json:"type"`
	At    string          `json:"at"`
	Queue *string         `json:"queue"`
	Kind  *string         `json:"kind"`
	JobID *int64          `json:"job_id"`
	Data  json.RawMessage `json:"data"`
	// Job is the job (or its dead-letter form) the event is about, null
	// when the event is about none or the job is gone.
	Job *app.Job `json:"job"`
	// Truncated tells that the body would have exceeded the size cap: the
	// job's payload and result were left out.
	Truncated bool `json:"truncated,omitempty"`
}

// Handler returns d as a worker.Handler.
func (d *Deliverer) Handler() worker.Handler {
	if d.Client == nil {
		d.Client = NewHTTPClient(d.Targets, d.Timeout)
	}
	return d.Deliver
}

// Result is a delivered job's result.
type Result struct {
	Status     int   `json:"status"`
	DurationMS int64 `json:"duration_ms"`
}

// Deliver sends the delivery of job (a worker.Handler: use Handler, which
// sets up the client). Errors say why it failed: "HTTP 503: <the answer's
// first 200 bytes>", the network's error, or a refused target (a
// worker.Permanent error: it dead-letters without retry).
func (d *Deliverer) Deliver(ctx context.Context, job *app.Job) (any, error) {
	var dl app.WebhookDelivery
	if err := json.Unmarshal(job.Payload, &dl); err != nil {
		return nil, worker.Permanent(fmt.Errorf("webhook delivery %d: the payload is not a delivery: %w", job.ID, err))
	}
	target, secret, err := d.target(ctx, dl)
	if err != nil {
		return nil, err
	}
	if err := d.Targets.CheckURL(target); err != nil {
		return nil, worker.Permanent(&RefusedError{Target: target, Err: err})
	}
	body, err := d.body(ctx, job.ID, dl.Event)
	if err != nil {
		return nil, err
	}
	now := time.Now
	if d.Now != nil {
		now = d.Now
	}
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	h.Set("User-Agent", "queue/"+d.version())
	h.Set(HeaderID, strconv.FormatInt(job.ID, 10))
	h.Set(HeaderEvent, dl.Event.Type)
	h.Set(HeaderSignature, Sign(secret, now(), body))
	a, err := post(ctx, d.Client, target, h, body)
	var re *RefusedError
	switch {
	case errors.As(err, &re):
		return nil, worker.Permanent(re)
	case err != nil:
		return nil, fmt.Errorf("POST %s: %w", redactURL(target), unwrapURLError(err))
	case a.Status/100 != 2:
		return nil, fmt.Errorf("HTTP %d: %s", a.Status, snippet(a.Body, 200))
	}
	return Result{Status: a.Status, DurationMS: a.Duration.Milliseconds()}, nil
}

// target is where delivery dl goes and the secret that signs it: a
// subscription's URL and secret as they stand now (the job names only the
// subscription; one deleted since fails for good), or a callback's URL
// (in the job) and the callback secret.
func (d *Deliverer) target(ctx context.Context, dl app.WebhookDelivery) (target, secret string, err error) {
	if dl.Subscription == "" {
		s, err := d.Service.CallbackSecret(ctx)
		if err != nil {
			return "", "", fmt.Errorf("callback secret: %w", err)
		}
		return dl.URL, s, nil
	}
	target, secret, err = d.Service.WebhookTarget(ctx, dl.Subscription)
	if errors.Is(err, app.ErrNotFound) {
		return "", "", worker.Permanent(fmt.Errorf("subscription %q no longer exists", dl.Subscription))
	}
	if err != nil {
		return "", "", fmt.Errorf("target of subscription %q: %w", dl.Subscription, err)
	}
	return target, secret, nil
}

// body is the JSON body of delivery id of ev, within MaxBody where the
// job's payload and result allow.
func (d *Deliverer) body(ctx context.Context, id int64, ev app.Event) ([]byte, error) {
	b := Body{ID: strconv.FormatInt(id, 10), Type: ev.Type, At: app.FormatTime(ev.At), Data: ev.Data}
	if ev.Queue != "" {
		b.Queue = &ev.Queue
	}
	if ev.Kind != "" {
		b.Kind = &ev.Kind
	}
	if ev.JobID != 0 {
		b.JobID = &ev.JobID
		j, err := d.Service.Get(ctx, ev.JobID, 0, false)
		switch {
		case errors.Is(err, app.ErrNotFound): // purged, or gone with its retention: null
		case err != nil:
			return nil, fmt.Errorf("look up job %d: %w", ev.JobID, err)
		default:
			b.Job = j
		}
	}
	out, err := json.Marshal(b)
	if err != nil {
		return nil, fmt.Errorf("webhook body: %w", err)
	}
	if len(out) <= d.maxBody() || b.Job == nil {
		return out, nil
	}
	b.Truncated = true
	b.Job.Payload, b.Job.Result = nil, nil
	if out, err = json.Marshal(b); err != nil {
		return nil, fmt.Errorf("webhook body: %w", err)
	}
	return out, nil
}

func (d *Deliverer) maxBody() int {
	if d.MaxBody > 0 {
		return d.MaxBody
	}
	return DefaultMaxBody
}

func (d *Deliverer) version() string {
	if d.Version == "" {
		return "dev"
	}
	return d.Version
}

// snippet is the first n bytes of b as text, cut at a character boundary.
func snippet(b []byte, n int) string {
	if len(b) > n {
		b = b[:n]
		for len(b) > 0 && !utf8.Valid(b) {
			b = b[:len(b)-1]
		}
	}
	return strings.TrimSpace(strings.ToValidUTF8(string(b), "?"))
}

// unwrapURLError drops net/http's `Post "url": ` prefix: the error names
// the URL once, without its query (it may hold a token).
func unwrapURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// redactURL is u without its query and user info, for errors and logs.
func redactURL(u string) string {
	if i := strings.IndexAny(u, "?#"); i >= 0 {
		u = u[:i]
	}
	if i := strings.Index(u, "://"); i >= 0 {
		if at := strings.LastIndex(u, "@"); at > i {
			u = u[:i+3] + u[at+1:]
		}
	}
	return u
}
