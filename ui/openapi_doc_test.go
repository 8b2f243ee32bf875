package ui

import (
	"slices"

	"github.com/queuehq/queue/app"
)

// The OpenAPI document (embed/openapi.json, served by GET /api/openapi.json)
// is generated from this file and its two siblings: the route table
// (oaAPIRoutes in openapi_routes_test.go, oaPageRoutes in
// openapi_build_test.go) and the schemas (openapiSchemas), written by hand
// from the handlers and the types they answer with; and the rules every
// route shares (the guards, the tokens, the query check), derived from the
// tables the middleware reads (queryParams, routeRoles). `go test ./ui -run OpenAPI -update`
// rewrites the file; TestOpenAPIDocument fails while it differs.
// TestOpenAPIRoutes fails when a route of the router is missing here (or
// one is here that the router does not serve), TestOpenAPIFields when a
// field of an answer's Go type is missing from its schema, and every answer
// of the ui and e2e tests is validated against the document
// (internal/openapitest). A new route: add it to oaAPIRoutes or
// oaPageRoutes, run with -update, review the diff of embed/openapi.json.
// The helpers' names start with oa: these files share package ui's names.

// S is a piece of the document: a JSON object.
type S = map[string]any

// oaRef points at a schema of components.schemas.
func oaRef(name string) S { return S{"$ref": "#/components/schemas/" + name} }

func oaStr(desc string) S   { return oaDesc(S{"type": "string"}, desc) }
func oaInt(desc string) S   { return oaDesc(S{"type": "integer"}, desc) }
func oaInt64(desc string) S { return oaDesc(S{"type": "integer", "format": "int64"}, desc) }
func oaNum(desc string) S   { return oaDesc(S{"type": "number"}, desc) }
func oaBool(desc string) S  { return oaDesc(S{"type": "boolean"}, desc) }
func oaAny(desc string) S {
	return oaDesc(S{"type": []any{"null", "boolean", "number", "string", "array", "object"}}, desc)
}
func oaTime(desc string) S { return oaDesc(S{"type": "string", "format": "date-time"}, desc) }
func oaArr(items S) S      { return S{"type": "array", "items": items} }
func oaMap(v S) S          { return S{"type": "object", "additionalProperties": v} }
func oaEnum(desc string, values ...string) S {
	return oaDesc(S{"type": "string", "enum": values}, desc)
}

// oaDur is a duration as answers write it (app.FormatDuration).
func oaDur(desc string) S {
	return oaDesc(S{"type": "string", "examples": []any{"30s", "5m", "1h30m", "7d"}}, desc)
}

// oaDurIn is a duration as requests give it: a string ("30s", "5m", "7d")
// or a number of seconds (app.Duration's UnmarshalJSON).
func oaDurIn(desc string) S {
	return oaDesc(S{"type": []any{"string", "number"}, "examples": []any{"30s", 90, "7d"}}, desc)
}

// oaID is a positive id.
func oaID(desc string) S {
	return oaDesc(S{"type": "integer", "format": "int64", "minimum": 1}, desc)
}

func oaDesc(s S, desc string) S {
	if desc != "" {
		s["description"] = desc
	}
	return s
}

// oaNull makes s nullable: a type array for a plain schema (OpenAPI 3.1),
// anyOf with null for a reference.
func oaNull(s S) S {
	if _, ok := s["$ref"]; ok {
		return S{"anyOf": []any{s, S{"type": "null"}}}
	}
	out := S{}
	for k, v := range s {
		out[k] = v
	}
	if t, ok := s["type"].(string); ok {
		out["type"] = []any{t, "null"}
	}
	return out
}

// oaField is one property of an object schema.
type oaField struct {
	name     string
	s        S
	required bool
}

// oaReq is a property every answer carries (or a request must give).
func oaReq(name string, s S) oaField { return oaField{name, s, true} }

// oaOpt is a property that may be absent.
func oaOpt(name string, s S) oaField { return oaField{name, s, false} }

func oaObjectOf(desc string, extra bool, fields []oaField) S {
	props, required := S{}, []any{}
	for _, f := range fields {
		props[f.name] = f.s
		if f.required {
			required = append(required, f.name)
		}
	}
	s := oaDesc(S{"type": "object", "properties": props, "additionalProperties": extra}, desc)
	if len(required) > 0 {
		s["required"] = required
	}
	return s
}

// oaObject is an answer: every property it has is listed, and more may come
// in later versions (additionalProperties).
func oaObject(desc string, fields ...oaField) S { return oaObjectOf(desc, true, fields) }

// oaInput is a request body: the API decodes bodies strictly, so a property
// not listed is refused (400 invalid_field).
func oaInput(desc string, fields ...oaField) S { return oaObjectOf(desc, false, fields) }

// The patterns of names the API checks (app/validate.go and friends).
const (
	oaQueuePattern = `^[A-Za-z0-9_.\-]{1,64}$`
	oaKindPattern  = `^[A-Za-z0-9_.:\-]{1,128}$`
	// A subscription's name starts with a letter or a digit (never "." or "..").
	oaWebhookPattern = `^[A-Za-z0-9][A-Za-z0-9_.\-]{0,63}$`
	oaTracePattern   = `^00-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$`
)

func oaQueueName(desc string) S { return oaDesc(S{"type": "string", "pattern": oaQueuePattern}, desc) }
func oaKindName(desc string) S  { return oaDesc(S{"type": "string", "pattern": oaKindPattern}, desc) }

// oaJobStatus is a job's status as answers show it (app.Status); a job in the
// dead-letter queue shows as dead_letter.
func oaJobStatus() S {
	return oaEnum("queued: waiting for run_at and a worker; processing: claimed under a live lease; done and cancelled: terminal; dead_letter: in the dead-letter queue (shown through the jobs routes by its id).",
		"queued", "processing", "done", "cancelled", "dead_letter")
}

// oaSubmitFields are the fields of one job as POST /api/jobs takes it
// (app.SubmitInput), shared with the steps of a workflow.
func oaSubmitFields() []oaField {
	return []oaField{
		oaOpt("queue", oaQueueName("The queue; default \"default\". Names starting with _ are reserved (the internal queue _webhooks).")),
		oaOpt("payload", oaAny("Any JSON value, at most 1 MiB; default null.")),
		oaOpt("priority", oaDesc(S{"type": "integer", "minimum": -app.MaxPriority, "maximum": app.MaxPriority}, "Higher is claimed first; default 0.")),
		oaOpt("run_at", oaTime("When the job becomes claimable (RFC 3339); not with delay.")),
		oaOpt("delay", oaDurIn("Claimable after this long (up to 10 years); not with run_at.")),
		oaOpt("max_attempts", oaDesc(S{"type": "integer", "minimum": 1, "maximum": 1000}, "Attempts before the dead-letter queue; default the queue's max_attempts.")),
		oaOpt("timeout", oaDurIn("Lease of one attempt, 1ms to 24h; default the queue's timeout.")),
		oaOpt("ttl", oaDurIn("The job expires (cancelled, reason expired) if not started within this long; not with expires_at.")),
		oaOpt("expires_at", oaTime("The job expires if not started by then; not with ttl.")),
		oaOpt("tags", oaDesc(S{"type": "array", "items": oaKindName(""), "maxItems": app.MaxTags}, "Up to 16 tags (the kind's characters).")),
		oaOpt("idempotency_key", oaDesc(S{"type": "string", "maxLength": app.MaxKeyLength}, "A repeat with the same key in the same queue answers 200 with the first job (the Idempotency-Key header is the same)")),
		oaOpt("key", oaDesc(S{"type": "string", "maxLength": app.MaxKeyLength}, "Flow-control key (docs/flow-control.md): the queue's key_concurrency and key_rate limit the jobs of one key.")),
		oaOpt("unique", oaRef("UniqueRule")),
		oaOpt("debounce", oaDurIn("Debounce: a submission within this long of a queued one with the same kind, payload and key replaces its payload and moves its run_at (docs/flow-control.md).")),
		oaOpt("throttle", oaDurIn("Throttle: at most one job per this long per kind, payload and key; the others answer the first (duplicate).")),
		oaOpt("callback_url", oaDesc(S{"type": "string", "format": "uri", "maxLength": app.MaxCallbackURL}, "Absolute http(s) URL called (POST, signed) when the job ends: succeeded, dead-lettered, cancelled or expired. Private, loopback and link-local targets are refused unless [webhooks] allows them (docs/integrations.md).")),
		oaOpt("traceparent", oaDesc(S{"type": "string", "pattern": oaTracePattern}, "W3C trace context (version 00) the job joins; the traceparent header does the same, the field wins (docs/integrations.md).")),
		oaOpt("tracestate", oaDesc(S{"type": "string", "maxLength": app.MaxTracestate}, "W3C tracestate passed on with traceparent.")),
	}
}

// openapiSchemas are components.schemas.
func openapiSchemas() S {
	submit := append([]oaField{oaReq("kind", oaKindName("What the job is; workers claim by kind."))}, oaSubmitFields()...)
	step := append([]oaField{
		oaReq("step", oaStr("The step's name, unique in the workflow.")),
		oaReq("kind", oaKindName("The step job's kind.")),
		oaOpt("depends_on", oaArr(oaRef("DependencyInput"))),
		oaOpt("on_failure", oaEnum("continue: the dependants of this step run even if it dead-letters or is cancelled.", "continue")),
	}, oaSubmitFields()...)
	step = slices.DeleteFunc(step, func(f oaField) bool { return f.name == "idempotency_key" })
	queueConfig := []oaField{
		oaReq("max_attempts", oaInt("Attempts before the dead-letter queue.")),
		oaReq("timeout", oaDur("Lease of one attempt.")),
		oaReq("backoff_base", oaDur("First retry delay; doubled per attempt.")),
		oaReq("backoff_max", oaDur("Longest retry delay.")),
		oaReq("retention", oaDur("How long done and cancelled jobs are kept.")),
		oaReq("dlq_retention", oaDur("How long dead-letter rows are kept.")),
		oaReq("concurrency", oaInt("Most jobs processing at once across workers; 0: no limit.")),
		oaReq("rate", oaNum("Most claims per second; 0: no limit.")),
		oaReq("burst", oaInt("Claims allowed at once under rate.")),
		oaReq("max_queued", oaInt("Submissions beyond this many queued jobs get 429 queue_full; 0: no limit.")),
		oaOpt("key_concurrency", oaInt("Most jobs of one key processing at once.")),
		oaOpt("key_rate", oaStr("Jobs of one key per period: \"N/period\" (\"10/1m\").")),
		oaOpt("fairness", oaStr("How keys take turns: round_robin, or absent.")),
		oaReq("log_kib", oaInt("Bound of one attempt's log, KiB.")),
	}
	settingValues := func(desc string, in bool) S {
		n := func(s S) S {
			if in {
				return oaNull(s)
			}
			return s
		}
		d := oaDur
		if in {
			d = oaDurIn
		}
		fields := []oaField{
			oaOpt("max_attempts", n(oaDesc(S{"type": "integer", "minimum": 1, "maximum": 1000}, ""))),
			oaOpt("timeout", n(d(""))), oaOpt("backoff_base", n(d(""))), oaOpt("backoff_max", n(d(""))),
			oaOpt("retention", n(d(""))), oaOpt("dlq_retention", n(d(""))),
			oaOpt("concurrency", n(oaInt(""))), oaOpt("rate", n(oaNum(""))), oaOpt("burst", n(oaInt(""))),
			oaOpt("max_queued", n(oaInt(""))), oaOpt("key_concurrency", n(oaInt(""))),
			oaOpt("key_rate", n(oaDesc(S{"type": []any{"string", "number"}}, "\"N/period\" (\"10/1m\"), or a number per second"))),
			oaOpt("fairness", n(oaStr(""))), oaOpt("log_kib", n(oaInt(""))),
		}
		if in {
			return oaInput(desc, fields...)
		}
		return oaObject(desc, fields...)
	}
	periodicConfig := []oaField{
		oaReq("name", oaStr("Unique; default \"<queue>/<kind>/<cron>\" for entries of the config file.")),
		oaReq("cron", oaStr("Five cron fields, or @every 1m, @hourly, @daily ...")),
		oaReq("timezone", oaStr("IANA time zone of the schedule; \"\" is UTC.")),
		oaReq("queue", oaStr("")),
		oaReq("kind", oaStr("")),
		oaReq("payload", oaAny("The jobs' payload.")),
		oaReq("priority", oaInt("")),
		oaReq("max_attempts", oaInt("0: the queue's.")),
		oaReq("timeout", oaDur("0s: the queue's.")),
		oaReq("tags", oaNull(oaArr(oaStr("")))),
		oaOpt("key", oaStr("The jobs' flow-control key.")),
		oaReq("catch_up", oaStr("one (fire once for missed runs after downtime, the default) or none.")),
		oaReq("skip_if_pending", oaBool("Skip a fire while a job of the entry is still queued or processing.")),
	}
	bulkFilter := func(more ...oaField) []oaField {
		return append([]oaField{
			oaOpt("ids", oaArr(oaID(""))),
			oaOpt("queue", oaStr("")), oaOpt("kind", oaStr("")), oaOpt("tag", oaStr("")),
			oaOpt("allow_all", oaBool("Act on every row or job: without a filter a bulk action is 400 filter_required.")),
		}, more...)
	}
	return S{
		"Error": oaObject("Every error answer of the API (SPEC section 4).", oaReq("error", oaRef("ErrorBody"))),
		"ErrorBody": oaObject("",
			oaReq("code", oaStr("What went wrong, for programs: invalid_json, invalid_field, filter_required, unauthorized, forbidden, cross_site, not_found, worker_not_found, lease_lost, illegal_transition, idempotency_conflict, once_held, periodic_exists, periodic_in_config, webhook_exists, webhook_in_config, too_large, unsupported_media_type, host_not_allowed, queue_full, too_many_requests, internal, unavailable ...")),
			oaReq("message", oaStr("What went wrong, for people.")),
			oaOpt("field", oaStr("The request field (or query parameter) at fault, if one is.")),
		),
		"KeyCount": oaObject("A flow-control key's jobs.",
			oaReq("key", oaStr("")), oaReq("queued", oaInt("")), oaReq("processing", oaInt("")), oaReq("held", oaInt(""))),
		"PausedState": oaObject("", oaReq("name", oaStr("The queue.")), oaReq("paused", oaBool(""))),
		"Job": oaObject("A job (app.Job). A job in the dead-letter queue, read through the jobs routes, shows with status dead_letter and dead_letter set.",
			oaReq("id", oaInt64("")),
			oaReq("queue", oaStr("")),
			oaReq("kind", oaStr("")),
			oaReq("payload", oaAny("As submitted; null if none.")),
			oaReq("status", oaJobStatus()),
			oaReq("priority", oaInt("")),
			oaReq("run_at", oaTime("When it is (or was) claimable.")),
			oaReq("attempts", oaInt("Attempts started.")),
			oaReq("max_attempts", oaInt("")),
			oaReq("timeout", oaDur("Lease of one attempt.")),
			oaReq("expires_at", oaNull(oaTime(""))),
			oaReq("tags", oaArr(oaStr(""))),
			oaOpt("idempotency_key", oaStr("")),
			oaReq("lease", oaInt64("The lease of the current (or last) claim; a worker's calls carry it. 0 before the first claim.")),
			oaReq("lease_expires_at", oaNull(oaTime(""))),
			oaOpt("worker_id", oaStr("The worker that holds (or held) it.")),
			oaReq("cancel_requested", oaBool("A cancel was asked while it was processing: its worker should stop.")),
			oaOpt("cancel_reason", oaStr("Why it was cancelled: requested, expired, drained, ...")),
			oaReq("errors", oaArr(oaRef("AttemptError"))),
			oaReq("result", oaAny("What the completing worker gave; null until then.")),
			oaReq("replayed_from", oaNull(oaInt64("The dead-letter row it was replayed from."))),
			oaOpt("workflow_id", oaInt64("The workflow whose step it runs.")),
			oaOpt("step", oaStr("That step's name.")),
			oaOpt("key", oaStr("Its flow-control key.")),
			oaOpt("waiting_for_key", oaDesc(S{"type": "boolean", "const": true}, "Queued, but held back until its key has room.")),
			oaOpt("parents", oaDesc(oaArr(oaRef("Parent")), "In claim answers: the steps this step depends on, with their results.")),
			oaReq("created_at", oaTime("")),
			oaReq("updated_at", oaTime("")),
			oaReq("started_at", oaNull(oaTime("When the current (or last) attempt started."))),
			oaReq("finished_at", oaNull(oaTime(""))),
			oaOpt("dead_letter", oaRef("DeadLetterInfo")),
			oaOpt("events", oaDesc(oaArr(oaRef("Event")), "With ?events=true: the job's recorded events.")),
			oaOpt("progress", oaDesc(S{"type": "integer", "minimum": 0, "maximum": 100}, "What the current attempt last reported, in percent.")),
			oaOpt("progress_message", oaStr("")),
			oaOpt("progress_at", oaTime("")),
			oaOpt("callback_url", oaStr("")),
			oaOpt("traceparent", oaStr("")),
			oaOpt("tracestate", oaStr("")),
		),
		"SubmittedJob": S{"description": "A job as a submission answers it: \"duplicate\": true when a unique, debounce or throttle rule answered with a job stored before.",
			"allOf": []any{oaRef("Job"), oaObject("", oaOpt("duplicate", oaDesc(S{"type": "boolean", "const": true}, "")))}},
		"AttemptError": oaObject("One failed attempt.", oaReq("attempt", oaInt("")), oaReq("at", oaTime("")), oaReq("error", oaStr(""))),
		"DeadLetterInfo": oaObject("Why and when a job moved to the dead-letter queue.",
			oaReq("dead_letter_reason", oaStr("max_attempts, no_retry, lease_expired, admin_move ...")),
			oaReq("last_error", oaStr("")),
			oaReq("moved_to_dead_letter_at", oaTime("")),
			oaReq("original_lease", oaInt64("")),
			oaReq("original_created_at", oaTime("")),
			oaReq("resurrection_count", oaInt("How often it was replayed.")),
			oaReq("last_resurrection_at", oaNull(oaTime(""))),
			oaReq("note", oaStr("An operator's note of an admin move.")),
			oaReq("replayed_job_id", oaNull(oaInt64("The last job a replay made from it."))),
		),
		"DeadJob": oaObject("A row of the dead-letter queue (app.DeadJob).",
			oaReq("id", oaInt64("The job's id, kept.")),
			oaReq("status", oaDesc(S{"type": "string", "const": "dead_letter"}, "")),
			oaReq("queue", oaStr("")), oaReq("kind", oaStr("")),
			oaReq("payload", oaAny("")),
			oaReq("priority", oaInt("")),
			oaReq("tags", oaArr(oaStr(""))),
			oaReq("attempts", oaInt("")), oaReq("max_attempts", oaInt("")),
			oaReq("timeout", oaDur("")),
			oaReq("errors", oaArr(oaRef("AttemptError"))),
			oaOpt("idempotency_key", oaStr("")),
			oaReq("original_created_at", oaTime("")),
			oaReq("replayed_from", oaNull(oaInt64(""))),
			oaReq("dead_letter_reason", oaStr("")),
			oaReq("last_error", oaStr("")),
			oaReq("moved_to_dead_letter_at", oaTime("")),
			oaReq("original_lease", oaInt64("")),
			oaReq("resurrection_count", oaInt("")),
			oaReq("last_resurrection_at", oaNull(oaTime(""))),
			oaReq("started_at", oaNull(oaTime("When the failed attempt started."))),
			oaReq("run_at", oaNull(oaTime("When the job was due."))),
			oaReq("worker_id", oaStr("The worker of the failed attempt.")),
			oaReq("note", oaStr("")),
			oaReq("replayed_job_id", oaNull(oaInt64(""))),
			oaOpt("workflow_id", oaInt64("")), oaOpt("step", oaStr("")), oaOpt("key", oaStr("")),
			oaOpt("callback_url", oaStr("")), oaOpt("traceparent", oaStr("")), oaOpt("tracestate", oaStr("")),
		),
		"Parent": oaObject("A step a workflow step depends on, with its outcome.",
			oaReq("step", oaStr("")),
			oaReq("status", oaEnum("", "waiting", "released", "done", "dead_letter", "cancelled")),
			oaOpt("job_id", oaInt64("")),
			oaReq("result", oaAny("")),
			oaOpt("error", oaStr("")),
		),
		"Event": oaObject("A lifecycle event (app.Event): job.submitted, job.started, job.succeeded, job.retry_scheduled, job.dead_lettered, job.cancelled, job.cancel_requested, job.snoozed, job.debounced, job.expired, job.lease_lost, job.progress, job.log, dlq.replayed, dlq.purged, queue.paused, queue.resumed, workflow.* ...",
			oaOpt("id", oaInt64("Its id in the event log (absent for events not recorded).")),
			oaReq("type", oaStr("")),
			oaOpt("job_id", oaInt64("")),
			oaOpt("queue", oaStr("")),
			oaOpt("kind", oaStr("")),
			oaReq("at", oaTime("")),
			oaOpt("data", oaAny("What the type adds: the attempt and lease of job.started, the error of a failure, ...")),
		),
		"SubmitInput": oaInput("One job to submit (app.SubmitInput).", submit...),
		"UniqueRule": oaInput("A unique rule (docs/flow-control.md): a submission matching a job stored before answers that job (duplicate) instead of making one.",
			oaOpt("by", oaArr(oaEnum("", "key", "kind", "payload"))),
			oaOpt("while", oaArr(oaEnum("", "queued", "scheduled", "processing", "done"))),
			oaOpt("for", oaDurIn("How far back a match counts, from its creation; 0: no bound.")),
		),
		"JobPage": oaObject("A page of jobs.",
			oaReq("jobs", oaArr(oaRef("Job"))),
			oaReq("next_cursor", oaStr("Pass as ?cursor= for the next page; \"\" at the end.")),
			oaOpt("total", oaInt("How many jobs the filter matches (with count=true)."))),
		"DeadPage": oaObject("A page of the dead-letter queue.",
			oaReq("jobs", oaArr(oaRef("DeadJob"))),
			oaReq("next_cursor", oaStr("Pass as ?cursor= for the next page; \"\" at the end."))),
		"ClaimInput": oaInput("A claim (app.ClaimInput).",
			oaOpt("worker_id", oaStr("Names the claimer (a registered worker's id gets its command back); default \"http:<address>\".")),
			oaOpt("limit", oaDesc(S{"type": "integer", "minimum": 0, "maximum": app.MaxClaim}, "Most jobs to take; default 1.")),
			oaOpt("wait", oaNull(oaDurIn("Long poll: wait up to this long (at most 60s) for a job."))),
			oaOpt("kinds", oaNull(oaArr(oaStr("Only these kinds.")))),
			oaOpt("timeout", oaNull(oaDurIn("The lease of these jobs, instead of each job's timeout."))),
			oaOpt("queues", oaRef("QueueChoice")),
		),
		"QueueChoice": S{"description": "Queues of one claim: an array is a strict order (each emptied before the next), an object gives weights (claims drawn in proportion).",
			"oneOf": []any{oaArr(oaQueueName("")), oaMap(oaDesc(S{"type": "integer", "minimum": 1, "maximum": 1000}, ""))}},
		"Claimed": oaObject("Jobs handed out: each processing, with its lease and lease_expires_at (and parents, for a workflow step).",
			oaReq("jobs", oaArr(oaRef("Job"))),
			oaOpt("command", oaEnum("For a registered worker: what its operator asks (run, quiet, stop).", app.WorkerRun, app.WorkerQuiet, app.WorkerStop))),
		"QueueConfig": oaObject("A queue's policy (config file [defaults] and [queues.NAME], runtime settings).", queueConfig...),
		"QueueInfo": oaObject("A queue.",
			oaReq("name", oaStr("")), oaReq("paused", oaBool("")), oaOpt("paused_at", oaTime("")), oaReq("config", oaRef("QueueConfig"))),
		"QueueStats": oaObject("Counts of one queue (or of all of them).",
			oaOpt("queue", oaStr("The queue; absent in the total.")),
			oaReq("total", oaInt64("The sum of the next six.")),
			oaReq("queued", oaInt64("Claimable now.")),
			oaReq("scheduled", oaInt64("Queued with run_at in the future.")),
			oaReq("processing", oaInt64("")), oaReq("done", oaInt64("")), oaReq("cancelled", oaInt64("")),
			oaReq("dead_letter", oaInt64("Rows in the dead-letter queue.")),
			oaReq("oldest_queued_age_seconds", oaNum("")),
			oaReq("completed_last_minute", oaInt64("")),
			oaReq("failed_last_minute", oaInt64("")),
		),
		"UnclaimedKind": oaObject("A kind with queued jobs that no worker claimed lately.",
			oaReq("queue", oaStr("")), oaReq("kind", oaStr("")), oaReq("queued", oaInt64("")), oaReq("oldest_age_seconds", oaNum(""))),
		"Stats": oaObject("Counts per queue and in total.",
			oaReq("queues", oaMap(oaRef("QueueStats"))),
			oaReq("total", oaRef("QueueStats")),
			oaReq("unclaimed_kinds", oaArr(oaRef("UnclaimedKind"))),
			oaReq("at", oaTime(""))),
		"Series": oaObject("The numbers of the charts (app.Series): one point per step of the range.",
			oaOpt("queue", oaStr("The queue; absent for every queue.")),
			oaReq("range", oaEnum("", "1h", "24h", "7d")),
			oaReq("step_seconds", oaInt64("")),
			oaReq("from", oaTime("The first point's start.")),
			oaReq("to", oaTime("Now.")),
			oaReq("points", oaArr(oaObject("",
				oaReq("at", oaTime("The step's start.")),
				oaReq("completed", oaInt64("")), oaReq("failed", oaInt64("")),
				oaReq("claimed", oaInt64("")),
				oaReq("wait_mean_seconds", oaNum("Pickup wait of the claims, mean.")),
				oaReq("wait_max_seconds", oaNum("Pickup wait of the claims, longest.")),
				oaReq("queued", oaNum("Queued depth: the mean of the step's minute samples.")),
				oaReq("queued_max", oaInt64("")),
			)))),
		"DeadStats": oaObject("The dead-letter queue by queue, kind, reason and day.",
			oaReq("total", oaInt64("")),
			oaReq("by_queue", oaMap(oaInt64(""))), oaReq("by_kind", oaMap(oaInt64(""))),
			oaReq("by_reason", oaMap(oaInt64(""))), oaReq("by_day", oaMap(oaInt64("UTC day 2006-01-02"))),
			oaReq("oldest_age_seconds", oaNum("")),
			oaReq("replayed", oaInt64("Rows replayed at least once.")),
			oaReq("replays", oaInt64("Replays in all.")),
			oaReq("at", oaTime(""))),
		"ReplayInput": oaInput("A replay of one dead-letter row (app.ReplayInput): when the new job runs and what it changes.",
			oaOpt("run_at", oaNull(oaTime(""))), oaOpt("delay", oaNull(oaDurIn(""))),
			oaOpt("queue", oaStr("Replay into another queue.")),
			oaOpt("priority", oaInt("")), oaOpt("max_attempts", oaInt("")),
			oaOpt("payload", oaAny("Replace the payload.")),
			oaOpt("payload_patch", oaAny("A JSON merge patch (RFC 7396) on the payload.")),
		),
		"BulkInput": oaInput("A bulk action on the dead-letter queue (replay, purge) or on jobs (move to the dead-letter queue) (app.BulkInput).",
			bulkFilter(
				oaOpt("reason", oaStr("Only rows of this dead-letter reason.")),
				oaOpt("older_than", oaDurIn("Only rows moved longer ago than this.")),
				oaOpt("moved_after", oaTime("")), oaOpt("moved_before", oaTime("")),
				oaOpt("include_replayed", oaBool("Replay rows replayed before too (skipped otherwise).")),
				oaOpt("bound", oaStr("The bound a dry run answered: the action takes no row that came after it.")),
				oaOpt("dry_run", oaBool("Only count (and sample).")),
				oaOpt("rate", oaNum("Replay: new jobs per second (spread in time).")),
				oaOpt("set", oaInput("What the replayed jobs get instead of their rows' values.",
					oaOpt("queue", oaStr("")), oaOpt("priority", oaInt("")), oaOpt("max_attempts", oaInt("")),
					oaOpt("payload", oaAny("")), oaOpt("payload_patch", oaAny("")))),
				oaOpt("run_at", oaTime("")), oaOpt("delay", oaDurIn("")),
				oaOpt("statuses", oaArr(oaEnum("", "queued", "scheduled", "cancelled"))),
				oaOpt("note", oaStr("Move: the operator's note on the rows.")),
			)...),
		"BulkResult": oaObject("What a bulk action did, or (dry_run) would do.",
			oaReq("count", oaInt("Rows (jobs) acted on.")),
			oaOpt("dry_run", oaDesc(S{"type": "boolean", "const": true}, "")),
			oaOpt("bound", oaStr("Pass back with the confirmed action.")),
			oaOpt("sample", oaArr(oaRef("DeadJob"))),
			oaOpt("sample_jobs", oaArr(oaRef("Job")))),
		"LiveBulkInput": oaInput("A bulk action on live jobs (cancel, retry, reschedule, prioritize, delete) for the jobs a filter of GET /api/jobs finds (app.LiveBulkInput).",
			bulkFilter(
				oaOpt("status", oaStr("")), oaOpt("key", oaStr("")),
				oaOpt("workflow", oaInt64("")), oaOpt("replayed_from", oaInt64("")),
				oaOpt("payload", oaDesc(oaMap(oaStr("")), "Payload path (\"address.city\", \"items.0.sku\") to the value it must match.")),
				oaOpt("error", oaStr("Text in the last error.")),
				oaOpt("created_after", oaStr("RFC 3339, or a duration back from now (\"1h\").")), oaOpt("created_before", oaStr("")),
				oaOpt("run_after", oaStr("")), oaOpt("run_before", oaStr("")),
				oaOpt("finished_after", oaStr("")), oaOpt("finished_before", oaStr("")),
				oaOpt("dry_run", oaBool("")), oaOpt("bound", oaStr("")),
				oaOpt("rate", oaNum("Retry: jobs per second.")),
				oaOpt("run_at", oaTime("Reschedule: the new run_at.")), oaOpt("delay", oaDurIn("Reschedule: from now.")),
				oaOpt("priority", oaInt("Prioritize: the new priority.")),
			)...),
		"LiveBulkResult": oaObject("What a bulk action on live jobs did.",
			oaReq("matched", oaInt("")), oaReq("changed", oaInt("")), oaReq("skipped", oaInt("")),
			oaReq("count", oaInt("changed, as the dead-letter queue's bulk answers")),
			oaOpt("dry_run", oaDesc(S{"type": "boolean", "const": true}, "")),
			oaOpt("bound", oaStr("")),
			oaOpt("sample", oaArr(oaRef("Job")))),
		"AuditEntry": oaObject("An admin action (or a refused request of a named token).",
			oaReq("id", oaInt64("")), oaReq("at", oaTime("")),
			oaReq("actor", oaStr("The token's name, or \"local\" without tokens.")),
			oaReq("action", oaStr("")),
			oaOpt("target", oaStr("")),
			oaOpt("filter", oaAny("The filters or body of the action.")),
			oaReq("count", oaInt(""))),
		"Workflow": oaObject("A workflow (app.Workflow).",
			oaReq("id", oaInt64("")), oaReq("name", oaStr("")), oaReq("tags", oaArr(oaStr(""))),
			oaReq("status", oaEnum("", "running", "blocked", "done", "cancelled")),
			oaReq("step_count", oaInt("")), oaReq("done_count", oaInt("")), oaReq("failed_count", oaInt("")),
			oaReq("created_at", oaTime("")), oaReq("updated_at", oaTime("")),
			oaReq("finished_at", oaNull(oaTime("")))),
		"WorkflowStep": oaObject("A step of a workflow.",
			oaReq("workflow_id", oaInt64("")),
			oaReq("step", oaStr("")), oaReq("queue", oaStr("")), oaReq("kind", oaStr("")),
			oaReq("depends_on", oaArr(oaRef("Dependency"))),
			oaReq("status", oaEnum("waiting (for a dependency), the job's status once released, or dead_letter / cancelled.", "waiting", "queued", "processing", "done", "cancelled", "dead_letter")),
			oaOpt("job_id", oaInt64("")),
			oaReq("waiting_on", oaInt("Unresolved dependencies.")),
			oaOpt("result", oaAny("")), oaOpt("error", oaStr("")),
			oaReq("released_at", oaNull(oaTime(""))),
			oaReq("finished_at", oaNull(oaTime(""))),
			oaOpt("job_status", oaJobStatus()),
			oaReq("attempts", oaInt("")),
			oaReq("started_at", oaNull(oaTime("")))),
		"Dependency": oaObject("", oaReq("step", oaStr("")), oaOpt("on_failure", oaStr(""))),
		"DependencyInput": S{"description": "A step name, or {\"step\", \"on_failure\": \"continue\"}.",
			"oneOf": []any{oaStr(""), oaInput("", oaReq("step", oaStr("")), oaOpt("on_failure", oaEnum("", "continue")))}},
		"WorkflowView": S{"description": "A workflow with its steps and critical path.",
			"allOf": []any{oaRef("Workflow"), oaObject("",
				oaReq("steps", oaArr(oaRef("WorkflowStep"))),
				oaReq("critical_path", oaArr(oaStr(""))))}},
		"WorkflowPage": oaObject("A page of workflows.",
			oaReq("workflows", oaArr(oaRef("Workflow"))),
			oaOpt("next_cursor", oaStr("Absent at the end."))),
		"StepInput": oaInput("A workflow step: a job (as POST /api/jobs takes it, without idempotency_key) with a name and dependencies.", step...),
		"WorkflowInput": oaInput("A workflow (app.WorkflowInput): the whole graph, submitted in one transaction.",
			oaReq("name", oaStr("")),
			oaOpt("tags", oaArr(oaStr(""))),
			oaReq("steps", oaArr(oaRef("StepInput"))),
			oaOpt("callback", oaRef("StepInput"))),
		"PeriodicStatus": oaObject("A periodic job (config file or API) and its schedule (app.PeriodicStatus).",
			append(periodicConfig,
				oaReq("source", oaEnum("", app.PeriodicFromFile, app.PeriodicFromAPI)),
				oaReq("paused", oaBool("")),
				oaOpt("paused_at", oaTime("")),
				oaReq("last_fire", oaNull(oaTime(""))),
				oaReq("next_fire", oaNull(oaTime(""))),
				oaOpt("updated_at", oaTime("")),
				oaOpt("updated_by", oaStr("")))...),
		"PeriodicInput": oaInput("A periodic job made or replaced through the API (app.PeriodicInput).",
			oaReq("name", oaStr("")), oaReq("cron", oaStr("")),
			oaOpt("timezone", oaStr("")), oaOpt("queue", oaStr("")),
			oaReq("kind", oaKindName("")),
			oaOpt("payload", oaAny("")), oaOpt("priority", oaInt("")), oaOpt("max_attempts", oaInt("")),
			oaOpt("timeout", oaDurIn("")), oaOpt("tags", oaArr(oaStr(""))), oaOpt("key", oaStr("")),
			oaOpt("catch_up", oaEnum("", "one", "none")), oaOpt("skip_if_pending", oaBool(""))),
		"QueueSettings": oaObject("A queue's settings: effective values, the runtime and file layers, and where each comes from (app.QueueSettingsView).",
			oaReq("queue", oaStr("")),
			oaReq("effective", oaRef("QueueConfig")),
			oaReq("runtime", oaRef("QueueSettingValues")),
			oaReq("file", oaRef("QueueSettingValues")),
			oaReq("sources", oaMap(oaEnum("", app.SourceRuntime, app.SourceFile, app.SourceFileDefaults, app.SourceBuiltin))),
			oaReq("updated_at", oaNull(oaTime("The last runtime change."))),
			oaReq("updated_by", oaNull(oaStr(""))),
			oaReq("precedence", oaStr(""))),
		"QueueSettingValues": settingValues("Values of one layer (runtime or file), by setting name; a setting the layer does not set is absent.", false),
		"QueueSettingsPatch": settingValues("The runtime settings to change: a value sets one, null unsets it (the file's value applies again).", true),
		"OnceRecord": oaObject("A once-record (POST /api/once/{key}): a side effect done at most once.",
			oaReq("key", oaStr("")),
			oaOpt("token", oaStr("The holder's token; give it to /done.")),
			oaReq("done", oaBool("")),
			oaOpt("result", oaAny("")),
			oaOpt("held_until", oaTime("")),
			oaReq("created_at", oaTime("")),
			oaOpt("done_at", oaTime(""))),
		"Worker": oaObject("A registered worker (app.Worker).",
			oaReq("id", oaStr("")), oaReq("host", oaStr("")), oaReq("pid", oaInt("")), oaReq("version", oaStr("")),
			oaReq("queues", oaRef("QueueChoice")),
			oaReq("kinds", oaArr(oaStr(""))),
			oaReq("concurrency", oaInt("")),
			oaReq("type", oaEnum("", app.WorkerHTTP, app.WorkerGo, app.WorkerBuiltin)),
			oaReq("command", oaEnum("", app.WorkerRun, app.WorkerQuiet, app.WorkerStop)),
			oaReq("started_at", oaTime("")), oaReq("last_seen_at", oaTime("")),
			oaReq("in_flight", oaInt("")), oaReq("done", oaInt64("")), oaReq("failed", oaInt64("")),
			oaOpt("state", oaEnum("", app.WorkerRunning, app.WorkerQuieted, app.WorkerStopping, app.WorkerGone))),
		"WorkerInput": oaInput("A worker's registration (app.WorkerInput).",
			oaOpt("id", oaStr("Default: made by the server (host:pid-random).")),
			oaReq("host", oaStr("")), oaReq("pid", oaDesc(S{"type": "integer", "minimum": 1, "maximum": app.MaxWorkerPID}, "")),
			oaOpt("version", oaStr("")),
			oaReq("queues", oaRef("QueueChoice")),
			oaOpt("kinds", oaNull(oaArr(oaStr("")))),
			oaReq("concurrency", oaDesc(S{"type": "integer", "minimum": 1}, "")),
			oaOpt("type", oaEnum("", "", app.WorkerHTTP, app.WorkerGo, app.WorkerBuiltin))),
		"JobLog": oaObject("Lines of one attempt's log (app.JobLog).",
			oaReq("job_id", oaInt64("")),
			oaReq("attempt", oaInt("The attempt read.")),
			oaReq("attempts", oaArr(oaInt("Attempts that have lines."))),
			oaReq("lines", oaArr(oaRef("LogLine"))),
			oaReq("truncated", oaBool("The attempt's log reached its bound and lost its oldest lines.")),
			oaOpt("next_after", oaInt64("More lines: pass as ?after=."))),
		"LogLine": oaObject("", oaReq("seq", oaInt64("")), oaReq("at", oaTime("")), oaReq("stream", oaStr("stdout or stderr, or what the worker said.")), oaReq("line", oaStr(""))),
		"Webhook": oaObject("A webhook subscription (docs/integrations.md). The secret is never shown: secret_set says there is one.",
			oaReq("name", oaStr("")),
			oaReq("url", oaStr("")),
			oaReq("events", oaArr(oaStr(""))),
			oaReq("queues", oaArr(oaStr("Empty: every queue."))),
			oaReq("disabled", oaBool("")),
			oaReq("source", oaEnum("api: made through the API (or CLI, pages); config: [[webhooks.subscriptions]] of the config file, read-only here.", app.WebhookFromAPI, app.WebhookFromConfig)),
			oaReq("secret_set", oaBool("")),
			oaReq("created_at", oaNull(oaTime(""))),
			oaReq("updated_at", oaNull(oaTime("")))),
		"WebhookInput": oaInput("A webhook subscription as POST /api/webhooks and PUT /api/webhooks/{name} take it.",
			oaReq("name", oaDesc(S{"type": "string", "pattern": oaWebhookPattern}, "")),
			oaReq("url", oaDesc(S{"type": "string", "format": "uri"}, "An absolute http(s) URL; private, loopback and link-local targets are refused unless [webhooks] allows them.")),
			oaOpt("secret", oaDesc(S{"type": "string", "minLength": app.MinWebhookSecret, "maxLength": app.MaxWebhookSecret}, "Signs every delivery (HMAC-SHA256). Required on POST; on PUT absent keeps the old one.")),
			oaReq("events", oaDesc(S{"type": "array", "items": oaEnum("", oaWebhookEvents...), "minItems": 1}, "Event types, or \"*\" for all of them.")),
			oaOpt("queues", oaArr(oaQueueName(""))),
			oaOpt("disabled", oaBool(""))),
		"WebhookDeliveries": oaObject("Deliveries of a subscription, newest first: the jobs of the internal queue _webhooks (and their dead-letter rows).",
			oaReq("deliveries", oaArr(oaObject("",
				oaReq("job_id", oaInt64("The delivery job; its Queue-Webhook-Id.")),
				oaReq("status", oaEnum("", "queued", "processing", "done", "cancelled", "dead_letter")),
				oaReq("event", oaStr("The event type.")),
				oaReq("event_job_id", oaNull(oaInt64("The job the event is about."))),
				oaReq("attempts", oaInt("")), oaReq("max_attempts", oaInt("")),
				oaReq("last_error", oaStr("")),
				oaReq("response_status", oaNull(oaInt("The receiver's status, once delivered."))),
				oaReq("created_at", oaTime("")),
				oaReq("finished_at", oaNull(oaTime("")))))),
			oaReq("next_cursor", oaStr("")),
		),
	}
}

// oaWebhookEvents are the event types a subscription takes
// (app.WebhookEvents) and "*".
var oaWebhookEvents = append(slices.Clone(app.WebhookEvents), app.WebhookAllEvents)
