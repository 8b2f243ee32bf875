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

// LogState implements app.Tx.
func (w *wtx) LogState(jobID int64, attempt int) (app.LogState, error) {
	st := app.LogState{NextSeq: 1}
	err := w.queryRow(`SELECT next_seq, bytes, truncated FROM job_log_attempts WHERE job_id = ? AND attempt = ?`, jobID, attempt).
		Scan(&st.NextSeq, &st.Bytes, &st.Truncated)
	if errors.Is(err, sql.ErrNoRows) {
		return app.LogState{NextSeq: 1}, nil
	}
	return st, err
}

// SaveLogState implements app.Tx.
func (w *wtx) SaveLogState(jobID int64, attempt int, st app.LogState) error {
	_, err := w.exec(`INSERT INTO job_log_attempts (job_id, attempt, next_seq, bytes, truncated, last_at) VALUES (?, ?, ?, ?, ?, ?)
		ON CONFLICT (job_id, attempt) DO UPDATE SET next_seq = excluded.next_seq, bytes = excluded.bytes,
			truncated = excluded.truncated, last_at = excluded.last_at`, jobID, attempt, st.NextSeq, st.Bytes, st.Truncated, ms(w.now))
	return err
}

// InsertLog implements app.Tx: one INSERT from a JSON array.
func (w *wtx) InsertLog(jobID int64, attempt int, first int64, lines []app.LogLine) error {
	rows := make([][3]any, len(lines))
	for i, l := range lines {
		rows[i] = [3]any{ms(l.At), l.Stream, l.Line}
	}
	enc, err := json.Marshal(rows)
	if err != nil {
		return err
	}
	_, err = w.exec(`INSERT INTO job_logs (job_id, attempt, seq, at, stream, line)
		SELECT ?, ?, ? + key, value ->> 0, value ->> 1, value ->> 2 FROM json_each(?)`, jobID, attempt, first, string(enc))
	return err
}

// OldestLog implements app.Tx.
func (w *wtx) OldestLog(jobID int64, attempt int, each func(seq, size int64) bool) error {
	rows, err := w.query(`SELECT seq, length(CAST(line AS BLOB)) + 1 FROM job_logs WHERE job_id = ? AND attempt = ? ORDER BY seq`, jobID, attempt)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var seq, size int64
		if err := rows.Scan(&seq, &size); err != nil {
			return err
		}
		if !each(seq, size) {
			break
		}
	}
	return rows.Err()
}

// DropLog implements app.Tx.
func (w *wtx) DropLog(jobID int64, attempt int, upto int64) error {
	_, err := w.exec(`DELETE FROM job_logs WHERE job_id = ? AND attempt = ? AND seq <= ?`, jobID, attempt, upto)
	return err
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
