package ui

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/queuehq/queue/app"
)

// Progress and logs (issue 26): a worker reports progress and log lines
// under its lease; anyone who may read the job reads its log, or follows
// it as Server-Sent Events while the attempt runs.

// progressRoutes adds the API routes of this file's feature (issue 26).
func (h *handler) progressRoutes(api *echo.Group) {
	api.POST("/jobs/:id/progress", h.progress)
	api.POST("/jobs/:id/log", h.appendLog)
	api.GET("/jobs/:id/log", h.jobLog)
}

// logBody caps POST /api/jobs/{id}/log: 1 MiB of lines, which JSON's
// escapes may make several times larger.
const logBody = 8 << 20

// progress is POST /api/jobs/{id}/progress: {"lease", "progress",
// "message"} -> {id, progress, progress_message, cancel_requested}.
func (h *handler) progress(c echo.Context) error {
	var in struct {
		leaseBody
		app.ProgressInput
	}
	id, lease, err := h.leased(c, &in, smallBody)
	if err != nil {
		return err
	}
	job, err := h.svc.SetProgress(c.Request().Context(), id, lease, in.ProgressInput)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]any{"id": job.ID, "progress": job.ProgressPercent,
		"progress_message": job.ProgressMessage, "cancel_requested": job.CancelRequested})
}

// appendLog is POST /api/jobs/{id}/log: {"lease", "lines": [{"line",
// "stream", "at"}]} or {"lease", "line", "stream"} -> what was stored.
func (h *handler) appendLog(c echo.Context) error {
	var in struct {
		leaseBody
		app.LogInput
	}
	id, lease, err := h.leased(c, &in, min(logBody, h.opts.MaxBodyBytes))
	if err != nil {
		return err
	}
	res, err := h.svc.AppendLog(c.Request().Context(), id, lease, in.LogInput)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]any{"id": id, "attempt": res.Attempt, "stored": res.Stored,
		"last_seq": res.LastSeq, "dropped": res.Dropped, "truncated": res.Dropped > 0})
}

// logQuery reads the query of GET /api/jobs/{id}/log.
func logQuery(c echo.Context) (app.LogQuery, bool, error) {
	var q app.LogQuery
	var err error
	if q.Attempt, err = queryInt(c, "attempt"); err != nil {
		return q, false, err
	}
	after, err := queryInt(c, "after")
	if err != nil {
		return q, false, err
	}
	q.After = int64(after)
	if q.Limit, err = queryInt(c, "limit"); err != nil {
		return q, false, err
	}
	follow, err := queryBool(c, "follow")
	if err != nil {
		return q, false, err
	}
	follow = follow || strings.Contains(c.Request().Header.Get("Accept"), "text/event-stream")
	return q, follow, nil
}

// jobLog is GET /api/jobs/{id}/log: one attempt's lines (?attempt=,
// ?after=, ?limit=), or with ?follow=true (or Accept: text/event-stream)
// a stream of them until the attempt is over (followLog).
func (h *handler) jobLog(c echo.Context) error {
	id, err := pathID(c)
	if err != nil {
		return err
	}
	q, follow, err := logQuery(c)
	if err != nil {
		return err
	}
	if err := h.checkJob(c, id); err != nil {
		return err
	}
	if follow {
		return h.followLog(c, id, q)
	}
	l, _, err := h.svc.JobLog(c.Request().Context(), id, q)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, l)
}

// logPoll is how often a followed log is read again without a wake-up:
// its lines may come through another node (PostgreSQL), whose bus this
// one does not hear.
var logPoll = time.Second

// followLog streams the log of one attempt as Server-Sent Events: the
// lines so far, then new ones as they come (event job.log, id the line's
// seq), then event end once the attempt is over and all its lines were
// sent. Without ?attempt= it follows the running attempt, or, for a job
// not started yet, its first; for one between attempts or ended, the
// latest attempt that has lines. It wakes at the job's events on this
// node's bus and reads the store every logPoll besides. A reconnect with
// Last-Event-ID goes on after that line. It takes a place among the
// server's event streams (server.max_streams).
func (h *handler) followLog(c echo.Context, id int64, q app.LogQuery) error {
	ctx := c.Request().Context()
	if q.After == 0 {
		if v, err := strconv.ParseInt(c.Request().Header.Get("Last-Event-ID"), 10, 64); err == nil && v > 0 {
			q.After = v
		}
	}
	chosen := q.Attempt > 0
	q.Limit = app.DefaultLogRead
	l, job, err := h.svc.JobLog(ctx, id, q) // checks the query and the job before a place is taken
	if err != nil {
		return err
	}
	if !h.streams.enter(h.opts.MaxStreams) {
		return &busyError{newError(http.StatusServiceUnavailable, "unavailable", "the server holds as many event streams as it allows (server.max_streams); try again shortly")}
	}
	defer h.streams.leave()
	subscribe := func() *app.Subscription {
		return h.svc.Bus.Subscribe(64, func(e *app.Event) bool { return e.JobID == id })
	}
	sub := subscribe()
	defer func() { sub.Close() }()

	w, rc := openStream(c)

	attempt := l.Attempt
	if !chosen && job.Status == app.StatusProcessing {
		attempt = job.Attempts // the running attempt, though it has no lines yet
	}
	if !chosen && job.Status == app.StatusQueued && job.Attempts == 0 {
		attempt = 0 // not started: its first attempt, once it starts
	}
	if l.Attempt != attempt {
		l = nil // read below, for the attempt chosen
	}
	poll := time.NewTicker(logPoll)
	defer poll.Stop()
	ping := time.NewTicker(sseHeartbeat)
	defer ping.Stop()
	for {
		if l == nil {
			if l, job, err = h.svc.JobLog(ctx, id, app.LogQuery{Attempt: attempt, After: q.After, Limit: app.DefaultLogRead}); err != nil {
				return nil // the stream has begun: a read that fails (a purge, the store) ends it
			}
			if attempt == 0 && job.Attempts > 0 { // the first attempt started
				attempt, q.After, l = job.Attempts, 0, nil
				continue
			}
		}
		for _, line := range l.Lines {
			if attempt == 0 {
				break
			}
			data, _ := json.Marshal(struct {
				Attempt int    `json:"attempt"`
				Seq     int64  `json:"seq"`
				At      string `json:"at"`
				Stream  string `json:"stream"`
				Line    string `json:"line"`
			}{attempt, line.Seq, app.FormatTime(line.At), line.Stream, line.Line})
			if _, err := fmt.Fprintf(w, "id: %d\nevent: %s\ndata: %s\n\n", line.Seq, app.EventLog, data); err != nil {
				return nil
			}
			q.After = line.Seq
		}
		if len(l.Lines) > 0 {
			rc.Flush()
		}
		if l.NextAfter != 0 {
			l = nil // more lines now
			continue
		}
		if attempt > 0 && app.AttemptOver(job, attempt) { // the job was read before the lines: they are all sent
			data, _ := json.Marshal(map[string]any{"attempt": attempt, "status": job.Status, "truncated": l.Truncated})
			fmt.Fprintf(w, "event: end\ndata: %s\n\n", data)
			rc.Flush()
			return nil
		}
		l = nil
		select {
		case <-ctx.Done():
			return nil
		case <-ping.C:
			if _, err := fmt.Fprint(w, ": ping\n\n"); err != nil {
				return nil
			}
			rc.Flush()
		case _, ok := <-sub.C:
			if !ok { // dropped for falling behind: polling goes on
				sub = subscribe()
			}
		case <-poll.C:
		}
	}
}

// eventsJobQuery reads what GET /api/events takes for progress and logs:
// job=ID (that job's events only) and logs=true (job.log events too, one
// per append, which a stream gets only when it asks).
func eventsJobQuery(c echo.Context) (int64, bool, error) {
	var job int64
	if v := c.QueryParam("job"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n <= 0 {
			return 0, false, app.Invalid("job", "job %q is not a job id", clip(v))
		}
		job = n
	}
	logs, err := queryBool(c, "logs")
	return job, logs, err
}
