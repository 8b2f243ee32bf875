package storetest

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/queuehq/queue/app"
)

// Progress and logs (issue 26): progress belongs to the attempt that
// reported it, each attempt keeps the last bytes of its own log, every
// write is fenced by the lease and all or nothing, and logs stay with the
// job (also in the dead-letter queue) until retention takes it.

func init() {
	extraCases["ProgressBelongsToItsAttempt"] = testProgressBelongsToItsAttempt
	extraCases["HeartbeatWithProgressIsOneWrite"] = testHeartbeatWithProgressIsOneWrite
	extraCases["LogIsFencedAndNumbered"] = testLogIsFencedAndNumbered
	extraCases["LogKeepsItsBound"] = testLogKeepsItsBound
	extraCases["LogIsPerAttempt"] = testLogIsPerAttempt
	extraCases["LogStaysWithTheDeadLetterRow"] = testLogStaysWithTheDeadLetterRow
	extraCases["LogRetentionFollowsTheJob"] = testLogRetentionFollowsTheJob
	extraSnapshots["logs"] = logSnapshot

	faultCases = append(faultCases,
		faultCase{"progress", app.FaultProgress, 0, func(e *env) func() error {
			e.submitOne("q", "k")
			c := e.claimOne("q")
			return func() error {
				_, err := app.SetProgress(e.ctx, e.s, c.ID, c.Lease, app.ProgressReport{Progress: 40, Message: "rows"})
				return err
			}
		}},
		faultCase{"heartbeat with progress, which extends the lease too", app.FaultProgress, 0, func(e *env) func() error {
			e.submitOne("q", "k")
			c := e.claimOne("q")
			e.clock.Advance(time.Second)
			return func() error {
				_, err := app.HeartbeatProgress(e.ctx, e.s, c.ID, c.Lease, time.Minute, &app.ProgressReport{Progress: 50})
				return err
			}
		}},
		faultCase{"log append that drops old lines", app.FaultLogAppend, 0, func(e *env) func() error {
			e.submitOne("q", "k")
			c := e.claimOne("q")
			e.appendLog(c, 48, "first line", "second line", "third line")
			return func() error {
				_, err := app.AppendLog(e.ctx, e.s, app.LogRequest{ID: c.ID, Lease: c.Lease, Lines: lines("a fourth, longer line"), MaxBytes: maxBytes(48)})
				return err
			}
		}},
	)
}

// extraSnapshots add to snapshot what later features keep besides jobs,
// each under its own name.
var extraSnapshots = map[string]func(e *env) any{}

// logSnapshot is the logs of every job and dead-letter row, every attempt.
func logSnapshot(e *env) any {
	jobs, err := e.s.List(e.ctx, app.JobFilter{Asc: true, Limit: 1000})
	if err != nil {
		e.t.Fatalf("snapshot: jobs: %v", err)
	}
	dead, err := e.s.ListDead(e.ctx, app.DeadFilter{Asc: true, Limit: 1000})
	if err != nil {
		e.t.Fatalf("snapshot: dead-letter rows: %v", err)
	}
	ids := ids(jobs)
	for _, d := range dead {
		ids = append(ids, d.ID)
	}
	out := map[string]*app.JobLog{}
	for _, id := range ids {
		l := e.jobLog(id, 0)
		for _, a := range l.Attempts {
			out[fmt.Sprintf("%d/%d", id, a)] = e.jobLog(id, a)
		}
	}
	return out
}

func lines(texts ...string) []app.LogLine {
	out := make([]app.LogLine, len(texts))
	for i, t := range texts {
		out[i] = app.LogLine{Stream: app.StreamStdout, Line: t}
	}
	return out
}

func maxBytes(n int) func(string) int { return func(string) int { return n } }

// appendLog appends texts to the log of c's attempt, kept to limit bytes.
func (e *env) appendLog(c *app.Job, limit int, texts ...string) *app.LogAppended {
	e.t.Helper()
	res, err := app.AppendLog(e.ctx, e.s, app.LogRequest{ID: c.ID, Lease: c.Lease, Lines: lines(texts...), MaxBytes: maxBytes(limit)})
	if err != nil {
		e.t.Fatalf("AppendLog(job %d, %d lines): %v", c.ID, len(texts), err)
	}
	return res
}

// jobLog reads every line of attempt (0: the latest with lines) of job id.
func (e *env) jobLog(id int64, attempt int) *app.JobLog {
	e.t.Helper()
	l, err := e.s.JobLog(e.ctx, id, attempt, 0, app.MaxLogRead)
	if err != nil {
		e.t.Fatalf("JobLog(%d, attempt %d): %v", id, attempt, err)
	}
	return l
}

// texts is the text of each line of l.
func texts(l *app.JobLog) string {
	out := make([]string, len(l.Lines))
	for i, line := range l.Lines {
		out[i] = line.Line
	}
	return strings.Join(out, "|")
}

// wantProgress checks job id's progress as every read shows it: pct
// (nil: none) and msg, in Lookup and in List.
func (e *env) wantProgress(id int64, pct *int, msg string, at time.Time) {
	e.t.Helper()
	show := func(j *app.Job) string {
		if j.ProgressPercent == nil {
			return fmt.Sprintf("none (message %q, at %v)", j.ProgressMessage, j.ProgressAt)
		}
		return fmt.Sprintf("%d %q at %v", *j.ProgressPercent, j.ProgressMessage, j.ProgressAt)
	}
	want := "none (message \"\", at <nil>)"
	if pct != nil {
		want = fmt.Sprintf("%d %q at %v", *pct, msg, &at)
	}
	got := e.get(id)
	listed, err := e.s.List(e.ctx, app.JobFilter{IDs: []int64{id}})
	if err != nil || len(listed) != 1 {
		e.t.Fatalf("List(job %d) = %d jobs, %v", id, len(listed), err)
	}
	for what, j := range map[string]*app.Job{"Lookup": got, "List": listed[0]} {
		if s := show(j); (pct == nil) != (j.ProgressPercent == nil) || (pct != nil && (*j.ProgressPercent != *pct ||
			j.ProgressMessage != msg || j.ProgressAt == nil || !j.ProgressAt.Equal(at))) {
			e.t.Fatalf("%s(job %d, attempt %d): progress %s, want %s", what, id, j.Attempts, s, want)
		}
	}
}

func ptrInt(n int) *int { return &n }

func testProgressBelongsToItsAttempt(e *env) {
	e.submitOne("q", "k", withMax(5))
	c := e.claimOne("q")
	e.wantProgress(c.ID, nil, "", time.Time{})
	e.clock.Advance(time.Second)
	j, err := app.SetProgress(e.ctx, e.s, c.ID, c.Lease, app.ProgressReport{Progress: 42, Message: "importing rows"})
	if err != nil {
		e.t.Fatalf("SetProgress: %v", err)
	}
	if j.ProgressPercent == nil || *j.ProgressPercent != 42 || j.CancelRequested {
		e.t.Fatalf("SetProgress answered %+v", j)
	}
	at := e.clock.Now()
	e.wantProgress(c.ID, ptrInt(42), "importing rows", at)
	// Fenced: a stale lease and an unknown job change nothing.
	if _, err := app.SetProgress(e.ctx, e.s, c.ID, c.Lease+1, app.ProgressReport{Progress: 99}); !errors.Is(err, app.ErrLeaseLost) {
		e.t.Fatalf("SetProgress with a stale lease: %v, want ErrLeaseLost", err)
	}
	if _, err := app.SetProgress(e.ctx, e.s, 999999, 1, app.ProgressReport{Progress: 99}); !errors.Is(err, app.ErrNotFound) {
		e.t.Fatalf("SetProgress of an unknown job: %v, want ErrNotFound", err)
	}
	e.wantProgress(c.ID, ptrInt(42), "importing rows", at)
	// The failed attempt's progress stays while it is the last attempt...
	e.fail(c, true)
	e.wantProgress(c.ID, ptrInt(42), "importing rows", at)
	// ...and the next claim hides it without writing it.
	e.clock.Advance(time.Hour)
	c2 := e.claimOne("q")
	if c2.ProgressPercent != nil {
		e.t.Fatalf("the claim of attempt 2 answered progress %d of attempt 1", *c2.ProgressPercent)
	}
	e.wantProgress(c.ID, nil, "", time.Time{})
	if _, err := app.SetProgress(e.ctx, e.s, c.ID, c.Lease, app.ProgressReport{Progress: 10}); !errors.Is(err, app.ErrLeaseLost) {
		e.t.Fatalf("SetProgress under attempt 1's lease in attempt 2: %v, want ErrLeaseLost", err)
	}
	if _, err := app.SetProgress(e.ctx, e.s, c2.ID, c2.Lease, app.ProgressReport{Progress: 100}); err != nil {
		e.t.Fatal(err)
	}
	// Kept after the job ended.
	e.complete(c2, `1`)
	e.wantProgress(c.ID, ptrInt(100), "", e.clock.Now())
}

func testHeartbeatWithProgressIsOneWrite(e *env) {
	e.submitOne("q", "k", withTimeout(10*time.Second))
	c := e.claimOne("q")
	e.clock.Advance(5 * time.Second)
	j, err := app.HeartbeatProgress(e.ctx, e.s, c.ID, c.Lease, time.Minute, &app.ProgressReport{Progress: 7, Message: "seven"})
	if err != nil {
		e.t.Fatalf("HeartbeatProgress: %v", err)
	}
	if !j.LeaseExpiresAt.Equal(T0.Add(65 * time.Second)) {
		e.t.Fatalf("lease_expires_at %v, want %v", j.LeaseExpiresAt, T0.Add(65*time.Second))
	}
	e.wantProgress(c.ID, ptrInt(7), "seven", e.clock.Now())
	if got := e.get(c.ID); !got.LeaseExpiresAt.Equal(T0.Add(65 * time.Second)) {
		e.t.Fatalf("stored lease_expires_at %v", got.LeaseExpiresAt)
	}
	// Without a progress it is a plain heartbeat: the progress stays.
	e.clock.Advance(time.Second)
	if _, err := app.HeartbeatProgress(e.ctx, e.s, c.ID, c.Lease, 0, nil); err != nil {
		e.t.Fatal(err)
	}
	e.wantProgress(c.ID, ptrInt(7), "seven", T0.Add(5*time.Second))
	if _, err := app.HeartbeatProgress(e.ctx, e.s, c.ID, c.Lease-1, 0, &app.ProgressReport{Progress: 8}); !errors.Is(err, app.ErrLeaseLost) {
		e.t.Fatalf("stale lease: %v, want ErrLeaseLost", err)
	}
	e.wantProgress(c.ID, ptrInt(7), "seven", T0.Add(5*time.Second))
}

func testLogIsFencedAndNumbered(e *env) {
	e.submitOne("q", "k")
	c := e.claimOne("q")
	if l := e.jobLog(c.ID, 0); l.Attempt != 0 || len(l.Attempts) != 0 || len(l.Lines) != 0 || l.Truncated {
		e.t.Fatalf("the log of a job that logged nothing: %+v", l)
	}
	at := e.clock.Now().Add(-time.Second).Truncate(time.Millisecond)
	in := []app.LogLine{{Stream: app.StreamStdout, Line: "one", At: at}, {Stream: app.StreamStderr, Line: "two"}, {Stream: app.StreamLog, Line: ""}}
	res, err := app.AppendLog(e.ctx, e.s, app.LogRequest{ID: c.ID, Lease: c.Lease, Lines: in, MaxBytes: maxBytes(1 << 10)})
	if err != nil {
		e.t.Fatalf("AppendLog: %v", err)
	}
	if res.Attempt != 1 || res.Stored != 3 || res.LastSeq != 3 || res.Dropped != 0 {
		e.t.Fatalf("AppendLog answered %+v, want attempt 1, 3 stored, last seq 3, none dropped", res)
	}
	e.clock.Advance(time.Second)
	if res := e.appendLog(c, 1<<10, "four", "five"); res.LastSeq != 5 {
		e.t.Fatalf("second append: last seq %d, want 5", res.LastSeq)
	}
	l := e.jobLog(c.ID, 0)
	if l.JobID != c.ID || l.Attempt != 1 || fmt.Sprint(l.Attempts) != "[1]" || texts(l) != "one|two||four|five" || l.Truncated {
		e.t.Fatalf("log: %+v (%s)", l, texts(l))
	}
	for i, line := range l.Lines {
		if line.Seq != int64(i+1) {
			e.t.Fatalf("line %d has seq %d", i, line.Seq)
		}
	}
	if !l.Lines[0].At.Equal(at) || l.Lines[0].Stream != app.StreamStdout || l.Lines[1].Stream != app.StreamStderr || l.Lines[2].Stream != app.StreamLog {
		e.t.Fatalf("first lines: %+v", l.Lines[:3])
	}
	if !l.Lines[1].At.Equal(T0) || !l.Lines[3].At.Equal(T0.Add(time.Second)) {
		e.t.Fatalf("lines without a time take the write's: %v, %v", l.Lines[1].At, l.Lines[3].At)
	}
	// after continues; a limit stops and says where to go on.
	page, err := e.s.JobLog(e.ctx, c.ID, 1, 1, 2)
	if err != nil || len(page.Lines) != 2 || page.Lines[0].Seq != 2 || page.NextAfter != 3 {
		e.t.Fatalf("JobLog(after 1, limit 2) = %+v, %v; want seqs 2, 3 and next_after 3", page, err)
	}
	if rest, err := e.s.JobLog(e.ctx, c.ID, 1, 3, 10); err != nil || len(rest.Lines) != 2 || rest.NextAfter != 0 {
		e.t.Fatalf("JobLog(after 3) = %+v, %v; want seqs 4, 5 and no next_after", rest, err)
	}
	// Fenced: a stale lease or an unknown job stores nothing.
	if _, err := app.AppendLog(e.ctx, e.s, app.LogRequest{ID: c.ID, Lease: c.Lease + 1, Lines: lines("stale")}); !errors.Is(err, app.ErrLeaseLost) {
		e.t.Fatalf("AppendLog with a stale lease: %v, want ErrLeaseLost", err)
	}
	if _, err := app.AppendLog(e.ctx, e.s, app.LogRequest{ID: 999999, Lease: 1, Lines: lines("x")}); !errors.Is(err, app.ErrNotFound) {
		e.t.Fatalf("AppendLog of an unknown job: %v, want ErrNotFound", err)
	}
	e.complete(c, `1`)
	if _, err := app.AppendLog(e.ctx, e.s, app.LogRequest{ID: c.ID, Lease: c.Lease, Lines: lines("late")}); !errors.Is(err, app.ErrLeaseLost) {
		e.t.Fatalf("AppendLog after the job ended: %v, want ErrLeaseLost", err)
	}
	if got := texts(e.jobLog(c.ID, 1)); got != "one|two||four|five" {
		e.t.Fatalf("after refused appends: %s", got)
	}
}

func testLogKeepsItsBound(e *env) {
	e.submitOne("q", "k")
	c := e.claimOne("q")
	// Each line counts its bytes and a newline: "aaaa" is 5, "" is 1.
	e.appendLog(c, 16, "aaaa", "bbbb", "cccc")
	if l := e.jobLog(c.ID, 1); texts(l) != "aaaa|bbbb|cccc" || l.Truncated {
		e.t.Fatalf("15 of 16 bytes: %s truncated=%v", texts(l), l.Truncated)
	}
	res := e.appendLog(c, 16, "dd")
	if res.Dropped != 1 || res.Stored != 1 || res.LastSeq != 4 {
		e.t.Fatalf("append beyond the bound answered %+v, want 1 stored (seq 4), 1 dropped", res)
	}
	l := e.jobLog(c.ID, 1)
	if texts(l) != "bbbb|cccc|dd" || !l.Truncated || l.Lines[0].Seq != 2 {
		e.t.Fatalf("after dropping: %s truncated=%v first seq %d; want bbbb|cccc|dd, truncated, from seq 2", texts(l), l.Truncated, l.Lines[0].Seq)
	}
	// An append larger than the bound keeps its own newest lines only
	// (its older ones are numbered and dropped too).
	res = e.appendLog(c, 16, "eeeeeeee", "ffff", "gggggg", "h")
	if res.Dropped != 4 || res.Stored != 3 || res.LastSeq != 8 {
		e.t.Fatalf("an append over the bound answered %+v, want 3 stored (last seq 8), 4 dropped (1 of its own, 3 older)", res)
	}
	l = e.jobLog(c.ID, 1)
	if texts(l) != "ffff|gggggg|h" || !l.Truncated || l.Lines[0].Seq != 6 {
		e.t.Fatalf("after a large append: %s from seq %d", texts(l), l.Lines[0].Seq)
	}
	// A bound met exactly drops nothing more.
	res = e.appendLog(c, 16, "i")
	if l := e.jobLog(c.ID, 1); res.Dropped != 0 || texts(l) != "ffff|gggggg|h|i" {
		e.t.Fatalf("16 of 16 bytes: %s, dropped %d", texts(l), res.Dropped)
	}
	// Dropping stops as soon as the bound is met: 21 bytes less ffff's 5.
	res = e.appendLog(c, 16, "kkkk")
	if l := e.jobLog(c.ID, 1); res.Dropped != 1 || texts(l) != "gggggg|h|i|kkkk" {
		e.t.Fatalf("21 of 16 bytes: %s, dropped %d; want gggggg|h|i|kkkk, 1 dropped", texts(l), res.Dropped)
	}
}

func testLogIsPerAttempt(e *env) {
	e.submitOne("q", "k", withMax(5))
	c1 := e.claimOne("q")
	e.appendLog(c1, 32, "first attempt")
	e.fail(c1, true)
	if l := e.jobLog(c1.ID, 0); l.Attempt != 1 || texts(l) != "first attempt" {
		e.t.Fatalf("between attempts the latest with lines is attempt 1: %+v", l)
	}
	e.clock.Advance(time.Hour)
	c2 := e.claimOne("q")
	if l := e.jobLog(c2.ID, 0); l.Attempt != 1 {
		e.t.Fatalf("attempt 2 has no lines yet: the latest with lines is %d, want 1", l.Attempt)
	}
	// Each attempt has its own bound and numbering.
	res := e.appendLog(c2, 32, "second attempt, a longer line", "and another")
	if res.Attempt != 2 || res.LastSeq != 2 || res.Dropped != 1 {
		e.t.Fatalf("append in attempt 2 answered %+v", res)
	}
	l := e.jobLog(c2.ID, 0)
	if l.Attempt != 2 || fmt.Sprint(l.Attempts) != "[1 2]" || texts(l) != "and another" || !l.Truncated {
		e.t.Fatalf("attempt 2: %+v (%s)", l, texts(l))
	}
	if l := e.jobLog(c2.ID, 1); texts(l) != "first attempt" || l.Truncated || l.Lines[0].Seq != 1 {
		e.t.Fatalf("attempt 1 after attempt 2 logged: %+v", l)
	}
	if l := e.jobLog(c2.ID, 3); l.Attempt != 3 || len(l.Lines) != 0 {
		e.t.Fatalf("an attempt without lines: %+v", l)
	}
}

func testLogStaysWithTheDeadLetterRow(e *env) {
	j := e.submitOne("q", "k")
	c := e.claimOne("q")
	e.appendLog(c, 1<<10, "before the end")
	if r := e.fail(c, false); r.Outcome != app.OutcomeDeadLettered {
		e.t.Fatalf("outcome %s", r.Outcome)
	}
	if l := e.jobLog(j.ID, 0); texts(l) != "before the end" || l.Attempt != 1 {
		e.t.Fatalf("the log of a dead-letter row: %+v", l)
	}
	e.clock.Advance(48 * time.Hour)
	if _, err := e.s.DeleteOld(e.ctx, app.DeleteOldRequest{What: app.OldLogs, Before: e.clock.Now(), Limit: 100}); err != nil {
		e.t.Fatal(err)
	}
	if l := e.jobLog(j.ID, 0); texts(l) != "before the end" {
		e.t.Fatalf("retention took the log of a row still in the dead-letter queue: %+v", l)
	}
	if _, err := app.Purge(e.ctx, e.s, app.DeadFilter{IDs: []int64{j.ID}}, nil); err != nil {
		e.t.Fatal(err)
	}
	// The SQL stores delete the log with the purge (a trigger), the memory
	// store in the retention pass: either way it is gone after both.
	if _, err := e.s.DeleteOld(e.ctx, app.DeleteOldRequest{What: app.OldLogs, Before: e.clock.Now(), Limit: 100}); err != nil {
		e.t.Fatal(err)
	}
	if l := e.jobLog(j.ID, 0); len(l.Attempts) != 0 || len(l.Lines) != 0 {
		e.t.Fatalf("the log of a purged row after retention: %+v", l)
	}
}

func testLogRetentionFollowsTheJob(e *env) {
	e.submitN(2, "q", "k")
	done, live := e.claimOne("q"), e.claimOne("q")
	e.appendLog(done, 1<<10, "a", "b", "c")
	if _, err := app.SetProgress(e.ctx, e.s, done.ID, done.Lease, app.ProgressReport{Progress: 100}); err != nil {
		e.t.Fatal(err)
	}
	e.appendLog(live, 1<<10, "still running")
	e.complete(done, `1`)
	e.clock.Advance(48 * time.Hour)
	old := func(limit int) int {
		n, err := e.s.DeleteOld(e.ctx, app.DeleteOldRequest{What: app.OldLogs, Before: e.clock.Now().Add(-time.Hour), Limit: limit})
		if err != nil {
			e.t.Fatalf("DeleteOld(logs): %v", err)
		}
		return n
	}
	if n := old(100); n != 0 {
		e.t.Fatalf("retention deleted %d lines of jobs still stored", n)
	}
	if _, err := e.s.DeleteOld(e.ctx, app.DeleteOldRequest{What: app.OldFinished, Before: e.clock.Now().Add(-24 * time.Hour), Limit: 100}); err != nil {
		e.t.Fatal(err)
	}
	for range 3 { // the memory store's pass is bounded; the SQL stores' triggers took the log with the job
		old(2)
	}
	if l := e.jobLog(done.ID, 0); len(l.Attempts) != 0 || len(l.Lines) != 0 {
		e.t.Fatalf("the log of a deleted job: %+v", l)
	}
	if l := e.jobLog(live.ID, 0); texts(l) != "still running" {
		e.t.Fatalf("the running job's log: %+v", l)
	}
}
