package ui

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/queuehq/queue/app"
)

// deadFilter is the filter of the DLQ pages, as the forms carry it.
type deadFilter struct {
	Queue, Kind, Tag, Reason string
}

func deadFilterOf(get func(string) string) deadFilter {
	return deadFilter{Queue: get("queue"), Kind: get("kind"), Tag: get("tag"), Reason: get("reason")}
}

// Empty reports whether f matches every row.
func (f deadFilter) Empty() bool {
	return f.Queue == "" && f.Kind == "" && f.Tag == "" && f.Reason == ""
}

// pairs is f as link's key/value pairs.
func (f deadFilter) pairs() []string {
	return []string{"queue", f.Queue, "kind", f.Kind, "tag", f.Tag, "reason", f.Reason}
}

// Describe says in words what f matches.
func (f deadFilter) Describe() string {
	var parts []string
	for _, kv := range [][2]string{{"queue", f.Queue}, {"kind", f.Kind}, {"tag", f.Tag}, {"reason", f.Reason}} {
		if kv[1] != "" {
			parts = append(parts, kv[0]+" = "+kv[1])
		}
	}
	if len(parts) == 0 {
		return "every row of the dead-letter queue"
	}
	return "rows with " + strings.Join(parts, ", ")
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
	Error      string
	NextURL    string
	FirstURL   string
	SortURL    string
}

var deadReasons = []string{"max_attempts", "permanent_failure", "lease_expired", "admin_move"}

// deadList is GET /dlq: the filtered dead-letter rows, with checkboxes for
// the bulk actions and the count of all rows matching.
func (p *pages) deadList(c echo.Context) error {
	ctx := c.Request().Context()
	f := deadFilterOf(c.QueryParam)
	v := deadListView{base: p.base(c, "Dead letters", "dlq"), Filter: f, Reasons: deadReasons, Order: "desc"}
	limit, err := queryInt(c, "limit")
	var asc bool
	if err == nil {
		asc, err = queryOrder(c)
	}
	if asc {
		v.Order = "asc"
	}
	cursor := c.QueryParam("cursor")
	status := http.StatusOK
	if err == nil {
		var page *app.DeadPage
		page, err = p.svc.ListDead(ctx, app.DeadListInput{Queue: f.Queue, Kind: f.Kind, Tag: f.Tag, Reason: f.Reason,
			Limit: limit, Cursor: cursor, Asc: asc})
		if err == nil {
			v.Rows = page.Jobs
			if page.NextCursor != "" {
				v.NextURL = p.deadURL(f, v.Order, limit, page.NextCursor)
			}
			v.Count, err = p.svc.CountDead(ctx, app.DeadListInput{Queue: f.Queue, Kind: f.Kind, Tag: f.Tag, Reason: f.Reason})
		}
	}
	if err != nil {
		ae, known := toAPIError(err)
		if !known || ae.Status >= 500 {
			return err
		}
		v.Error, status, v.Rows = ae.Message, ae.Status, nil
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

// dead is GET /dlq/{id}: a dead-letter row with its job's history, replay
// (now or later) and purge.
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
// after a delay ("10m") or at a time (UTC).
func (p *pages) deadReplay(c echo.Context) error {
	id, err := pathID(c)
	if err != nil {
		return err
	}
	back := "/dlq/" + strconv.FormatInt(id, 10)
	if c.FormValue("from") == "jobs" {
		back = "/jobs/" + strconv.FormatInt(id, 10)
	}
	in, err := replayInput(c.FormValue("when"), c.FormValue("delay"), c.FormValue("run_at"))
	if err != nil {
		return p.actionErr(c, err, back)
	}
	job, err := p.svc.Replay(c.Request().Context(), id, in, actor(c))
	if err != nil {
		return p.actionErr(c, err, back)
	}
	text := fmt.Sprintf("Dead-letter job #%d replayed as job #%d.", id, job.ID)
	if job.Scheduled(p.h.opts.Now()) {
		text = fmt.Sprintf("Dead-letter job #%d replayed as job #%d, to run at %s.", id, job.ID, job.RunAt.UTC().Format("2006-01-02 15:04:05 UTC"))
	}
	return p.done(c, back, flash{Text: text, Href: "/jobs/" + strconv.FormatInt(job.ID, 10), Link: "Open job #" + strconv.FormatInt(job.ID, 10)})
}

// replayInput reads the replay form: when "later", a delay ("10m", "2h")
// or a time (the datetime-local field, read as UTC) is required.
func replayInput(when, delay, runAt string) (app.ReplayInput, error) {
	var in app.ReplayInput
	if when != "later" {
		return in, nil
	}
	delay, runAt = strings.TrimSpace(delay), strings.TrimSpace(runAt)
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
		for _, layout := range []string{"2006-01-02T15:04", "2006-01-02T15:04:05", time.RFC3339, "2006-01-02 15:04", "2006-01-02 15:04:05"} {
			if t, err := time.ParseInLocation(layout, runAt, time.UTC); err == nil {
				in.RunAt = &t
				return in, nil
			}
		}
		return in, app.Invalid("run_at", "%q is not a time like 2026-01-02T15:04 (UTC)", app.TruncateString(runAt, 40))
	default:
		return in, app.Invalid("delay", "to replay later, give a delay (like 10m) or a time (UTC)")
	}
	return in, nil
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
}

type formField struct{ Name, Value string }

// maxSelected caps the rows one selection acts on (a page holds at most 1,000).
const maxSelected = 1000

// Bulk operations of the DLQ forms.
const (
	opReplay    = "replay"     // the selected rows
	opPurge     = "purge"      // the selected rows
	opReplayAll = "replay_all" // every row matching the filter
	opPurgeAll  = "purge_all"  // every row matching the filter
)

// deadConfirm is GET /dlq/confirm: the count (and a sample) of what a
// replay or purge will touch, and the button that does it. Nothing changes
// until that button is pressed.
func (p *pages) deadConfirm(c echo.Context) error {
	ctx := c.Request().Context()
	f := deadFilterOf(c.QueryParam)
	op := c.QueryParam("op")
	back := link("/dlq", f.pairs()...)
	v := confirmView{base: p.base(c, "Confirm", "dlq"), Action: "/dlq/bulk", Back: back}
	v.Fields = []formField{{"op", op}}
	for i := 0; i < len(f.pairs()); i += 2 {
		if val := f.pairs()[i+1]; val != "" {
			v.Fields = append(v.Fields, formField{f.pairs()[i], val})
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
		res, err := p.svc.BulkDead(ctx, strings.TrimSuffix(op, "_all"), bulkInput(f, true), actor(c))
		if err != nil {
			return p.actionErr(c, err, back)
		}
		if res.Count == 0 {
			return p.done(c, back, flash{Kind: "error", Text: "No dead-letter rows match " + f.Describe() + "."})
		}
		v.Count, v.Dead, v.More = res.Count, res.Sample, res.Count-len(res.Sample)
		v.Fields = append(v.Fields, formField{"bound", res.Bound}) // rows that arrive after this count are left alone
		v.Heading = fmt.Sprintf("%s all %s?", verb, plural(res.Count, "matching dead-letter job", "matching dead-letter jobs"))
		v.Text = "This acts on " + f.Describe() + "."
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

// deadBulk is POST /dlq/bulk, sent by the confirm page: replay or purge
// the selected rows one by one, or every matching row with BulkDead.
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
	case opReplayAll, opPurgeAll:
		action := strings.TrimSuffix(op, "_all")
		in := bulkInput(f, false)
		in.Bound = form.Get("bound")
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

// bulkInput is the bulk action on every row matching f. The confirm page,
// which shows what it will touch, stands for allow_all when f names no
// queue, kind or tag.
func bulkInput(f deadFilter, dryRun bool) app.BulkInput {
	return app.BulkInput{Queue: f.Queue, Kind: f.Kind, Tag: f.Tag, Reason: f.Reason,
		AllowAll: f.Queue == "" && f.Kind == "" && f.Tag == "", DryRun: dryRun}
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
