package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"
)

// Progress and logs of a running job (issue 26), written once over a Tx.
//
// Progress (0-100 and a short message) belongs to the attempt that
// reported it: a store keeps it with that attempt's number and shows it
// only while that is the job's current attempt (ShowProgress), so a new
// claim needs no write to clear it, and it stays after the job ends.
//
// Each attempt has a log: numbered lines (seq from 1), each with its time
// and stream, of which the store keeps the last Config's log_kib KiB
// (LogSize of each line); an append drops the oldest lines beyond that in
// its own transaction. Logs stay while the job is in the jobs table or the
// dead-letter table (same id) and go with the job when it leaves the last
// of them: the SQL stores' triggers delete them in the same statement, the
// memory store in the retention pass (OldLogs).

// Events of progress and logs. Neither is recorded in the events table
// (Transient): they are published on the Bus after the commit, job.log
// only to event streams that ask for it.
const (
	EventProgress = "job.progress"
	EventLog      = "job.log"
)

// Transient reports whether events of type typ are published only, never
// recorded nor derived from a row (the memory store, which records what
// it publishes, leaves them out).
func Transient(typ string) bool { return typ == EventProgress || typ == EventLog }

// Fault points of progress and log writes (see FaultPoint).
const (
	// FaultProgress follows the UPDATE that stores a job's progress.
	FaultProgress FaultPoint = "progress.after_update"
	// FaultLogAppend follows the INSERT of an attempt's log lines and the
	// DELETE of its oldest lines beyond the bound.
	FaultLogAppend FaultPoint = "log.after_append"
)

// Limits of progress and logs.
const (
	// MaxProgressMessage is the longest progress message kept; a longer
	// one is cut.
	MaxProgressMessage = 200
	// MaxLogLine is the longest log line kept; a longer one is cut.
	MaxLogLine = 4 << 10
	// MaxLogLines and MaxLogBytes bound one append: lines, and bytes of
	// their text.
	MaxLogLines = 1000
	MaxLogBytes = 1 << 20
	// MaxLogRead is how many lines one read of a log answers at most.
	MaxLogRead = 10_000
)

// OldLogs is the DeleteOld kind of logs whose job is gone from both the
// jobs and the dead-letter table (their progress too): each pass deletes at
// most Limit lines of attempts whose last line came before Before. Only the
// memory store has any: the SQL stores delete a log with its job.
const OldLogs = "logs"

// Log streams: what wrote a line.
const (
	StreamStdout = "stdout" // a command's standard output
	StreamStderr = "stderr" // a command's standard error
	StreamLog    = "log"    // a handler's own line (Job.Log, POST .../log)
)

// LogLine is one line of an attempt's log.
type LogLine struct {
	Seq    int64     `json:"seq"`
	At     time.Time `json:"at"`
	Stream string    `json:"stream"`
	Line   string    `json:"line"`
}

// MarshalJSON writes At like every other time of the API.
func (l LogLine) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Seq    int64  `json:"seq"`
		At     string `json:"at"`
		Stream string `json:"stream"`
		Line   string `json:"line"`
	}{l.Seq, FormatTime(l.At), l.Stream, l.Line})
}

// LogSize is what a line counts against its attempt's bound: its bytes and
// the newline it ended with, so even empty lines fill the log.
func LogSize(line string) int { return len(line) + 1 }

// LogAppended is what an append stored: how many lines, the seq of the
// last, and how many lines it dropped (the oldest beyond the bound, of the
// attempt's log and of the append itself).
type LogAppended struct {
	Attempt int   `json:"attempt"`
	Stored  int   `json:"stored"`
	LastSeq int64 `json:"last_seq"`
	Dropped int   `json:"dropped"`
}

// JobLog is a read of one attempt's log.
type JobLog struct {
	JobID int64 `json:"job_id"`
	// Attempt is the attempt read (0: the job has not started).
	Attempt int `json:"attempt"`
	// Attempts are the attempts of the job that have lines, in order.
	Attempts []int     `json:"attempts"`
	Lines    []LogLine `json:"lines"`
	// Truncated: lines of the attempt were dropped to keep its bound.
	Truncated bool `json:"truncated"`
	// NextAfter, when set, is the after= that reads on: the read stopped
	// at its limit with lines left.
	NextAfter int64 `json:"next_after,omitempty"`
}

// LogStore reads the logs of attempts (their writes go through the
// Writer: AppendLog).
type LogStore interface {
	// JobLog reads up to limit lines of attempt of job id with a seq above
	// after, in seq order, with the job's attempts that have lines and
	// whether lines of attempt were dropped, in one snapshot. Attempt 0
	// reads the latest attempt that has lines (Attempt 0 in the answer if
	// none has). A job without logs answers an empty log, not an error.
	JobLog(ctx context.Context, id int64, attempt int, after int64, limit int) (*JobLog, error)
}

// Reporter takes what a running job's handler reports: the worker pool
// sets one on each job it claims (SetReporter), which sends it to the
// queue under the job's lease.
type Reporter interface {
	// Progress reports pct (0-100) and msg as the attempt's progress.
	Progress(pct int, msg string) error
	// Log adds line (of stream, written at at) to the attempt's log.
	Log(stream, line string, at time.Time) error
}

// ErrNoReporter is what Job.Progress and Job.Log return for a job not
// running under a worker.
var ErrNoReporter = errors.New("the job is not running under a worker: progress and log lines have nowhere to go")

// SetReporter makes j's Progress and Log calls go to r. The worker pool
// sets it on each job it claims; a test of a handler may set its own.
func (j *Job) SetReporter(r Reporter) { j.reporter = r }

// Progress reports how far the job's current attempt is: pct from 0 to
// 100 and a short message (at most 200 bytes are kept). Shown on the job's
// page and API answer; the worker sends it within a quarter second.
func (j *Job) Progress(pct int, msg string) error {
	if j.reporter == nil {
		return ErrNoReporter
	}
	if pct < 0 || pct > 100 {
		return Invalid("progress", "progress %d is not between 0 and 100", pct)
	}
	return j.reporter.Progress(pct, msg)
}

// Log adds line to the log of the job's current attempt (stream "log"),
// kept with its time; the worker sends lines in batches.
func (j *Job) Log(line string) error {
	if j.reporter == nil {
		return ErrNoReporter
	}
	return j.reporter.Log(StreamLog, line, time.Now())
}

// LogStream adds line, written at at on stream (StreamStdout, StreamStderr
// or StreamLog), to the log of the job's current attempt: how the command
// worker logs a command's output. A handler's own lines go through Log.
func (j *Job) LogStream(stream, line string, at time.Time) error {
	if j.reporter == nil {
		return ErrNoReporter
	}
	return j.reporter.Log(stream, line, at)
}

// Logf is Log with a format.
func (j *Job) Logf(format string, args ...any) error {
	return j.Log(fmt.Sprintf(format, args...))
}

// ShowProgress sets j's progress from what a store keeps: pct (nil: none),
// msg and at, reported in attempt. It shows only while attempt is j's
// current attempt.
func (j *Job) ShowProgress(attempt int, pct *int, msg string, at *time.Time) {
	j.ProgressPercent, j.ProgressMessage, j.ProgressAt = nil, "", nil
	if pct == nil || attempt != j.Attempts || attempt == 0 {
		return
	}
	v := *pct
	j.ProgressPercent, j.ProgressMessage = &v, msg
	if at != nil {
		t := *at
		j.ProgressAt = &t
	}
}

// CleanText makes s fit for a log line or a progress message: valid UTF-8
// without NUL (U+FFFD for both), at most max bytes (cut at a character).
func CleanText(s string, max int) string {
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	if strings.IndexByte(s, 0) >= 0 {
		s = strings.ReplaceAll(s, "\x00", "\uFFFD")
	}
	if len(s) > max {
		s = TruncateString(s, max)
	}
	return s
}

// ProgressReport is a progress to store with a write under the lease.
type ProgressReport struct {
	Progress int
	Message  string
}

// SetProgress stores r as the progress of the current attempt of job id,
// held under lease, and returns the job (its progress as stored).
func SetProgress(ctx context.Context, w Writer, id, lease int64, r ProgressReport) (*Job, error) {
	var job *Job
	err := w.Write(ctx, func(tx Tx) error {
		j, err := tx.Processing(id, lease)
		if err != nil {
			return err
		}
		if err := progressTx(tx, j, r); err != nil {
			return err
		}
		job = j
		return nil
	})
	if err != nil {
		return nil, WithOperation("progress", err)
	}
	return job, nil
}

// HeartbeatProgress is Heartbeat with a progress (if r is not nil) stored
// in the same transaction as the extended lease.
func HeartbeatProgress(ctx context.Context, w Writer, id, lease int64, extend time.Duration, r *ProgressReport) (*Job, error) {
	return heartbeat(ctx, w, id, lease, extend, r)
}

// progressTx stores r as the progress of j's current attempt, in tx, and
// sets it on j.
func progressTx(tx Tx, j *Job, r ProgressReport) error {
	if err := tx.SetProgress(j, j.Attempts, r.Progress, r.Message); err != nil {
		return fmt.Errorf("set progress of job %d: %w", j.ID, err)
	}
	if err := tx.Fault(FaultProgress, j.ID); err != nil {
		return err
	}
	now := tx.Now()
	pct := r.Progress
	j.ProgressPercent, j.ProgressMessage, j.ProgressAt = &pct, r.Message, &now
	tx.Publish(EventProgress, j.ID, j.Queue, j.Kind, eventData(map[string]any{
		"attempt": j.Attempts, "progress": r.Progress, "message": r.Message}))
	return nil
}

// LogRequest appends lines to the log of the current attempt of job ID,
// held under Lease. A line without At gets the write's time.
type LogRequest struct {
	ID, Lease int64
	Lines     []LogLine
	// MaxBytes gives the bound of a queue's attempt logs (Config's log_kib).
	MaxBytes func(queue string) int
}

// AppendLog appends req.Lines to the log of the job's current attempt and
// drops the attempt's oldest lines beyond its bound (its own oldest too,
// see LogTail), in one transaction.
func AppendLog(ctx context.Context, w Writer, req LogRequest) (*LogAppended, error) {
	var res LogAppended
	err := w.Write(ctx, func(tx Tx) error {
		j, err := tx.Processing(req.ID, req.Lease)
		if err != nil {
			return err
		}
		limit := DefaultLogKiB << 10
		if req.MaxBytes != nil {
			limit = req.MaxBytes(j.Queue)
		}
		lines := req.Lines
		now := tx.Now()
		for i := range lines {
			if lines[i].At.IsZero() {
				lines[i].At = now
			}
			lines[i].At = lines[i].At.UTC().Truncate(time.Millisecond)
		}
		if res, err = appendLog(tx, j.ID, j.Attempts, lines, limit); err != nil {
			return fmt.Errorf("append to the log of job %d: %w", j.ID, err)
		}
		if err := tx.Fault(FaultLogAppend, j.ID); err != nil {
			return err
		}
		res.Attempt = j.Attempts
		tx.Publish(EventLog, j.ID, j.Queue, j.Kind, eventData(map[string]any{
			"attempt": j.Attempts, "lines": res.Stored, "last_seq": res.LastSeq}))
		return nil
	})
	if err != nil {
		return nil, WithOperation("append log", err)
	}
	return &res, nil
}

// LogState is an attempt's log as its row keeps it: the next line's
// number (1 for a new log), the LogSize of the lines kept, and whether
// lines were dropped.
type LogState struct {
	NextSeq   int64
	Bytes     int64
	Truncated bool
}

// appendLog appends lines to the log of attempt of job jobID, numbered
// after its last, then drops the attempt's oldest lines while it holds
// more than limit bytes: the older lines of the append itself at once (see
// LogTail), then the log's oldest, read in order until enough are found.
func appendLog(tx Tx, jobID int64, attempt int, lines []LogLine, limit int) (LogAppended, error) {
	res := LogAppended{Attempt: attempt}
	st, err := tx.LogState(jobID, attempt)
	if err != nil {
		return res, err
	}
	lines, skip := LogTail(lines, limit)
	st.NextSeq += int64(skip)
	if skip > 0 {
		st.Truncated, res.Dropped = true, skip
	}
	if len(lines) > 0 {
		if err := tx.InsertLog(jobID, attempt, st.NextSeq, lines); err != nil {
			return res, fmt.Errorf("insert log lines: %w", err)
		}
	}
	for _, l := range lines {
		st.Bytes += int64(LogSize(l.Line))
	}
	res.Stored, res.LastSeq = len(lines), st.NextSeq+int64(len(lines))-1
	st.NextSeq += int64(len(lines))
	if st.Bytes > int64(limit) {
		var upto, gone int64
		n := 0
		err := tx.OldestLog(jobID, attempt, func(seq, size int64) bool {
			if st.Bytes-gone <= int64(limit) {
				return false
			}
			upto, gone, n = seq, gone+size, n+1
			return true
		})
		if err != nil {
			return res, fmt.Errorf("read the oldest log lines: %w", err)
		}
		if n > 0 {
			if err := tx.DropLog(jobID, attempt, upto); err != nil {
				return res, fmt.Errorf("drop old log lines: %w", err)
			}
			st.Bytes, st.Truncated, res.Dropped = st.Bytes-gone, true, res.Dropped+n
		}
	}
	return res, tx.SaveLogState(jobID, attempt, st)
}

// LogTail is what an append of lines to a log bounded to limit bytes
// stores: the newest lines that fit (LogSize each), after skip older ones
// that would go at once. A store numbers the skipped lines too (they count
// as dropped), so a log's first seq above 1 says it was cut.
func LogTail(lines []LogLine, limit int) (kept []LogLine, skip int) {
	size, i := 0, len(lines)
	for i > 0 && size+LogSize(lines[i-1].Line) <= limit {
		size += LogSize(lines[i-1].Line)
		i--
	}
	return lines[i:], i
}
