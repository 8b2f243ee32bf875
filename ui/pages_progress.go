package ui

import (
	"context"
	"net/url"
	"slices"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/queuehq/queue/app"
)

// The job page's progress bar and the log of each attempt (issue 26). The
// page is whole without JavaScript (the bar and the lines as of the
// request, a link per attempt); while the attempt runs, static/app.js
// follows GET /api/jobs/{id}/log?follow=true (the page's session cookie
// is enough for a GET) and reads the job each second for the bar.

// progressPages adds the pages of this file's feature (issue 26): none of
// its own; the job page shows it (jobLive).
func (p *pages) progressPages(e *echo.Echo, page func(string, echo.HandlerFunc), mw []echo.MiddlewareFunc) {
}

// pageLogLines is how many of an attempt's last lines the job page shows.
const pageLogLines = 1000

// liveView is the job page's progress and log.
type liveView struct {
	// HasProgress: the current attempt reported a progress (Percent,
	// Message, At); Running: the job is processing.
	HasProgress bool
	Percent     int
	Message     string
	At          *time.Time
	Running     bool
	// Attempt is the attempt shown; Attempts, every attempt to choose.
	Attempt  int
	Attempts []attemptLink
	Lines    []app.LogLine
	// Skipped counts the attempt's lines before Lines, not shown here.
	Skipped   int
	Truncated bool
	// Follow is the stream app.js follows while the shown attempt runs;
	// JobURL the job it reads for the bar.
	Follow string
	JobURL string
	APIURL string // the attempt's log as JSON
}

// attemptLink is one attempt in the page's list.
type attemptLink struct {
	N       int
	Href    string
	Current bool // the attempt shown
	Logged  bool // it has lines
}

// jobLive reads the progress and the log the job page shows: the attempt
// of ?attempt= (default: the running one, else the latest that has lines).
func (p *pages) jobLive(ctx context.Context, c echo.Context, job *app.Job) (*liveView, error) {
	attempt, err := strconv.Atoi(c.QueryParam("attempt"))
	if c.QueryParam("attempt") != "" && (err != nil || attempt < 1) {
		return nil, app.Invalid("attempt", "attempt %q is not an attempt number (1 is the first)", clip(c.QueryParam("attempt")))
	}
	if attempt == 0 && job.Status == app.StatusProcessing {
		attempt = job.Attempts
	}
	v := &liveView{Running: job.Status == app.StatusProcessing, JobURL: "/api/jobs/" + strconv.FormatInt(job.ID, 10)}
	if job.ProgressPercent != nil {
		v.HasProgress, v.Percent, v.Message, v.At = true, *job.ProgressPercent, job.ProgressMessage, job.ProgressAt
	}
	var lines []app.LogLine
	q := app.LogQuery{Attempt: attempt, Limit: app.MaxLogRead}
	for {
		l, _, err := p.svc.JobLog(ctx, job.ID, q)
		if err != nil {
			return nil, err
		}
		v.Attempt, v.Truncated = l.Attempt, l.Truncated
		lines = append(lines, l.Lines...)
		if len(lines) > pageLogLines {
			v.Skipped += len(lines) - pageLogLines
			lines = lines[len(lines)-pageLogLines:]
		}
		// The list is the attempts with lines and the job's current one,
		// never a range up to ?attempt= (which a reader may set to 9e12).
		logged := map[int]bool{}
		for _, a := range l.Attempts {
			logged[a] = true
		}
		shown := slices.Clone(l.Attempts)
		if job.Attempts > 0 && !logged[job.Attempts] {
			shown = append(shown, job.Attempts)
		}
		slices.Sort(shown)
		v.Attempts = v.Attempts[:0]
		for _, n := range shown {
			v.Attempts = append(v.Attempts, attemptLink{N: n, Href: "?attempt=" + strconv.Itoa(n), Current: n == l.Attempt, Logged: logged[n]})
		}
		if l.NextAfter == 0 {
			break
		}
		q.Attempt, q.After = l.Attempt, l.NextAfter
	}
	v.Lines = lines
	if v.Attempt > 0 {
		v.APIURL = v.JobURL + "/log?attempt=" + strconv.Itoa(v.Attempt)
	}
	if v.Running && v.Attempt == job.Attempts {
		after := int64(0)
		if len(lines) > 0 {
			after = lines[len(lines)-1].Seq
		}
		qs := url.Values{"follow": {"true"}, "attempt": {strconv.Itoa(v.Attempt)}, "after": {strconv.FormatInt(after, 10)}}
		v.Follow = v.JobURL + "/log?" + qs.Encode()
	}
	return v, nil
}
