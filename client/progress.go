package client

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/queuehq/queue/app"
	"github.com/queuehq/queue/worker"
)

// A Client takes a Worker's progress and log lines over the HTTP API.
var _ worker.ReportBackend = (*Client)(nil)

// Progress and logs of a running job (issue 26): what a worker reports
// under its lease, and how anyone reads or follows a job's log.

// LogLine is one line of an attempt's log.
type LogLine = app.LogLine

// JobLog is a read of one attempt's log.
type JobLog = app.JobLog

// Progress reports pct (0-100) and msg (200 bytes are kept) as the progress
// of job id's current attempt, held under lease.
func (c *Client) Progress(ctx context.Context, id, lease int64, pct int, msg string) error {
	in := map[string]any{"lease": lease, "progress": pct, "message": msg}
	_, _, err := c.do(ctx, http.MethodPost, "/api/jobs/"+strconv.FormatInt(id, 10)+"/progress", in, nil, nil)
	return err
}

// AppendLog adds lines (Stream and Line set, At if known) to the log of job
// id's current attempt, held under lease: at most 1,000 lines and 1 MiB a
// call. The attempt keeps the last log_kib KiB of its queue.
func (c *Client) AppendLog(ctx context.Context, id, lease int64, lines []LogLine) (*app.LogAppended, error) {
	type line struct {
		Line   string     `json:"line"`
		Stream string     `json:"stream,omitempty"`
		At     *time.Time `json:"at,omitempty"`
	}
	in := struct {
		Lease int64  `json:"lease"`
		Lines []line `json:"lines"`
	}{Lease: lease, Lines: make([]line, len(lines))}
	for i, l := range lines {
		in.Lines[i] = line{Line: l.Line, Stream: l.Stream}
		if !l.At.IsZero() {
			at := l.At
			in.Lines[i].At = &at
		}
	}
	var out app.LogAppended
	_, _, err := c.do(ctx, http.MethodPost, "/api/jobs/"+strconv.FormatInt(id, 10)+"/log", in, &out, nil)
	if err != nil {
		return nil, err
	}
	return &out, nil
}

// LogOptions chooses what JobLog and FollowLog read: Attempt (0: the latest
// attempt that has lines, else the current one; FollowLog: the running
// one), lines after seq After, Limit lines at most (0: the server's 1,000).
type LogOptions struct {
	Attempt int
	After   int64
	Limit   int
}

func (o LogOptions) values() url.Values {
	q := url.Values{}
	if o.Attempt > 0 {
		q.Set("attempt", strconv.Itoa(o.Attempt))
	}
	if o.After > 0 {
		q.Set("after", strconv.FormatInt(o.After, 10))
	}
	if o.Limit > 0 {
		q.Set("limit", strconv.Itoa(o.Limit))
	}
	return q
}

// JobLog reads lines of an attempt of job id; NextAfter in the answer, if
// set, is the After that reads on.
func (c *Client) JobLog(ctx context.Context, id int64, o LogOptions) (*JobLog, error) {
	var out JobLog
	if _, _, err := c.do(ctx, http.MethodGet, "/api/jobs/"+strconv.FormatInt(id, 10)+"/log"+query(o.values()), nil, &out, nil); err != nil {
		return nil, err
	}
	return &out, nil
}

// LogEnd is how a followed attempt ended: its number, the job's status
// then, and whether lines of it were dropped to keep its bound.
type LogEnd struct {
	Attempt   int        `json:"attempt"`
	Status    app.Status `json:"status"`
	Truncated bool       `json:"truncated"`
}

// FollowLog calls fn with each line of an attempt of job id (with the
// attempt's number) as the server streams them, from the first line after
// o.After until the attempt is over, and returns how it ended. A lost
// connection is taken up again after the last line seen, until ctx ends.
// An error of fn ends the follow with that error.
func (c *Client) FollowLog(ctx context.Context, id int64, o LogOptions, fn func(attempt int, l LogLine) error) (*LogEnd, error) {
	stream := *c.http
	stream.Timeout = 0 // a stream lasts as long as the attempt
	wait := time.Duration(0)
	for {
		end, err := c.followOnce(ctx, &stream, id, &o, fn)
		var ae *Error
		switch {
		case end != nil || err == nil:
			return end, err
		case ctx.Err() != nil:
			return nil, ctx.Err()
		case errors.As(err, &ae) && !ae.Retryable(), errors.Is(err, errStop):
			return nil, err
		}
		wait = min(max(2*wait, 250*time.Millisecond), 5*time.Second)
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(wait):
		}
	}
}

// errStop wraps an error of FollowLog's fn: it ends the follow.
var errStop = errors.New("stopped")

// followOnce reads one stream of the log; o moves on with each line (and
// to the attempt it follows), so a retry takes up where it broke off.
func (c *Client) followOnce(ctx context.Context, hc *http.Client, id int64, o *LogOptions, fn func(int, LogLine) error) (*LogEnd, error) {
	q := o.values()
	q.Set("follow", "true")
	path := "/api/jobs/" + strconv.FormatInt(id, 10) + "/log?" + q.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.base+path, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "text/event-stream")
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("follow the log of job %d: %w", id, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 400 {
		var eb struct {
			Error *Error `json:"error"`
		}
		raw, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		if json.Unmarshal(raw, &eb) != nil || eb.Error == nil {
			eb.Error = &Error{Code: "http_" + strconv.Itoa(resp.StatusCode), Message: strings.TrimSpace(string(raw))}
		}
		eb.Error.Status = resp.StatusCode
		return nil, eb.Error
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	typ := ""
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			typ = ""
		case strings.HasPrefix(line, "event: "):
			typ = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: ") && typ == app.EventLog:
			var d struct {
				Attempt int `json:"attempt"`
				LogLine
			}
			if err := json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &d); err != nil {
				return nil, fmt.Errorf("follow the log of job %d: %w", id, err)
			}
			o.Attempt, o.After = d.Attempt, d.Seq
			if err := fn(d.Attempt, d.LogLine); err != nil {
				return nil, fmt.Errorf("%w: %w", errStop, err)
			}
		case strings.HasPrefix(line, "data: ") && typ == "end":
			var end LogEnd
			if err := json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &end); err != nil {
				return nil, fmt.Errorf("follow the log of job %d: %w", id, err)
			}
			return &end, nil
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("follow the log of job %d: %w", id, err)
	}
	return nil, fmt.Errorf("follow the log of job %d: the stream ended before the attempt", id)
}
