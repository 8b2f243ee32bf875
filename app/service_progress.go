package app

import (
	"context"
	"fmt"
	"time"
)

// What the API offers of progress and logs (issue 26): the checks of the
// input, then the rules of progress.go.

// ProgressInput is a progress a worker reports: the body of POST
// /api/jobs/{id}/progress, and the optional progress of a heartbeat.
type ProgressInput struct {
	// Progress is 0-100; required when Message is given.
	Progress *int `json:"progress"`
	// Message is cut to MaxProgressMessage bytes.
	Message *string `json:"message"`
}

// report checks in and returns the progress to store (nil if in holds
// none).
func (in ProgressInput) report() (*ProgressReport, error) {
	if in.Progress == nil {
		if in.Message != nil {
			return nil, Invalid("progress", "progress is required with a message (a whole number from 0 to 100)")
		}
		return nil, nil
	}
	if p := *in.Progress; p < 0 || p > 100 {
		return nil, Invalid("progress", "progress %d is not between 0 and 100", p)
	}
	r := &ProgressReport{Progress: *in.Progress}
	if in.Message != nil {
		r.Message = CleanText(*in.Message, MaxProgressMessage)
	}
	return r, nil
}

// SetProgress stores the progress of job id's current attempt, held under
// lease; it answers the job with its progress and cancel request.
func (s *Service) SetProgress(ctx context.Context, id, lease int64, in ProgressInput) (*Job, error) {
	r, err := in.report()
	if err != nil {
		return nil, err
	}
	if r == nil {
		return nil, Invalid("progress", "progress is required (a whole number from 0 to 100)")
	}
	return SetProgress(ctx, s.Store, id, lease, *r)
}

// HeartbeatProgress is Heartbeat that also stores in's progress, if any,
// in the same transaction.
func (s *Service) HeartbeatProgress(ctx context.Context, id, lease int64, extend time.Duration, in ProgressInput) (*Job, error) {
	if extend < 0 || extend > MaxTimeout {
		return nil, Invalid("extend", "extend must be between 0s and 24h")
	}
	r, err := in.report()
	if err != nil {
		return nil, err
	}
	return HeartbeatProgress(ctx, s.Store, id, lease, extend, r)
}

// LogInput is the body of POST /api/jobs/{id}/log: lines, or one line.
type LogInput struct {
	Lines []LogLineInput `json:"lines"`
	// Line and Stream give one line instead of Lines.
	Line   *string `json:"line"`
	Stream string  `json:"stream"`
}

// LogLineInput is one line a worker sends.
type LogLineInput struct {
	Line *string `json:"line"`
	// Stream is stdout, stderr or log (if empty, log).
	Stream string `json:"stream"`
	// At is when the line was written (if zero, when it is stored).
	At time.Time `json:"at"`
}

// logLines checks in and returns its lines, each cleaned and cut to
// MaxLogLine bytes.
func (in LogInput) logLines() ([]LogLine, error) {
	items, prefix := in.Lines, "lines"
	if in.Line != nil {
		if len(in.Lines) > 0 {
			return nil, Invalid("line", "give lines or line, not both")
		}
		items, prefix = []LogLineInput{{Line: in.Line, Stream: in.Stream}}, ""
	} else if in.Stream != "" {
		return nil, Invalid("stream", "stream goes with line; with lines each line has its own")
	}
	if len(items) == 0 {
		return nil, Invalid("lines", "no lines given")
	}
	if len(items) > MaxLogLines {
		return nil, TooLarge("lines", "%d lines; an append holds at most %d", len(items), MaxLogLines)
	}
	field := func(i int, name string) string {
		if prefix == "" {
			return name
		}
		return fmt.Sprintf("%s[%d].%s", prefix, i, name)
	}
	out := make([]LogLine, len(items))
	size := 0
	for i, it := range items {
		if it.Line == nil {
			return nil, Invalid(field(i, "line"), "line is required")
		}
		switch it.Stream {
		case "":
			it.Stream = StreamLog
		case StreamStdout, StreamStderr, StreamLog:
		default:
			return nil, Invalid(field(i, "stream"), "stream %q is not stdout, stderr or log", clip(it.Stream))
		}
		size += len(*it.Line)
		if size > MaxLogBytes {
			return nil, TooLarge("lines", "the lines hold more than %d bytes; send them in several appends", MaxLogBytes)
		}
		out[i] = LogLine{At: it.At, Stream: it.Stream, Line: CleanText(*it.Line, MaxLogLine)}
	}
	return out, nil
}

// AppendLog adds in's lines to the log of job id's current attempt, held
// under lease; the attempt keeps the last log_kib KiB of its queue.
func (s *Service) AppendLog(ctx context.Context, id, lease int64, in LogInput) (*LogAppended, error) {
	lines, err := in.logLines()
	if err != nil {
		return nil, err
	}
	return AppendLog(ctx, s.Store, LogRequest{ID: id, Lease: lease, Lines: lines,
		MaxBytes: func(queue string) int { return s.Config.Queue(queue).LogKiB << 10 }})
}

// LogQuery reads a job's log: Attempt (0: the latest attempt that has
// lines, else the current one), the lines after seq After, Limit at most
// (0: DefaultLogRead).
type LogQuery struct {
	Attempt int
	After   int64
	Limit   int
}

// DefaultLogRead is how many lines a read of a log answers by default.
const DefaultLogRead = 1000

// JobLog reads the log of an attempt of job id (in the jobs table or the
// dead-letter queue) and returns it with the job as it was just before.
// An unknown job is ErrNotFound.
func (s *Service) JobLog(ctx context.Context, id int64, q LogQuery) (*JobLog, *Job, error) {
	switch {
	case q.Attempt < 0:
		return nil, nil, Invalid("attempt", "attempt must be a positive number")
	case q.After < 0:
		return nil, nil, Invalid("after", "after must be a line's seq (0 or more)")
	case q.Limit < 0 || q.Limit > MaxLogRead:
		return nil, nil, Invalid("limit", "limit must be between 1 and %d", MaxLogRead)
	case q.Limit == 0:
		q.Limit = DefaultLogRead
	}
	job, err := s.Get(ctx, id, 0, false)
	if err != nil {
		return nil, nil, err
	}
	l, err := s.Store.JobLog(ctx, id, q.Attempt, q.After, q.Limit)
	if err != nil {
		return nil, nil, err
	}
	if l.Attempt == 0 {
		l.Attempt = job.Attempts
	}
	return l, job, nil
}

// AttemptOver reports whether attempt of job can get no more log lines:
// the job ended, or the attempt did (a later attempt started, or it failed
// and waits for its retry). An attempt yet to start is not over while the
// job may still run it.
func AttemptOver(job *Job, attempt int) bool {
	switch {
	case job.Status.Terminal() || job.Status == StatusDeadLetter:
		return true
	case job.Attempts > attempt:
		return true
	}
	return job.Attempts == attempt && job.Status == StatusQueued && attempt > 0
}
