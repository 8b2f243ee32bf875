package ui_test

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/queuehq/queue/app"
	"github.com/queuehq/queue/ui"
)

// TestBrowserJobActions drives chromium, with JavaScript on and off,
// through the jobs pages' actions (issue 28): done-when 1 (three
// failed-and-retrying jobs ticked on the list, "Retry now", a confirm page
// that says 3, and they run at once), run now from a scheduled job's page,
// cancel and delete through the confirm page, the "retrying" filter, "Go
// to job #", and done-when 5 (every time on a job page is an absolute time
// as text, without hovering).
func TestBrowserJobActions(t *testing.T) {
	browser := newBrowser(t)
	for _, js := range []bool{true, false} {
		name := map[bool]string{true: "JavaScript", false: "NoJavaScript"}[js]
		t.Run(name, func(t *testing.T) {
			env := newUIEnv(t, ui.Options{}, true)
			tb := newTab(t, browser, env.URL, js)
			ids := retryingJobs(t, env, "flaky", 2*time.Hour, 3*time.Hour, 4*time.Hour)
			other := retryingJobs(t, env, "flaky", 5*time.Hour)[0]

			// The "retrying" filter, chosen in the form.
			tb.open("/jobs?queue=flaky")
			tb.setValue(`select[name="status"]`, "retrying")
			tb.submit(`form.filters button[type="submit"]`)
			if loc := tb.location(); !strings.Contains(loc, "status=retrying") {
				t.Fatalf("after choosing retrying: at %s", loc)
			}
			if n := tb.count("#jobs-list table tbody tr"); n != 4 {
				t.Fatalf("retrying view: %d rows, want 4", n)
			}
			if n := tb.count("#jobs-list tbody .badge-retrying"); n != 4 {
				t.Errorf("retrying view: %d retrying badges, want 4", n)
			}
			tb.wantText("#jobs-total", "4 jobs match")
			tb.wantText("#jobs-list thead", "soonest first")

			// Done-when 1: tick three, Retry now, the confirm page says 3.
			for _, id := range ids {
				tb.click(fmt.Sprintf(`input[name="id"][value="%d"]`, id))
			}
			tb.submit(`#selected-jobs button[name="op"][value="retry"]`)
			tb.wantText("h1", "Retry now 3 jobs?")
			tb.wantText(".confirm", "3 selected jobs", "counted here")
			if n := tb.count(".confirm table tbody tr"); n != 3 {
				t.Errorf("confirm sample: %d rows, want 3", n)
			}
			if j := jobOf(t, env, ids[0]); !j.RunAt.After(env.clock.Now()) {
				t.Fatal("the confirm page retried already")
			}
			tb.submit(`.confirm button[type="submit"]`)
			tb.wantText(".flash", "Retried 3 jobs.")
			if loc := tb.location(); !strings.HasPrefix(loc, "/jobs?") || !strings.Contains(loc, "status=retrying") {
				t.Errorf("after retry now: at %s, want back on the retrying view", loc)
			}
			now := env.clock.Now()
			for _, id := range ids {
				if j := jobOf(t, env, id); j.Status != app.StatusQueued || j.RunAt.After(now) {
					t.Errorf("job %d after retry now: %s at %s, want queued and due (now %s)", id, j.Status, j.RunAt, now)
				}
			}
			if j := jobOf(t, env, other); !j.RunAt.After(now) {
				t.Errorf("job %d was not ticked but ran now", other)
			}
			var claimed []int64
			for _, j := range mustClaim(t, env.svc, "flaky", 10) {
				claimed = append(claimed, j.ID)
			}
			slices.Sort(claimed)
			if !slices.Equal(claimed, ids) {
				t.Errorf("claimable after retry now: %v, want %v", claimed, ids)
			}

			// Run now from a scheduled job's page.
			s := env.ids.Scheduled
			tb.open(fmt.Sprintf("/jobs/%d", s))
			tb.wantText("h1", "scheduled")
			tb.submit(`.head-actions a[href*="op=run"]`)
			tb.wantText("h1", fmt.Sprintf("Run now job #%d?", s))
			tb.submit(`.confirm button[type="submit"]`)
			tb.wantText(".flash", fmt.Sprintf("Job #%d is due now", s))
			if loc := tb.location(); loc != fmt.Sprintf("/jobs/%d", s) {
				t.Errorf("after run now: at %s", loc)
			}
			tb.wantText("h1", "queued")
			if j := jobOf(t, env, s); j.RunAt.After(env.clock.Now()) {
				t.Errorf("after run now the job runs at %s", j.RunAt)
			}

			// Cancel through the confirm page; "Go back" changes nothing.
			q := env.ids.Queued
			tb.open(fmt.Sprintf("/jobs/%d", q))
			tb.submit(`.head-actions a[href*="op=cancel"]`)
			tb.wantText("h1", fmt.Sprintf("Cancel job #%d?", q))
			tb.submit(`.confirm a.btn-ghost`)
			if loc := tb.location(); loc != fmt.Sprintf("/jobs/%d", q) {
				t.Errorf("Go back: at %s", loc)
			}
			if j := jobOf(t, env, q); j.Status != app.StatusQueued {
				t.Fatalf("going back cancelled the job: %s", j.Status)
			}
			tb.submit(`.head-actions a[href*="op=cancel"]`)
			tb.submit(`.confirm button[type="submit"]`)
			tb.wantText(".flash", fmt.Sprintf("Job #%d cancelled.", q))
			tb.wantText("h1", "cancelled")
			if j := jobOf(t, env, q); j.Status != app.StatusCancelled {
				t.Errorf("after cancel: %s", j.Status)
			}

			// Delete a done job: back to the list, with a message.
			d := env.ids.Done
			tb.open(fmt.Sprintf("/jobs/%d", d))
			if tb.count(`.head-actions a[href*="op=cancel"]`) != 0 || tb.count(`.head-actions a[href*="op=retry"]`) != 0 {
				t.Error("a done job offers cancel or retry")
			}
			tb.submit(`.head-actions a[href*="op=delete"]`)
			tb.wantText("h1", fmt.Sprintf("Delete job #%d?", d))
			tb.submit(`.confirm button[type="submit"]`)
			tb.wantText(".flash", fmt.Sprintf("Job #%d deleted.", d))
			if loc := tb.location(); loc != "/jobs" {
				t.Errorf("after delete: at %s, want /jobs", loc)
			}
			if _, err := env.svc.Get(t.Context(), d, 0, false); !errors.Is(err, app.ErrNotFound) {
				t.Errorf("after delete: %v, want not found", err)
			}

			// Go to job #: a job, a dead letter, and nonsense.
			tb.open("/jobs")
			tb.setValue(`form.jump input[name="id"]`, fmt.Sprint(env.ids.Processing))
			tb.submit(`form.jump button`)
			if loc := tb.location(); loc != fmt.Sprintf("/jobs/%d", env.ids.Processing) {
				t.Errorf("go to job: at %s", loc)
			}
			tb.open("/jobs")
			tb.setValue(`form.jump input[name="id"]`, fmt.Sprintf("#%d", env.ids.Dead[0]))
			tb.submit(`form.jump button`)
			if loc := tb.location(); loc != fmt.Sprintf("/dlq/%d", env.ids.Dead[0]) {
				t.Errorf("go to a dead letter: at %s", loc)
			}
			tb.open("/jobs")
			tb.setValue(`form.jump input[name="id"]`, "abc")
			tb.submit(`form.jump button`)
			tb.wantText(".flash-error", `"abc" is not a job id`)

			// Done-when 5: every time on a job's page reads as a date-time,
			// without hovering, beside how long ago.
			for _, path := range []string{fmt.Sprintf("/jobs/%d", other), fmt.Sprintf("/jobs/%d", env.ids.Dead[1]), fmt.Sprintf("/dlq/%d", env.ids.Dead[1])} {
				tb.open(path)
				wantAbsoluteTimes(t, tb, path)
			}
			for _, p := range tb.problems() {
				t.Errorf("%s", p)
			}
		})
	}
}

// dateTimeRE is a time as the pages write it: a date and a time of day,
// with the zone (UTC, or the browser's when the user chose it).
var dateTimeRE = regexp.MustCompile(`^\d{4}-\d{2}-\d{2} \d{2}:\d{2}(:\d{2})? \S+$`)

// wantAbsoluteTimes wants every <time> on the open page to be visible and
// to read as a date-time, with its relative part beside it.
func wantAbsoluteTimes(t *testing.T, tb *tab, what string) {
	t.Helper()
	ctx, cancel := tb.timeout()
	defer cancel()
	type shown struct {
		Text    string `json:"text"`
		Rel     string `json:"rel"`
		Visible bool   `json:"visible"`
	}
	got, err := chromedp.Run(ctx, chromedp.Evaluate[[]shown](`Array.from(document.querySelectorAll("time")).map(t => ({
		text: t.innerText.trim(),
		rel: (t.parentElement.querySelector("[data-rel]") || {innerText: ""}).innerText.trim(),
		visible: t.getClientRects().length > 0 && getComputedStyle(t).visibility !== "hidden"}))`))
	if err != nil {
		t.Fatalf("%s: read the times: %v", what, err)
	}
	if len(got) < 5 {
		t.Errorf("%s: %d times, want every time of the job (created, updated, run at, events...)", what, len(got))
	}
	for _, s := range got {
		if !dateTimeRE.MatchString(s.Text) || !s.Visible {
			t.Errorf("%s: a time reads %q (visible %v), want a date-time shown as text", what, s.Text, s.Visible)
		}
		if !strings.HasPrefix(s.Rel, "(") || !(strings.Contains(s.Rel, "ago") || strings.Contains(s.Rel, "in ") || strings.Contains(s.Rel, "just now")) {
			t.Errorf("%s: beside %q the relative part reads %q", what, s.Text, s.Rel)
		}
	}
}
