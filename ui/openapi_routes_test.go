package ui

import (
	"net/http"

	"github.com/queuehq/queue/app"
)

// oaAPIOp is one route of the API in the document.
type oaAPIOp struct {
	route   string // echo's method and path: "GET /api/jobs/:id"
	id      string // operationId
	tag     string
	summary string
	desc    string
	headers []S      // request header parameters
	body    S        // the JSON request body's schema; nil: none
	bodyReq bool     // the body must be given (else it may be empty)
	ok      []oaResp // the answers besides the errors
	errs    []int    // the route's own error statuses (404, 409, 429 ...), besides the shared ones
	// errDesc describes the codes of a status for this route.
	errDesc map[int]string
	scoped  bool // a read that checks the token's queues (403)
	noStore bool // answers without the store (no 503)
}

// oaResp is one answer.
type oaResp struct {
	status  int
	desc    string
	schema  S // application/json; nil: see content
	content S // other media types; nil and no schema: no body
	headers S
}

func oaOK(status int, desc string, schema S) oaResp {
	return oaResp{status: status, desc: desc, schema: schema}
}

func oaNoBody(status int, desc string) oaResp { return oaResp{status: status, desc: desc} }

// oaSSE is an answer of Server-Sent Events.
func oaSSE(desc string) oaResp {
	return oaResp{status: http.StatusOK, desc: desc, content: S{"text/event-stream": S{}}}
}

func oaHeader(name, desc string, schema S) S {
	return S{"name": name, "in": "header", "description": desc, "schema": schema}
}

var oaIdempotencyKey = oaHeader("Idempotency-Key", "A repeat with the same key answers with what the first request made (the idempotency_key field, for a submission).", S{"type": "string", "maxLength": app.MaxKeyLength})

var oaTraceHeaders = []S{
	oaHeader("traceparent", "W3C trace context (version 00): the jobs join that trace. A body field traceparent wins.", S{"type": "string", "pattern": oaTracePattern}),
	oaHeader("tracestate", "W3C tracestate, passed on with traceparent.", S{"type": "string", "maxLength": app.MaxTracestate}),
}

// oaLease is the lease a worker's call under a claim carries.
func oaLease() oaField {
	return oaReq("lease", oaInt64("The lease of the claim (the job's lease in the claim's answer); a stale one is 409 lease_lost."))
}

// oaAPIRoutes are the routes of the API, /healthz, /readyz and /metrics.
func oaAPIRoutes() []oaAPIOp {
	job := oaRef("Job")
	jobs := oaObject("", oaReq("jobs", oaArr(oaRef("SubmittedJob"))))
	emptyBody := oaInput("Nothing, or an empty object.")
	leaseLost := "lease_lost: the lease is stale (the job was recovered, finished or claimed again); nothing changed."
	ops := []oaAPIOp{
		{route: "GET /healthz", id: "healthz", tag: "Health", summary: "Liveness: the process answers.",
			desc: "Without tokens it names the version; with tokens it says only \"ok\", and answers without a token unless private_health is set.",
			ok:   []oaResp{oaOK(200, "Alive.", oaObject("", oaReq("status", oaDesc(S{"type": "string", "const": "ok"}, "")), oaOpt("version", oaStr("The server's version (only without tokens)."))))}, noStore: true},
		{route: "HEAD /healthz", id: "healthzHead", tag: "Health", summary: "Liveness, without a body.", ok: []oaResp{oaNoBody(200, "Alive.")}, noStore: true},
		{route: "GET /readyz", id: "readyz", tag: "Health", summary: "Readiness: the store is reachable.",
			ok: []oaResp{oaOK(200, "Ready.", oaObject("", oaReq("status", oaDesc(S{"type": "string", "const": "ready"}, ""))))}},
		{route: "HEAD /readyz", id: "readyzHead", tag: "Health", summary: "Readiness, without a body.", ok: []oaResp{oaNoBody(200, "Ready.")}},
		{route: "GET /metrics", id: "metrics", tag: "Health", summary: "Prometheus metrics.",
			desc: "The Prometheus text format (or its protobuf form, as the scraper's Accept asks). With tokens it needs one (role read, no queue list) unless public_metrics is set.",
			ok:   []oaResp{{status: 200, desc: "The metrics.", content: S{"text/plain": S{}, "application/vnd.google.protobuf": S{}}}}, noStore: true},

		// Jobs.
		{route: "POST /api/jobs", id: "submitJob", tag: "Jobs", summary: "Submit one job.",
			headers: append([]S{oaIdempotencyKey}, oaTraceHeaders...), body: oaRef("SubmitInput"), bodyReq: true,
			ok: []oaResp{
				oaOK(201, "Submitted.", job),
				{status: 200, desc: "A repeat of an idempotency key (header Idempotent-Replayed: true), or a job a unique, debounce or throttle rule answered with (\"duplicate\": true).",
					schema: oaRef("SubmittedJob"), headers: S{"Idempotent-Replayed": S{"description": "true when an earlier submission with the same idempotency key answered.", "schema": oaEnum("", "true")}}},
			},
			errs: []int{409, 429}, errDesc: map[int]string{409: "idempotency_conflict: the idempotency key was used with another kind or payload.", 429: "queue_full: the queue holds max_queued jobs; nothing was stored. Retry-After says when to try again."}},
		{route: "POST /api/jobs/batch", id: "submitJobs", tag: "Jobs", summary: "Submit up to 10,000 jobs, all or nothing.",
			headers: oaTraceHeaders, body: oaInput("", oaReq("jobs", oaDesc(S{"type": "array", "items": oaRef("SubmitInput"), "maxItems": app.MaxBatch}, ""))), bodyReq: true,
			ok:   []oaResp{oaOK(201, "Submitted, in the order given.", jobs)},
			errs: []int{409, 429}, errDesc: map[int]string{409: "idempotency_conflict", 429: "queue_full: nothing was stored."}},
		{route: "GET /api/jobs", id: "listJobs", tag: "Jobs", summary: "List jobs.", scoped: true,
			desc: "Filters combine. Besides the parameters below, payload.PATH=VALUE (payload.customer=42, payload.address.city=Oslo, payload.items.0.sku=A1) keeps jobs whose payload has VALUE at PATH. A token limited to queues must name one of them with ?queue= (a token of one queue gets it by default).",
			ok:   []oaResp{oaOK(200, "A page of jobs, newest first unless order=asc (sort=run_at: soonest first unless order=desc).", oaRef("JobPage"))}},
		{route: "POST /api/jobs/complete", id: "completeJobs", tag: "Worker protocol", summary: "Complete up to 1,000 jobs; each is fenced by its own lease.",
			body: oaInput("", oaReq("jobs", oaDesc(S{"type": "array", "maxItems": app.MaxClaim, "items": oaInput("", oaReq("id", oaID("")), oaLease(), oaOpt("result", oaAny("At most 1 MiB.")))}, ""))), bodyReq: true,
			ok: []oaResp{oaOK(200, "One result per item, in order.", oaObject("", oaReq("results", oaArr(oaObject("",
				oaReq("id", oaInt64("")), oaReq("ok", oaBool("")), oaOpt("error", oaRef("ErrorBody")))))))}},
		{route: "GET /api/jobs/:id", id: "getJob", tag: "Jobs", summary: "Read one job (or its dead-letter form).", scoped: true,
			desc: "With ?wait= the answer waits until the job is terminal (done, cancelled, dead_letter) or the wait ends (submit-and-wait).",
			ok:   []oaResp{oaOK(200, "The job.", job)}, errs: []int{404}},
		{route: "GET /api/jobs/:id/events", id: "jobEvents", tag: "Jobs", summary: "The recorded events of one job.", scoped: true,
			ok: []oaResp{oaOK(200, "Its events, oldest first.", oaObject("", oaReq("events", oaArr(oaRef("Event")))))}, errs: []int{404}},
		{route: "POST /api/jobs/:id/cancel", id: "cancelJob", tag: "Jobs", summary: "Cancel a job.",
			desc: "Without a lease (role admin): queued -> cancelled (200); processing -> cancel_requested (202: its worker is told at its next heartbeat). With the lease of the worker holding it (role work): processing -> cancelled.",
			body: oaInput("", oaOpt("lease", oaInt64("The worker's lease, to acknowledge a requested cancel."))),
			ok:   []oaResp{oaOK(200, "Cancelled.", job), oaOK(202, "Processing: the cancel is requested.", job)},
			errs: []int{404, 409}, errDesc: map[int]string{409: "illegal_transition: the job is terminal; lease_lost: the lease given is stale."}},
		{route: "POST /api/jobs/:id/heartbeat", id: "heartbeat", tag: "Worker protocol", summary: "Extend a lease (and report progress).",
			body: oaInput("", oaLease(), oaOpt("extend", oaNull(oaDurIn("The new lease from now; default the job's timeout."))),
				oaOpt("progress", oaNull(oaDesc(S{"type": "integer", "minimum": 0, "maximum": 100}, ""))), oaOpt("message", oaNull(oaStr("")))), bodyReq: true,
			ok: []oaResp{oaOK(200, "Extended.", oaObject("", oaReq("id", oaInt64("")), oaReq("lease", oaInt64("")), oaReq("lease_expires_at", oaTime("")),
				oaReq("cancel_requested", oaBool("Stop: a cancel was asked."))))},
			errs: []int{404, 409}, errDesc: map[int]string{409: leaseLost}},
		{route: "POST /api/jobs/:id/complete", id: "completeJob", tag: "Worker protocol", summary: "Complete a job.",
			body: oaInput("", oaLease(), oaOpt("result", oaAny("At most 1 MiB."))), bodyReq: true,
			ok:   []oaResp{oaOK(200, "Done.", oaObject("", oaReq("id", oaInt64("")), oaReq("status", oaDesc(S{"type": "string", "const": "done"}, ""))))},
			errs: []int{404, 409}, errDesc: map[int]string{409: leaseLost}},
		{route: "POST /api/jobs/:id/fail", id: "failJob", tag: "Worker protocol", summary: "Fail an attempt: retry with backoff, or the dead-letter queue.",
			body: oaInput("", oaLease(), oaOpt("error", oaStr("")), oaOpt("retry", oaNull(oaBool("false: no retry, straight to the dead-letter queue; default true."))),
				oaOpt("retry_in", oaNull(oaDurIn("The retry's delay instead of the backoff.")))), bodyReq: true,
			ok: []oaResp{oaOK(200, "What the failure did.", oaObject("",
				oaReq("outcome", oaEnum("", app.OutcomeRetryScheduled, app.OutcomeDeadLettered, app.OutcomeCancelled)),
				oaReq("job", job)))},
			errs: []int{404, 409}, errDesc: map[int]string{409: leaseLost}},
		{route: "POST /api/jobs/:id/snooze", id: "snoozeJob", tag: "Worker protocol", summary: "Give a job back for later without using up the attempt.",
			body: oaInput("", oaLease(), oaOpt("delay", oaNull(oaDurIn("run_at = now + delay.")))), bodyReq: true,
			ok: []oaResp{oaOK(200, "Queued again.", job)}, errs: []int{404, 409}, errDesc: map[int]string{409: leaseLost}},
		{route: "POST /api/jobs/:id/progress", id: "reportProgress", tag: "Worker protocol", summary: "Report an attempt's progress.",
			body: oaInput("", oaLease(), oaOpt("progress", oaNull(oaDesc(S{"type": "integer", "minimum": 0, "maximum": 100}, ""))), oaOpt("message", oaNull(oaStr("")))), bodyReq: true,
			ok: []oaResp{oaOK(200, "Stored.", oaObject("", oaReq("id", oaInt64("")), oaReq("progress", oaNull(oaInt(""))), oaReq("progress_message", oaStr("")),
				oaReq("cancel_requested", oaBool(""))))},
			errs: []int{404, 409}, errDesc: map[int]string{409: leaseLost}},
		{route: "POST /api/jobs/:id/log", id: "appendLog", tag: "Worker protocol", summary: "Append lines to an attempt's log.",
			body: oaInput("Lines, or one line.", oaLease(),
				oaOpt("lines", oaArr(oaInput("", oaReq("line", oaStr("")), oaOpt("stream", oaStr("stdout (default) or stderr.")), oaOpt("at", oaTime("Default now."))))),
				oaOpt("line", oaNull(oaStr(""))), oaOpt("stream", oaStr(""))), bodyReq: true,
			ok: []oaResp{oaOK(200, "What was stored.", oaObject("", oaReq("id", oaInt64("")), oaReq("attempt", oaInt("")), oaReq("stored", oaInt("")),
				oaReq("last_seq", oaInt64("")), oaReq("dropped", oaInt("Oldest lines dropped to keep the log within its bound.")), oaReq("truncated", oaBool(""))))},
			errs: []int{404, 409}, errDesc: map[int]string{409: leaseLost}},
		{route: "GET /api/jobs/:id/log", id: "jobLog", tag: "Jobs", summary: "Read (or follow) an attempt's log.", scoped: true,
			desc:    "With ?follow=true or Accept: text/event-stream: a stream of event job.log (id: the line's seq; data: {attempt, seq, at, stream, line}) until the attempt is over, then event end ({attempt, status, truncated}). A reconnect with Last-Event-ID goes on after that line.",
			headers: []S{oaHeader("Last-Event-ID", "Follow: go on after this seq.", S{"type": "string"}), oaHeader("Accept", "text/event-stream: follow.", S{"type": "string"})},
			ok:      []oaResp{oaOK(200, "The lines (or, following, a stream).", oaRef("JobLog")), oaSSE("")},
			errs:    []int{404}},

		// Bulk actions on live jobs.
		oaLiveBulk(app.LiveCancel, "cancelJobs", "Cancel the jobs a filter finds."),
		oaLiveBulk(app.LiveRetry, "retryJobs", "Run now the queued jobs a filter finds that wait for their run_at (a retry's backoff, a schedule)."),
		oaLiveBulk(app.LiveReschedule, "rescheduleJobs", "Move the run_at of the queued jobs a filter finds."),
		oaLiveBulk(app.LivePrioritize, "prioritizeJobs", "Change the priority of the queued jobs a filter finds."),
		oaLiveBulk(app.LiveDelete, "deleteJobs", "Delete the finished (done, cancelled) jobs a filter finds; others are skipped."),
		{route: "GET /api/suggest", id: "suggest", tag: "Jobs", summary: "Search suggestions: kinds, queues or tags that start with a prefix.", scoped: true,
			desc: "Kinds are those of every job; tags those of the newest 10,000 jobs; queues those the server knows. A token limited to queues gets its own queues, and may not ask for kinds or tags (403).",
			ok:   []oaResp{oaOK(200, "The values, in byte order.", oaObject("", oaReq("field", oaEnum("", "kind", "queue", "tag")), oaReq("values", oaArr(oaStr("")))))}},

		// Claims and queues.
		{route: "POST /api/queues/:queue/claim", id: "claim", tag: "Worker protocol", summary: "Claim jobs of one queue.",
			desc: "Jobs become processing under a new lease. With wait, the answer waits up to that long for a job (a job submitted meanwhile is handed out at once). A paused queue hands out nothing.",
			body: oaRef("ClaimInput"),
			ok:   []oaResp{oaOK(200, "The jobs claimed (possibly none).", oaRef("Claimed"))}},
		{route: "POST /api/claim", id: "claimQueues", tag: "Worker protocol", summary: "Claim jobs of several queues, by weight or in order.",
			body: oaRef("ClaimInput"), bodyReq: true,
			ok: []oaResp{oaOK(200, "The jobs claimed (possibly none).", oaRef("Claimed"))}},
		{route: "GET /api/queues", id: "listQueues", tag: "Queues", summary: "Queues with their policy and paused state.",
			ok: []oaResp{oaOK(200, "The queues.", oaObject("", oaReq("queues", oaArr(oaRef("QueueInfo")))))}},
		{route: "GET /api/queues/:queue/keys", id: "queueKeys", tag: "Queues", summary: "A queue's flow-control keys: held jobs, keys at their limit, the busiest.", scoped: true,
			ok: []oaResp{oaOK(200, "The keys.", oaObject("",
				oaReq("queue", oaStr("")),
				oaReq("limits", oaObject("", oaReq("key_concurrency", oaInt("")), oaReq("key_rate", oaStr("")), oaReq("fairness", oaStr("")))),
				oaReq("held", oaInt("Jobs held back for their key.")),
				oaReq("busiest", oaArr(oaRef("KeyCount"))),
				oaReq("at_limit", oaArr(oaRef("KeyCount")))))}},
		{route: "POST /api/queues/:queue/pause", id: "pauseQueue", tag: "Queues", summary: "Pause a queue: no claims; submissions still land.", body: emptyBody,
			ok: []oaResp{oaOK(200, "Paused.", oaRef("PausedState"))}},
		{route: "POST /api/queues/:queue/resume", id: "resumeQueue", tag: "Queues", summary: "Resume a queue.", body: emptyBody,
			ok: []oaResp{oaOK(200, "Resumed.", oaRef("PausedState"))}},
		{route: "POST /api/queues/:queue/drain", id: "drainQueue", tag: "Queues", summary: "Cancel every queued job of a queue (cancel_reason drained).",
			body: oaInput("", oaOpt("dry_run", oaBool("Only count."))),
			ok:   []oaResp{oaOK(200, "What was (or would be) cancelled.", oaRef("BulkResult"))}},
		{route: "GET /api/queues/:queue/settings", id: "getQueueSettings", tag: "Settings", summary: "A queue's settings and where each comes from.", scoped: true,
			ok: []oaResp{oaOK(200, "The settings.", oaRef("QueueSettings"))}},
		{route: "PATCH /api/queues/:queue/settings", id: "patchQueueSettings", tag: "Settings", summary: "Change a queue's runtime settings (audited).",
			body: oaRef("QueueSettingsPatch"), bodyReq: true,
			ok: []oaResp{oaOK(200, "The settings now.", oaRef("QueueSettings"))}},
		{route: "DELETE /api/queues/:queue/settings", id: "resetQueueSettings", tag: "Settings", summary: "Unset every runtime setting of a queue: the config file applies again.",
			ok: []oaResp{oaOK(200, "The settings now.", oaRef("QueueSettings"))}},

		// The dead-letter queue.
		{route: "GET /api/dlq", id: "listDead", tag: "Dead-letter queue", summary: "List the dead-letter queue.", scoped: true,
			ok: []oaResp{oaOK(200, "A page of rows, newest move first unless order=asc.", oaRef("DeadPage"))}},
		{route: "GET /api/dlq/stats", id: "deadStats", tag: "Dead-letter queue", summary: "The dead-letter queue by queue, kind, reason and day.",
			ok: []oaResp{oaOK(200, "The counts (of the queues the token may see).", oaRef("DeadStats"))}},
		{route: "GET /api/dlq/:id", id: "getDead", tag: "Dead-letter queue", summary: "Read one dead-letter row.", scoped: true,
			ok: []oaResp{oaOK(200, "The row.", oaRef("DeadJob"))}, errs: []int{404}},
		{route: "POST /api/dlq/:id/replay", id: "replayDead", tag: "Dead-letter queue", summary: "Replay a row as a new job.",
			desc:    "The row stays (with resurrection_count and replayed_job_id); an Idempotency-Key makes a retried replay answer the job the first one made.",
			headers: []S{oaIdempotencyKey}, body: oaRef("ReplayInput"),
			ok:   []oaResp{oaOK(201, "The new job.", job)},
			errs: []int{404, 409, 429}, errDesc: map[int]string{409: "once_held: a replay with the same Idempotency-Key is running.", 429: "queue_full"}},
		{route: "DELETE /api/dlq/:id", id: "purgeDead", tag: "Dead-letter queue", summary: "Purge one row.",
			ok: []oaResp{oaNoBody(204, "Purged.")}, errs: []int{404}},
		oaDLQBulk("replay", "replayDeadBulk", "Replay the rows a filter finds."),
		oaDLQBulk("purge", "purgeDeadBulk", "Purge the rows a filter finds."),
		oaDLQBulk("move", "moveToDead", "Move the queued, scheduled (or cancelled) jobs a filter finds to the dead-letter queue."),

		// Stats, events, audit.
		{route: "GET /api/stats", id: "stats", tag: "Stats", summary: "Counts per queue and in total.",
			ok: []oaResp{oaOK(200, "The counts (of the queues the token may see).", oaRef("Stats"))}},
		{route: "GET /api/stats/series", id: "series", tag: "Stats", summary: "The numbers of the charts.", scoped: true,
			ok: []oaResp{oaOK(200, "The series.", oaRef("Series"))}},
		{route: "GET /api/events", id: "events", tag: "Events", summary: "Lifecycle events as Server-Sent Events.", scoped: true,
			desc: "Each event is \"event: <type>\" and \"data: <Event as JSON>\" (schema Event), with \"id: <n>\" for a recorded one; \": ping\" every 15 s. A reader too slow to keep up gets \"event: overflow\" and the stream ends. Beyond server.max_streams open streams: 503.",
			ok:   []oaResp{oaSSE("The stream.")}},
		{route: "GET /api/audit", id: "audit", tag: "Audit", summary: "Admin actions, newest first.", scoped: true,
			ok: []oaResp{oaOK(200, "The entries.", oaObject("", oaReq("entries", oaArr(oaRef("AuditEntry")))))}},

		// Workflows.
		{route: "POST /api/workflows", id: "submitWorkflow", tag: "Workflows", summary: "Submit a workflow: steps with dependencies, in one transaction.",
			desc: "Takes no Idempotency-Key (400 if given).", headers: oaTraceHeaders, body: oaRef("WorkflowInput"), bodyReq: true,
			ok: []oaResp{oaOK(201, "The workflow; steps without dependencies are queued.", oaRef("WorkflowView"))}, errs: []int{429},
			errDesc: map[int]string{429: "queue_full"}},
		{route: "GET /api/workflows", id: "listWorkflows", tag: "Workflows", summary: "List workflows.", scoped: true,
			ok: []oaResp{oaOK(200, "A page of workflows, newest first.", oaRef("WorkflowPage"))}},
		{route: "GET /api/workflows/:id", id: "getWorkflow", tag: "Workflows", summary: "A workflow with its steps.", scoped: true,
			ok: []oaResp{oaOK(200, "The workflow.", oaRef("WorkflowView"))}, errs: []int{404}},
		{route: "POST /api/workflows/:id/cancel", id: "cancelWorkflow", tag: "Workflows", summary: "Cancel a workflow: waiting steps and queued jobs cancelled, running ones asked to stop.",
			body: emptyBody, ok: []oaResp{oaOK(200, "The workflow.", oaRef("WorkflowView"))}, errs: []int{404, 409},
			errDesc: map[int]string{409: "illegal_transition: the workflow is finished."}},

		// Periodic jobs.
		{route: "GET /api/periodic", id: "listPeriodic", tag: "Periodic", summary: "Periodic jobs (config file and API) with their next fire.",
			ok: []oaResp{oaOK(200, "The entries (of the queues the token may see).", oaObject("", oaReq("periodic", oaArr(oaRef("PeriodicStatus")))))}},
		{route: "POST /api/periodic", id: "createPeriodic", tag: "Periodic", summary: "Make a periodic job.", body: oaRef("PeriodicInput"), bodyReq: true,
			ok: []oaResp{oaOK(201, "Made.", oaRef("PeriodicStatus"))}, errs: []int{409},
			errDesc: map[int]string{409: "periodic_exists: one has that name; periodic_in_config: the config file declares it."}},
		{route: "GET /api/periodic/:name", id: "getPeriodic", tag: "Periodic", summary: "One periodic job.", scoped: true,
			ok: []oaResp{oaOK(200, "The entry.", oaRef("PeriodicStatus"))}, errs: []int{404}},
		{route: "PUT /api/periodic/:name", id: "updatePeriodic", tag: "Periodic", summary: "Replace a periodic job made through the API.", body: oaRef("PeriodicInput"), bodyReq: true,
			ok: []oaResp{oaOK(200, "Replaced.", oaRef("PeriodicStatus"))}, errs: []int{404, 409},
			errDesc: map[int]string{409: "periodic_in_config: the config file declares it (edit the file); periodic_exists: the new name is taken."}},
		{route: "DELETE /api/periodic/:name", id: "deletePeriodic", tag: "Periodic", summary: "Delete a periodic job made through the API.",
			ok: []oaResp{oaNoBody(204, "Deleted.")}, errs: []int{404, 409}, errDesc: map[int]string{409: "periodic_in_config: the config file declares it."}},
		{route: "POST /api/periodic/:name/pause", id: "pausePeriodic", tag: "Periodic", summary: "Pause a periodic job (config file ones too).", body: emptyBody,
			ok: []oaResp{oaOK(200, "Paused.", oaRef("PeriodicStatus"))}, errs: []int{404}},
		{route: "POST /api/periodic/:name/resume", id: "resumePeriodic", tag: "Periodic", summary: "Resume a periodic job.", body: emptyBody,
			ok: []oaResp{oaOK(200, "Resumed.", oaRef("PeriodicStatus"))}, errs: []int{404}},
		{route: "POST /api/periodic/:name/run", id: "runPeriodic", tag: "Periodic", summary: "Enqueue one job of a periodic job now.", body: emptyBody,
			ok: []oaResp{oaOK(201, "The job.", oaObject("", oaReq("job", job)))}, errs: []int{404, 429}, errDesc: map[int]string{429: "queue_full"}},

		// Once.
		{route: "POST /api/once/:key", id: "onceAcquire", tag: "Once", summary: "Hold a once-key: do a side effect at most once.",
			body: oaInput("", oaOpt("hold_for", oaNull(oaDurIn("How long the hold lasts; default 5m, at most 24h.")))),
			ok: []oaResp{oaOK(201, "Acquired: do the side effect, then POST /done with the token.", oaRef("OnceRecord")),
				oaOK(200, "Done before: the record, with its result.", oaRef("OnceRecord"))},
			errs: []int{409}, errDesc: map[int]string{409: "once_held: another run holds the key."}},
		{route: "POST /api/once/:key/done", id: "onceDone", tag: "Once", summary: "Store the result of a once-key's side effect.",
			body: oaInput("", oaReq("token", oaStr("")), oaOpt("result", oaAny(""))), bodyReq: true,
			ok: []oaResp{oaOK(200, "Done.", oaRef("OnceRecord"))}, errs: []int{404, 409},
			errDesc: map[int]string{409: "once_held: the token is not the holder's (the hold lapsed and another run took the key)."}},

		// Workers.
		{route: "POST /api/workers", id: "registerWorker", tag: "Workers", summary: "Register a worker (or take over its id after a restart).",
			body: oaRef("WorkerInput"), bodyReq: true,
			ok: []oaResp{oaOK(201, "Registered.", oaObject("", oaReq("id", oaStr("")), oaReq("command", oaEnum("", app.WorkerRun, app.WorkerQuiet, app.WorkerStop)),
				oaReq("heartbeat_interval", oaDur(""))))}},
		{route: "GET /api/workers", id: "listWorkers", tag: "Workers", summary: "Registered workers and their state.",
			ok: []oaResp{oaOK(200, "The first 1,000 workers in id order (of the queues the token may see).",
				oaObject("", oaReq("workers", oaArr(oaRef("Worker"))), oaReq("truncated", oaBool("More are registered."))))}},
		{route: "GET /api/workers/:id", id: "getWorker", tag: "Workers", summary: "One worker.", scoped: true,
			ok: []oaResp{oaOK(200, "The worker.", oaRef("Worker"))}, errs: []int{404}, errDesc: map[int]string{404: "worker_not_found"}},
		{route: "POST /api/workers/:id/heartbeat", id: "workerHeartbeat", tag: "Workers", summary: "A worker's heartbeat, with its counts; the answer carries its command.",
			body: oaInput("", oaOpt("in_flight", oaInt("")), oaOpt("done", oaInt64("")), oaOpt("failed", oaInt64(""))),
			ok:   []oaResp{oaOK(200, "The command.", oaObject("", oaReq("command", oaEnum("", app.WorkerRun, app.WorkerQuiet, app.WorkerStop))))},
			errs: []int{404}, errDesc: map[int]string{404: "worker_not_found: register again."}},
		{route: "POST /api/workers/:id/quiet", id: "quietWorker", tag: "Workers", summary: "Ask a worker to claim nothing more (it finishes its jobs).", body: emptyBody,
			ok: []oaResp{oaOK(200, "The worker.", oaRef("Worker"))}, errs: []int{404, 409},
			errDesc: map[int]string{404: "worker_not_found", 409: "illegal_transition: the worker was told to stop already."}},
		{route: "POST /api/workers/:id/stop", id: "stopWorker", tag: "Workers", summary: "Ask a worker to stop (its jobs go back to the queue).", body: emptyBody,
			ok: []oaResp{oaOK(200, "The worker.", oaRef("Worker"))}, errs: []int{404}, errDesc: map[int]string{404: "worker_not_found"}},

		// Webhooks (docs/integrations.md); every route needs role admin.
		{route: "GET /api/webhooks", id: "listWebhooks", tag: "Webhooks", summary: "Webhook subscriptions (API and config file).",
			ok: []oaResp{oaOK(200, "The subscriptions.", oaObject("", oaReq("webhooks", oaArr(oaRef("Webhook")))))}},
		{route: "POST /api/webhooks", id: "createWebhook", tag: "Webhooks", summary: "Make a webhook subscription (audited, without the secret).",
			body: oaRef("WebhookInput"), bodyReq: true,
			ok: []oaResp{oaOK(201, "Made.", oaRef("Webhook"))}, errs: []int{409},
			errDesc: map[int]string{409: "webhook_exists: one has that name; webhook_in_config: the config file declares it."}},
		{route: "GET /api/webhooks/:name", id: "getWebhook", tag: "Webhooks", summary: "One webhook subscription.",
			ok: []oaResp{oaOK(200, "The subscription.", oaRef("Webhook"))}, errs: []int{404}},
		{route: "PUT /api/webhooks/:name", id: "updateWebhook", tag: "Webhooks", summary: "Replace a webhook subscription (without secret: the old one stays).",
			body: oaRef("WebhookInput"), bodyReq: true,
			ok: []oaResp{oaOK(200, "Replaced.", oaRef("Webhook"))}, errs: []int{404, 409},
			errDesc: map[int]string{409: "webhook_in_config: the config file declares it (edit the file)."}},
		{route: "DELETE /api/webhooks/:name", id: "deleteWebhook", tag: "Webhooks", summary: "Delete a webhook subscription.",
			ok: []oaResp{oaNoBody(204, "Deleted.")}, errs: []int{404, 409}, errDesc: map[int]string{409: "webhook_in_config: the config file declares it."}},
		{route: "GET /api/webhooks/:name/deliveries", id: "webhookDeliveries", tag: "Webhooks", summary: "A subscription's deliveries, newest first.",
			ok: []oaResp{oaOK(200, "A page of deliveries.", oaRef("WebhookDeliveries"))}, errs: []int{404}},
		{route: "POST /api/webhooks/:name/test", id: "testWebhook", tag: "Webhooks", summary: "Deliver a webhook.test event to the subscription.", body: emptyBody,
			ok: []oaResp{oaOK(201, "The delivery job.", oaObject("", oaReq("job_id", oaInt64(""))))}, errs: []int{404}},

		// The document itself.
		{route: "GET /api/openapi.json", id: "openapi", tag: "Meta", summary: "This document: OpenAPI 3.1 of every route of the server.",
			desc: "Needs a token like every /api/ route (any role).",
			ok:   []oaResp{{status: 200, desc: "The document.", content: S{"application/json": S{"schema": S{"type": "object"}}}}}, noStore: true},
	}
	return ops
}

func oaLiveBulk(action, id, summary string) oaAPIOp {
	return oaAPIOp{route: "POST /api/jobs/" + action, id: id, tag: "Jobs", summary: summary + " (audited as jobs." + action + ")",
		desc: "With dry_run: only count, and answer a bound to pass back with the confirmed action, which then takes no job that came after. A token limited to queues must name one in queue.",
		body: oaRef("LiveBulkInput"), bodyReq: true,
		ok: []oaResp{oaOK(200, "What the action did (or would do).", oaRef("LiveBulkResult"))}}
}

func oaDLQBulk(action, id, summary string) oaAPIOp {
	o := oaAPIOp{route: "POST /api/dlq/" + action, id: id, tag: "Dead-letter queue", summary: summary + " (audited as dlq." + action + ")",
		desc: "With dry_run: only count (and sample), and answer a bound to pass back with the confirmed action. A token limited to queues must name one in queue.",
		body: oaRef("BulkInput"),
		ok:   []oaResp{oaOK(200, "What the action did (or would do).", oaRef("BulkResult"))}}
	if action == "replay" {
		o.errs, o.errDesc = []int{429}, map[int]string{429: "queue_full"}
	}
	return o
}
