package worker

import (
	"bytes"
	"context"
	"errors"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/queuehq/queue/app"
)

// Progress and logs of the jobs a Pool runs (issue 26): each claimed job
// gets a reporter (app.Job.SetReporter), so a handler's job.Progress and
// job.Log go to the queue under the job's lease, batched: lines are sent
// every reportEvery or reportLines lines, the latest progress with them,
// and everything before the attempt's outcome is reported.

// ReportBackend is a Backend that takes progress and log lines: a Pool
// over one gives its jobs a reporter. LocalBackend and *client.Client are
// ReportBackends.
type ReportBackend interface {
	// Progress stores pct and msg as the progress of job id's current
	// attempt, held under lease.
	Progress(ctx context.Context, id, lease int64, pct int, msg string) error
	// AppendLog adds lines to the log of job id's current attempt, held
	// under lease.
	AppendLog(ctx context.Context, id, lease int64, lines []app.LogLine) (*app.LogAppended, error)
}

var _ ReportBackend = (*localBackend)(nil)

// Progress implements ReportBackend.
func (b *localBackend) Progress(ctx context.Context, id, lease int64, pct int, msg string) error {
	_, err := b.svc.SetProgress(ctx, id, lease, app.ProgressInput{Progress: &pct, Message: &msg})
	return err
}

// AppendLog implements ReportBackend.
func (b *localBackend) AppendLog(ctx context.Context, id, lease int64, lines []app.LogLine) (*app.LogAppended, error) {
	in := app.LogInput{Lines: make([]app.LogLineInput, len(lines))}
	for i := range lines {
		in.Lines[i] = app.LogLineInput{Line: &lines[i].Line, Stream: lines[i].Stream, At: lines[i].At}
	}
	return b.svc.AppendLog(ctx, id, lease, in)
}

// Batching of reports.
const (
	reportEvery   = 250 * time.Millisecond // a line waits at most this long
	reportLines   = 100                    // or until this many wait
	reportPending = 1 << 20                // bytes of lines held while the server is slow; older ones go
)

// reporter carries one job's progress and log lines to its backend. Its
// sender goroutine starts with the first report: most jobs make none.
type reporter struct {
	b   ReportBackend
	p   *Pool
	job *app.Job
	log *jobLog

	mu       sync.Mutex
	lines    []app.LogLine
	bytes    int
	progress *app.ProgressReport
	started  bool
	closed   bool
	lost     bool // the lease is gone: nothing more is sent
	warned   bool // a failed send was logged (once until one succeeds)
	kick     chan struct{}
	stop     chan struct{}
	done     chan struct{}
}

// reporter returns the reporter of job, set on it, or nil when the
// backend takes no reports.
func (p *Pool) reporter(job *app.Job, log *jobLog) *reporter {
	b, ok := p.Backend.(ReportBackend)
	if !ok {
		return nil
	}
	r := &reporter{b: b, p: p, job: job, log: log, kick: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	job.SetReporter(r)
	return r
}

var errReporterClosed = errors.New("the job's attempt is over: its progress and log lines are no longer taken")

// Progress implements app.Reporter.
func (r *reporter) Progress(pct int, msg string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return errReporterClosed
	}
	r.progress = &app.ProgressReport{Progress: pct, Message: msg}
	r.startLocked()
	return nil
}

// Log implements app.Reporter.
func (r *reporter) Log(stream, line string, at time.Time) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return errReporterClosed
	}
	line = app.CleanText(line, app.MaxLogLine)
	r.lines = append(r.lines, app.LogLine{Stream: stream, Line: line, At: at})
	r.bytes += len(line)
	for r.bytes > reportPending && len(r.lines) > 1 { // the server cannot keep up: the oldest go, as the log's bound would drop them
		r.bytes -= len(r.lines[0].Line)
		r.lines = r.lines[1:]
	}
	r.startLocked()
	if len(r.lines) >= reportLines {
		select {
		case r.kick <- struct{}{}:
		default:
		}
	}
	return nil
}

func (r *reporter) startLocked() {
	if !r.started {
		r.started = true
		go r.run()
	}
}

// run sends what waits every reportEvery, or at once when enough lines wait.
func (r *reporter) run() {
	defer close(r.done)
	t := time.NewTicker(reportEvery)
	defer t.Stop()
	for {
		select {
		case <-r.stop:
			return
		case <-t.C:
		case <-r.kick:
		}
		r.send()
	}
}

// send sends the lines and the progress that wait.
func (r *reporter) send() {
	r.mu.Lock()
	lines, progress, lost := r.lines, r.progress, r.lost
	r.lines, r.bytes, r.progress = nil, 0, nil
	r.mu.Unlock()
	if lost {
		return
	}
	for len(lines) > 0 {
		n, size := 0, 0
		for n < len(lines) && n < app.MaxLogLines && size+len(lines[n].Line) <= app.MaxLogBytes {
			size += len(lines[n].Line)
			n++
		}
		ctx, cancel := context.WithTimeout(r.p.ioCtx, callTimeout)
		_, err := r.b.AppendLog(ctx, r.job.ID, r.job.Lease, lines[:n])
		cancel()
		if r.failed("send log lines", err) {
			return
		}
		lines = lines[n:]
	}
	if progress != nil {
		ctx, cancel := context.WithTimeout(r.p.ioCtx, callTimeout)
		err := r.b.Progress(ctx, r.job.ID, r.job.Lease, progress.Progress, progress.Message)
		cancel()
		r.failed("send progress", err)
	}
}

// failed logs a failed report (a lost lease stops the reports: the
// heartbeat stops the run) and says whether to stop sending this round.
func (r *reporter) failed(what string, err error) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case err == nil:
		r.warned = false
		return false
	case errors.Is(err, app.ErrLeaseLost), errors.Is(err, app.ErrNotFound):
		r.lost = true
	case r.p.ioCtx.Err() == nil && !r.warned:
		r.warned = true
		r.log.get().Warn().Err(err).Msg(what + " failed; what waited is dropped (the job runs on; this is logged once until a send works)")
	}
	return true
}

// finish sends what waits and takes no more: the attempt is over, and its
// outcome is reported next. A nil reporter does nothing.
func (r *reporter) finish() {
	if r == nil {
		return
	}
	r.mu.Lock()
	r.closed = true
	started := r.started
	r.mu.Unlock()
	if !started {
		return
	}
	close(r.stop)
	<-r.done
	r.send()
}

// progressLine reads the command protocol's progress line of stderr:
// "::progress N" or "::progress N message", N a whole number from 0 to 100.
var progressLine = regexp.MustCompile(`^::progress (100|[1-9]?[0-9])(?: (.*))?$`)

// parseProgress reports whether line is a progress line, and its progress.
func parseProgress(line string) (int, string, bool) {
	m := progressLine.FindStringSubmatch(line)
	if m == nil {
		return 0, "", false
	}
	pct, _ := strconv.Atoi(m[1])
	return pct, m[2], true
}

// lineWriter splits what a command writes into lines and hands each to
// emit (without its newline, and "\r" before it); a line longer than
// app.MaxLogLine is cut there, the rest of it dropped. flush hands on a
// last line without a newline.
type lineWriter struct {
	emit func(line string)
	buf  []byte
	over bool // the line in buf reached its cut: drop until the newline
}

func (w *lineWriter) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		chunk := p
		if i >= 0 {
			chunk = p[:i]
		}
		if !w.over {
			room := app.MaxLogLine - len(w.buf)
			if len(chunk) > room {
				chunk, w.over = chunk[:room], true
			}
			w.buf = append(w.buf, chunk...)
		}
		if i < 0 {
			break
		}
		w.line()
		p = p[i+1:]
	}
	return n, nil
}

func (w *lineWriter) line() {
	w.emit(strings.TrimSuffix(string(w.buf), "\r"))
	w.buf, w.over = w.buf[:0], false
}

func (w *lineWriter) flush() {
	if len(w.buf) > 0 || w.over {
		w.line()
	}
}

// commandOutput returns the writers that turn a command's stdout and
// stderr into job's log, line by line with the time each was read; a
// stderr line of the progress protocol (parseProgress) reports progress
// instead. Call their flush once the command's output is all read.
func commandOutput(job *app.Job) (stdout, stderr *lineWriter) {
	stdout = &lineWriter{emit: func(line string) { _ = job.LogStream(app.StreamStdout, line, time.Now()) }}
	stderr = &lineWriter{emit: func(line string) {
		if pct, msg, ok := parseProgress(line); ok {
			_ = job.Progress(pct, msg)
			return
		}
		_ = job.LogStream(app.StreamStderr, line, time.Now())
	}}
	return stdout, stderr
}
