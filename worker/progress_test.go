package worker

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/queuehq/queue/app"
	"github.com/queuehq/queue/memory"
)

// runOne runs one job of kind k through a pool with handler h over an
// in-process Service and returns the job once it is done, with its log.
func runOne(t *testing.T, h Handler) (*app.Job, *app.JobLog) {
	t.Helper()
	svc := app.NewService(memory.New(app.StoreOptions{}), nil, nil, nil, zerolog.Nop())
	p := &Pool{Backend: LocalBackend(svc), Queue: "q", Handler: h, PollWait: time.Second, Log: zerolog.New(zerolog.NewTestWriter(t))}
	if err := p.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	defer p.Stop(time.Second)
	sub, err := svc.Submit(t.Context(), []app.SubmitInput{{Queue: "q", Kind: "k"}})
	if err != nil {
		t.Fatal(err)
	}
	id := sub[0].Job.ID
	job, err := svc.Get(t.Context(), id, 10*time.Second, false)
	if err != nil || job.Status != app.StatusDone {
		t.Fatalf("job %d: %v %v, want done", id, job, err)
	}
	l, _, err := svc.JobLog(t.Context(), id, app.LogQuery{})
	if err != nil {
		t.Fatal(err)
	}
	return job, l
}

func logText(l *app.JobLog) string {
	var b strings.Builder
	for _, line := range l.Lines {
		fmt.Fprintf(&b, "%s:%s\n", line.Stream, line.Line)
	}
	return b.String()
}

// A command's stdout and stderr lines go into the attempt's log, all of
// them before the job is acknowledged; stderr's progress lines report
// progress instead; stdout is still the result.
func TestCommandReportsProgressAndLogs(t *testing.T) {
	script := `echo starting
echo "::progress 10 loading rows" >&2
echo "warn <b>&amp;</b>" >&2
echo "::progress 150" >&2
echo "::progress 42 importing rows" >&2
printf 'last, without a newline'`
	job, l := runOne(t, CommandHandler(CommandConfig{Command: []string{"sh", "-c", script}}))
	// stdout and stderr are two pipes: each keeps its order, not the two together.
	byStream := map[string][]string{}
	for _, line := range l.Lines {
		byStream[line.Stream] = append(byStream[line.Stream], line.Line)
	}
	if got := fmt.Sprintf("%q", byStream); got != `map["stderr":["warn <b>&amp;</b>" "::progress 150"] "stdout":["starting" "last, without a newline"]]` {
		t.Fatalf("log by stream: %s\n%s", got, logText(l))
	}
	if job.ProgressPercent == nil || *job.ProgressPercent != 42 || job.ProgressMessage != "importing rows" {
		t.Fatalf("progress %v %q, want 42 importing rows", job.ProgressPercent, job.ProgressMessage)
	}
	if string(job.Result) != `"starting\nlast, without a newline"` {
		t.Fatalf("result %s", job.Result)
	}
	for _, line := range l.Lines {
		if line.At.IsZero() || time.Since(line.At) > time.Minute {
			t.Fatalf("line %d has time %v", line.Seq, line.At)
		}
	}
}

// A Go handler reports through its job; its lines are sent before its
// completion, however few and however soon it returns.
func TestHandlerReportsThroughItsJob(t *testing.T) {
	job, l := runOne(t, func(ctx context.Context, job *app.Job) (any, error) {
		if err := job.Progress(101, "too far"); err == nil {
			return nil, errors.New("Progress(101) was taken")
		}
		if err := job.Progress(50, "half"); err != nil {
			return nil, err
		}
		if err := job.Log("hello"); err != nil {
			return nil, err
		}
		return nil, job.Logf("n=%d", 2)
	})
	if got := logText(l); got != "log:hello\nlog:n=2\n" {
		t.Fatalf("log: %q", got)
	}
	if job.ProgressPercent == nil || *job.ProgressPercent != 50 || job.ProgressMessage != "half" {
		t.Fatalf("progress %v %q", job.ProgressPercent, job.ProgressMessage)
	}
}

// A job outside a worker has nowhere to report to, and says so.
func TestJobWithoutAWorkerCannotReport(t *testing.T) {
	var j app.Job
	if err := j.Progress(1, ""); !errors.Is(err, app.ErrNoReporter) {
		t.Fatalf("Progress: %v", err)
	}
	if err := j.Log("x"); !errors.Is(err, app.ErrNoReporter) {
		t.Fatalf("Log: %v", err)
	}
}

func TestParseProgress(t *testing.T) {
	for line, want := range map[string]string{
		"::progress 0":                 "0 \"\" true",
		"::progress 100":               "100 \"\" true",
		"::progress 42 importing rows": "42 \"importing rows\" true",
		"::progress 7 ":                "7 \"\" true",
		"::progress 101":               "0 \"\" false",
		"::progress -1":                "0 \"\" false",
		"::progress 042":               "0 \"\" false",
		"::progress  42":               "0 \"\" false",
		"::progress":                   "0 \"\" false",
		"::progress 4.5":               "0 \"\" false",
		" ::progress 4":                "0 \"\" false",
		"::Progress 4":                 "0 \"\" false",
		"::progress 42importing":       "0 \"\" false",
	} {
		pct, msg, ok := parseProgress(line)
		if got := fmt.Sprintf("%d %q %v", pct, msg, ok); got != want {
			t.Errorf("parseProgress(%q) = %s, want %s", line, got, want)
		}
	}
}

// Lines are split at newlines (a "\r" before one dropped), cut at
// app.MaxLogLine, and a last line without a newline comes at flush.
func TestLineWriter(t *testing.T) {
	var got []string
	w := &lineWriter{emit: func(l string) { got = append(got, l) }}
	long := strings.Repeat("x", app.MaxLogLine+10)
	for _, chunk := range []string{"a\r\nb", "c\n\n", long[:100], long[100:] + "\nend"} {
		w.Write([]byte(chunk))
	}
	w.flush()
	want := []string{"a", "bc", "", long[:app.MaxLogLine], "end"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("lines %q, want %q", got, want)
	}
}
