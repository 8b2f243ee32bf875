package ui_test

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/queuehq/queue/app"
	"github.com/queuehq/queue/ui"
)

// The pages of the DLQ's second pass (issue 22), on the memory store.

// A replay from the row's page takes overrides: the new job has them. The
// payload field is sent only when it was changed; a patch merges.
func TestPagesDLQReplayWithOverrides(t *testing.T) {
	env := newUIEnv(t, ui.Options{}, false)
	ctx := t.Context()
	u := newUIClient(t, env.URL)
	id := env.ids.Dead[1]
	page := u.get(fmt.Sprintf("/dlq/%d", id))
	wantStatus(t, "row page", page, http.StatusOK)
	// The failed attempt, as the job row had it.
	wantBody(t, "row page", page, "Failed attempt started", "Failed attempt was due", "worker-1", "Replay later or with changes",
		`name="payload"`, `name="payload_patch"`, `name="priority"`, `name="max_attempts"`, `list="replay-queues"`, `&#34;invoice&#34;: 1001`)

	replay := func(form url.Values) uiAnswer {
		t.Helper()
		u.get(fmt.Sprintf("/dlq/%d", id))
		form.Set("when", "auto")
		return u.follow(u.post(fmt.Sprintf("/dlq/%d/replay", id), form))
	}
	a := replay(url.Values{"queue": {"billing-v2"}, "priority": {"7"}, "max_attempts": {"9"}, "delay": {"10m"},
		"payload": {"{\r\n  \"invoice\": 1001,\r\n  \"retry\": true\r\n}"}})
	wantBody(t, "replay with overrides", a, "replayed as job #", "in queue billing-v2", "to run at")
	row, err := env.svc.GetDead(ctx, id)
	if err != nil || row.ReplayedJobID == nil {
		t.Fatalf("the row after the replay: %+v, %v", row, err)
	}
	job, err := env.svc.Get(ctx, *row.ReplayedJobID, 0, false)
	if err != nil {
		t.Fatal(err)
	}
	if job.Queue != "billing-v2" || job.Priority != 7 || job.MaxAttempts != 9 || string(job.Payload) != `{"invoice":1001,"retry":true}` ||
		!job.RunAt.After(env.clock.Now().Add(9*time.Minute)) || *job.ReplayedFrom != id {
		t.Fatalf("the replayed job: queue %s priority %d max_attempts %d payload %s run_at %s, want billing-v2, 7, 9, the edited payload, in 10m",
			job.Queue, job.Priority, job.MaxAttempts, job.Payload, job.RunAt)
	}

	// The payload as the page showed it (reindented by a browser) is no change.
	a = replay(url.Values{"payload": {"{\"invoice\":   1001}\r\n"}})
	wantBody(t, "replay with the payload as shown", a, "replayed as job #")
	row, _ = env.svc.GetDead(ctx, id)
	second, _ := env.svc.Get(ctx, *row.ReplayedJobID, 0, false)
	if string(second.Payload) != `{"invoice":1001}` || second.Queue != "billing" || second.Priority != 0 {
		t.Fatalf("a replay without changes: queue %s payload %s priority %d", second.Queue, second.Payload, second.Priority)
	}
	audit, _ := env.svc.Audit(ctx, app.AuditFilter{Action: "dlq.replay"})
	if len(audit) < 2 || strings.Contains(string(audit[0].Filter), "payload") || !strings.Contains(string(audit[1].Filter), `"payload":"replaced"`) {
		t.Fatalf("audit of the replays (newest first): %s / %s; want the payload replaced in the first only", audit[0].Filter, audit[1].Filter)
	}

	// A merge patch.
	a = replay(url.Values{"payload_patch": {`{"invoice": null, "customer": "c-1"}`}})
	wantBody(t, "replay with a patch", a, "replayed as job #")
	row, _ = env.svc.GetDead(ctx, id)
	third, _ := env.svc.Get(ctx, *row.ReplayedJobID, 0, false)
	if string(third.Payload) != `{"customer":"c-1"}` {
		t.Fatalf("patched payload: %s", third.Payload)
	}

	// Bad input is a message on the page, never an error page; nothing is replayed.
	for _, bad := range []struct {
		form url.Values
		want string
	}{
		{url.Values{"priority": {"high"}}, "priority &#34;high&#34; is not a whole number"},
		{url.Values{"max_attempts": {"0"}}, "max_attempts 0 is not between 1 and 1000"},
		{url.Values{"queue": {"no/such"}}, "queue name"},
		{url.Values{"payload": {`{"invoice": `}}, "payload is not valid JSON"},
		{url.Values{"payload": {""}}, "the payload is empty"},
		{url.Values{"payload_patch": {`[1,`}}, "payload_patch is not valid JSON"},
		{url.Values{"payload": {`{"a":1}`}, "payload_patch": {`{"b":2}`}}, "not both"},
		{url.Values{"delay": {"10m"}, "run_at": {"2030-01-01T10:00"}}, "not both"},
		{url.Values{"run_at": {"tomorrow"}}, "is not a time like"},
	} {
		a := replay(bad.form)
		wantStatus(t, fmt.Sprintf("replay with %v", bad.form), a, http.StatusOK)
		wantBody(t, fmt.Sprintf("replay with %v", bad.form), a, "flash-error", bad.want)
	}
	if row, _ := env.svc.GetDead(ctx, id); row.ResurrectionCount != 3 {
		t.Fatalf("after refused replays: resurrection_count %d, want 3", row.ResurrectionCount)
	}

	// The row's page links the last job and all jobs made from it; that
	// list is the jobs page filtered by replayed_from, and shows only them.
	page = u.get(fmt.Sprintf("/dlq/%d", id))
	wantBody(t, "row page after replays", page, fmt.Sprintf(`href="/jobs/%d">job #%d</a>`, third.ID, third.ID),
		fmt.Sprintf(`href="/jobs?replayed_from=%d"`, id), "all jobs made from it")
	list := u.get(fmt.Sprintf("/jobs?replayed_from=%d", id))
	wantStatus(t, "jobs replayed from the row", list, http.StatusOK)
	var ids []string
	for _, m := range jobLinkRE.FindAllStringSubmatch(list.body, -1) {
		ids = append(ids, m[1])
	}
	slices.Sort(ids)
	want := []string{strconv.FormatInt(job.ID, 10), strconv.FormatInt(second.ID, 10), strconv.FormatInt(third.ID, 10)}
	slices.Sort(want)
	if !slices.Equal(ids, want) {
		t.Fatalf("/jobs?replayed_from=%d lists %v, want %v", id, ids, want)
	}
	wantBody(t, "jobs replayed from the row", list, fmt.Sprintf(`name="replayed_from" value="%d"`, id), "Showing the jobs replayed from dead letter")
	wantStatus(t, "a bad replayed_from", u.get("/jobs?replayed_from=x"), http.StatusBadRequest)
}

// /dlq hides rows replayed before unless the filter asks for them; it
// filters by the time of the move, and shows the DLQ's counts.
func TestPagesDLQListReplayedAndTimes(t *testing.T) {
	env := newUIEnv(t, ui.Options{}, false)
	ctx := t.Context()
	u := newUIClient(t, env.URL)
	replayed := env.ids.Dead[0]
	if _, err := env.svc.Replay(ctx, replayed, app.ReplayInput{}, "local"); err != nil {
		t.Fatal(err)
	}
	row := fmt.Sprintf(`href="/dlq/%d"`, replayed)
	a := u.get("/dlq")
	wantStatus(t, "/dlq", a, http.StatusOK)
	wantBody(t, "/dlq", a, "<b>4</b> rows match", "1 replayed before is not shown", `href="/dlq?replayed=any"`)
	if strings.Contains(a.body, row) {
		t.Fatalf("/dlq lists row %d, replayed before, by default", replayed)
	}
	for path, want := range map[string]struct {
		count string
		shown bool
	}{
		"/dlq?replayed=any":                 {"<b>5</b> rows match", true},
		"/dlq?replayed=true":                {"<b>1</b> row matches", true},
		"/dlq?replayed=false":               {"<b>4</b> rows match", false},
		"/dlq?replayed=any&queue=webhooks":  {"<b>1</b> row matches", false},
		"/dlq?replayed=true&reason=unknown": {"", false},
	} {
		a := u.get(path)
		if want.count == "" {
			wantStatus(t, path, a, http.StatusBadRequest)
			continue
		}
		wantStatus(t, path, a, http.StatusOK)
		wantBody(t, path, a, want.count)
		if strings.Contains(a.body, row) != want.shown {
			t.Errorf("%s: row %d shown %v, want %v", path, replayed, !want.shown, want.shown)
		}
	}
	a = u.get("/dlq?replayed=maybe")
	wantStatus(t, "replayed=maybe", a, http.StatusBadRequest)
	wantBody(t, "replayed=maybe", a, "flash-error", "replayed is any, true or false")

	// By the time of the move: datetime-local values (UTC) and RFC 3339.
	d, _ := env.svc.GetDead(ctx, env.ids.DeadOther)
	later := d.MovedAt.Add(time.Minute).UTC()
	for path, count := range map[string]string{
		"/dlq?replayed=any&moved_after=" + later.Format("2006-01-02T15:04"):                                          "<b>0</b> rows match",
		"/dlq?replayed=any&moved_before=" + later.Format("2006-01-02T15:04"):                                         "<b>5</b> rows match",
		"/dlq?replayed=any&moved_before=" + url.QueryEscape(later.Add(-2*time.Minute).Format(time.RFC3339)):          "<b>0</b> rows match",
		"/dlq?replayed=any&moved_after=" + url.QueryEscape(d.MovedAt.Format(time.RFC3339Nano)):                       "<b>5</b> rows match", // at the time: in
		"/dlq?replayed=any&moved_after=" + url.QueryEscape(d.MovedAt.Add(time.Millisecond).Format(time.RFC3339Nano)): "<b>0</b> rows match",
	} {
		a := u.get(path)
		wantStatus(t, path, a, http.StatusOK)
		wantBody(t, path, a, count)
	}
	a = u.get("/dlq?moved_after=yesterday")
	wantStatus(t, "moved_after=yesterday", a, http.StatusBadRequest)
	wantBody(t, "moved_after=yesterday", a, "flash-error", "moved_after &#34;yesterday&#34; is not a time")
	// The filter form shows the time back as its datetime-local input takes it.
	a = u.get("/dlq?moved_after=" + url.QueryEscape("2026-03-01T10:20:00Z"))
	wantBody(t, "moved_after in RFC 3339", a, `name="moved_after" value="2026-03-01T10:20"`)

	// The counts: every row, whatever the filters.
	a = u.get("/dlq?queue=webhooks")
	wantBody(t, "counts", a, `id="dlq-counts"`, `<dt>Rows</dt><dd class="big">5</dd>`, `<dt>Rows replayed at least once</dt><dd class="big">1</dd>`,
		`<dt>Replays in all</dt><dd class="big">1</dd>`, `href="/dlq?queue=billing&amp;replayed=any">billing</a></th><td class="r">4</td>`,
		`href="/dlq?queue=webhooks&amp;replayed=any">webhooks</a></th><td class="r">1</td>`, ">invoice.charge</a>",
		">attempts exhausted</a></th><td class=\"r\">4</td>", ">permanent failure</a></th><td class=\"r\">1</td>",
		">"+d.MovedAt.UTC().Format(time.DateOnly)+"</a></th><td class=\"r\">5</td>", "Oldest row moved")
}

// "Replay all" skips rows replayed before unless the confirm page's box is
// ticked; the confirmed action acts on what the dry run counted.
func TestPagesDLQReplayAllSkipsReplayed(t *testing.T) {
	env := newUIEnv(t, ui.Options{}, false)
	ctx := t.Context()
	u := newUIClient(t, env.URL)
	if _, err := env.svc.Replay(ctx, env.ids.Dead[0], app.ReplayInput{}, "local"); err != nil {
		t.Fatal(err)
	}
	a := u.get("/dlq/confirm?op=replay_all&queue=billing")
	wantStatus(t, "confirm", a, http.StatusOK)
	wantBody(t, "confirm", a, "Replay all 3 matching dead-letter jobs?", "Rows replayed before are left out.", `name="include_replayed" value="true">`,
		"Include rows replayed before <span class=\"muted\">(1 row)</span>", `name="bound" value="`, "Replay 3 jobs", "The button acts on the <b>3</b> counted here")
	if strings.Contains(a.body, `name="include_replayed" value="true" checked`) {
		t.Fatal("the include box is ticked by default")
	}
	a = u.get("/dlq/confirm?op=replay_all&queue=billing&include_replayed=true")
	wantBody(t, "confirm with replayed rows", a, "Replay all 4 matching dead-letter jobs?", "Rows replayed before are replayed again.",
		`name="include_replayed" value="true" checked`, `<input type="hidden" name="include_replayed" value="true">`)

	// Confirm without them; a row that arrives after the count is left alone.
	a = u.get("/dlq/confirm?op=replay_all&queue=billing")
	bound := regexpMust(`name="bound" value="([^"]+)"`).FindStringSubmatch(a.body)[1]
	env.clock.Advance(time.Second)
	late := mustSubmit(t, env.svc, app.SubmitInput{Queue: "billing", Kind: "invoice.charge", MaxAttempts: ptr(1)})[0]
	c := mustClaim(t, env.svc, "billing", 10, "invoice.charge")
	for _, j := range c {
		if j.ID == late.ID {
			if _, err := env.svc.Fail(ctx, j.ID, app.FailInput{Lease: j.Lease, Error: "late"}); err != nil {
				t.Fatal(err)
			}
		}
	}
	a = u.follow(u.post("/dlq/bulk", url.Values{"op": {"replay_all"}, "queue": {"billing"}, "bound": {bound}}))
	wantBody(t, "replay all", a, "Replayed 3 dead-letter jobs as new queued jobs.")
	for _, id := range append(env.ids.Dead, late.ID) {
		d, err := env.svc.GetDead(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		want := 1
		if id == late.ID {
			want = 0
		}
		if d.ResurrectionCount != want {
			t.Errorf("row %d: replayed %d times, want %d", id, d.ResurrectionCount, want)
		}
	}
	// Again: the only row left is the late one; with the box, all five.
	a = u.get("/dlq/confirm?op=replay_all&queue=billing")
	wantBody(t, "confirm again", a, "Replay all 1 matching dead-letter job?")
	a = u.get("/dlq/confirm?op=replay_all&queue=billing&include_replayed=true")
	wantBody(t, "confirm again with replayed rows", a, "Replay all 5 matching dead-letter jobs?")
	a = u.follow(u.post("/dlq/bulk", url.Values{"op": {"replay_all"}, "queue": {"billing"}, "include_replayed": {"true"}}))
	wantBody(t, "replay all with replayed rows", a, "Replayed 5 dead-letter jobs")
	// Nothing left to replay but rows replayed before: the page says how to include them.
	a = u.get("/dlq/confirm?op=replay_all&reason=permanent_failure&replayed=any")
	wantStatus(t, "confirm, nothing new", a, http.StatusOK)
	wantBody(t, "confirm, nothing new", a, "Replay all 1 matching dead-letter job?")
	u.follow(u.post("/dlq/bulk", url.Values{"op": {"replay_all"}, "reason": {"permanent_failure"}}))
	a = u.get("/dlq/confirm?op=replay_all&reason=permanent_failure")
	wantBody(t, "confirm, only replayed rows", a, "Nothing to replay", "1 row replayed before", `name="include_replayed"`)
	if strings.Contains(a.body, `type="submit">Replay`) {
		t.Fatal("the confirm page offers to replay nothing")
	}
	// The list's bulk form carries the filter's choice: showing replayed rows includes them.
	a = u.get("/dlq?replayed=any")
	wantBody(t, "list showing replayed rows", a, `<input type="hidden" name="include_replayed" value="true">`)
	a = u.get("/dlq")
	if strings.Contains(a.body, `name="include_replayed"`) {
		t.Fatal("the list hiding replayed rows asks to include them")
	}
}

// The export downloads every row matching the list's filters once, as JSON
// lines and as CSV, paging through the listing however many rows there are.
func TestPagesDLQExport(t *testing.T) {
	env := newUIEnv(t, ui.Options{}, false)
	ctx := t.Context()
	u := newUIClient(t, env.URL)
	// 450 more rows (more than two pages of the export), moved by an operator.
	var ins []app.SubmitInput
	for i := range 450 {
		ins = append(ins, app.SubmitInput{Queue: "imports", Kind: "csv.row", Payload: json.RawMessage(fmt.Sprintf(`{"row":%d,"text":"a, \"quoted\"\nline"}`, i))})
	}
	mustSubmit(t, env.svc, ins...)
	if res, err := env.svc.BulkDead(ctx, app.BulkMove, app.BulkInput{Queue: "imports", Note: "=cmd|' /C calc'!A0"}, "local"); err != nil || res.Count != 450 {
		t.Fatalf("move: %+v, %v", res, err)
	}
	if _, err := env.svc.Replay(ctx, env.ids.Dead[0], app.ReplayInput{}, "local"); err != nil {
		t.Fatal(err)
	}
	a := u.get("/dlq")
	wantBody(t, "/dlq", a, `href="/dlq/export?format=ndjson"`, `href="/dlq/export?format=csv"`, "Download all 454")
	a = u.get("/dlq?queue=billing&replayed=any&order=asc")
	wantBody(t, "/dlq filtered", a, `href="/dlq/export?format=csv&amp;order=asc&amp;queue=billing&amp;replayed=any"`)

	all := func(queue string) map[int64]bool { // what the export must hold: every row not replayed before
		t.Helper()
		want := map[int64]bool{}
		in := app.DeadListInput{Queue: queue, Replayed: ptr(false), Limit: 1000}
		page, err := env.svc.ListDead(ctx, in)
		if err != nil || page.NextCursor != "" {
			t.Fatalf("ListDead: %v (more than a page)", err)
		}
		for _, d := range page.Jobs {
			want[d.ID] = true
		}
		return want
	}
	for _, tc := range []struct{ query, queue string }{{"", ""}, {"&queue=imports", "imports"}, {"&queue=billing&order=asc", "billing"}} {
		want := all(tc.queue)
		// JSON lines: one DeadJob per line.
		a := u.get("/dlq/export?format=ndjson" + tc.query)
		wantStatus(t, "ndjson export", a, http.StatusOK)
		if ct, cd := a.header.Get("Content-Type"), a.header.Get("Content-Disposition"); ct != "application/x-ndjson" ||
			!strings.HasPrefix(cd, `attachment; filename="dead-letters-`) || !strings.HasSuffix(cd, `.ndjson"`) {
			t.Fatalf("ndjson export: Content-Type %q, Content-Disposition %q", ct, cd)
		}
		lines := strings.Split(strings.TrimSuffix(a.body, "\n"), "\n")
		got := map[int64]bool{}
		for i, line := range lines {
			var d app.DeadJob
			if err := json.Unmarshal([]byte(line), &d); err != nil {
				t.Fatalf("ndjson line %d: %v: %.200s", i+1, err, line)
			}
			if got[d.ID] {
				t.Fatalf("ndjson export%s: row %d twice", tc.query, d.ID)
			}
			if d.Queue == "imports" && (d.Note != "=cmd|' /C calc'!A0" || !json.Valid(d.Payload)) {
				t.Fatalf("ndjson row %d: note %q payload %s", d.ID, d.Note, d.Payload)
			}
			got[d.ID] = true
		}
		if len(got) != len(want) || len(lines) != len(want) {
			t.Fatalf("ndjson export%s: %d lines, %d rows; want %d", tc.query, len(lines), len(got), len(want))
		}
		for id := range want {
			if !got[id] {
				t.Fatalf("ndjson export%s lacks row %d", tc.query, id)
			}
		}

		// CSV: a header, then one record per row.
		a = u.get("/dlq/export?format=csv" + tc.query)
		wantStatus(t, "csv export", a, http.StatusOK)
		if ct, cd := a.header.Get("Content-Type"), a.header.Get("Content-Disposition"); ct != "text/csv; charset=utf-8" || !strings.HasSuffix(cd, `.csv"`) {
			t.Fatalf("csv export: Content-Type %q, Content-Disposition %q", ct, cd)
		}
		recs, err := csv.NewReader(strings.NewReader(a.body)).ReadAll()
		if err != nil {
			t.Fatalf("csv export: %v", err)
		}
		if strings.Join(recs[0], ",") != "id,queue,kind,dead_letter_reason,moved_to_dead_letter_at,attempts,last_error,note,resurrection_count,replayed_job_id,payload" {
			t.Fatalf("csv header: %v", recs[0])
		}
		got = map[int64]bool{}
		for _, r := range recs[1:] {
			id, _ := strconv.ParseInt(r[0], 10, 64)
			if got[id] {
				t.Fatalf("csv export%s: row %d twice", tc.query, id)
			}
			got[id] = true
			if r[1] == "imports" && (r[7] != "'=cmd|' /C calc'!A0" || r[3] != "admin_move" || !json.Valid([]byte(r[10]))) {
				t.Fatalf("csv record: %q", r)
			}
			if _, err := time.Parse(time.RFC3339Nano, r[4]); err != nil {
				t.Fatalf("csv moved_to_dead_letter_at %q: %v", r[4], err)
			}
		}
		if len(got) != len(want) || len(recs)-1 != len(want) {
			t.Fatalf("csv export%s: %d records; want %d", tc.query, len(recs)-1, len(want))
		}
		for id := range want {
			if !got[id] {
				t.Fatalf("csv export%s lacks row %d", tc.query, id)
			}
		}
	}
	// Rows replayed before are in when the filter asks, with the job they made.
	a = u.get("/dlq/export?format=csv&replayed=true")
	recs, _ := csv.NewReader(strings.NewReader(a.body)).ReadAll()
	if len(recs) != 2 || recs[1][0] != strconv.FormatInt(env.ids.Dead[0], 10) || recs[1][8] != "1" || recs[1][9] == "" {
		t.Fatalf("csv of replayed rows: %q", recs)
	}
	// HEAD answers the headers; a bad filter or format goes back with a message.
	if a := u.do(http.MethodHead, "/dlq/export?format=csv", nil, nil); a.status != http.StatusOK || a.body != "" || a.header.Get("Content-Type") != "text/csv; charset=utf-8" {
		t.Fatalf("HEAD export: %d %q %q", a.status, a.header.Get("Content-Type"), a.body)
	}
	for path, want := range map[string]string{
		"/dlq/export?format=xml":                        "Pick an export format",
		"/dlq/export?format=csv&moved_before=yesterday": "moved_before &#34;yesterday&#34; is not a time",
		"/dlq/export?format=ndjson&queue=no/such":       "queue name",
	} {
		a := u.get(path)
		wantStatus(t, path, a, http.StatusSeeOther)
		wantBody(t, path, u.follow(a), "flash-error", want)
	}
}

// A bulk move from the jobs page: dry run (count, sample, bound), then the
// move of what was counted, with the operator's reason on each row.
func TestPagesBulkMove(t *testing.T) {
	env := newUIEnv(t, ui.Options{}, false)
	ctx := t.Context()
	u := newUIClient(t, env.URL)
	jobs := mustSubmit(t, env.svc,
		app.SubmitInput{Queue: "imports", Kind: "csv.row", Payload: json.RawMessage(`{"n":1}`)},
		app.SubmitInput{Queue: "imports", Kind: "csv.row", Payload: json.RawMessage(`{"n":2}`), Delay: ptr(app.Duration(time.Hour))},
		app.SubmitInput{Queue: "imports", Kind: "csv.other"},
	)
	a := u.get("/jobs?queue=imports&kind=csv.row")
	wantBody(t, "jobs page", a, `href="/dlq/confirm?kind=csv.row&amp;op=move&amp;queue=imports"`, "Move matching jobs to the dead-letter queue…")
	if a := u.get("/jobs"); !strings.Contains(a.body, "filter by queue, kind or tag") || strings.Contains(a.body, "op=move") {
		t.Fatal("the unfiltered jobs page offers a move")
	}
	if a := u.get("/jobs?queue=imports&status=done"); strings.Contains(a.body, "op=move") {
		t.Fatal("the jobs page of done jobs offers a move")
	}
	a = u.get("/dlq/confirm?op=move&queue=imports&kind=csv.row")
	wantStatus(t, "move confirm", a, http.StatusOK)
	wantBody(t, "move confirm", a, "Move 2 matching jobs to the dead-letter queue?", "jobs with queue = imports, kind = csv.row",
		fmt.Sprintf(`href="/jobs/%d"`, jobs[0].ID), fmt.Sprintf(`href="/jobs/%d"`, jobs[1].ID), `name="note"`, `name="bound"`, "Move 2 jobs",
		"The button acts on the <b>2</b> counted here")
	if n, _ := env.svc.Store.CountDead(ctx, app.DeadFilter{Queue: "imports"}); n != 0 {
		t.Fatalf("the confirm page moved %d jobs", n)
	}
	bound := regexpMust(`name="bound" value="([^"]+)"`).FindStringSubmatch(a.body)[1]
	late := mustSubmit(t, env.svc, app.SubmitInput{Queue: "imports", Kind: "csv.row"})[0]
	a = u.post("/dlq/bulk", url.Values{"op": {"move"}, "queue": {"imports"}, "kind": {"csv.row"}, "bound": {bound}, "note": {"  poison batch  "}})
	wantStatus(t, "move", a, http.StatusSeeOther)
	if loc := a.header.Get("Location"); loc != "/jobs?kind=csv.row&queue=imports" {
		t.Fatalf("after the move: to %q", loc)
	}
	a = u.follow(a)
	wantBody(t, "after the move", a, "Moved 2 jobs to the dead-letter queue.", `href="/dlq?kind=csv.row&amp;queue=imports&amp;reason=admin_move"`)
	for _, j := range jobs[:2] {
		d, err := env.svc.GetDead(ctx, j.ID)
		if err != nil || d.Reason != "admin_move" || d.Note != "poison batch" {
			t.Fatalf("job %d after the move: %+v, %v; want a row with reason admin_move and the note", j.ID, d, err)
		}
	}
	for _, j := range []*app.Job{jobs[2], late} {
		if got, err := env.svc.Get(ctx, j.ID, 0, false); err != nil || got.Status != app.StatusQueued {
			t.Fatalf("job %d after the move: %v, %v; want it still queued", j.ID, got.Status, err)
		}
	}
	audit, _ := env.svc.Audit(ctx, app.AuditFilter{Action: "dlq.move"})
	if len(audit) != 1 || audit[0].Count != 2 || audit[0].Actor != "local" {
		t.Fatalf("audit of the move: %+v", audit)
	}
	// Without a queue, kind or tag, or with nothing to move: a message, nothing moved.
	a = u.follow(u.get("/dlq/confirm?op=move"))
	wantBody(t, "move without a filter", a, "flash-error", "Filter by queue, kind or tag first")
	a = u.follow(u.post("/dlq/bulk", url.Values{"op": {"move"}}))
	wantBody(t, "move post without a filter", a, "flash-error", "Filter by queue, kind or tag first")
	a = u.follow(u.get("/dlq/confirm?op=move&queue=nothing-here"))
	wantBody(t, "move of nothing", a, "flash-error", "No queued or scheduled jobs match jobs with queue = nothing-here.")
	a = u.follow(u.post("/dlq/bulk", url.Values{"op": {"move"}, "queue": {"imports"}, "note": {strings.Repeat("x", 1025)}}))
	wantBody(t, "a note too long", a, "flash-error", "at most 1024 bytes")
	if n, _ := env.svc.Store.CountDead(ctx, app.DeadFilter{Queue: "imports"}); n != 2 {
		t.Fatalf("refused moves moved jobs: %d rows of imports", n)
	}
}

// One job moves from its page: a cancelled job takes the note to its row;
// a processing one is refused with a message.
func TestPagesMoveOneJob(t *testing.T) {
	env := newUIEnv(t, ui.Options{}, false)
	ctx := t.Context()
	u := newUIClient(t, env.URL)
	j := mustSubmit(t, env.svc, app.SubmitInput{Queue: "webhooks", Kind: "webhook.deliver", Payload: json.RawMessage(`{"to":"x"}`)})[0]
	if _, err := env.svc.Cancel(ctx, j.ID, nil, "local"); err != nil {
		t.Fatal(err)
	}
	a := u.get(fmt.Sprintf("/jobs/%d", j.ID))
	wantBody(t, "cancelled job", a, fmt.Sprintf(`action="/jobs/%d/move"`, j.ID), "Move to dead-letter queue", `name="note"`)
	a = u.post(fmt.Sprintf("/jobs/%d/move", j.ID), url.Values{"note": {"backfill: failed before the DLQ existed"}})
	wantStatus(t, "move", a, http.StatusSeeOther)
	if loc := a.header.Get("Location"); loc != fmt.Sprintf("/dlq/%d", j.ID) {
		t.Fatalf("after the move: to %q", loc)
	}
	a = u.follow(a)
	wantBody(t, "the row", a, fmt.Sprintf("Job #%d moved to the dead-letter queue.", j.ID), "admin_move", "backfill: failed before the DLQ existed")
	d, err := env.svc.GetDead(ctx, j.ID)
	if err != nil || d.Note != "backfill: failed before the DLQ existed" || d.Reason != "admin_move" {
		t.Fatalf("the row: %+v, %v", d, err)
	}
	if a := u.get("/dlq?reason=admin_move"); !strings.Contains(a.body, "backfill: failed before the DLQ existed") {
		t.Fatal("the list does not show the note")
	}

	// Queued and scheduled jobs offer it; processing and done ones do not, and a post is refused.
	for id, offered := range map[int64]bool{env.ids.Queued: true, env.ids.Scheduled: true, env.ids.Processing: false, env.ids.Done: false} {
		if got := strings.Contains(u.get(fmt.Sprintf("/jobs/%d", id)).body, "/move\""); got != offered {
			t.Errorf("job %d offers a move: %v, want %v", id, got, offered)
		}
	}
	u.get(fmt.Sprintf("/jobs/%d", env.ids.Processing))
	a = u.follow(u.post(fmt.Sprintf("/jobs/%d/move", env.ids.Processing), url.Values{"note": {"x"}}))
	wantStatus(t, "move of a processing job", a, http.StatusOK)
	wantBody(t, "move of a processing job", a, "flash-error", "is processing")
	if got, _ := env.svc.Get(ctx, env.ids.Processing, 0, false); got.Status != app.StatusProcessing {
		t.Fatalf("the processing job is %s", got.Status)
	}
	a = u.follow(u.post(fmt.Sprintf("/jobs/%d/move", env.ids.Scheduled), nil))
	wantBody(t, "move of a scheduled job without a note", a, fmt.Sprintf("Job #%d moved", env.ids.Scheduled))
}

// A read token sees no form of the second pass and is refused its routes
// (a move, its confirm page); it may download the export. An admin sees them.
func TestPagesDLQSecondPassRoles(t *testing.T) {
	tokens := []ui.Token{{Name: "viewer", Secret: "read-token-0123456789", Role: ui.RoleRead}, {Name: "boss", Secret: testToken}}
	env := newUIEnv(t, ui.Options{Tokens: tokens}, false)
	pages := []string{fmt.Sprintf("/jobs/%d", env.ids.Queued), fmt.Sprintf("/dlq/%d", env.ids.Dead[0]), "/jobs?queue=emails"}
	actions := []string{"/move\"", "Replay later or with changes", `name="payload_patch"`, "op=move"}
	for _, tc := range []struct {
		token string
		admin bool
	}{{"read-token-0123456789", false}, {testToken, true}} {
		u := newUIClient(t, env.URL)
		u.get("/login")
		u.login(tc.token)
		seen := map[string]bool{}
		for _, p := range pages {
			a := u.get(p)
			wantStatus(t, p, a, http.StatusOK)
			for _, act := range actions {
				seen[act] = seen[act] || strings.Contains(a.body, act)
			}
		}
		for _, act := range actions {
			if seen[act] != tc.admin {
				t.Errorf("admin=%v: sees %q: %v", tc.admin, act, seen[act])
			}
		}
		a := u.get("/dlq/export?format=ndjson")
		wantStatus(t, "export", a, http.StatusOK)
		if tc.admin {
			continue
		}
		u.get(fmt.Sprintf("/jobs/%d", env.ids.Queued))
		if a := u.post(fmt.Sprintf("/jobs/%d/move", env.ids.Queued), url.Values{"note": {"x"}}); a.status != http.StatusForbidden {
			t.Fatalf("a read token moves a job by a forged form: %d", a.status)
		}
		if a := u.post("/dlq/bulk", url.Values{"op": {"move"}, "queue": {"emails"}}); a.status != http.StatusForbidden {
			t.Fatalf("a read token moves jobs by a forged form: %d", a.status)
		}
		if a := u.get("/dlq/confirm?op=move&queue=emails"); a.status != http.StatusForbidden {
			t.Fatalf("a read token opens the move confirmation: %d", a.status)
		}
		if n, _ := env.svc.Store.CountDead(t.Context(), app.DeadFilter{}); n != 5 {
			t.Fatalf("after refused moves the DLQ holds %d rows, want 5", n)
		}
	}
}

// The DLQ's oldest row shows when it moved as a time (absolute, and
// relative beside it), not only "N ago".
func TestPagesDLQOldestIsATime(t *testing.T) {
	env := newUIEnv(t, ui.Options{}, false)
	a := newUIClient(t, env.URL).get("/dlq")
	wantStatus(t, "/dlq", a, http.StatusOK)
	wantBody(t, "/dlq", a, `the oldest moved <span class="when"><time datetime=`, `<dt>Oldest row moved</dt><dd><span class="when"><time datetime=`)
}
