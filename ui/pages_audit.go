package ui

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/queuehq/queue/app"
)

// auditPages adds the audit trail's page (issue 28): who did what, newest
// first, as GET /api/audit answers it, with filters and pages.
func (p *pages) auditPages(e *echo.Echo, page func(string, echo.HandlerFunc), mw []echo.MiddlewareFunc) {
	// As GET /api/audit: any role may read it, but the trail spans every
	// queue, so a token limited to some queues may not.
	page("/audit", everyQueue(p.audit))
}

// Paging of the audit page.
const (
	auditPageSize = 50
	auditMaxPage  = 500
	// auditScanMax bounds the entries one page reads to fill itself when a
	// filter the store does not take (actor, target, queue, times) leaves
	// most of them out; the page then links on from where it stopped.
	auditScanMax = 5000
	auditChunk   = 500
)

// auditFilter is the audit page's filter as its form and links carry it.
// The store filters by action; the page filters the rest as it reads.
type auditFilter struct {
	Action, Actor, Target, Queue string
	Since, Until                 string // as given: datetime-local (UTC) or RFC 3339
}

func auditFilterOf(get func(string) string) auditFilter {
	return auditFilter{Action: strings.TrimSpace(get("action")), Actor: strings.TrimSpace(get("actor")),
		Target: strings.TrimSpace(get("target")), Queue: strings.TrimSpace(get("queue")),
		Since: strings.TrimSpace(get("since")), Until: strings.TrimSpace(get("until"))}
}

func (f auditFilter) pairs() []string {
	return []string{"action", f.Action, "actor", f.Actor, "target", f.Target, "queue", f.Queue, "since", f.Since, "until", f.Until}
}

// Empty reports whether f leaves every entry in.
func (f auditFilter) Empty() bool { return f == auditFilter{} }

// auditMatch is f made ready to test entries: the times parsed.
type auditMatch struct {
	auditFilter
	since, until *time.Time
}

func (f auditFilter) match() (auditMatch, error) {
	m := auditMatch{auditFilter: f}
	if f.Action != "" && !slices.Contains(auditActions, f.Action) {
		return m, app.Invalid("action", "action %q is not one of %s", clip(f.Action), strings.Join(auditActions, ", "))
	}
	var err error
	if f.Since != "" {
		if m.since, err = parseFormTime("since", f.Since); err != nil {
			return m, err
		}
	}
	if f.Until != "" {
		if m.until, err = parseFormTime("until", f.Until); err != nil {
			return m, err
		}
	}
	if m.since != nil && m.until != nil && !m.since.Before(*m.until) {
		return m, app.Invalid("until", "until (%s) must be after since (%s)", f.Until, f.Since)
	}
	return m, nil
}

// pageSide reports whether m filters what the store does not.
func (m auditMatch) pageSide() bool {
	return m.Actor != "" || m.Target != "" || m.Queue != "" || m.since != nil || m.until != nil
}

// keep reports whether entry e passes m's page-side filters.
func (m auditMatch) keep(e *app.AuditEntry) bool {
	if m.Actor != "" && e.Actor != m.Actor {
		return false
	}
	if m.Target != "" && !strings.Contains(strings.ToLower(e.Target), strings.ToLower(m.Target)) {
		return false
	}
	if m.Queue != "" && auditQueue(e) != m.Queue {
		return false
	}
	if m.since != nil && e.At.Before(*m.since) {
		return false
	}
	if m.until != nil && !e.At.Before(*m.until) {
		return false
	}
	return true
}

// auditQueue is the queue an entry acts on: its target's ("queue emails"),
// or the "queue" of a bulk action's filter; "" when it names none.
func auditQueue(e *app.AuditEntry) string {
	if q, ok := strings.CutPrefix(e.Target, "queue "); ok {
		return q
	}
	if len(e.Filter) > 0 && e.Filter[0] == '{' {
		var f struct {
			Queue string `json:"queue"`
		}
		if json.Unmarshal(e.Filter, &f) == nil {
			return f.Queue
		}
	}
	return ""
}

// auditRow is one entry as the page shows it.
type auditRow struct {
	app.AuditEntry
	TargetHref string // the page of what it acted on, if any
	Queue      string // the queue it acted on, if it names one
	Details    jsonBlock
	Compact    string // the details on one line, clipped, for the folded view
}

// auditView is the data of audit.html.
type auditView struct {
	base
	Filter   auditFilter
	Actions  []string
	Queues   []string
	Since    string // Filter.Since as a datetime-local value
	Until    string
	Rows     []auditRow
	Error    string
	Scanned  int  // entries read to fill the page, when the page filters
	Stopped  bool // the page stopped reading at auditScanMax, not at the page's end
	FirstURL string
	NextURL  string
}

// audit is GET /audit: the audit trail, newest first; filters by action
// (the store's), actor, target text, queue and time (the page's, over at
// most auditScanMax entries a page); ?before=ID pages on.
func (p *pages) audit(c echo.Context) error {
	ctx := c.Request().Context()
	f := auditFilterOf(c.QueryParam)
	v := auditView{base: p.base(c, "Audit trail", "audit"), Filter: f, Actions: auditActions,
		Since: localInput(f.Since), Until: localInput(f.Until)}
	v.Refresh = 15
	status := http.StatusOK
	err := p.auditRows(ctx, c, f, &v)
	if err != nil {
		ae, known := toAPIError(err)
		if !known || ae.Status >= 500 {
			return err
		}
		v.Error, status, v.Rows, v.NextURL = ae.Message, ae.Status, nil, ""
	}
	if c.QueryParam("before") != "" {
		v.FirstURL = link("/audit", append(f.pairs(), "limit", c.QueryParam("limit"))...)
	}
	if v.Queues, err = p.queueNames(ctx, f.Queue); err != nil {
		return err
	}
	return p.render(c, status, "audit", v)
}

// auditRows fills v's rows, and the link to the next page, from the store.
func (p *pages) auditRows(ctx context.Context, c echo.Context, f auditFilter, v *auditView) error {
	limit, err := queryInt(c, "limit")
	if err != nil {
		return err
	}
	if c.QueryParam("limit") == "" {
		limit = auditPageSize
	} else if limit < 1 || limit > auditMaxPage {
		return app.Invalid("limit", "limit must be between 1 and %d", auditMaxPage)
	}
	before, err := queryInt(c, "before")
	if err != nil {
		return err
	}
	if before < 0 || before == 0 && c.QueryParam("before") != "" {
		return app.Invalid("before", "before is an audit entry id (a positive integer)")
	}
	m, err := f.match()
	if err != nil {
		return err
	}
	next := func(id int64) string {
		lim := ""
		if limit != auditPageSize {
			lim = strconv.Itoa(limit)
		}
		return link("/audit", append(f.pairs(), "limit", lim, "before", strconv.FormatInt(id, 10))...)
	}
	if !m.pageSide() { // the store does it all: one more than the page, to know if there is a next
		es, err := p.svc.Audit(ctx, app.AuditFilter{Action: f.Action, BeforeID: int64(before), Limit: limit + 1})
		if err != nil {
			return err
		}
		if len(es) > limit {
			es = es[:limit]
			v.NextURL = next(es[limit-1].ID)
		}
		v.Rows = auditRowsOf(es)
		return nil
	}
	// The page filters: read chunks, newest first, until the page is full,
	// the trail ends, the entries are older than since (ids follow time),
	// or auditScanMax entries were read.
	var kept []app.AuditEntry
	cursor := int64(before)
	for {
		es, err := p.svc.Audit(ctx, app.AuditFilter{Action: f.Action, BeforeID: cursor, Limit: auditChunk})
		if err != nil {
			return err
		}
		for i := range es {
			e := &es[i]
			if m.since != nil && e.At.Before(*m.since) {
				v.Rows = auditRowsOf(kept)
				return nil
			}
			v.Scanned++
			cursor = e.ID
			if !m.keep(e) {
				continue
			}
			if len(kept) == limit { // one more matches: there is a next page, from the last kept
				v.Rows = auditRowsOf(kept)
				v.NextURL = next(kept[limit-1].ID)
				return nil
			}
			kept = append(kept, *e)
		}
		if len(es) < auditChunk {
			break
		}
		if v.Scanned >= auditScanMax {
			v.Stopped = true
			v.NextURL = next(cursor)
			break
		}
	}
	v.Rows = auditRowsOf(kept)
	return nil
}

func auditRowsOf(es []app.AuditEntry) []auditRow {
	rows := make([]auditRow, len(es))
	for i, e := range es {
		r := auditRow{AuditEntry: e, TargetHref: auditTargetHref(e.Action, e.Target), Queue: auditQueue(&e)}
		if len(e.Filter) > 0 && string(e.Filter) != "null" {
			r.Details = jsonBlockOf(e.Filter)
			r.Compact = app.TruncateString(compactJSON(e.Filter), 80)
		}
		rows[i] = r
	}
	return rows
}

// auditTargetHref is the page of an entry's target ("job 12", "queue
// emails", "webhook ops"...), or "" when it has none (a denied request's
// route, a bulk action's filter).
func auditTargetHref(action, target string) string {
	kind, name, ok := strings.Cut(target, " ")
	if !ok || name == "" {
		return ""
	}
	id := func(base string) string {
		if n, err := strconv.ParseInt(name, 10, 64); err == nil && n > 0 {
			return base + strconv.FormatInt(n, 10)
		}
		return ""
	}
	switch kind {
	case "job":
		return id("/jobs/")
	case "dead_letter":
		return id("/dlq/")
	case "workflow":
		return id("/workflows/")
	case "queue":
		if app.ValidateQueue(name) != nil {
			return ""
		}
		if strings.HasPrefix(action, "queue.settings") {
			return link("/queues/settings", "queue", name)
		}
		return "/queues"
	case "webhook":
		return "/webhooks/" + url.PathEscape(name)
	case "periodic":
		return "/periodic"
	case "worker":
		return "/workers"
	}
	return ""
}
