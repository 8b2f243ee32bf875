package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/queuehq/queue/app"
)

// Progress and logs (issue 26): the SQL of the steps app.SetProgress and
// app.AppendLog put in order, the read of a log, and the retention of logs
// whose job is gone. A write reaches these steps after Tx.Processing
// locked the job's row, so two appends to one attempt (from two nodes)
// meet one after the other.

// SetProgress implements app.Tx.
func (w *wtx) SetProgress(j *app.Job, attempt, pct int, msg string) error {
	var m *string
	if msg != "" {
		m = &msg
	}
	_, err := w.exec(`UPDATE jobs SET progress = $1, progress_message = $2, progress_at = $3, progress_attempt = $4 WHERE id = $5`,
		pct, m, w.now, attempt, j.ID)
	return err
}

// LogState implements app.Tx: the attempt's row is locked, so two
// appends to one attempt (from two nodes) meet one after the other.
func (w *wtx) LogState(jobID int64, attempt int) (app.LogState, error) {
	st := app.LogState{NextSeq: 1}
	err := w.queryRow(`SELECT next_seq, bytes, truncated FROM job_log_attempts WHERE job_id = $1 AND attempt = $2 FOR UPDATE`, jobID, attempt).
		Scan(&st.NextSeq, &st.Bytes, &st.Truncated)
	if errors.Is(err, pgx.ErrNoRows) {
		return app.LogState{NextSeq: 1}, nil
	}
	return st, err
}

// SaveLogState implements app.Tx.
func (w *wtx) SaveLogState(jobID int64, attempt int, st app.LogState) error {
	_, err := w.exec(`INSERT INTO job_log_attempts (job_id, attempt, next_seq, bytes, truncated, last_at) VALUES ($1, $2, $3, $4, $5, $6)
		ON CONFLICT (job_id, attempt) DO UPDATE SET next_seq = excluded.next_seq, bytes = excluded.bytes,
			truncated = excluded.truncated, last_at = excluded.last_at`, jobID, attempt, st.NextSeq, st.Bytes, st.Truncated, w.now)
	return err
}

// InsertLog implements app.Tx: one INSERT from arrays.
func (w *wtx) InsertLog(jobID int64, attempt int, first int64, lines []app.LogLine) error {
	ats := make([]time.Time, len(lines))
	streams := make([]string, len(lines))
	texts := make([]string, len(lines))
	for i, l := range lines {
		ats[i], streams[i], texts[i] = ms(l.At), l.Stream, l.Line
	}
	_, err := w.exec(`INSERT INTO job_logs (job_id, attempt, seq, at, stream, line)
		SELECT $1, $2, $3 + t.o - 1, t.a, t.s, t.l FROM unnest($4::timestamptz[], $5::text[], $6::text[]) WITH ORDINALITY AS t(a, s, l, o)`,
		jobID, attempt, first, ats, streams, texts)
	return err
}

// OldestLog implements app.Tx.
func (w *wtx) OldestLog(jobID int64, attempt int, each func(seq, size int64) bool) error {
	rows, err := w.query(`SELECT seq, octet_length(line) + 1 FROM job_logs WHERE job_id = $1 AND attempt = $2 ORDER BY seq`, jobID, attempt)
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
	rows.Close()
	return rows.Err()
}

// DropLog implements app.Tx.
func (w *wtx) DropLog(jobID int64, attempt int, upto int64) error {
	_, err := w.exec(`DELETE FROM job_logs WHERE job_id = $1 AND attempt = $2 AND seq <= $3`, jobID, attempt, upto)
	return err
}

// JobLog implements app.LogStore, in one read transaction.
func (s *Store) JobLog(ctx context.Context, id int64, attempt int, after int64, limit int) (*app.JobLog, error) {
	out := &app.JobLog{JobID: id}
	err := s.read(ctx, func(tx pgx.Tx) error {
		out.Attempts, out.Lines, out.NextAfter = []int{}, []app.LogLine{}, 0
		rows, err := tx.Query(ctx, `SELECT attempt, truncated FROM job_log_attempts WHERE job_id = $1 ORDER BY attempt`, id)
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
		if rows.Close(); rows.Err() != nil {
			return rows.Err()
		}
		if attempt == 0 && len(out.Attempts) > 0 {
			attempt = out.Attempts[len(out.Attempts)-1]
		}
		out.Attempt, out.Truncated = attempt, truncated[attempt]
		if attempt == 0 {
			return nil
		}
		rows, err = tx.Query(ctx, `SELECT seq, at, stream, line FROM job_logs WHERE job_id = $1 AND attempt = $2 AND seq > $3
			ORDER BY seq LIMIT $4`, id, attempt, after, limit+1)
		lines, err := collect(rows, err, func(row pgx.Row) (l app.LogLine, err error) {
			err = row.Scan(&l.Seq, &l.At, &l.Stream, &l.Line)
			l.At = l.At.UTC()
			return l, err
		})
		if err != nil {
			return err
		}
		if len(lines) > limit {
			lines = lines[:limit]
			out.NextAfter = lines[limit-1].Seq
		}
		if lines != nil {
			out.Lines = lines
		}
		return nil
	})
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

// progressAttempt is the attempt an imported job's progress belongs to:
// the exporting store shows only the current attempt's (0: none).
func progressAttempt(j *app.Job) int {
	if j.ProgressPercent == nil {
		return 0
	}
	return j.Attempts
}
