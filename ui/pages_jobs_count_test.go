package ui_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/queuehq/queue/app"
	"github.com/queuehq/queue/ui"
)

// The jobs page counts at most 10,000 jobs on each (live) read: past that
// it says "10,000+ jobs match". The API's count=true stays exact.
func TestPagesJobsCountCap(t *testing.T) {
	env := newUIEnv(t, ui.Options{}, false)
	u := newUIClient(t, env.URL)
	const n = 10_003
	nj := app.NewJob{Queue: "many", Kind: "bulk.k", Payload: json.RawMessage(`{}`), MaxAttempts: 1, Timeout: time.Minute}
	jobs := make([]app.NewJob, 0, 1000)
	for i := 0; i < n; i += len(jobs) {
		jobs = jobs[:0]
		for range min(1000, n-i) {
			jobs = append(jobs, nj)
		}
		if _, err := app.Submit(t.Context(), env.svc.Store, app.SubmitRequest{Jobs: jobs}); err != nil {
			t.Fatal(err)
		}
	}
	a := u.get("/jobs?queue=many")
	wantStatus(t, "jobs of many", a, http.StatusOK)
	wantBody(t, "jobs of many", a, "<b>10,000+</b> jobs match")
	a = u.get("/jobs?queue=emails")
	wantStatus(t, "jobs of emails", a, http.StatusOK)
	if strings.Contains(a.body, "+</b>") {
		t.Errorf("a count under the cap reads as capped")
	}
	a = u.get("/api/jobs?queue=many&count=true&limit=1")
	wantStatus(t, "API count", a, http.StatusOK)
	var page struct {
		Total *int `json:"total"`
	}
	if err := json.Unmarshal([]byte(a.body), &page); err != nil || page.Total == nil || *page.Total != n {
		t.Fatalf("API count=true: %s, %v; want the exact total %d", a.body, err, n)
	}
	if strings.Contains(a.body, "capped") {
		t.Errorf("the API's page names the page's cap: %s", a.body)
	}
}

// The API's sort, count and kind_prefix parameters on the jobs page: the
// page's own order holds, so its next page reads with the cursor it made
// (sort=run_at's cursor on a link without sort answered 400).
func TestPagesJobsAPIParamsPageOn(t *testing.T) {
	env := newUIEnv(t, ui.Options{}, false)
	u := newUIClient(t, env.URL)
	now := env.clock.Now()
	var ins []app.SubmitInput
	for _, m := range []int{50, 10, 40, 20, 30} { // run times out of id order
		at := now.Add(time.Duration(m) * time.Minute)
		ins = append(ins, app.SubmitInput{Queue: "sorted", Kind: "sort.k", RunAt: &at})
	}
	made := mustSubmit(t, env.svc, ins...)
	for _, start := range []string{
		"/jobs?queue=sorted&sort=run_at&limit=2",
		"/jobs?queue=sorted&sort=run_at&count=true&limit=2&order=asc",
		"/jobs?queue=sorted&kind_prefix=sort.&sort=run_at&limit=2",
		"/jobs?queue=sorted&sort=bogus&count=maybe&limit=2",
		"/jobs?queue=sorted&status=scheduled&sort=run_at&limit=2", // the run-order view
	} {
		var seen []string
		path, pages := start, 0
		for path != "" && pages < 10 {
			a := u.get(path)
			wantStatus(t, path, a, http.StatusOK)
			for _, m := range jobLinkRE.FindAllStringSubmatch(a.body, -1) {
				seen = append(seen, m[1])
			}
			path = ""
			if m := nextRE.FindStringSubmatch(a.body); m != nil {
				path = strings.ReplaceAll(m[1], "&amp;", "&")
			}
			pages++
		}
		if len(seen) != len(made) || pages != 3 {
			t.Errorf("%s: paged through %v in %d pages, want the %d jobs in 3", start, seen, pages, len(made))
			continue
		}
		if strings.Contains(start, "status=scheduled") { // soonest first
			want := []int64{made[1].ID, made[3].ID, made[4].ID, made[2].ID, made[0].ID}
			if fmt.Sprint(seen) != fmt.Sprint(want) {
				t.Errorf("%s: %v, want run order %v", start, seen, want)
			}
		}
	}
	// kind_prefix narrows as the kind field's "sort.*" does, and a kind
	// typed in the field is what the page filters by.
	a := u.get("/jobs?kind_prefix=sort.")
	wantStatus(t, "kind_prefix", a, http.StatusOK)
	wantBody(t, "kind_prefix", a, `name="kind" value="sort.*"`, "<b>5</b> jobs match")
	a = u.get("/jobs?kind=seed&kind_prefix=sort.&" + url.Values{"queue": {"sorted"}}.Encode())
	wantStatus(t, "kind and kind_prefix", a, http.StatusOK)
	wantBody(t, "kind and kind_prefix", a, `name="kind" value="seed"`, "<b>0</b> jobs match")
}

// A live re-read of the jobs page (app.js sends X-Queue-Live) skips the
// kind and tag suggestions: they are outside the regions it swaps, and
// reading them on every event would cost each open tab a scan of the
// newest jobs' tags. A plain read has them.
func TestPagesJobsLiveReadSkipsSuggestions(t *testing.T) {
	env := newUIEnv(t, ui.Options{}, false)
	u := newUIClient(t, env.URL)
	mustSubmit(t, env.svc, app.SubmitInput{Queue: "emails", Kind: "suggest.me", Tags: []string{"tagged"}})
	a := u.get("/jobs")
	wantStatus(t, "jobs", a, http.StatusOK)
	wantBody(t, "jobs", a, `<option value="suggest.me">`, `<option value="tagged">`)
	a = u.do(http.MethodGet, "/jobs", nil, map[string]string{"X-Queue-Live": "1"})
	wantStatus(t, "jobs, live re-read", a, http.StatusOK)
	if strings.Contains(a.body, `<option value="suggest.me">`) || strings.Contains(a.body, `<option value="tagged">`) {
		t.Error("a live re-read of /jobs read the suggestions it does not show")
	}
	wantBody(t, "jobs, live re-read", a, `id="jobs-list"`)
}
