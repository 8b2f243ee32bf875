package memory

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/queuehq/queue/app"
)

// Progress and logs (issue 26) in maps beside the jobs: a job's row never
// carries its progress here (the other steps store whole copies of a job),
// so reads add it (showProgress) as the SQL stores' columns do.

// live is the store's progress and logs, made at first use.
type live struct {
	progress map[int64]progressRow
	logs     map[logKey]attemptLog
}

// progressRow is a job's last progress and the attempt that reported it.
type progressRow struct {
	attempt, pct int
	msg          string
	at           time.Time
}

type logKey struct {
	job     int64
	attempt int
}

// attemptLog is one attempt's log: its lines in seq order, the next seq,
// the bytes kept, whether lines were dropped, and when a line last came.
type attemptLog struct {
	lines     []app.LogLine
	next      int64
	bytes     int
	truncated bool
	last      time.Time
}

// lv is the store's live state; the caller holds s.mu.
func (s *Store) lv() *live {
	if s.live.progress == nil {
		s.live = live{progress: map[int64]progressRow{}, logs: map[logKey]attemptLog{}}
	}
	return &s.live
}

// showProgress sets j's progress as stored; the caller holds s.mu.
func (s *Store) showProgress(j *app.Job) *app.Job {
	if p, ok := s.lv().progress[j.ID]; ok {
		j.ShowProgress(p.attempt, &p.pct, p.msg, &p.at)
	}
	return j
}

// SetProgress implements app.Tx.
func (t *tx) SetProgress(j *app.Job, attempt, pct int, msg string) error {
	if _, ok := t.s.jobs[j.ID]; !ok {
		return fmt.Errorf("job %d: %w", j.ID, app.ErrNotFound)
	}
	put(t, t.s.lv().progress, j.ID, progressRow{attempt: attempt, pct: pct, msg: msg, at: t.now})
	return nil
}

// LogState implements app.Tx.
func (t *tx) LogState(jobID int64, attempt int) (app.LogState, error) {
	l, ok := t.s.lv().logs[logKey{jobID, attempt}]
	if !ok {
		return app.LogState{NextSeq: 1}, nil
	}
	return app.LogState{NextSeq: l.next, Bytes: int64(l.bytes), Truncated: l.truncated}, nil
}

// SaveLogState implements app.Tx.
func (t *tx) SaveLogState(jobID int64, attempt int, st app.LogState) error {
	k := logKey{jobID, attempt}
	l := t.s.lv().logs[k]
	l.next, l.bytes, l.truncated, l.last = st.NextSeq, int(st.Bytes), st.Truncated, t.now
	put(t, t.s.lv().logs, k, l)
	return nil
}

// InsertLog implements app.Tx.
func (t *tx) InsertLog(jobID int64, attempt int, first int64, lines []app.LogLine) error {
	k := logKey{jobID, attempt}
	l := t.s.lv().logs[k]
	l.lines = slices.Clone(l.lines)
	for i, line := range lines {
		line.Seq = first + int64(i)
		l.lines = append(l.lines, line)
	}
	put(t, t.s.lv().logs, k, l)
	return nil
}

// OldestLog implements app.Tx.
func (t *tx) OldestLog(jobID int64, attempt int, each func(seq, size int64) bool) error {
	for _, line := range t.s.lv().logs[logKey{jobID, attempt}].lines {
		if !each(line.Seq, int64(app.LogSize(line.Line))) {
			break
		}
	}
	return nil
}

// DropLog implements app.Tx.
func (t *tx) DropLog(jobID int64, attempt int, upto int64) error {
	k := logKey{jobID, attempt}
	l := t.s.lv().logs[k]
	l.lines = slices.DeleteFunc(slices.Clone(l.lines), func(line app.LogLine) bool { return line.Seq <= upto })
	put(t, t.s.lv().logs, k, l)
	return nil
}

// JobLog implements app.LogStore.
func (s *Store) JobLog(ctx context.Context, id int64, attempt int, after int64, limit int) (*app.JobLog, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := &app.JobLog{JobID: id, Attempts: []int{}, Lines: []app.LogLine{}}
	for k := range s.lv().logs {
		if k.job == id {
			out.Attempts = append(out.Attempts, k.attempt)
		}
	}
	sort.Ints(out.Attempts)
	if attempt == 0 && len(out.Attempts) > 0 {
		attempt = out.Attempts[len(out.Attempts)-1]
	}
	l := s.lv().logs[logKey{id, attempt}]
	out.Attempt, out.Truncated = attempt, l.truncated
	for _, line := range l.lines {
		if line.Seq <= after {
			continue
		}
		if len(out.Lines) == limit {
			out.NextAfter = out.Lines[limit-1].Seq
			break
		}
		out.Lines = append(out.Lines, line)
	}
	return out, nil
}

// deleteOldLogs deletes up to limit lines of attempts whose last line came
// before before and whose job is in neither map (and the progress of such
// jobs), and the attempts left without lines.
func (s *Store) deleteOldLogs(ctx context.Context, req app.DeleteOldRequest) (int, error) {
	limit := min(max(req.Limit, 1), app.BulkBatch)
	n := 0
	err := s.write(ctx, func(t *tx) error {
		n = 0
		gone := func(id int64) bool {
			_, job := s.jobs[id]
			_, dead := s.dead[id]
			return !job && !dead
		}
		lv := s.lv()
		for k, l := range lv.logs {
			if !l.last.Before(req.Before) || !gone(k.job) {
				continue
			}
			take := min(len(l.lines), limit-n)
			n += take
			if take == len(l.lines) {
				del(t, lv.logs, k)
			} else {
				l.lines = l.lines[take:]
				put(t, lv.logs, k, l)
			}
			if n == limit {
				break
			}
		}
		dropKeys(t, lv.progress, limit, func(id int64, _ progressRow) bool { return gone(id) })
		return t.Fault(app.FaultDelete, 0)
	})
	if err != nil {
		return 0, fmt.Errorf("delete old logs: %w", err)
	}
	return n, nil
}
