package ui

import (
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"

	"github.com/queuehq/queue/app"
)

// oaPageOp is one route of the web pages in the document. Pages are HTML for
// a browser (they call the Service, never the API); they are listed so the
// document covers every route, with what they take and answer.
type oaPageOp struct {
	route     string // echo's method and path; a GET page answers HEAD too
	id        string
	summary   string
	query     []string  // the query parameters it reads
	form      []oaField // a POST's form fields (besides _csrf)
	redirects bool      // a GET that may answer 303 (back to a page, with a message)
	download  S         // a GET answering a file: its content
}

// oaPageRoutes are the pages and their forms (pages.go and pages_*.go).
func oaPageRoutes() []oaPageOp {
	jobFilters := []string{"queue", "kind", "kind_prefix", "status", "tag", "key", "replayed_from", "workflow", "limit", "cursor", "order", "sort", "count",
		"error", "created_after", "created_before", "run_after", "run_before", "finished_after", "finished_before", "payload"}
	deadFilters := []string{"queue", "kind", "tag", "reason", "moved_after", "moved_before", "replayed", "limit", "cursor", "order"}
	queueField := oaOpt("queue", oaStr("The queue."))
	nameField := oaOpt("name", oaStr("The periodic job."))
	return []oaPageOp{
		{route: "GET /", id: "pageDashboard", summary: "Dashboard: queues, counts, charts.", query: []string{"queue"}},
		{route: "GET /jobs", id: "pageJobs", summary: "Jobs, with filters and bulk actions.", query: jobFilters},
		{route: "GET /jobs/confirm", id: "pageJobsConfirm", summary: "Confirm a bulk action on jobs (admin).", query: append([]string{"op", "id", "back"}, jobFilters...), redirects: true},
		{route: "POST /jobs/bulk", id: "formJobsBulk", summary: "Run a bulk action on jobs (cancel, retry, run, reschedule, prioritize, delete).",
			form: []oaField{oaOpt("op", oaStr("")), oaOpt("id", oaArr(oaStr("Selected job ids."))), oaOpt("bound", oaStr("")), oaOpt("back", oaStr("The jobs page to return to.")), oaOpt("run_at", oaStr("")), oaOpt("delay", oaStr("")), oaOpt("priority", oaStr(""))}},
		{route: "GET /jobs/go", id: "pageJobsGo", summary: "Go to a job by id (the jobs page's \"Go to job #\"): to its page, its dead-letter row's, or back to the list with a message.", query: []string{"id"}, redirects: true},
		{route: "GET /jobs/:id", id: "pageJob", summary: "One job: fields, attempts, progress, log.", query: []string{"attempt", "from"}},
		{route: "POST /jobs/:id/cancel", id: "formCancelJob", summary: "Cancel a job."},
		{route: "POST /jobs/:id/move", id: "formMoveJob", summary: "Move a job to the dead-letter queue.", form: []oaField{oaOpt("note", oaStr("The operator's note."))}},
		{route: "GET /dlq", id: "pageDead", summary: "The dead-letter queue, with filters and bulk actions.", query: deadFilters},
		{route: "GET /dlq/confirm", id: "pageDeadConfirm", summary: "Confirm a bulk action on the dead-letter queue (admin).", query: append([]string{"op", "id", "include_replayed"}, deadFilters...), redirects: true},
		{route: "GET /dlq/export", id: "pageDeadExport", summary: "Download the dead-letter rows a filter finds, as CSV or NDJSON.", query: append([]string{"format"}, deadFilters...), redirects: true,
			download: S{"text/csv": S{}, "application/x-ndjson": S{}}},
		{route: "POST /dlq/bulk", id: "formDeadBulk", summary: "Run a bulk action on the dead-letter queue (replay, purge, move).",
			form: []oaField{oaOpt("op", oaStr("")), oaOpt("id", oaArr(oaStr(""))), oaOpt("bound", oaStr("")), oaOpt("include_replayed", oaStr("")), oaOpt("note", oaStr(""))}},
		{route: "GET /dlq/:id", id: "pageDeadRow", summary: "One dead-letter row.", redirects: true},
		{route: "POST /dlq/:id/replay", id: "formReplayDead", summary: "Replay a dead-letter row.",
			form: []oaField{oaOpt("from", oaStr("")), oaOpt("when", oaStr("")), oaOpt("delay", oaStr("")), oaOpt("run_at", oaStr("")), queueField, oaOpt("priority", oaStr("")), oaOpt("max_attempts", oaStr("")), oaOpt("payload", oaStr("")), oaOpt("payload_patch", oaStr(""))}},
		{route: "GET /workflows", id: "pageWorkflows", summary: "Workflows.", query: []string{"status", "name", "cursor"}},
		{route: "GET /workflows/:id", id: "pageWorkflow", summary: "One workflow: its graph and steps.", query: []string{"state"}},
		{route: "GET /workflows/:id/cancel", id: "pageWorkflowCancel", summary: "Confirm cancelling a workflow (admin).", redirects: true},
		{route: "POST /workflows/:id/cancel", id: "formWorkflowCancel", summary: "Cancel a workflow.", form: []oaField{oaOpt("confirm", oaStr(""))}},
		{route: "GET /queues", id: "pageQueues", summary: "Queues: counts, policy, pause and resume."},
		{route: "POST /queues/pause", id: "formPauseQueue", summary: "Pause a queue.", form: []oaField{queueField}},
		{route: "POST /queues/resume", id: "formResumeQueue", summary: "Resume a queue.", form: []oaField{queueField}},
		{route: "GET /queues/drain", id: "pageDrainConfirm", summary: "Confirm draining a queue (admin).", query: []string{"queue"}, redirects: true},
		{route: "POST /queues/drain", id: "formDrainQueue", summary: "Drain a queue.", form: []oaField{queueField}},
		{route: "GET /queues/keys", id: "pageQueueKeys", summary: "A queue's flow-control keys.", query: []string{"queue", "limit"}},
		{route: "GET /queues/chart", id: "pageQueueChart", summary: "A queue's charts.", query: []string{"queue", "range"}},
		{route: "GET /queues/settings", id: "pageQueueSettings", summary: "A queue's settings.", query: []string{"queue"}},
		{route: "POST /queues/settings", id: "formSaveQueueSettings", summary: "Change a queue's runtime settings.",
			form: []oaField{queueField, oaOpt("max_attempts", oaStr("")), oaOpt("timeout", oaStr("")), oaOpt("concurrency", oaStr("")), oaOpt("rate", oaStr(""))}},
		{route: "POST /queues/settings/reset", id: "formResetQueueSettings", summary: "Unset a queue's runtime settings.", form: []oaField{queueField}},
		{route: "GET /periodic", id: "pagePeriodic", summary: "Periodic jobs."},
		{route: "GET /periodic/edit", id: "pagePeriodicEdit", summary: "Make or edit a periodic job (admin).", query: []string{"name"}, redirects: true},
		{route: "POST /periodic/save", id: "formSavePeriodic", summary: "Save a periodic job.",
			form: []oaField{oaOpt("editing", oaStr("The name of the entry edited; empty for a new one.")), nameField, oaOpt("cron", oaStr("")), oaOpt("timezone", oaStr("")), queueField,
				oaOpt("kind", oaStr("")), oaOpt("payload", oaStr("JSON.")), oaOpt("priority", oaStr("")), oaOpt("max_attempts", oaStr("")), oaOpt("timeout", oaStr("")),
				oaOpt("tags", oaStr("Comma-separated.")), oaOpt("key", oaStr("")), oaOpt("catch_up", oaStr("")), oaOpt("skip_if_pending", oaStr(""))}},
		{route: "POST /periodic/run", id: "formRunPeriodic", summary: "Enqueue a periodic job's job now.", form: []oaField{nameField}},
		{route: "POST /periodic/pause", id: "formPausePeriodic", summary: "Pause a periodic job.", form: []oaField{nameField}},
		{route: "POST /periodic/resume", id: "formResumePeriodic", summary: "Resume a periodic job.", form: []oaField{nameField}},
		{route: "POST /periodic/delete", id: "formDeletePeriodic", summary: "Delete a periodic job.", form: []oaField{nameField}},
		{route: "GET /workers", id: "pageWorkers", summary: "Registered workers."},
		{route: "GET /audit", id: "pageAudit", summary: "The audit trail: admin actions and refused requests, newest first, with filters.", query: []string{"action", "actor", "target", "queue", "since", "until", "limit", "before"}},
		{route: "GET /workers/confirm", id: "pageWorkerConfirm", summary: "Confirm quieting or stopping a worker (admin).", query: []string{"id", "command"}, redirects: true},
		{route: "POST /workers/command", id: "formWorkerCommand", summary: "Quiet or stop a worker.",
			form: []oaField{oaOpt("id", oaStr("The worker.")), oaOpt("command", oaEnum("", app.WorkerQuiet, app.WorkerStop)), oaOpt("confirm", oaStr(""))}},
		{route: "GET /webhooks", id: "pageWebhooks", summary: "Webhook subscriptions, and the form that adds one (admin)."},
		{route: "POST /webhooks", id: "formCreateWebhook", summary: "Make a webhook subscription.", form: oaWebhookForm(true)},
		{route: "GET /webhooks/:name", id: "pageWebhook", summary: "One webhook subscription: its settings, edit form and deliveries (admin).", query: []string{"cursor"}, redirects: true},
		{route: "POST /webhooks/:name", id: "formSaveWebhook", summary: "Replace a webhook subscription (an empty secret keeps the stored one).", form: oaWebhookForm(false)},
		{route: "POST /webhooks/:name/test", id: "formTestWebhook", summary: "Send a webhook.test delivery."},
		{route: "GET /webhooks/:name/delete", id: "pageWebhookDelete", summary: "Confirm deleting a webhook subscription (admin).", redirects: true},
		{route: "POST /webhooks/:name/delete", id: "formDeleteWebhook", summary: "Delete a webhook subscription.", form: []oaField{oaOpt("confirm", oaEnum("Sent by the confirm page; without it the form goes there.", "yes"))}},
		{route: "GET /login", id: "pageLogin", summary: "The login form (with tokens); without tokens, or logged in, it redirects.", query: []string{"next"}},
		{route: "POST /login", id: "formLogin", summary: "Log in with a token: a session cookie (HttpOnly, Secure, SameSite=Strict), never the token.",
			form: []oaField{oaReq("token", oaStr("")), oaOpt("next", oaStr("Where to go after: a path on this server."))}},
		{route: "POST /logout", id: "formLogout", summary: "Log out: the session is revoked."},
		{route: "GET /static/*", id: "staticFile", summary: "The UI's CSS, script and icon. With ?v=<hash> (as pages link them) they may be cached for good.", query: []string{"v"},
			download: S{"text/css": S{}, "text/javascript": S{}, "image/svg+xml": S{}}},
	}
}

// oaWebhookForm is the fields of the webhook pages' form (the name only
// when it makes one).
func oaWebhookForm(create bool) []oaField {
	f := []oaField{oaOpt("url", oaStr("")), oaOpt("secret", oaStr("")), oaOpt("events", oaArr(oaEnum("", oaWebhookEvents...))),
		oaOpt("queues", oaStr("Comma-separated.")), oaOpt("disabled", oaStr("Any value: disabled."))}
	if create {
		f = append([]oaField{oaOpt("name", oaStr(""))}, f...)
	}
	return f
}

// oaQueryDoc describes the query parameters of the API, by "ROUTE name"
// or, for the parameters alike on every route, by name.
var oaQueryDoc = map[string]S{
	"queue":           oaQueueName("Only this queue."),
	"kind":            oaStr("Only this kind."),
	"tag":             oaStr("Only jobs with this tag."),
	"key":             oaStr("Only jobs of this flow-control key."),
	"replayed_from":   oaInt64("Only jobs replayed from this dead-letter row."),
	"workflow":        oaInt64("Only the jobs of this workflow's steps."),
	"limit":           oaDesc(S{"type": "integer", "minimum": 1, "maximum": maxListLimit}, "Page size, 1 to 1000; default 50."),
	"cursor":          oaStr("next_cursor of the previous page."),
	"order":           oaEnum("Newest first (desc, the default) or oldest first.", "desc", "asc"),
	"error":           oaStr("Only jobs whose last error holds this text."),
	"created_after":   oaStr("An RFC 3339 time, or a duration back from now (\"1h\", \"7d\")."),
	"created_before":  oaStr("As created_after."),
	"run_after":       oaStr("As created_after, on run_at."),
	"run_before":      oaStr("As created_after, on run_at."),
	"finished_after":  oaStr("As created_after, on finished_at."),
	"finished_before": oaStr("As created_after, on finished_at."),
	"GET /api/jobs status": oaEnum("Only this status; queued is claimable now, scheduled is queued with run_at in the future, retrying is queued after a failed attempt (due or backing off).",
		"queued", "scheduled", "retrying", "processing", "done", "cancelled", "dead_letter"),
	"kind_prefix":                       oaDesc(S{"type": "string", "pattern": "^[A-Za-z0-9_.:-]{1,128}$"}, "Only kinds that start with this (email. finds email.send and email.bounce)."),
	"sort":                              oaEnum("id (the default: newest first) or run_at (soonest first, then id; order=desc reverses). A cursor continues only the order that made it.", "id", app.OrderRunAt),
	"count":                             oaBool("Add total: how many jobs the filter matches (the dead-letter rows with status dead_letter)."),
	"GET /api/suggest field":            oaEnum("What to suggest.", "kind", "queue", "tag"),
	"GET /api/suggest prefix":           oaDesc(S{"type": "string", "pattern": "^[A-Za-z0-9_.:-]{0,128}$"}, "Only values that start with this; empty: all."),
	"GET /api/suggest limit":            oaDesc(S{"type": "integer", "minimum": 1, "maximum": app.MaxSuggest}, "Values to answer; default 20."),
	"GET /api/jobs/:id wait":            oaStr("Hold the answer until the job is terminal or this long passed (a duration, at most 60s)."),
	"GET /api/jobs/:id events":          oaBool("Add the job's recorded events."),
	"GET /api/jobs/:id/log attempt":     oaDesc(S{"type": "integer", "minimum": 1}, "The attempt; default the latest that has lines."),
	"GET /api/jobs/:id/log after":       oaDesc(S{"type": "integer", "format": "int64", "minimum": 0}, "Lines after this seq."),
	"GET /api/jobs/:id/log limit":       oaDesc(S{"type": "integer", "minimum": 1, "maximum": app.MaxLogRead}, "Lines to read; default 1000."),
	"GET /api/jobs/:id/log follow":      oaBool("Follow: a stream of Server-Sent Events."),
	"GET /api/dlq kind":                 oaStr("Only this kind."),
	"GET /api/dlq tag":                  oaStr("Only rows with this tag."),
	"reason":                            oaStr("Only rows of this dead-letter reason."),
	"moved_after":                       oaTime("Only rows moved after (RFC 3339)."),
	"moved_before":                      oaTime("Only rows moved before (RFC 3339)."),
	"replayed":                          oaBool("Only rows replayed at least once (true) or never (false)."),
	"GET /api/events job":               oaID("Only this job's events."),
	"logs":                              oaBool("Add job.log events (one per append)."),
	"action":                            oaEnum("Only this action.", auditActions...),
	"before":                            oaInt64("Entries older than this id (the last id of the previous page)."),
	"GET /api/workflows status":         oaEnum("Only workflows of this status.", "running", "blocked", "done", "cancelled"),
	"name":                              oaStr("Only workflows of this name."),
	"GET /api/queues/:queue/keys limit": oaDesc(S{"type": "integer", "minimum": 1, "maximum": app.MaxKeyStatsLimit}, "Keys in each list; default 20."),
	"range":                             oaEnum("The range; default 1h.", "1h", "24h", "7d"),
	"GET /api/webhooks/:name/deliveries limit": oaDesc(S{"type": "integer", "minimum": 1, "maximum": maxListLimit}, "Page size; default 50."),
}

// oaQueryParameter documents query parameter name of route.
func oaQueryParameter(route, name string) S {
	s, ok := oaQueryDoc[route+" "+name]
	if !ok {
		if s, ok = oaQueryDoc[name]; !ok {
			panic(fmt.Sprintf("openapi: query parameter %q of %s has no entry in queryDoc", name, route))
		}
	}
	p := S{"name": name, "in": "query", "schema": s}
	if d, ok := s["description"]; ok {
		p["description"] = d
	}
	return p
}

// oaPath writes echo's path in the document's form: :id is {id}, the *
// of /static/* is {path}.
func oaPath(p string) string {
	parts := strings.Split(p, "/")
	for i, s := range parts {
		switch {
		case strings.HasPrefix(s, ":"):
			parts[i] = "{" + s[1:] + "}"
		case s == "*":
			parts[i] = "{path}"
		}
	}
	return strings.Join(parts, "/")
}

// oaPathParameters documents the parameters of echo's path p.
func oaPathParameters(p string) []any {
	var out []any
	for _, s := range strings.Split(p, "/") {
		var name string
		var schema S
		switch {
		case s == ":id" && strings.Contains(p, "/workers/"):
			name, schema = "id", oaDesc(S{"type": "string", "minLength": 1, "maxLength": app.MaxWorkerIDBytes}, "The worker's id (escaped: host:1%2Fbuiltin-0).")
		case s == ":id":
			name, schema = "id", oaID("")
		case s == ":queue":
			name, schema = "queue", oaQueueName("The queue.")
		case s == ":name" && strings.Contains(p, "/webhooks/"):
			name, schema = "name", oaDesc(S{"type": "string", "pattern": oaWebhookPattern}, "The subscription.")
		case s == ":name":
			name, schema = "name", oaStr("The periodic job's name (escaped: default%2Freport%2F%40every%201m).")
		case s == ":key":
			name, schema = "key", oaDesc(S{"type": "string", "minLength": 1, "maxLength": app.MaxKeyLength}, "The once-key.")
		case s == "*":
			name, schema = "path", oaStr("The file.")
		default:
			continue
		}
		out = append(out, S{"name": name, "in": "path", "required": true, "schema": schema})
	}
	return out
}

// oaErrorNames are the shared error answers, by status.
var oaErrorNames = map[int]string{
	400: "BadRequest", 401: "Unauthorized", 403: "Forbidden", 404: "NotFound", 409: "Conflict",
	413: "TooLarge", 415: "UnsupportedMediaType", 421: "MisdirectedRequest", 429: "TooManyRequests",
	500: "Internal", 503: "Unavailable",
}

// oaErrorTexts describe the shared error answers.
var oaErrorTexts = map[int]string{
	400: "invalid_json (the body is not one JSON object), invalid_field (a field or query parameter, named in field, is wrong or unknown), filter_required (a bulk action without a filter). Nothing changed.",
	401: "unauthorized: the server has tokens and none (or a wrong one) came. Send Authorization: Bearer <token>.",
	403: "forbidden: the token's role or queue list does not cover this (audited); cross_site: a browser sent it for another site's page. Nothing changed.",
	404: "not_found: no such job, row or entry.",
	409: "A conflict: lease_lost, illegal_transition, idempotency_conflict, once_held ... Nothing changed.",
	413: "too_large: the body (or a payload, result) is over its limit; refused before it is read whole.",
	415: "unsupported_media_type: a body must be Content-Type: application/json.",
	421: "host_not_allowed: the Host is not one this server answers to (a guard against DNS rebinding; server.allowed_hosts).",
	429: "queue_full (the queue holds max_queued jobs), or too_many_requests (too many refused tokens from this address). Retry-After says when to try again.",
	500: "internal: a fault in the server, detailed in its log (never caused by bad input).",
	503: "unavailable: the store is unreachable, or the server holds as many waiting requests or event streams as it allows. Retry-After says when to try again.",
}

// oaErrorHeaders are the headers of the shared error answers.
func oaErrorHeaders(status int) S {
	switch status {
	case 401:
		return S{"WWW-Authenticate": S{"description": "Bearer realm=\"queue\"", "required": true, "schema": S{"type": "string"}}}
	case 429, 503:
		return S{"Retry-After": S{"description": "Seconds to wait before trying again.", "required": true, "schema": S{"type": "integer", "minimum": 0}}}
	}
	return nil
}

func oaErrorResponse(status int, desc string) S {
	r := S{"description": desc, "content": S{"application/json": S{"schema": oaRef("Error")}}}
	if h := oaErrorHeaders(status); h != nil {
		r["headers"] = h
	}
	return r
}

// oaSafe is a method that changes nothing.
func oaSafe(m string) bool { return m == http.MethodGet || m == http.MethodHead }

// oaAPIErrors are the error statuses of an API route: its own, and those of
// the guards and tables every request goes through (guard.go, auth.go,
// query.go, errors.go).
func oaAPIErrors(o oaAPIOp) []int {
	method, path, _ := strings.Cut(o.route, " ")
	set := map[int]bool{500: true, 401: true, 429: true} // 401/429 with tokens (health: with private_health; metrics: without public_metrics)
	if strings.HasPrefix(path, "/api/") {
		set[400] = true // an unknown query parameter, at least
	}
	if !healthPath(path) {
		set[421] = true
	}
	need, ok := routeRoles[o.route]
	if !ok && !oaSafe(method) {
		need = RoleAdmin
	}
	if !oaSafe(method) || (need != "" && need != RoleRead) || o.scoped || path == "/metrics" {
		set[403] = true
	}
	if !oaSafe(method) {
		set[415] = true
	}
	if o.body != nil {
		set[413] = true
	}
	if !o.noStore {
		set[503] = true
	}
	for _, s := range o.errs {
		set[s] = true
	}
	return oaSortedKeys(set)
}

func oaSortedKeys(set map[int]bool) []int {
	out := make([]int, 0, len(set))
	for s := range set {
		out = append(out, s)
	}
	sort.Ints(out)
	return out
}

func (r oaResp) build() S {
	out := S{"description": r.desc}
	switch {
	case r.schema != nil:
		out["content"] = S{"application/json": S{"schema": r.schema}}
	case r.content != nil:
		out["content"] = r.content
	}
	if r.headers != nil {
		out["headers"] = r.headers
	}
	return out
}

func oaAPIOperation(o oaAPIOp) S {
	method, path, _ := strings.Cut(o.route, " ")
	op := S{"operationId": o.id, "tags": []any{o.tag}, "summary": o.summary}
	if o.desc != "" {
		op["description"] = o.desc
	}
	params := oaPathParameters(path)
	for _, h := range o.headers {
		params = append(params, h)
	}
	qroute := o.route
	if method == http.MethodHead {
		qroute = http.MethodGet + " " + path
	}
	for _, name := range queryParams[qroute] {
		params = append(params, oaQueryParameter(qroute, name))
	}
	if len(params) > 0 {
		op["parameters"] = params
	}
	if o.body != nil {
		op["requestBody"] = S{"required": o.bodyReq, "content": S{"application/json": S{"schema": o.body}}}
	}
	responses := S{}
	for _, r := range o.ok {
		key := strconv.Itoa(r.status)
		if prev, ok := responses[key].(S); ok { // another media type of the same status
			for mt, c := range r.build()["content"].(S) {
				prev["content"].(S)[mt] = c
			}
			continue
		}
		responses[key] = r.build()
	}
	for _, st := range oaAPIErrors(o) {
		if d, ok := o.errDesc[st]; ok {
			responses[strconv.Itoa(st)] = oaErrorResponse(st, d)
		} else {
			responses[strconv.Itoa(st)] = S{"$ref": "#/components/responses/" + oaErrorNames[st]}
		}
	}
	op["responses"] = responses
	return op
}

var oaPageError = S{"$ref": "#/components/responses/PageError"}

// oaPageOperations are the operations of one page route: a GET page answers
// HEAD too.
func oaPageOperations(p oaPageOp) map[string]S {
	method, path, _ := strings.Cut(p.route, " ")
	build := func(method string) S {
		id := p.id
		if method == http.MethodHead {
			id += "Head"
		}
		op := S{"operationId": id, "tags": []any{"Pages"}, "summary": p.summary, "security": oaPageSecurity(path)}
		params := oaPathParameters(path)
		for _, q := range p.query {
			params = append(params, S{"name": q, "in": "query", "schema": S{"type": "string"}})
		}
		if len(params) > 0 {
			op["parameters"] = params
		}
		responses := S{}
		errs := map[int]bool{421: true, 500: true}
		if path != "/login" && !strings.HasPrefix(path, "/static/") {
			errs[400], errs[401], errs[403], errs[429], errs[503] = true, true, true, true, true
		}
		switch {
		case method == http.MethodPost:
			form := append([]oaField{oaOpt(csrfField, oaStr("The form's CSRF token (the page has it); /login takes it too."))}, p.form...)
			op["requestBody"] = S{"required": false, "content": S{"application/x-www-form-urlencoded": S{"schema": oaObject("", form...)}}}
			responses["303"] = S{"description": "Done (or refused with a message): on to the page in Location.", "headers": S{"Location": S{"required": true, "schema": S{"type": "string"}}}}
			errs[400], errs[403], errs[404], errs[413], errs[415], errs[503] = true, true, true, true, true, true
			if path == "/login" {
				errs[401], errs[429] = true, true
				responses["401"] = S{"description": "The token is not valid: the form again, with why.", "content": S{"text/html": S{}}}
				responses["403"] = S{"description": "The token is limited to queues, or the form's CSRF token is stale: the form again.", "content": S{"text/html": S{}}}
				responses["429"] = S{"description": "Too many refused tokens from this address: the form again.", "content": S{"text/html": S{}}}
			}
		case strings.HasPrefix(path, "/static/"):
			responses["200"] = S{"description": "The file.", "content": p.download}
			responses["304"] = S{"description": "Not modified (If-None-Match)."}
			errs[404] = true
		default:
			ok := S{"description": "The page.", "content": S{"text/html": S{}}}
			if p.download != nil {
				ok = S{"description": "The file (Content-Disposition: attachment).", "content": p.download}
			}
			if method == http.MethodHead {
				ok = S{"description": "The page's headers."}
			}
			responses["200"] = ok
			if p.redirects || path == "/login" {
				responses["303"] = S{"description": "On to the page in Location.", "headers": S{"Location": S{"required": true, "schema": S{"type": "string"}}}}
			}
			if strings.Contains(path, ":") {
				errs[404] = true
			}
		}
		for _, st := range oaSortedKeys(errs) {
			if _, ok := responses[strconv.Itoa(st)]; !ok {
				responses[strconv.Itoa(st)] = oaPageError
			}
		}
		op["responses"] = responses
		return op
	}
	out := map[string]S{method: build(method)}
	if method == http.MethodGet && !strings.HasPrefix(path, "/static/") {
		out[http.MethodHead] = build(http.MethodHead)
	}
	return out
}

// oaPageSecurity: the login form and the static files need no token.
func oaPageSecurity(path string) []any {
	if path == "/login" || strings.HasPrefix(path, "/static/") {
		return []any{S{}}
	}
	return []any{S{"sessionCookie": []any{}}, S{"bearerToken": []any{}}, S{}}
}

// openapiDoc builds the document.
func openapiDoc() S {
	paths := S{}
	add := func(method, path string, op S) {
		p := oaPath(path)
		item, _ := paths[p].(S)
		if item == nil {
			item = S{}
			paths[p] = item
		}
		m := strings.ToLower(method)
		if _, dup := item[m]; dup {
			panic("openapi: " + method + " " + path + " is listed twice")
		}
		item[m] = op
	}
	for _, o := range oaAPIRoutes() {
		method, path, _ := strings.Cut(o.route, " ")
		add(method, path, oaAPIOperation(o))
	}
	for _, p := range oaPageRoutes() {
		_, path, _ := strings.Cut(p.route, " ")
		for method, op := range oaPageOperations(p) {
			add(method, path, op)
		}
	}
	responses := S{"PageError": S{"description": "An HTML page saying what went wrong (a 401 of a page is the login form).", "content": S{"text/html": S{}}}}
	for st, name := range oaErrorNames {
		responses[name] = oaErrorResponse(st, oaErrorTexts[st])
	}
	tag := func(name, desc string) S { return S{"name": name, "description": desc} }
	return S{
		"openapi": "3.1.0",
		"info": S{
			"title":   "queue",
			"version": "dev",
			"summary": "A job queue in one binary: the HTTP API, health, metrics and web pages.",
			"description": "JSON in and out (Content-Type: application/json), times RFC 3339 in UTC with milliseconds, durations as \"30s\", \"5m\", \"7d\" (requests also take a number of seconds). " +
				"Every error is {\"error\": {\"code\", \"message\"}} (SPEC section 4). With tokens configured, every /api/ route and page needs Authorization: Bearer <token> " +
				"(roles read < submit < work < admin; a token may be limited to queues). Bodies are decoded strictly: an unknown field is 400 invalid_field. " +
				"Generated from the server's route table and checked against every answer of its test suites; info.version is the server's version.",
			"license": S{"name": "See the repository's LICENSE"},
		},
		"tags": []any{
			tag("Jobs", "Submit, read, list and cancel jobs; bulk actions on live jobs."),
			tag("Worker protocol", "What a worker calls: claim, heartbeat, progress, log, complete, fail, snooze."),
			tag("Queues", "Queues, pause, resume, drain, flow-control keys."),
			tag("Settings", "Runtime settings of a queue."),
			tag("Dead-letter queue", "The dead-letter queue: list, show, replay, purge, move."),
			tag("Workflows", "Jobs with dependencies."),
			tag("Periodic", "Jobs on a cron schedule."),
			tag("Workers", "The worker registry."),
			tag("Webhooks", "Webhook subscriptions and their deliveries."),
			tag("Stats", "Counts and charts."),
			tag("Events", "Lifecycle events."),
			tag("Audit", "Admin actions."),
			tag("Once", "Side effects done at most once."),
			tag("Health", "Liveness, readiness, metrics."),
			tag("Meta", "This document."),
			tag("Pages", "The web UI: HTML pages and their forms (POST-redirect-GET)."),
		},
		// Relative: the server is wherever the document was read from (a
		// client sets its base URL); a host here would also tie the tests'
		// router to one address.
		"servers":  []any{S{"url": "/", "description": "The server this document was read from."}},
		"security": []any{S{"bearerToken": []any{}}, S{}},
		"paths":    paths,
		"components": S{
			"schemas":   openapiSchemas(),
			"responses": responses,
			"securitySchemes": S{
				"bearerToken":   S{"type": "http", "scheme": "bearer", "description": "A token of the server's config ([[tokens]], --token, QUEUE_TOKEN). A server without tokens needs none."},
				"sessionCookie": S{"type": "apiKey", "in": "cookie", "name": sessionCookie, "description": "The pages' session after POST /login; on the API only with the X-CSRF-Token header of the pages."},
			},
		},
	}
}
