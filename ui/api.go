// Package ui serves the HTTP API (JSON under /api/), the health and metrics
// endpoints, and the web pages. Handlers decode and answer; what a request
// means is decided by app.Service. ui.New returns the http.Handler.
package ui

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/rs/zerolog"

	"github.com/queuehq/queue/app"
)

// Options configures New.
type Options struct {
	Service *app.Service
	Log     zerolog.Logger
	// Tokens, if any, are required on every /api/ route and page.
	Tokens []Token
	// PrivateHealth puts /healthz and /readyz behind the tokens too, when
	// tokens are set; by default they answer anyone (they reveal nothing:
	// no version, no counts), as load balancers and probes expect.
	PrivateHealth bool
	// PublicMetrics leaves /metrics open when tokens are set.
	PublicMetrics bool
	// MaxBodyBytes caps request bodies (batch submissions); default 64 MiB.
	MaxBodyBytes int64
	// Metrics serves /metrics; nil: 404.
	Metrics http.Handler
	// Scheduler shows periodic jobs on the queues page and API; may be nil.
	Scheduler *app.Scheduler
	// Version is shown by the UI and /healthz.
	Version string
	// Now is the wall clock of the pages (relative times); default time.Now.
	Now func() time.Time
	// ListenAddr is the address the server listens on; its host is one of
	// the Host names requests may carry.
	ListenAddr string
	// AllowedHosts are further Host names requests may carry (config
	// allowed_hosts); "*" turns the Host check off.
	AllowedHosts []string
	// TrustedProxies are the peers whose X-Forwarded-For names the client
	// (addresses or CIDR ranges); empty: the direct peer is the client.
	TrustedProxies []string
	// MaxStreams caps open event streams; default 256.
	MaxStreams int
	// AuthFailLimit is how many refused credentials an address may send in
	// a minute before it is answered 429 until the minute is over; default
	// 20, negative: no limit.
	AuthFailLimit int
	// AuthFailed, if set, counts a refused credential: reason "login" (the
	// UI's login form) or "token" (a 401).
	AuthFailed func(reason string)
}

// Body limits: a single job's payload may be 1 MiB, so its request may be a
// little more; batches may be large.
const (
	smallBody          = 2<<20 + 64<<10
	defaultMaxBodySize = 64 << 20
)

type handler struct {
	svc      *app.Service
	log      zerolog.Logger
	opts     Options
	pages    *pages
	hosts    *hosts
	sessions *sessions
	failures failures
	deniedMu sync.Mutex
	denied   map[string]time.Time // token name -> last denial audited
	streams  streamCount          // open event streams (sse.go)
}

// New returns the HTTP handler of the API and the pages.
func New(opts Options) http.Handler {
	if opts.MaxBodyBytes <= 0 {
		opts.MaxBodyBytes = defaultMaxBodySize
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	h := &handler{svc: opts.Service, log: opts.Log, opts: opts,
		hosts: newHosts(opts.ListenAddr, opts.AllowedHosts), sessions: newSessions(opts.Tokens, sessionMaxAge),
		failures: failures{limit: opts.AuthFailLimit}}
	e := echo.New()
	e.HideBanner, e.HidePort = true, true
	e.HTTPErrorHandler = h.errorHandler
	e.JSONSerializer = jsonSerializer{}
	e.IPExtractor = ipExtractor(opts.TrustedProxies)
	e.Use(h.recoverer, h.secure, h.browserGuard, h.auth, h.checkQuery)
	h.routes(e)
	h.pages = newPages(h, e)
	return e
}

// jsonSerializer writes answers as echo's default does (encoding/json,
// HTML-escaped, a newline after), but writes the answers of the hot routes
// (a job; a claim's jobs) straight from their MarshalJSON: encoding/json
// would re-read and compact what MarshalJSON made, which is already
// compact and escaped since it comes from json.Marshal, and that second
// pass was a tenth of a submit's server time.
type jsonSerializer struct{ echo.DefaultJSONSerializer }

// Serialize implements echo.JSONSerializer.
func (s jsonSerializer) Serialize(c echo.Context, v any, indent string) error {
	var m json.Marshaler
	switch v := v.(type) {
	case *app.Job:
		if v != nil {
			m = (*fastJob)(v)
		}
	case app.Job:
		m = (*fastJob)(&v)
	case submitted, claimAnswer, completedAnswer, batchAnswer:
		m = v.(json.Marshaler)
	}
	if m == nil || indent != "" {
		return s.DefaultJSONSerializer.Serialize(c, v, indent)
	}
	b, err := m.MarshalJSON()
	if err != nil {
		return err
	}
	_, err = c.Response().Write(append(b, '\n'))
	return err
}

// fastJob is a job written by jobJSON.
type fastJob app.Job

// MarshalJSON writes the job as app.Job.MarshalJSON does.
func (j *fastJob) MarshalJSON() ([]byte, error) { return jobJSON((*app.Job)(j)) }

// Route is one registered route, for tests that walk them all.
type Route struct{ Method, Path string }

// Routes lists the routes of a handler made by New.
func Routes(hh http.Handler) []Route {
	e, ok := hh.(*echo.Echo)
	if !ok {
		return nil
	}
	var out []Route
	for _, r := range e.Routes() {
		out = append(out, Route{r.Method, r.Path})
	}
	return out
}

func (h *handler) routes(e *echo.Echo) {
	e.GET("/healthz", h.healthz)
	e.HEAD("/healthz", h.healthz)
	e.GET("/readyz", h.readyz)
	e.HEAD("/readyz", h.readyz)
	if h.opts.Metrics != nil {
		e.GET("/metrics", everyQueue(echo.WrapHandler(h.opts.Metrics)))
	}
	api := e.Group("/api")
	api.POST("/jobs", h.submit)
	api.POST("/jobs/batch", h.submitBatch)
	api.GET("/jobs", scopedQueueParam(h.listJobs))
	api.POST("/jobs/complete", h.completeBatch)
	api.GET("/jobs/:id", h.getJob)
	api.GET("/jobs/:id/events", h.jobEvents)
	api.POST("/jobs/:id/cancel", h.cancel)
	api.POST("/jobs/:id/heartbeat", h.heartbeat)
	api.POST("/jobs/:id/complete", h.complete)
	api.POST("/jobs/:id/fail", h.fail)
	api.POST("/jobs/:id/snooze", h.snooze)
	api.POST("/queues/:queue/claim", h.claim)
	api.POST("/claim", h.claimQueues)
	api.GET("/queues/:queue/keys", h.queueKeys)
	api.GET("/queues", h.queues)
	api.POST("/queues/:queue/pause", h.pause)
	api.POST("/queues/:queue/resume", h.resume)
	api.POST("/queues/:queue/drain", h.drain)
	api.GET("/dlq", scopedQueueParam(h.listDead))
	api.GET("/dlq/stats", h.deadStats)
	api.GET("/dlq/:id", h.getDead)
	api.POST("/dlq/:id/replay", h.replay)
	api.DELETE("/dlq/:id", h.purge)
	api.POST("/dlq/replay", h.bulk(app.BulkReplay))
	api.POST("/dlq/purge", h.bulk(app.BulkPurge))
	api.POST("/dlq/move", h.bulk(app.BulkMove))
	api.GET("/stats", h.stats)
	api.GET("/events", scopedQueueParam(h.events))
	api.GET("/audit", everyQueue(h.audit))
	api.POST("/workflows", h.submitWorkflow)
	api.GET("/workflows", everyQueue(h.listWorkflows))
	api.GET("/workflows/:id", everyQueue(h.getWorkflow))
	api.POST("/workflows/:id/cancel", everyQueue(h.cancelWorkflow))
	api.GET("/periodic", h.periodic)
	api.POST("/once/:key", h.onceAcquire)
	api.POST("/once/:key/done", h.onceDone)
	// Live operations (issue 26), one file each.
	h.progressRoutes(api)
	h.workerRoutes(api)
	h.settingsRoutes(api)
	h.liveJobRoutes(api)
	h.chartRoutes(api)
	// The UI's search suggestions (issue 28).
	h.suggestRoutes(api)
	// Integrations (issue 27), one file each.
	h.webhookRoutes(api)
	h.openapiRoutes(api)
}

// bind decodes the JSON body into v: strict (unknown fields are errors),
// one value, within limit bytes. An empty body is fine when optional.
func bind(c echo.Context, v any, limit int64, optional bool) error {
	r := c.Request()
	if r.ContentLength > limit {
		return newError(http.StatusRequestEntityTooLarge, "too_large", "request body is %d bytes; the limit is %d", r.ContentLength, limit)
	}
	if r.ContentLength == 0 && optional {
		return nil
	}
	// The Content-Type was checked before any handler (browserGuard, jsonBody).
	body := http.MaxBytesReader(c.Response(), r.Body, limit)
	raw, err := readBody(body, r.ContentLength)
	if err != nil {
		return decodeError(err)
	}
	if len(bytes.TrimSpace(raw)) == 0 {
		if optional {
			return nil
		}
		return decodeError(io.EOF)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return decodeError(err)
	}
	if dec.More() {
		return newError(http.StatusBadRequest, "invalid_json", "request body holds more than one JSON value")
	}
	return nil
}

// readBody reads r to the end into a buffer the size the request
// announced (n, when known), which io.ReadAll would grow to by steps.
func readBody(r io.Reader, n int64) ([]byte, error) {
	if n <= 0 {
		return io.ReadAll(r)
	}
	b := make([]byte, 0, n+1) // +1: the read that finds the end needs no room to grow
	for {
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
		m, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+m]
		if err == io.EOF {
			return b, nil
		}
		if err != nil {
			return b, err
		}
	}
}

func pathID(c echo.Context) (int64, error) {
	id, err := strconv.ParseInt(c.Param("id"), 10, 64)
	if err != nil || id <= 0 {
		return 0, &apiError{Status: http.StatusBadRequest, Code: "invalid_field", Field: "id", Message: fmt.Sprintf("id %q is not a positive integer", clip(c.Param("id")))}
	}
	return id, nil
}

func clip(s string) string { return app.TruncateString(s, 80) }

func queryInt(c echo.Context, name string) (int, error) {
	v := c.QueryParam(name)
	if v == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		return 0, app.Invalid(name, "%s %q is not an integer", name, clip(v))
	}
	return n, nil
}

// maxListLimit is the largest page a list answers (?limit=, 1..1000).
const maxListLimit = 1000

// queryLimit reads ?limit=: absent, 0 (the list's default); given, it must
// be 1..1000, so limit=0 is an error rather than quietly the default.
func queryLimit(c echo.Context) (int, error) {
	n, err := queryInt(c, "limit")
	if err != nil {
		return 0, err
	}
	if c.QueryParam("limit") != "" && (n < 1 || n > maxListLimit) {
		return 0, app.Invalid("limit", "limit must be between 1 and %d", maxListLimit)
	}
	return n, nil
}

func queryBool(c echo.Context, name string) (bool, error) {
	v := c.QueryParam(name)
	if v == "" {
		return false, nil
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		return false, app.Invalid(name, "%s %q is not true or false", name, clip(v))
	}
	return b, nil
}

func queryDuration(c echo.Context, name string) (time.Duration, error) {
	v := c.QueryParam(name)
	if v == "" {
		return 0, nil
	}
	d, err := app.ParseDuration(v)
	if err != nil {
		return 0, app.Invalid(name, "%v", err)
	}
	return d, nil
}

func queryOrder(c echo.Context) (bool, error) {
	switch c.QueryParam("order") {
	case "", "desc":
		return false, nil
	case "asc":
		return true, nil
	}
	return false, app.Invalid("order", "order is asc or desc")
}

// healthz answers while the process runs. It names the version only when
// the server runs without tokens: with tokens it may answer anyone
// (PrivateHealth unset) and then says nothing but "ok".
func (h *handler) healthz(c echo.Context) error {
	if len(h.opts.Tokens) > 0 {
		return c.JSON(http.StatusOK, map[string]string{"status": "ok"})
	}
	return c.JSON(http.StatusOK, map[string]string{"status": "ok", "version": h.opts.Version})
}

func (h *handler) readyz(c echo.Context) error {
	if err := h.svc.Ping(c.Request().Context()); err != nil {
		h.log.Warn().Err(err).Msg("not ready")
		return newError(http.StatusServiceUnavailable, "unavailable", "the store is not reachable")
	}
	return c.JSON(http.StatusOK, map[string]string{"status": "ready"})
}

// submitBody is POST /api/jobs: a job, with the header form of the key.
func (h *handler) submit(c echo.Context) error {
	var in app.SubmitInput
	if err := bind(c, &in, smallBody, false); err != nil {
		return err
	}
	if err := checkQueue(c, in.Queue); err != nil {
		return err
	}
	traceHeaders(c, &in) // api_trace.go
	if hk := c.Request().Header.Get("Idempotency-Key"); hk != "" {
		if in.IdempotencyKey != "" && in.IdempotencyKey != hk {
			return app.Invalid("idempotency_key", "the Idempotency-Key header and the idempotency_key field differ")
		}
		in.IdempotencyKey = hk
	}
	res, err := h.svc.Submit(c.Request().Context(), []app.SubmitInput{in})
	if err != nil {
		return err
	}
	switch {
	case res[0].Existing:
		c.Response().Header().Set("Idempotent-Replayed", "true")
		return c.JSON(http.StatusOK, res[0].Job)
	case res[0].Duplicate:
		return c.JSON(http.StatusOK, submitted(res[0]))
	}
	return c.JSON(http.StatusCreated, res[0].Job)
}

// submitted is a job as a submission answers it: a job that a unique,
// debounce or throttle rule answered with instead of a new one carries
// "duplicate": true.
type submitted app.Submitted

// MarshalJSON writes the job as app.Job does, adding "duplicate": true
// when a rule answered with it.
func (s submitted) MarshalJSON() ([]byte, error) {
	if s.Job == nil {
		return []byte("null"), nil
	}
	b, err := jobJSON(s.Job)
	if err != nil || !s.Duplicate || len(b) < 2 || b[len(b)-1] != '}' {
		return b, err
	}
	return append(b[:len(b)-1], `,"duplicate":true}`...), nil
}

func (h *handler) submitBatch(c echo.Context) error {
	var in struct {
		Jobs []app.SubmitInput `json:"jobs"`
	}
	if err := bind(c, &in, h.opts.MaxBodyBytes, false); err != nil {
		return err
	}
	if in.Jobs == nil {
		return app.Invalid("jobs", "give the jobs as {\"jobs\": [...]}")
	}
	for i, j := range in.Jobs {
		if err := checkQueue(c, j.Queue); err != nil {
			return err
		}
		traceHeaders(c, &in.Jobs[i]) // api_trace.go
	}
	res, err := h.svc.Submit(c.Request().Context(), in.Jobs)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusCreated, batchAnswer(res))
}

// batchAnswer is the answer to a batch submission, {"jobs": [...]}, each
// job as submitted writes it.
type batchAnswer []app.Submitted

// MarshalJSON writes the answer as encoding/json would write the map it replaces.
func (a batchAnswer) MarshalJSON() ([]byte, error) {
	b := make([]byte, 0, 16+700*len(a))
	b = append(b, `{"jobs":[`...)
	for i, r := range a {
		if i > 0 {
			b = append(b, ',')
		}
		jb, err := submitted(r).MarshalJSON()
		if err != nil {
			return nil, err
		}
		b = append(b, jb...)
	}
	return append(b, "]}"...), nil
}

func (h *handler) listJobs(c echo.Context) error {
	in, err := listInput(c)
	if err != nil {
		return err
	}
	page, err := h.svc.List(c.Request().Context(), in)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, page)
}

func listInput(c echo.Context) (app.ListInput, error) {
	limit, err := queryLimit(c)
	if err != nil {
		return app.ListInput{}, err
	}
	asc, err := queryOrder(c)
	if err != nil {
		return app.ListInput{}, err
	}
	from, err := queryInt(c, "replayed_from")
	if err != nil {
		return app.ListInput{}, err
	}
	wf, err := queryInt(c, "workflow")
	if err != nil {
		return app.ListInput{}, err
	}
	in := app.ListInput{Queue: c.QueryParam("queue"), Kind: c.QueryParam("kind"), Status: c.QueryParam("status"),
		Tag: c.QueryParam("tag"), Key: c.QueryParam("key"), ReplayedFrom: int64(from), Workflow: int64(wf), Limit: limit, Cursor: c.QueryParam("cursor"), Asc: asc,
		JobQuery: app.ParseJobQuery(c.QueryParams())}
	return in, listExtras(c, &in) // kind_prefix, sort, count (api_jobs_list.go)
}

func (h *handler) getJob(c echo.Context) error {
	id, err := pathID(c)
	if err != nil {
		return err
	}
	wait, err := queryDuration(c, "wait")
	if err != nil {
		return err
	}
	events, err := queryBool(c, "events")
	if err != nil {
		return err
	}
	if err := h.checkJob(c, id); err != nil {
		return err
	}
	job, err := h.svc.Get(c.Request().Context(), id, wait, events)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, job)
}

func (h *handler) jobEvents(c echo.Context) error {
	id, err := pathID(c)
	if err != nil {
		return err
	}
	if err := h.checkJob(c, id); err != nil {
		return err
	}
	evs, err := h.svc.Events(c.Request().Context(), id)
	if err != nil {
		return err
	}
	if evs == nil {
		evs = []app.Event{}
	}
	return c.JSON(http.StatusOK, map[string]any{"events": evs})
}

type leaseBody struct {
	Lease *int64 `json:"lease"`
}

func (b leaseBody) lease() (int64, error) {
	if b.Lease == nil {
		return 0, app.Invalid("lease", "lease is required (the lease the claim handed out)")
	}
	return *b.Lease, nil
}

// leased reads a route a worker calls under a job's lease (heartbeat,
// complete, fail, snooze, progress, log): the job's id from the path, the
// body into in (which embeds leaseBody), its lease, and the token's right
// to the job's queue.
func (h *handler) leased(c echo.Context, in interface{ lease() (int64, error) }, limit int64) (id, lease int64, err error) {
	if id, err = pathID(c); err != nil {
		return 0, 0, err
	}
	if err = bind(c, in, limit, false); err != nil {
		return 0, 0, err
	}
	if lease, err = in.lease(); err != nil {
		return 0, 0, err
	}
	return id, lease, h.checkJob(c, id)
}

func (h *handler) cancel(c echo.Context) error {
	id, err := pathID(c)
	if err != nil {
		return err
	}
	var in leaseBody
	if err := bind(c, &in, smallBody, true); err != nil {
		return err
	}
	if p := who(c); in.Lease == nil && !p.allows(RoleAdmin) {
		return forbidden(p, RoleAdmin) // a worker acknowledging with its lease needs only work
	}
	if err := h.checkJob(c, id); err != nil {
		return err
	}
	job, err := h.svc.Cancel(c.Request().Context(), id, in.Lease, actor(c))
	if err != nil {
		return err
	}
	if job.Status == app.StatusProcessing {
		return c.JSON(http.StatusAccepted, job)
	}
	return c.JSON(http.StatusOK, job)
}

func (h *handler) heartbeat(c echo.Context) error {
	var in struct {
		leaseBody
		// Progress and message, optional, go with the extend (api_progress.go).
		app.ProgressInput
		Extend *app.Duration `json:"extend"`
	}
	id, lease, err := h.leased(c, &in, smallBody)
	if err != nil {
		return err
	}
	var extend time.Duration
	if in.Extend != nil {
		extend = in.Extend.D()
	}
	job, err := h.svc.HeartbeatProgress(c.Request().Context(), id, lease, extend, in.ProgressInput)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]any{"id": job.ID, "lease": job.Lease,
		"lease_expires_at": app.FormatTime(*job.LeaseExpiresAt), "cancel_requested": job.CancelRequested})
}

func (h *handler) complete(c echo.Context) error {
	var in struct {
		leaseBody
		Result json.RawMessage `json:"result"`
	}
	id, lease, err := h.leased(c, &in, smallBody)
	if err != nil {
		return err
	}
	if err := h.svc.Complete(c.Request().Context(), id, lease, in.Result); err != nil {
		return err
	}
	return c.JSON(http.StatusOK, completedAnswer{id})
}

// completedAnswer is the answer to a completion: {"id": ..., "status": "done"}.
type completedAnswer struct{ id int64 }

// MarshalJSON writes the answer without reflection.
func (a completedAnswer) MarshalJSON() ([]byte, error) {
	b := make([]byte, 0, 48)
	b = append(b, `{"id":`...)
	b = strconv.AppendInt(b, a.id, 10)
	b = append(b, `,"status":`...)
	b = strconv.AppendQuote(b, string(app.StatusDone))
	return append(b, '}'), nil
}

func (h *handler) completeBatch(c echo.Context) error {
	var in struct {
		Jobs []struct {
			ID     int64           `json:"id"`
			Lease  *int64          `json:"lease"`
			Result json.RawMessage `json:"result"`
		} `json:"jobs"`
	}
	if err := bind(c, &in, h.opts.MaxBodyBytes, false); err != nil {
		return err
	}
	items := make([]app.Completion, len(in.Jobs))
	for i, j := range in.Jobs {
		if j.ID <= 0 || j.Lease == nil {
			return app.Invalid(fmt.Sprintf("jobs[%d]", i), "each item needs an id and a lease")
		}
		items[i] = app.Completion{ID: j.ID, Lease: *j.Lease, Result: j.Result}
	}
	if err := h.checkJobs(c, items); err != nil {
		return err
	}
	errs, err := h.svc.CompleteBatch(c.Request().Context(), items)
	if err != nil {
		return err
	}
	type result struct {
		ID    int64     `json:"id"`
		OK    bool      `json:"ok"`
		Error *apiError `json:"error,omitempty"`
	}
	out := make([]result, len(items))
	for i, it := range items {
		out[i] = result{ID: it.ID, OK: errs[i] == nil}
		if errs[i] != nil {
			out[i].Error, _ = toAPIError(errs[i])
		}
	}
	return c.JSON(http.StatusOK, map[string]any{"results": out})
}

func (h *handler) fail(c echo.Context) error {
	var in struct {
		leaseBody
		Error   string        `json:"error"`
		Retry   *bool         `json:"retry"`
		RetryIn *app.Duration `json:"retry_in"`
	}
	id, lease, err := h.leased(c, &in, smallBody)
	if err != nil {
		return err
	}
	res, err := h.svc.Fail(c.Request().Context(), id, app.FailInput{Lease: lease, Error: in.Error, Retry: in.Retry, RetryIn: in.RetryIn})
	if err != nil {
		return err
	}
	job := res.Job
	if res.Dead != nil {
		job = res.Dead.AsJob()
	}
	return c.JSON(http.StatusOK, map[string]any{"outcome": res.Outcome, "job": job})
}

func (h *handler) snooze(c echo.Context) error {
	var in struct {
		leaseBody
		Delay *app.Duration `json:"delay"`
	}
	id, lease, err := h.leased(c, &in, smallBody)
	if err != nil {
		return err
	}
	var delay time.Duration
	if in.Delay != nil {
		delay = in.Delay.D()
	}
	job, err := h.svc.Snooze(c.Request().Context(), id, lease, delay)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, job)
}

func (h *handler) claim(c echo.Context) error {
	var in app.ClaimInput
	if err := bind(c, &in, smallBody, true); err != nil {
		return err
	}
	if in.Queues != nil {
		return app.Invalid("queues", "this route claims from queue %q; to claim from several queues, POST /api/claim", clip(c.Param("queue")))
	}
	if err := checkQueue(c, c.Param("queue")); err != nil {
		return err
	}
	if in.WorkerID == "" {
		in.WorkerID = "http:" + c.RealIP()
	}
	jobs, err := h.svc.Claim(c.Request().Context(), c.Param("queue"), in)
	return claimed(c, jobs, h.claimCommand(c, in.WorkerID), err)
}

// claimQueues is POST /api/claim: a claim over several queues, by weight
// ({"queues": {"critical": 6, "default": 3}}) or in a strict order
// (["critical", "default"]); a token with a queue list must hold each.
func (h *handler) claimQueues(c echo.Context) error {
	var in app.ClaimInput
	if err := bind(c, &in, smallBody, false); err != nil {
		return err
	}
	if in.Queues != nil {
		for _, q := range in.Queues.Names {
			if err := checkQueue(c, q); err != nil {
				return err
			}
		}
	}
	if in.WorkerID == "" {
		in.WorkerID = "http:" + c.RealIP()
	}
	jobs, err := h.svc.ClaimQueues(c.Request().Context(), in)
	return claimed(c, jobs, h.claimCommand(c, in.WorkerID), err)
}

// claimed answers a claim: {"jobs": [...]}, empty when nothing was handed
// out, and for a registered worker its "command" (api_workers.go).
func claimed(c echo.Context, jobs []*app.Job, command string, err error) error {
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, claimAnswer{jobs: jobs, command: command})
}

// claimAnswer is {"command": ..., "jobs": [...]} ("command" only when
// set), written as encoding/json would write the map it replaces (keys in
// order), with each job from its own MarshalJSON.
type claimAnswer struct {
	jobs    []*app.Job
	command string
}

// MarshalJSON writes the answer, each job once.
func (a claimAnswer) MarshalJSON() ([]byte, error) {
	b := make([]byte, 0, 64+700*len(a.jobs))
	b = append(b, '{')
	if a.command != "" {
		cmd, err := json.Marshal(a.command)
		if err != nil {
			return nil, err
		}
		b = append(b, `"command":`...)
		b = append(b, cmd...)
		b = append(b, ',')
	}
	b = append(b, `"jobs":[`...)
	for i, j := range a.jobs {
		if i > 0 {
			b = append(b, ',')
		}
		if j == nil {
			b = append(b, "null"...)
			continue
		}
		var err error
		if b, err = appendJobJSON(b, j); err != nil {
			return nil, err
		}
	}
	return append(b, "]}"...), nil
}

// queueKeys is GET /api/queues/{queue}/keys: the jobs the queue holds
// back for their keys, its keys at their limit and its busiest keys
// (?limit= keys in each list, default 20, at most 100), with its key limits.
func (h *handler) queueKeys(c echo.Context) error {
	q := c.Param("queue")
	if err := checkQueue(c, q); err != nil {
		return err
	}
	limit, err := queryInt(c, "limit")
	if err != nil {
		return err
	}
	if c.QueryParam("limit") != "" && limit < 1 {
		return app.Invalid("limit", "limit must be between 1 and %d", app.MaxKeyStatsLimit)
	}
	st, err := h.svc.KeyStats(c.Request().Context(), q, limit)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, keysBody{Queue: q, Limits: keyLimitsOf(h.svc.Config.Queue(q)), KeyStats: st})
}

// keysBody is GET /api/queues/{queue}/keys.
type keysBody struct {
	Queue  string    `json:"queue"`
	Limits keyLimits `json:"limits"`
	*app.KeyStats
}

// keyLimits is how a queue limits the jobs of one key, as its config says.
type keyLimits struct {
	KeyConcurrency int    `json:"key_concurrency"`
	KeyRate        string `json:"key_rate"`
	Fairness       string `json:"fairness"`
}

func keyLimitsOf(q app.QueueConfig) keyLimits {
	return keyLimits{KeyConcurrency: q.KeyConcurrency, KeyRate: q.KeyRate.String(), Fairness: q.Fairness}
}

func (h *handler) queues(c echo.Context) error {
	qs, err := h.svc.Queues(c.Request().Context())
	if err != nil {
		return err
	}
	qs = inScope(who(c), qs, func(q app.QueueInfo) string { return q.Name })
	return c.JSON(http.StatusOK, map[string]any{"queues": qs})
}

func (h *handler) pause(c echo.Context) error  { return h.setPaused(c, true) }
func (h *handler) resume(c echo.Context) error { return h.setPaused(c, false) }

func (h *handler) setPaused(c echo.Context, paused bool) error {
	var in struct{}
	if err := bind(c, &in, smallBody, true); err != nil {
		return err
	}
	q := c.Param("queue")
	if err := checkQueue(c, q); err != nil {
		return err
	}
	if err := h.svc.SetPaused(c.Request().Context(), q, paused, actor(c)); err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]any{"name": q, "paused": paused})
}

func (h *handler) drain(c echo.Context) error {
	var in struct {
		DryRun bool `json:"dry_run"`
	}
	if err := bind(c, &in, smallBody, true); err != nil {
		return err
	}
	if err := checkQueue(c, c.Param("queue")); err != nil {
		return err
	}
	res, err := h.svc.Drain(c.Request().Context(), c.Param("queue"), in.DryRun, actor(c))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, res)
}

func (h *handler) listDead(c echo.Context) error {
	limit, err := queryLimit(c)
	if err != nil {
		return err
	}
	asc, err := queryOrder(c)
	if err != nil {
		return err
	}
	in := app.DeadListInput{Queue: c.QueryParam("queue"), Kind: c.QueryParam("kind"),
		Tag: c.QueryParam("tag"), Reason: c.QueryParam("reason"), Limit: limit, Cursor: c.QueryParam("cursor"), Asc: asc}
	if in.MovedAfter, err = queryTime(c, "moved_after"); err != nil {
		return err
	}
	if in.MovedBefore, err = queryTime(c, "moved_before"); err != nil {
		return err
	}
	if v := c.QueryParam("replayed"); v != "" {
		b, err := queryBool(c, "replayed")
		if err != nil {
			return err
		}
		in.Replayed = &b
	}
	page, err := h.svc.ListDead(c.Request().Context(), in)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, page)
}

// deadStats is GET /api/dlq/stats: the DLQ's rows by queue, kind, reason
// and day, of the queues the token may see.
func (h *handler) deadStats(c echo.Context) error {
	p := who(c)
	st, err := h.svc.DeadStats(c.Request().Context(), p.allowsQueue)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, st)
}

// queryTime reads an RFC 3339 time from query parameter name (nil if absent).
func queryTime(c echo.Context, name string) (*time.Time, error) {
	v := c.QueryParam(name)
	if v == "" {
		return nil, nil
	}
	t, err := time.Parse(time.RFC3339Nano, v)
	if err != nil {
		return nil, app.Invalid(name, "%s %q is not an RFC 3339 time (2026-12-01T15:04:05Z)", name, clip(v))
	}
	return &t, nil
}

func (h *handler) getDead(c echo.Context) error {
	id, err := pathID(c)
	if err != nil {
		return err
	}
	d, err := h.svc.GetDead(c.Request().Context(), id)
	if err != nil {
		return err
	}
	if err := checkQueue(c, d.Queue); err != nil {
		return err
	}
	return c.JSON(http.StatusOK, d)
}

func (h *handler) replay(c echo.Context) error {
	id, err := pathID(c)
	if err != nil {
		return err
	}
	var in app.ReplayInput
	if err := bind(c, &in, smallBody, true); err != nil {
		return err
	}
	if err := h.checkDead(c, id); err != nil {
		return err
	}
	if err := checkQueue(c, in.Queue); err != nil && in.Queue != "" { // the queue it goes to
		return err
	}
	in.IdempotencyKey = c.Request().Header.Get("Idempotency-Key")
	job, err := h.svc.Replay(c.Request().Context(), id, in, actor(c))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusCreated, job)
}

func (h *handler) purge(c echo.Context) error {
	id, err := pathID(c)
	if err != nil {
		return err
	}
	if err := h.checkDead(c, id); err != nil {
		return err
	}
	if err := h.svc.Purge(c.Request().Context(), id, actor(c)); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

func (h *handler) bulk(action string) echo.HandlerFunc {
	return func(c echo.Context) error {
		var in app.BulkInput
		if err := bind(c, &in, smallBody, true); err != nil {
			return err
		}
		if p := who(c); p.restricted() && in.Queue == "" {
			return denied("token %q is limited to queues %s: name one with \"queue\"", p.name, strings.Join(p.queues, ", "))
		}
		if err := checkQueue(c, in.Queue); err != nil && in.Queue != "" {
			return err
		}
		if in.Set != nil && in.Set.Queue != "" {
			if err := checkQueue(c, in.Set.Queue); err != nil { // the queue the jobs go to
				return err
			}
		}
		res, err := h.svc.BulkDead(c.Request().Context(), action, in, actor(c))
		if err != nil {
			return err
		}
		return c.JSON(http.StatusOK, res)
	}
}

// statsBody is GET /api/stats: every queue by name, the total, and the
// kinds no worker claims.
type statsBody struct {
	Queues         map[string]app.QueueStats `json:"queues"`
	Total          app.QueueStats            `json:"total"`
	UnclaimedKinds []app.UnclaimedKind       `json:"unclaimed_kinds"`
	At             string                    `json:"at"`
}

func (h *handler) stats(c echo.Context) error {
	st, err := h.svc.Stats(c.Request().Context())
	if err != nil {
		return err
	}
	scopedStats(who(c), st)
	out := statsBody{Queues: map[string]app.QueueStats{}, Total: st.Total, UnclaimedKinds: st.UnclaimedKinds, At: app.FormatTime(st.At)}
	for _, q := range st.Queues {
		out.Queues[q.Queue] = q
	}
	return c.JSON(http.StatusOK, out)
}

func (h *handler) audit(c echo.Context) error {
	limit, err := queryLimit(c)
	if err != nil {
		return err
	}
	before, err := queryInt(c, "before")
	if err != nil {
		return err
	}
	if before < 0 {
		return app.Invalid("before", "before is an audit entry id (a positive integer)")
	}
	if a := c.QueryParam("action"); a != "" && !slices.Contains(auditActions, a) {
		return app.Invalid("action", "action %q is not one of %s", clip(a), strings.Join(auditActions, ", "))
	}
	entries, err := h.svc.Audit(c.Request().Context(), app.AuditFilter{Action: c.QueryParam("action"), BeforeID: int64(before), Limit: limit})
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]any{"entries": entries})
}

func (h *handler) periodic(c echo.Context) error {
	out := []app.PeriodicStatus{}
	if h.opts.Scheduler != nil {
		var err error
		if out, err = h.opts.Scheduler.Status(c.Request().Context()); err != nil {
			return err
		}
		out = inScope(who(c), out, func(e app.PeriodicStatus) string { return e.Queue })
	}
	return c.JSON(http.StatusOK, map[string]any{"periodic": out})
}

func (h *handler) onceAcquire(c echo.Context) error {
	var in struct {
		HoldFor *app.Duration `json:"hold_for"`
	}
	if err := bind(c, &in, smallBody, true); err != nil {
		return err
	}
	var hold time.Duration
	if in.HoldFor != nil {
		hold = in.HoldFor.D()
	}
	rec, err := h.svc.Once(c.Request().Context(), c.Param("key"), hold)
	if err != nil {
		return err
	}
	if rec.Acquired {
		return c.JSON(http.StatusCreated, rec)
	}
	return c.JSON(http.StatusOK, rec)
}

func (h *handler) onceDone(c echo.Context) error {
	var in struct {
		Token  string          `json:"token"`
		Result json.RawMessage `json:"result"`
	}
	if err := bind(c, &in, smallBody, false); err != nil {
		return err
	}
	rec, err := h.svc.OnceDone(c.Request().Context(), c.Param("key"), in.Token, in.Result)
	if errors.Is(err, app.ErrLeaseLost) { // the store's word for a token that is not the holder's
		return newError(http.StatusConflict, "once_held", "once %q: the token is not the one of the run holding the key (a wrong token, or the hold lapsed and another run took the key); nothing was stored",
			clip(c.Param("key")))
	}
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, rec)
}

// recoverer turns a panic in a handler into a logged 500 without a stack
// trace in the answer.
func (h *handler) recoverer(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) (err error) {
		defer func() {
			if p := recover(); p != nil {
				if p == http.ErrAbortHandler {
					panic(p)
				}
				err = fmt.Errorf("panic: %v", p)
				h.log.Error().Interface("panic", p).Str("path", c.Request().URL.Path).Msg("handler panicked")
			}
		}()
		return next(c)
	}
}
