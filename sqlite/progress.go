package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/queuehq/queue/app"
)

// Progress and logs (issue 26): the SQL of the steps app.SetProgress and
// app.AppendLog put in order, the read of a log, and the retention of logs
// whose job is gone.

// SetProgress implements app.Tx.
func (w *wtx) SetProgress(j *app.Job, attempt, pct int, msg string) error {
	_, err := w.exec(`UPDATE jobs SET progress = ?, progress_message = ?, progress_at = ?, progress_attempt = ? WHERE id = ?`,
		pct, nullString(msg), ms(w.now), attempt, j.ID)
	return err
}

// AppendLog implements app.Tx: the lines go in one INSERT (from a JSON
// array), then the oldest lines beyond maxBytes are read in order until
// enough are found and deleted in one statement.
func (w *wtx) AppendLog(jobID int64, attempt int, lines []app.LogLine, maxBytes int) (app.LogAppended, error) {
	res := app.LogAppended{Attempt: attempt}
	var next, size int64
	var truncated bool
	err := w.queryRow(`SELECT next_seq, bytes, truncated FROM job_log_attempts WHERE job_id = ? AND attempt = ?`, jobID, attempt).
		Scan(&next, &size, &truncated)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		next, size = 1, 0
	case err != nil:
		return res, err
	}
	lines, skip := app.LogTail(lines, maxBytes) // older lines of the append itself go at once
	next += int64(skip)
	if skip > 0 {
		truncated, res.Dropped = true, skip
	}
	rows := make([][3]any, len(lines))
	for i, l := range lines {
		rows[i] = [3]any{ms(l.At), l.Stream, l.Line}
		size += int64(app.LogSize(l.Line))
	}
	enc, err := json.Marshal(rows)
	if err != nil {
		return res, err
	}
	if _, err := w.exec(`INSERT INTO job_logs (job_id, attempt, seq, at, stream, line)
		SELECT ?, ?, ? + key, value ->> 0, value ->> 1, value ->> 2 FROM json_each(?)`, jobID, attempt, next, string(enc)); err != nil {
		return res, fmt.Errorf("insert log lines: %w", err)
	}
	res.Stored, res.LastSeq = len(lines), next+int64(len(lines))-1
	next += int64(len(lines))
	if size > int64(maxBytes) {
		cut, dropped, err := w.logCut(jobID, attempt, size, int64(maxBytes))
		if err != nil {
			return res, err
		}
		if dropped > 0 {
			if _, err := w.exec(`DELETE FROM job_logs WHERE job_id = ? AND attempt = ? AND seq <= ?`, jobID, attempt, cut.seq); err != nil {
				return res, fmt.Errorf("drop old log lines: %w", err)
			}
			size, truncated, res.Dropped = size-cut.bytes, true, res.Dropped+dropped
		}
	}
	_, err = w.exec(`INSERT INTO job_log_attempts (job_id, attempt, next_seq, bytes, truncated, last_at) VALUES (?, ?, ?, ?, ?, ?)
		ON CONFLICT (job_id, attempt) DO UPDATE SET next_seq = excluded.next_seq, bytes = excluded.bytes,
			truncated = excluded.truncated, last_at = excluded.last_at`, jobID, attempt, next, size, truncated, ms(w.now))
	return res, err
}

// logCutAt is where an attempt's log is cut: the last seq that goes, and
// the bytes of the lines up to it.
type logCutAt struct{ seq, bytes int64 }

// logCut reads the attempt's oldest lines until dropping them leaves at
// most limit of its size bytes, and says how many that is.
func (w *wtx) logCut(jobID int64, attempt int, size, limit int64) (logCutAt, int, error) {
	var cut logCutAt
	rows, err := w.query(`SELECT seq, length(CAST(line AS BLOB)) + 1 FROM job_logs WHERE job_id = ? AND attempt = ? ORDER BY seq`, jobID, attempt)
	if err != nil {
		return cut, 0, err
	}
	defer rows.Close()
	n := 0
	for size-cut.bytes > limit && rows.Next() {
		var seq, b int64
		if err := rows.Scan(&seq, &b); err != nil {
			return cut, 0, err
		}
		cut.seq, cut.bytes = seq, cut.bytes+b
		n++
	}
	return cut, n, rows.Err()
}

// JobLog implements app.LogStore, in one read transaction.
func (s *Store) JobLog(ctx context.Context, id int64, attempt int, after int64, limit int) (*app.JobLog, error) {
	out := &app.JobLog{JobID: id, Attempts: []int{}, Lines: []app.LogLine{}}
	err := func() error {
		tx, err := s.rdb.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		defer tx.Rollback()
		rows, err := tx.QueryContext(ctx, `SELECT attempt, truncated FROM job_log_attempts WHERE job_id = ? ORDER BY attempt`, id)
		if err != nil {
			return err
		}
		truncated := map[int]bool{}
		for rows.Next() {
			var a int
			var t bool
			if err := rows.Scan(&a, &t); err != nil {
				rows.Close()
				return err
			}
			out.Attempts, truncated[a] = append(out.Attempts, a), t
		}
		if err := rows.Close(); err != nil {
			return err
		}
		if attempt == 0 && len(out.Attempts) > 0 {
			attempt = out.Attempts[len(out.Attempts)-1]
		}
		out.Attempt, out.Truncated = attempt, truncated[attempt]
		if attempt == 0 {
			return nil
		}
		rows, err = tx.QueryContext(ctx, `SELECT seq, at, stream, line FROM job_logs WHERE job_id = ? AND attempt = ? AND seq > ?
			ORDER BY seq LIMIT ?`, id, attempt, after, limit+1)
		if err != nil {
			return err
		}
		out.Lines, err = collect(rows, nil, func(sc scanner) (l app.LogLine, err error) {
			var at int64
			err = sc.Scan(&l.Seq, &at, &l.Stream, &l.Line)
			l.At = fromMS(at)
			return l, err
		})
		if len(out.Lines) > limit {
			out.Lines = out.Lines[:limit]
			out.NextAfter = out.Lines[limit-1].Seq
		}
		if out.Lines == nil {
			out.Lines = []app.LogLine{}
		}
		return err
	}()
	if err != nil {
		return nil, fmt.Errorf("read the log of job %d: %w", id, mapErr(err))
	}
	return out, nil
}

// deleteOldLogs has nothing to do: the triggers of the migration that
// made the logs delete a job's log in the statement that deletes the job
// from the last table holding it. (A scan for orphans here read every
// attempt's row each minute: over a second of the writer's time with a
// million logged attempts.)
func (s *Store) deleteOldLogs(context.Context, app.DeleteOldRequest) (int, error) { return 0, nil }
