package sqlite

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/queuehq/queue/app"
	"github.com/queuehq/queue/internal/sqlq"
)

// The writer's transaction as app.Tx: the steps of the lifecycle that
// package app puts in order, each one statement. What a step collects
// besides its row (its app.Effects) is kept in the request's share, wtx.
var _ app.Tx = (*wtx)(nil)

// Write implements app.Writer: fn runs in the writer's next transaction,
// shared with the requests around it (group commit); what fn changed
// commits, or is undone alone when fn returns an error.
func (s *Store) Write(ctx context.Context, fn func(app.Tx) error) error {
	return mapErr(s.write(ctx, func(w *wtx) error { return fn(w) }))
}

// Job implements app.Tx.
func (w *wtx) Job(id int64) (*app.Job, error) {
	j, err := scanJob(w.queryRow(`SELECT `+jobCols+` FROM jobs WHERE id = ?`, id))
	if !errors.Is(err, sql.ErrNoRows) {
		return j, err
	}
	var dead int
	if err := w.queryRow(`SELECT count(*) FROM dead_letter_jobs WHERE id = ?`, id).Scan(&dead); err != nil {
		return nil, err
	}
	return nil, app.MissingError(id, dead > 0)
}

// Processing implements app.Tx: a job that is not processing under lease
// is explained by fenceErr.
func (w *wtx) Processing(id, lease int64) (*app.Job, error) {
	j, err := scanJob(w.queryRow(`SELECT `+jobCols+` FROM jobs WHERE id = ? AND lease = ? AND status = 'processing'`, id, lease))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, w.fenceErr(id)
	}
	return j, err
}

// Stale implements app.Tx.
func (w *wtx) Stale(limit int) ([]*app.Job, error) {
	return w.jobs(`SELECT `+jobCols+` FROM jobs WHERE status = 'processing' AND lease_expires_at <= ?
		ORDER BY lease_expires_at LIMIT ?`, ms(w.now), limit)
}

// Jobs implements app.Tx.
func (w *wtx) Jobs(f app.JobFilter) ([]*app.Job, error) {
	f.Asc = true
	wh := jobWhere(f, w.now)
	return w.jobs(`SELECT `+jobCols+` FROM jobs`+wh.String()+sqlq.Page(true, f.Limit, app.BulkBatch, "id"), wh.args...)
}

// jobs reads the jobs q selects, all of them before it returns.
func (w *wtx) jobs(q string, args ...any) ([]*app.Job, error) {
	rows, err := w.query(q, args...)
	return collect(rows, err, scanJob)
}

// Extend implements app.Tx.
func (w *wtx) Extend(j *app.Job, until time.Time) (*app.Job, error) {
	return scanJob(w.queryRow(`UPDATE jobs SET lease_expires_at = ?, updated_at = ? WHERE id = ? RETURNING `+jobCols, ms(until), ms(w.now), j.ID))
}

// Finish implements app.Tx.
func (w *wtx) Finish(j *app.Job, result json.RawMessage) (*app.Job, error) {
	w.finished = append(w.finished, j.ID) // its claim is forgotten after commit
	return scanJob(w.queryRow(`UPDATE jobs SET status = 'done', result = ?, finished_at = ?, updated_at = ?,
		lease_expires_at = NULL WHERE id = ? RETURNING `+jobCols, rawOrNull(result), ms(w.now), ms(w.now), j.ID))
}

// Requeue implements app.Tx.
func (w *wtx) Requeue(j *app.Job, runAt time.Time, giveBack bool) (*app.Job, error) {
	q := `UPDATE jobs SET status = 'queued', run_at = ?, errors = ?, updated_at = ?,
		lease_expires_at = NULL, worker_id = NULL`
	if giveBack {
		q += `, attempts = attempts - 1`
	}
	return scanJob(w.queryRow(q+` WHERE id = ? RETURNING `+jobCols, ms(runAt), app.EncodeList(j.Errors), ms(w.now), j.ID))
}

// Cancel implements app.Tx.
func (w *wtx) Cancel(j *app.Job, reason string) (*app.Job, error) {
	return scanJob(w.queryRow(`UPDATE jobs SET status = 'cancelled', cancel_reason = ?, errors = ?,
			finished_at = ?, updated_at = ?, lease_expires_at = NULL, held = 0 WHERE id = ? RETURNING `+jobCols,
		reason, app.EncodeList(j.Errors), ms(w.now), ms(w.now), j.ID))
}

// RequestCancel implements app.Tx.
func (w *wtx) RequestCancel(j *app.Job, reason string) (*app.Job, error) {
	return scanJob(w.queryRow(`UPDATE jobs SET cancel_requested = 1,
			cancel_reason = coalesce(cancel_reason, ?), updated_at = ? WHERE id = ? RETURNING `+jobCols,
		reason, ms(w.now), j.ID))
}

// InsertDead implements app.Tx.
func (w *wtx) InsertDead(d *app.DeadJob) error {
	if _, err := w.exec(`INSERT INTO dead_letter_jobs (`+deadCols+`)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 0, NULL, ?, ?, ?, ?, NULL, ?, ?, ?, ?, ?, ?)`,
		d.ID, d.Queue, d.Kind, rawOrNull(d.Payload), d.Priority, app.EncodeList(d.Tags), d.Attempts,
		d.MaxAttempts, d.Timeout.D().Milliseconds(), app.EncodeList(d.Errors), nullString(d.IdempotencyKey),
		ms(d.OriginalCreatedAt), d.ReplayedFrom, d.Reason, d.LastError, ms(d.MovedAt), d.OriginalLease,
		nullMS(d.StartedAt), nullMS(d.RunAt), nullString(d.WorkerID), d.Note, nullID(d.WorkflowID), nullString(d.Step), nullString(d.Key),
		nullString(d.CallbackURL), nullString(d.Traceparent), nullString(d.Tracestate)); err != nil {
		return err
	}
	d.MovedAt = fromMS(ms(d.MovedAt)) // as stored, so the caller sees exactly the row
	return nil
}

// DeleteJob implements app.Tx.
func (w *wtx) DeleteJob(id int64) error {
	res, err := w.exec(`DELETE FROM jobs WHERE id = ?`, id)
	if err != nil {
		return fmt.Errorf("delete: %w", err)
	}
	if n, _ := res.RowsAffected(); n != 1 {
		return fmt.Errorf("delete removed %d rows", n)
	}
	return nil
}

// Audit implements app.Tx.
func (w *wtx) Audit(e app.AuditEntry) error {
	_, err := w.exec(`INSERT INTO audit (at, actor, action, target, filter, count) VALUES (?, ?, ?, ?, ?, ?)`,
		ms(e.At), e.Actor, e.Action, nullString(e.Target), nullRaw(e.Filter), e.Count)
	return err
}

// ExpireDue implements app.Tx.
func (w *wtx) ExpireDue(limit int) ([]app.Ref, error) {
	rows, err := w.query(`UPDATE jobs SET status = 'cancelled', cancel_reason = 'expired', finished_at = ?, updated_at = ?, held = 0
		WHERE id IN (SELECT id FROM jobs WHERE status = 'queued' AND expires_at IS NOT NULL AND expires_at <= ? ORDER BY expires_at LIMIT ?)
		RETURNING `+refCols, ms(w.now), ms(w.now), ms(w.now), limit)
	return collect(rows, err, scanRef)
}

// DeleteDead implements app.Tx.
func (w *wtx) DeleteDead(f app.DeadFilter) ([]app.Ref, error) {
	f.Asc = true
	wh := deadWhere(f)
	rows, err := w.query(`DELETE FROM dead_letter_jobs WHERE id IN (SELECT id FROM dead_letter_jobs`+wh.String()+
		sqlq.Page(true, f.Limit, app.BulkBatch, "id")+`) RETURNING `+refCols, wh.args...)
	refs, err := collect(rows, err, scanRef)
	slices.SortFunc(refs, func(a, b app.Ref) int { return cmp.Compare(a.ID, b.ID) })
	return refs, err
}

// refCols are the columns scanRef reads, of a job or a dead-letter row.
const refCols = `id, queue, kind, coalesce(workflow_id, 0), coalesce(step, ''), coalesce(flow_key, '')`

func scanRef(sc scanner) (app.Ref, error) {
	var r app.Ref
	err := sc.Scan(&r.ID, &r.Queue, &r.Kind, &r.WorkflowID, &r.Step, &r.Key)
	return r, err
}

// SetQueuePaused implements app.Tx.
func (w *wtx) SetQueuePaused(queue string, paused bool) error {
	var at any
	if paused {
		at = ms(w.now)
	}
	return w.setQueue(queue, []string{"paused", "paused_at"}, paused, at)
}

// setQueue sets columns of queue's row, making it, and notes the queue known.
func (w *wtx) setQueue(queue string, cols []string, vals ...any) (err error) {
	if _, err = w.exec(sqlq.SetQueue(false, cols...), append([]any{queue}, vals...)...); err == nil {
		w.queues = append(w.queues, queue)
	}
	return err
}

// Dead implements app.Tx.
func (w *wtx) Dead(f app.DeadFilter) ([]*app.DeadJob, error) { return w.selectDead(f) }

// Resurrected implements app.Tx.
func (w *wtx) Resurrected(dead []*app.DeadJob, jobs []*app.Job) error {
	for i, d := range dead {
		if _, err := w.exec(`UPDATE dead_letter_jobs SET resurrection_count = resurrection_count + 1,
			last_resurrection_at = ?, replayed_job_id = ?, idempotency_key = NULL WHERE id = ?`, ms(w.now), jobs[i].ID, d.ID); err != nil {
			return err
		}
	}
	return nil
}

// Insert implements app.Tx.
// Many jobs (a workflow's release) go in multi-row INSERTs, as a batch of
// submissions does.
func (w *wtx) Insert(njs ...*app.NewJob) ([]*app.Job, error) {
	out := make([]*app.Job, len(njs))
	if len(njs) > 1 && !w.deferInserts {
		w.deferInserts = true
		for i, nj := range njs {
			j, err := w.insertJob(nj)
			if err != nil {
				w.deferInserts, w.pending = false, w.pending[:0]
				return nil, err
			}
			out[i] = j
		}
		err := w.s.insertPending(w.ctx, w.pending, &w.Published)
		w.deferInserts, w.pending = false, w.pending[:0]
		if err != nil {
			return nil, err
		}
		return out, nil
	}
	for i, nj := range njs {
		j, err := w.insertJob(nj)
		if err != nil {
			return nil, err
		}
		out[i] = j
	}
	return out, nil
}

// Queued implements app.Tx.
func (w *wtx) Queued(queue string, limit int) (n int, err error) {
	err = w.queryRow(`SELECT count(*) FROM (SELECT 1 FROM jobs WHERE queue = ? AND status = 'queued' LIMIT ?)`, queue, limit).Scan(&n)
	return n, err
}

// RecordFire implements app.Tx: the fire's primary key decides.
func (w *wtx) RecordFire(entry string, at time.Time) (bool, error) {
	res, err := w.exec(`INSERT INTO periodic_fires (entry, fire_at, created_at) VALUES (?, ?, ?)
		ON CONFLICT (entry, fire_at) DO NOTHING`, entry, ms(at), ms(w.now))
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

// FirePending implements app.Tx.
func (w *wtx) FirePending(entry string) (bool, error) {
	var one int
	err := w.queryRow(`SELECT 1 FROM periodic_fires p JOIN jobs j ON j.id = p.job_id
		WHERE p.entry = ? AND j.status IN ('queued', 'processing') LIMIT 1`, entry).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	return err == nil, err
}

// SetFireJob implements app.Tx.
func (w *wtx) SetFireJob(entry string, at time.Time, id int64) error {
	_, err := w.exec(`UPDATE periodic_fires SET job_id = ? WHERE entry = ? AND fire_at = ?`, id, entry, ms(at))
	return err
}
