package ui

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/queuehq/queue/app"
)

// deadFilter is the filter of the DLQ pages, as the forms and links carry
// it: the times as given (datetime-local, read as UTC, or RFC 3339), and
// Replayed as "" (the default: rows never replayed), "false", "true" or "any".
type deadFilter struct {
	Queue, Kind, Tag, Reason string
	MovedAfter, MovedBefore  string
	Replayed                 string
}

func deadFilterOf(get func(string) string) deadFilter {
	return deadFilter{Queue: get("queue"), Kind: get("kind"), Tag: get("tag"), Reason: get("reason"),
		MovedAfter: strings.TrimSpace(get("moved_after")), MovedBefore: strings.TrimSpace(get("moved_before")),
		Replayed: get("replayed")}
}

// Empty reports whether f matches every row not replayed before: no
// filter but the default of Replayed.
func (f deadFilter) Empty() bool {
	return f.Queue == "" && f.Kind == "" && f.Tag == "" && f.Reason == "" && f.MovedAfter == "" && f.MovedBefore == "" &&
		(f.Replayed == "" || f.Replayed == "false")
}

// HidesReplayed reports whether f leaves out rows replayed before (the default).
func (f deadFilter) HidesReplayed() bool { return f.Replayed == "" || f.Replayed == "false" }

// pairs is f as link's key/value pairs.
func (f deadFilter) pairs() []string {
	return []string{"queue", f.Queue, "kind", f.Kind, "tag", f.Tag, "reason", f.Reason,
		"moved_after", f.MovedAfter, "moved_before", f.MovedBefore, "replayed", f.Replayed}
}

// with returns f's pairs with key set to value (a link that changes one filter).
func (f deadFilter) with(key, value string) []string {
	kv := f.pairs()
	for i := 0; i < len(kv); i += 2 {
		if kv[i] == key {
			kv[i+1] = value
		}
	}
	return kv
}

// Describe says in words which rows f's queue, kind, tag, reason and move
// times match; whether replayed rows count is said where it matters.
func (f deadFilter) Describe() string {
	var parts []string
	for _, kv := range [][2]string{{"queue", f.Queue}, {"kind", f.Kind}, {"tag", f.Tag}, {"reason", f.Reason}} {
		if kv[1] != "" {
			parts = append(parts, kv[0]+" = "+kv[1])
		}
	}
	if f.MovedAfter != "" {
		parts = append(parts, "moved at or after "+f.MovedAfter+" UTC")
	}
	if f.MovedBefore != "" {
		parts = append(parts, "moved before "+f.MovedBefore+" UTC")
	}
	if len(parts) == 0 {
		return "every row of the dead-letter queue"
	}
	return "rows with " + strings.Join(parts, ", ")
}

// times reads f's move times; a time that does not parse is an *InvalidError.
func (f deadFilter) times() (after, before *time.Time, err error) {
	if f.MovedAfter != "" {
		if after, err = parseFormTime("moved_after", f.MovedAfter); err != nil {
			return nil, nil, err
		}
	}
	if f.MovedBefore != "" {
		if before, err = parseFormTime("moved_before", f.MovedBefore); err != nil {
			return nil, nil, err
		}
	}
	return after, before, nil
}

// listInput is the listing f asks for (without paging).
func (f deadFilter) listInput() (app.DeadListInput, error) {
	in := app.DeadListInput{Queue: f.Queue, Kind: f.Kind, Tag: f.Tag, Reason: f.Reason}
	var err error
	if in.MovedAfter, in.MovedBefore, err = f.times(); err != nil {
		return in, err
	}
	switch f.Replayed {
	case "", "false":
		in.Replayed = ptrTo(false)
	case "true":
		in.Replayed = ptrTo(true)
	case "any":
	default:
		return in, app.Invalid("replayed", "replayed is any, true or false, not %q", app.TruncateString(f.Replayed, 40))
	}
	return in, nil
}

func ptrTo[T any](v T) *T { return &v }

// parseFormTime reads a time a form or link gives: a datetime-local value
// ("2026-01-02T15:04"), read as UTC, a date, or RFC 3339.
func parseFormTime(field, s string) (*time.Time, error) {
	for _, layout := range []string{"2006-01-02T15:04", "2006-01-02T15:04:05", time.RFC3339Nano, "2006-01-02 15:04", "2006-01-02 15:04:05", time.DateOnly} {
		if t, err := time.ParseInLocation(layout, s, time.UTC); err == nil {
			return &t, nil
		}
	}
	return nil, app.Invalid(field, "%s %q is not a time like 2026-01-02T15:04 (UTC) or RFC 3339", field, app.TruncateString(s, 40))
}

// localInput is the value of a datetime-local input for the time s: its
// UTC time in the input's format, or s as given when it does not parse.
func localInput(s string) string {
	t, err := parseFormTime("", s)
	if err != nil {
		return s
	}
	if t.Second() != 0 || t.Nanosecond() != 0 {
		return t.UTC().Format("2006-01-02T15:04:05")
	}
	return t.UTC().Format("2006-01-02T15:04")
}

// deadListView is the data of dlq.html.
type deadListView struct {
	base
	Filter     deadFilter
	Order      string
	QueueNames []string
	Reasons    []string
	Rows       []*app.DeadJob
	Count      int
	// Hidden counts the rows replayed before that the default filter
	// leaves out; ShowHidden lists them too.
	Hidden     int
	ShowHidden string
	// MovedAfter and MovedBefore are the filter's times as the
	// datetime-local inputs take them.
	MovedAfter, MovedBefore string
	Stats                   *deadStatsView
	ExportNDJSON, ExportCSV string
	Error                   string
	NextURL                 string
	FirstURL                string
	SortURL                 string
}

var deadReasons = []string{"max_attempts", "permanent_failure", "lease_expired", "admin_move"}

// deadList is GET /dlq: the filtered dead-letter rows (rows replayed before
// are left out unless asked for), with checkboxes for the bulk actions, the
// count of all rows matching, the export links and the DLQ's counts.
func (p *pages) deadList(c echo.Context) error {
	ctx := c.Request().Context()
	f := deadFilterOf(c.QueryParam)
	v := deadListView{base: p.base(c, "Dead letters", "dlq"), Filter: f, Reasons: deadReasons, Order: "desc",
		MovedAfter: localInput(f.MovedAfter), MovedBefore: localInput(f.MovedBefore)}
	limit, err := queryInt(c, "limit")
	var asc bool
	if err == nil {
		asc, err = queryOrder(c)
	}
	if asc {
		v.Order = "asc"
	}
	var in app.DeadListInput
	if err == nil {
		in, err = f.listInput()
	}
	cursor := c.QueryParam("cursor")
	status := http.StatusOK
	if err == nil {
		page := in
		page.Limit, page.Cursor, page.Asc = limit, cursor, asc
		var res *app.DeadPage
		if res, err = p.svc.ListDead(ctx, page); err == nil {
			v.Rows = res.Jobs
			if res.NextCursor != "" {
				v.NextURL = p.deadURL(f, v.Order, limit, res.NextCursor)
			}
			v.Count, err = p.svc.CountDead(ctx, in)
		}
		if err == nil && f.HidesReplayed() {
			in.Replayed = ptrTo(true)
			v.Hidden, err = p.svc.CountDead(ctx, in)
			v.ShowHidden = link("/dlq", f.with("replayed", "any")...)
		}
	}
	if err != nil {
		ae, known := toAPIError(err)
		if !known || ae.Status >= 500 {
			return err
		}
		v.Error, status, v.Rows = ae.Message, ae.Status, nil
	} else {
		order := ""
		if asc {
			order = "asc"
		}
		v.ExportNDJSON = link("/dlq/export", append(f.pairs(), "order", order, "format", "ndjson")...)
		v.ExportCSV = link("/dlq/export", append(f.pairs(), "order", order, "format", "csv")...)
	}
	if cursor != "" {
		v.FirstURL = p.deadURL(f, v.Order, limit, "")
	}
	flip := "asc"
	if asc {
		flip = "desc"
	}
	v.SortURL = p.deadURL(f, flip, limit, "")
	if v.QueueNames, err = p.queueNames(ctx, f.Queue); err != nil {
		return err
	}
	if cursor == "" { // the counts of the whole DLQ head its first page; the next pages need not group it again
		st, err := p.svc.DeadStats(ctx, who(c).allowsQueue) // a token's queues only, as GET /api/dlq/stats
		if err != nil {
			return err
		}
		v.Stats = newDeadStatsView(st)
	}
	v.Refresh = 10
	return p.render(c, status, "dlq", v)
}

func (p *pages) deadURL(f deadFilter, order string, limit int, cursor string) string {
	if order == "desc" {
		order = ""
	}
	l := ""
	if limit != 0 {
		l = strconv.Itoa(limit)
	}
	return link("/dlq", append(f.pairs(), "order", order, "limit", l, "cursor", cursor)...)
}

// deadStatsView is the DLQ's counts as dlq.html shows them: each group
// largest first (days newest first), a few entries each, every entry a
// link to its rows.
type deadStatsView struct {
	*app.DeadStats
	Queues, Kinds, Reasons, Days []statItem
	// OldestAt is when the oldest row moved (zero with none).
	OldestAt time.Time
	// MoreQueues and the like count the entries not listed.
	MoreQueues, MoreKinds, MoreDays int
}

type statItem struct {
	Name  string
	Label string
	Count int64
	Href  string
}

// statsShown is how many entries of a group the page lists.
const statsShown = 8

func newDeadStatsView(st *app.DeadStats) *deadStatsView {
	v := &deadStatsView{DeadStats: st}
	if st.Total > 0 {
		v.OldestAt = st.At.Add(-time.Duration(st.OldestAge * float64(time.Second))).Truncate(time.Second)
	}
	group := func(m map[string]int64, key string) ([]statItem, int) {
		items := make([]statItem, 0, len(m))
		for name, n := range m {
			items = append(items, statItem{Name: name, Label: name, Count: n, Href: link("/dlq", key, name, "replayed", "any")})
		}
		sort.Slice(items, func(i, j int) bool {
			if items[i].Count != items[j].Count {
				return items[i].Count > items[j].Count
			}
			return items[i].Name < items[j].Name
		})
		if len(items) > statsShown {
			return items[:statsShown], len(items) - statsShown
		}
		return items, 0
	}
	v.Queues, v.MoreQueues = group(st.ByQueue, "queue")
	v.Kinds, v.MoreKinds = group(st.ByKind, "kind")
	v.Reasons, _ = group(st.ByReason, "reason")
	for i := range v.Reasons {
		if t := reasonText[v.Reasons[i].Name]; t != "" {
			v.Reasons[i].Label = t
		}
	}
	for day, n := range st.ByDay {
		item := statItem{Name: day, Label: day, Count: n}
		if d, err := time.Parse(time.DateOnly, day); err == nil {
			item.Href = link("/dlq", "moved_after", d.Format("2006-01-02T15:04"), "moved_before", d.AddDate(0, 0, 1).Format("2006-01-02T15:04"), "replayed", "any")
		}
		v.Days = append(v.Days, item)
	}
	sort.Slice(v.Days, func(i, j int) bool { return v.Days[i].Name > v.Days[j].Name })
	if len(v.Days) > statsShown {
		v.Days, v.MoreDays = v.Days[:statsShown], len(v.Days)-statsShown
	}
	return v
}

// exportPage is how many rows the export reads and writes at a time: the
// memory an export holds is about one page of rows, whatever it writes.
const exportPage = 200

// exportWait is how long writing one page of an export may take; each page
// moves the connection's write deadline on, so a long export outlives the
// server's write timeout while a stalled client does not hold it forever.
const exportWait = time.Minute

// deadExport is GET /dlq/export?format=ndjson|csv: every row matching the
// list's filters (the same as /dlq's, rows replayed before left out by
// default), in the list's order, as a download. It streams page by page
// through the listing's cursor, so each row is written once even while
// rows are added. A bad filter goes back to the list with a message; a
// failure after the first page aborts the connection, so a cut-short file
// cannot pass for a whole one.
func (p *pages) deadExport(c echo.Context) error {
	ctx := c.Request().Context()
	f := deadFilterOf(c.QueryParam)
	back := link("/dlq", f.pairs()...)
	format := c.QueryParam("format")
	if format != "ndjson" && format != "csv" {
		return p.done(c, back, flash{Kind: "error", Text: "Pick an export format: JSON lines (ndjson) or CSV."})
	}
	in, err := f.listInput()
	if err == nil {
		in.Asc, err = queryOrder(c)
	}
	if err != nil {
		return p.actionErr(c, err, back)
	}
	in.Limit = exportPage
	page, err := p.svc.ListDead(ctx, in)
	if err != nil {
		return p.actionErr(c, err, back)
	}
	w := c.Response()
	rc := http.NewResponseController(w)
	name := "dead-letters-" + p.h.opts.Now().UTC().Format("20060102T150405Z")
	hd := w.Header()
	hd.Set("Cache-Control", "no-store")
	if format == "csv" {
		hd.Set("Content-Type", "text/csv; charset=utf-8")
		hd.Set("Content-Disposition", `attachment; filename="`+name+`.csv"`)
	} else {
		hd.Set("Content-Type", "application/x-ndjson")
		hd.Set("Content-Disposition", `attachment; filename="`+name+`.ndjson"`)
	}
	if c.Request().Method == http.MethodHead {
		return c.NoContent(http.StatusOK)
	}
	w.WriteHeader(http.StatusOK)
	var write func([]*app.DeadJob) error
	if format == "csv" {
		cw := csv.NewWriter(w)
		if err := cw.Write(app.DeadCSVColumns); err != nil {
			return nil // the client went away
		}
		write = func(rows []*app.DeadJob) error {
			for _, d := range rows {
				if err := cw.Write(d.CSVRecord()); err != nil {
					return err
				}
			}
			cw.Flush()
			return cw.Error()
		}
	} else {
		enc := json.NewEncoder(w)
		enc.SetEscapeHTML(false)
		write = func(rows []*app.DeadJob) error {
			for _, d := range rows {
				if err := enc.Encode(d); err != nil { // one line each
					return err
				}
			}
			return nil
		}
	}
	rows := 0
	for {
		_ = rc.SetWriteDeadline(time.Now().Add(exportWait))
		if err := write(page.Jobs); err != nil {
			return nil // the client went away; nothing is left to tell
		}
		_ = rc.Flush()
		rows += len(page.Jobs)
		if page.NextCursor == "" {
			return nil
		}
		in.Cursor = page.NextCursor
		if page, err = p.svc.ListDead(ctx, in); err != nil {
			if ctx.Err() == nil {
				p.log.Error().Err(err).Int("rows", rows).Msg("dead-letter export stopped")
			}
			panic(http.ErrAbortHandler) // the file must not look complete
		}
	}
}

// dead is GET /dlq/{id}: a dead-letter row with its job's history, the
// failed attempt, replay (now, later, or with changes) and purge.
func (p *pages) dead(c echo.Context) error {
	id, err := pathID(c)
	if err != nil {
		return err
	}
	job, err := p.svc.Get(c.Request().Context(), id, 0, true)
	if err != nil {
		return err
	}
	if job.DeadLetter == nil { // a live job (or replayed from elsewhere): show it where it lives
		return c.Redirect(http.StatusSeeOther, "/jobs/"+strconv.FormatInt(id, 10))
	}
	return p.renderJob(c, job, "dlq")
}

// deadReplay is POST /dlq/{id}/replay: a new queued job from the row, now,
// after a delay ("10m") or at a time (UTC), optionally with another queue,
// priority or max_attempts and a changed payload (a replacement, sent only
// when it differs from the row's, or a JSON merge patch).
func (p *pages) deadReplay(c echo.Context) error {
	ctx := c.Request().Context()
	id, err := pathID(c)
	if err != nil {
		return err
	}
	back := "/dlq/" + strconv.FormatInt(id, 10)
	form, err := c.FormParams()
	if err != nil {
		return app.Invalid("form", "the form could not be read")
	}
	if form.Get("from") == "jobs" {
		back = "/jobs/" + strconv.FormatInt(id, 10)
	}
	in, err := replayInput(form.Get("when"), form.Get("delay"), form.Get("run_at"))
	if err != nil {
		return p.actionErr(c, err, back)
	}
	if in.ReplayOverride, err = p.replayOverride(ctx, id, form); err != nil {
		return p.actionErr(c, err, back)
	}
	job, err := p.svc.Replay(ctx, id, in, actor(c))
	if err != nil {
		return p.actionErr(c, err, back)
	}
	text := fmt.Sprintf("Dead-letter job #%d replayed as job #%d", id, job.ID)
	if in.Queue != "" {
		text += " in queue " + job.Queue
	}
	if job.Scheduled(p.h.opts.Now()) {
		text += ", to run at " + job.RunAt.UTC().Format("2006-01-02 15:04:05 UTC")
	}
	return p.done(c, back, flash{Text: text + ".", Href: "/jobs/" + strconv.FormatInt(job.ID, 10), Link: "Open job #" + strconv.FormatInt(job.ID, 10)})
}

// replayInput reads when the replay runs: "now"; "later", which needs a
// delay ("10m", "2h") or a time (the datetime-local field, read as UTC);
// or "auto" (the form with changes): later when a delay or time is given.
func replayInput(when, delay, runAt string) (app.ReplayInput, error) {
	var in app.ReplayInput
	delay, runAt = strings.TrimSpace(delay), strings.TrimSpace(runAt)
	if when == "auto" && (delay != "" || runAt != "") {
		when = "later"
	}
	if when != "later" {
		return in, nil
	}
	switch {
	case delay != "" && runAt != "":
		return in, app.Invalid("delay", "give a delay or a time, not both")
	case delay != "":
		d, err := app.ParseDuration(delay)
		if err != nil {
			return in, app.Invalid("delay", "%v", err)
		}
		ad := app.Duration(d)
		in.Delay = &ad
	case runAt != "":
		t, err := parseFormTime("run_at", runAt)
		if err != nil {
			return in, err
		}
		in.RunAt = t
	default:
		return in, app.Invalid("delay", "to replay later, give a delay (like 10m) or a time (UTC)")
	}
	return in, nil
}

// replayOverride reads the changes of the replay form: empty fields keep
// the row's values. The payload field holds the row's payload as the page
// showed it; it is sent as a replacement only when its JSON differs from
// the row's (so reindenting is no change, and a browser's line endings
// do not count).
func (p *pages) replayOverride(ctx context.Context, id int64, form url.Values) (app.ReplayOverride, error) {
	var o app.ReplayOverride
	o.Queue = strings.TrimSpace(form.Get("queue"))
	for _, f := range []struct {
		name string
		to   **int
	}{{"priority", &o.Priority}, {"max_attempts", &o.MaxAttempts}} {
		v := strings.TrimSpace(form.Get(f.name))
		if v == "" {
			continue
		}
		n, err := strconv.Atoi(v)
		if err != nil {
			return o, app.Invalid(f.name, "%s %q is not a whole number", f.name, app.TruncateString(v, 40))
		}
		*f.to = &n
	}
	if patch := strings.TrimSpace(form.Get("payload_patch")); patch != "" {
		if err := jsonErr("payload_patch", patch); err != nil {
			return o, err
		}
		o.PayloadPatch = json.RawMessage(patch)
	}
	if _, sent := form["payload"]; sent {
		text := strings.TrimSpace(form.Get("payload"))
		if text == "" {
			return o, app.Invalid("payload", "the payload is empty; to keep the row's payload, leave the field as it was (null is a payload too)")
		}
		if err := jsonErr("payload", text); err != nil {
			return o, err
		}
		row, err := p.svc.GetDead(ctx, id)
		if err != nil {
			return o, err
		}
		was := compactJSON(row.Payload)
		if was == "" {
			was = "null" // a row without a payload shows null
		}
		if compactJSON(json.RawMessage(text)) != was {
			o.Payload = json.RawMessage(compactJSON(json.RawMessage(text)))
		}
	}
	return o, nil
}

// jsonErr says where text is not valid JSON, as an *InvalidError of field.
func jsonErr(field, text string) error {
	var v any
	err := json.Unmarshal([]byte(text), &v)
	if err == nil {
		return nil
	}
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return app.Invalid(field, "%s is not valid JSON: %v (at byte %d)", field, se, se.Offset)
	}
	return app.Invalid(field, "%s is not valid JSON: %v", field, err)
}

// confirmView is the data of confirm.html: what a destructive or bulk
// action will touch, and the form that does it.
type confirmView struct {
	base
	Heading string
	Text    string
	Count   int
	Dead    []*app.DeadJob
	Jobs    []*app.Job
	More    int // matching rows not listed
	Action  string
	Fields  []formField
	Button  string
	Danger  bool
	Back    string
	// Note asks for the operator's reason (a move), kept on the rows.
	Note bool
	// Bounded: the action carries a dry run's bound (it acts on what was counted).
	Bounded bool
	// Recount, for a replay of all matching rows, is the form that counts
	// again with or without the rows replayed before.
	Recount *recountView
}

type formField struct{ Name, Value string }

// recountView is the "include rows replayed before" choice of the confirm
// page: a GET form, so the count, the sample and the bound shown are
// always those of the choice the button acts on.
type recountView struct {
	Fields   []formField
	Include  bool
	Replayed int // rows replayed before that match
}

// maxSelected caps the rows one selection acts on (a page holds at most 1,000).
const maxSelected = 1000

// Bulk operations of the DLQ forms.
const (
	opReplay    = "replay"     // the selected rows
	opPurge     = "purge"      // the selected rows
	opReplayAll = "replay_all" // every row matching the filter
	opPurgeAll  = "purge_all"  // every row matching the filter
	opMove      = "move"       // queued and scheduled jobs matching a queue, kind or tag, into the DLQ
)

// deadConfirm is GET /dlq/confirm: the count (and a sample) of what a
// replay, purge or move will touch, and the button that does it. Nothing
// changes until that button is pressed; a bulk action carries the dry
// run's bound, so it leaves alone what arrived after this count.
func (p *pages) deadConfirm(c echo.Context) error {
	ctx := c.Request().Context()
	f := deadFilterOf(c.QueryParam)
	op := c.QueryParam("op")
	if op == opMove {
		return p.moveConfirm(c)
	}
	back := link("/dlq", f.pairs()...)
	v := confirmView{base: p.base(c, "Confirm", "dlq"), Action: "/dlq/bulk", Back: back}
	v.Fields = []formField{{"op", op}}
	kv := f.pairs()
	for i := 0; i < len(kv); i += 2 {
		if kv[i+1] != "" {
			v.Fields = append(v.Fields, formField{kv[i], kv[i+1]})
		}
	}
	verb := map[string]string{opReplay: "Replay", opReplayAll: "Replay", opPurge: "Purge", opPurgeAll: "Purge"}[op]
	if verb == "" {
		return p.done(c, back, flash{Kind: "error", Text: "Pick an action: replay or purge."})
	}
	v.Danger = verb == "Purge"
	switch op {
	case opReplay, opPurge:
		ids, err := parseIDs(c.QueryParams()["id"])
		if err != nil {
			return p.actionErr(c, err, back)
		}
		if len(ids) == 0 {
			return p.done(c, back, flash{Kind: "error", Text: "Select at least one row first, or use the buttons for all matching rows."})
		}
		rows, err := p.svc.DeadByIDs(ctx, ids)
		if err != nil {
			return err
		}
		if len(rows) == 0 {
			return p.done(c, back, flash{Kind: "error", Text: "The selected rows are no longer in the dead-letter queue."})
		}
		for _, r := range rows {
			v.Fields = append(v.Fields, formField{"id", strconv.FormatInt(r.ID, 10)})
		}
		v.Count, v.Dead = len(rows), rows
		v.Heading = fmt.Sprintf("%s %s?", verb, plural(len(rows), "selected dead-letter job", "selected dead-letter jobs"))
	case opReplayAll, opPurgeAll:
		action := strings.TrimSuffix(op, "_all")
		include := op == opReplayAll && c.QueryParam("include_replayed") != ""
		in, err := f.bulkInput(true)
		if err != nil {
			return p.actionErr(c, err, back)
		}
		in.IncludeReplayed = include
		res, err := p.svc.BulkDead(ctx, action, in, actor(c))
		if err != nil {
			return p.actionErr(c, err, back)
		}
		if op == opReplayAll {
			if v.Recount, err = p.recount(ctx, f, v.Fields, include); err != nil {
				return p.actionErr(c, err, back)
			}
		}
		if res.Count == 0 {
			text := "No dead-letter rows match " + f.Describe() + "."
			if v.Recount != nil && v.Recount.Replayed > 0 {
				text = fmt.Sprintf("No dead-letter rows match %s but %s replayed before: tick “include rows replayed before” to replay them again.",
					f.Describe(), plural(v.Recount.Replayed, "row", "rows"))
				if !include { // stay, so the operator can tick the box
					v.Heading = "Nothing to replay"
					v.Text = text
					return p.render(c, http.StatusOK, "confirm", v)
				}
			}
			return p.done(c, back, flash{Kind: "error", Text: text})
		}
		if include {
			v.Fields = append(v.Fields, formField{"include_replayed", "true"})
		}
		v.Count, v.Dead, v.More = res.Count, res.Sample, res.Count-len(res.Sample)
		v.Fields = append(v.Fields, formField{"bound", res.Bound}) // rows that arrive after this count are left alone
		v.Bounded = true
		v.Heading = fmt.Sprintf("%s all %s?", verb, plural(res.Count, "matching dead-letter job", "matching dead-letter jobs"))
		v.Text = "This acts on " + f.Describe() + "."
		switch {
		case op == opPurgeAll:
			v.Text += " Rows replayed before are purged too."
		case include:
			v.Text += " Rows replayed before are replayed again."
		default:
			v.Text += " Rows replayed before are left out."
		}
	}
	if v.Danger {
		v.Text += " Purged rows are deleted for good."
		v.Button = fmt.Sprintf("Purge %s", plural(v.Count, "job", "jobs"))
	} else {
		v.Text += " Each row becomes a new queued job; the dead-letter rows stay."
		v.Button = fmt.Sprintf("Replay %s", plural(v.Count, "job", "jobs"))
	}
	v.Text = strings.TrimSpace(v.Text)
	return p.render(c, http.StatusOK, "confirm", v)
}

// recount is the "include rows replayed before" form of a replay of all
// rows matching f: it counts the rows of f replayed before.
func (p *pages) recount(ctx context.Context, f deadFilter, fields []formField, include bool) (*recountView, error) {
	in, err := f.listInput()
	if err != nil {
		return nil, err
	}
	in.Replayed = ptrTo(true)
	n, err := p.svc.CountDead(ctx, in)
	if err != nil {
		return nil, err
	}
	return &recountView{Fields: fields, Include: include, Replayed: n}, nil
}

// moveConfirm is GET /dlq/confirm?op=move&queue=&kind=&tag=: how many
// queued and scheduled jobs a move to the dead-letter queue takes (a dry
// run: the count, a sample and the bound), a field for the reason, and the
// button. A move needs a queue, kind or tag.
func (p *pages) moveConfirm(c echo.Context) error {
	mf := moveFilterOf(c.QueryParam)
	back := link("/jobs", mf.pairs()...)
	if mf.empty() {
		return p.done(c, back, flash{Kind: "error", Text: "Filter by queue, kind or tag first: a move takes the queued and scheduled jobs that match."})
	}
	res, err := p.svc.BulkDead(c.Request().Context(), app.BulkMove, app.BulkInput{Queue: mf.Queue, Kind: mf.Kind, Tag: mf.Tag, DryRun: true}, actor(c))
	if err != nil {
		return p.actionErr(c, err, back)
	}
	if res.Count == 0 {
		return p.done(c, back, flash{Kind: "error", Text: "No queued or scheduled jobs match " + mf.describe() + "."})
	}
	v := confirmView{base: p.base(c, "Confirm move", "jobs"), Action: "/dlq/bulk", Back: back, Danger: true, Note: true,
		Count: res.Count, Jobs: res.Jobs, More: res.Count - len(res.Jobs),
		Heading: fmt.Sprintf("Move %s to the dead-letter queue?", plural(res.Count, "matching job", "matching jobs")),
		Text: "Queued and scheduled " + mf.describe() + " move to the dead-letter queue (reason admin_move) and stop waiting for a worker; " +
			"jobs submitted after this count are left alone. A replay brings them back.",
		Button: "Move " + plural(res.Count, "job", "jobs"),
		Fields: []formField{{"op", opMove}}}
	kv := mf.pairs()
	for i := 0; i < len(kv); i += 2 {
		if kv[i+1] != "" {
			v.Fields = append(v.Fields, formField{kv[i], kv[i+1]})
		}
	}
	v.Fields = append(v.Fields, formField{"bound", res.Bound})
	v.Bounded = true
	return p.render(c, http.StatusOK, "confirm", v)
}

// moveFilter is what a bulk move takes: jobs of a queue, kind or tag.
type moveFilter struct{ Queue, Kind, Tag string }

func moveFilterOf(get func(string) string) moveFilter {
	return moveFilter{Queue: get("queue"), Kind: get("kind"), Tag: get("tag")}
}

func (f moveFilter) empty() bool { return f.Queue == "" && f.Kind == "" && f.Tag == "" }

func (f moveFilter) pairs() []string {
	return []string{"queue", f.Queue, "kind", f.Kind, "tag", f.Tag}
}

func (f moveFilter) describe() string {
	var parts []string
	for _, kv := range [][2]string{{"queue", f.Queue}, {"kind", f.Kind}, {"tag", f.Tag}} {
		if kv[1] != "" {
			parts = append(parts, kv[0]+" = "+kv[1])
		}
	}
	return "jobs with " + strings.Join(parts, ", ")
}

// deadBulk is POST /dlq/bulk, sent by the confirm page: replay or purge
// the selected rows one by one, every matching row with BulkDead, or move
// the matching jobs into the dead-letter queue.
func (p *pages) deadBulk(c echo.Context) error {
	ctx := c.Request().Context()
	form, err := c.FormParams()
	if err != nil {
		return app.Invalid("form", "the form could not be read")
	}
	f := deadFilterOf(form.Get)
	op := form.Get("op")
	back := link("/dlq", f.pairs()...)
	who := actor(c)
	switch op {
	case opReplay, opPurge:
		return p.bulkSelected(c, op, form, back)
	case opMove:
		return p.bulkMove(c, form)
	case opReplayAll, opPurgeAll:
		action := strings.TrimSuffix(op, "_all")
		in, err := f.bulkInput(false)
		if err != nil {
			return p.actionErr(c, err, back)
		}
		in.Bound = form.Get("bound")
		in.IncludeReplayed = op == opReplayAll && form.Get("include_replayed") != ""
		res, err := p.svc.BulkDead(ctx, action, in, who)
		if err != nil {
			if res != nil && res.Count > 0 {
				p.log.Error().Err(err).Str("action", action).Int("count", res.Count).Msg("bulk action stopped")
			}
			return p.actionErr(c, err, back)
		}
		return p.done(c, back, flash{Text: bulkText(action, res.Count)})
	}
	return p.done(c, back, flash{Kind: "error", Text: "Pick an action: replay or purge."})
}

// bulkMove moves the jobs the move confirm page counted (its bound) into
// the dead-letter queue, with the operator's reason as the rows' note.
func (p *pages) bulkMove(c echo.Context, form url.Values) error {
	mf := moveFilterOf(form.Get)
	back := link("/jobs", mf.pairs()...)
	if mf.empty() {
		return p.done(c, back, flash{Kind: "error", Text: "Filter by queue, kind or tag first: a move takes the queued and scheduled jobs that match."})
	}
	in := app.BulkInput{Queue: mf.Queue, Kind: mf.Kind, Tag: mf.Tag, Bound: form.Get("bound"), Note: strings.TrimSpace(form.Get("note"))}
	res, err := p.svc.BulkDead(c.Request().Context(), app.BulkMove, in, actor(c))
	if err != nil {
		if res != nil && res.Count > 0 {
			p.log.Error().Err(err).Str("action", app.BulkMove).Int("count", res.Count).Msg("bulk action stopped")
		}
		return p.actionErr(c, err, back)
	}
	return p.done(c, back, flash{Text: fmt.Sprintf("Moved %s to the dead-letter queue.", plural(res.Count, "job", "jobs")),
		Href: link("/dlq", append(mf.pairs(), "reason", "admin_move")...), Link: "See them there"})
}

func (p *pages) bulkSelected(c echo.Context, op string, form url.Values, back string) error {
	ctx := c.Request().Context()
	ids, err := parseIDs(form["id"])
	if err != nil {
		return p.actionErr(c, err, back)
	}
	if len(ids) == 0 {
		return p.done(c, back, flash{Kind: "error", Text: "Select at least one row first."})
	}
	rows, err := p.svc.DeadByIDs(ctx, ids)
	if err != nil {
		return err
	}
	var last *app.Job
	n := 0
	for _, r := range rows {
		if op == opReplay {
			last, err = p.svc.Replay(ctx, r.ID, app.ReplayInput{}, actor(c))
		} else {
			err = p.svc.Purge(ctx, r.ID, actor(c))
		}
		if errors.Is(err, app.ErrNotFound) { // gone meanwhile (another operator, retention)
			continue
		}
		if err != nil {
			if n > 0 {
				err = fmt.Errorf("%s after %d rows: %w", op, n, err)
			}
			return p.actionErr(c, err, back)
		}
		n++
	}
	fl := flash{Text: bulkText(op, n)}
	if op == opReplay && n == 1 && last != nil {
		fl.Href, fl.Link = "/jobs/"+strconv.FormatInt(last.ID, 10), "Open job #"+strconv.FormatInt(last.ID, 10)
	}
	return p.done(c, back, fl)
}

// bulkInput is the bulk action on every row matching f (its queue, kind,
// tag, reason and move times; Replayed is the listing's, not the
// action's). The confirm page, which shows what it will touch, stands for
// allow_all when f names no queue, kind or tag.
func (f deadFilter) bulkInput(dryRun bool) (app.BulkInput, error) {
	in := app.BulkInput{Queue: f.Queue, Kind: f.Kind, Tag: f.Tag, Reason: f.Reason,
		AllowAll: f.Queue == "" && f.Kind == "" && f.Tag == "", DryRun: dryRun}
	var err error
	in.MovedAfter, in.MovedBefore, err = f.times()
	return in, err
}

func bulkText(action string, n int) string {
	if action == app.BulkReplay {
		return fmt.Sprintf("Replayed %s as new queued jobs.", plural(n, "dead-letter job", "dead-letter jobs"))
	}
	return fmt.Sprintf("Purged %s.", plural(n, "dead-letter job", "dead-letter jobs"))
}

// parseIDs reads the id fields of a selection: positive, at most
// maxSelected, duplicates dropped.
func parseIDs(vals []string) ([]int64, error) {
	seen := map[int64]bool{}
	var ids []int64
	for _, s := range vals {
		id, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
		if err != nil || id <= 0 {
			return nil, app.Invalid("id", "%q is not a job id", app.TruncateString(s, 40))
		}
		if !seen[id] {
			seen[id] = true
			ids = append(ids, id)
		}
	}
	if len(ids) > maxSelected {
		return nil, app.Invalid("id", "at most %d rows at once; use the buttons for all matching rows", maxSelected)
	}
	return ids, nil
}

// plural writes n with the singular or plural noun: "1 job", "3 jobs".
func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return num(n) + " " + many
}
