package sqlite

import (
	"context"
	"fmt"
	"time"

	"github.com/queuehq/queue/app"
)

// The worker registry (see app/workers.go), table workers (migration
// 0010): queues in the command line's form, kinds a JSON list.

const workerCols = `id, host, pid, version, queues, kinds, concurrency, type, command,
	started_at, last_seen_at, in_flight, done, failed`

func scanWorker(sc scanner) (*app.Worker, error) {
	var w app.Worker
	var queues, kinds string
	var started, seen int64
	if err := sc.Scan(&w.ID, &w.Host, &w.PID, &w.Version, &queues, &kinds, &w.Concurrency, &w.Type, &w.Command,
		&started, &seen, &w.InFlight, &w.Done, &w.Failed); err != nil {
		return nil, err
	}
	qs, err := app.ParseQueueChoice(queues)
	if err != nil {
		return nil, fmt.Errorf("worker %s queues: %w", w.ID, err)
	}
	w.Queues = *qs
	if err := app.DecodeList(kinds, &w.Kinds); err != nil {
		return nil, fmt.Errorf("worker %s kinds: %w", w.ID, err)
	}
	w.StartedAt, w.LastSeenAt = fromMS(started), fromMS(seen)
	return &w, nil
}

// PutWorker implements app.Tx: a registration replaces the row of its id.
func (w *wtx) PutWorker(wk *app.Worker) error {
	_, err := w.exec(`INSERT OR REPLACE INTO workers (`+workerCols+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 0, 0, 0)`,
		wk.ID, wk.Host, wk.PID, wk.Version, wk.Queues.String(), app.EncodeList(wk.Kinds), wk.Concurrency, wk.Type,
		wk.Command, ms(wk.StartedAt), ms(wk.LastSeenAt))
	return err
}

// BeatWorker implements app.Tx.
func (w *wtx) BeatWorker(id string, b app.WorkerBeat) (*app.Worker, error) {
	return scanWorker(w.queryRow(`UPDATE workers SET last_seen_at = ?, in_flight = ?, done = ?, failed = ?
		WHERE id = ? RETURNING `+workerCols, ms(w.now), b.InFlight, b.Done, b.Failed, id))
}

// Worker implements app.Tx.
func (w *wtx) Worker(id string) (*app.Worker, error) {
	return scanWorker(w.queryRow(`SELECT `+workerCols+` FROM workers WHERE id = ?`, id))
}

// SetWorkerCommand implements app.Tx.
func (w *wtx) SetWorkerCommand(id, command string) error {
	res, err := w.exec(`UPDATE workers SET command = ? WHERE id = ?`, command, id)
	if err != nil {
		return err
	}
	if n, err := res.RowsAffected(); err == nil && n == 0 {
		return app.ErrNotFound
	}
	return err
}

// DeleteWorkers implements app.Tx: one statement over workers_last_seen.
func (w *wtx) DeleteWorkers(before time.Time, limit int) (int, error) {
	res, err := w.exec(`DELETE FROM workers WHERE id IN (SELECT id FROM workers WHERE last_seen_at < ? LIMIT ?)`, ms(before), limit)
	if err != nil {
		return 0, err
	}
	n, err := res.RowsAffected()
	return int(n), err
}

// Workers implements app.WorkerStore: the id column's BINARY collation is
// byte order.
func (s *Store) Workers(ctx context.Context, limit int) ([]*app.Worker, error) {
	rows, err := s.rdb.QueryContext(ctx, `SELECT `+workerCols+` FROM workers ORDER BY id LIMIT ?`, limit)
	out, err := collect(rows, err, scanWorker)
	if err != nil {
		return nil, fmt.Errorf("list workers: %w", mapErr(err))
	}
	return out, nil
}

// Worker implements app.WorkerStore: one read by primary key.
func (s *Store) Worker(ctx context.Context, id string) (*app.Worker, error) {
	w, err := scanWorker(s.rdb.QueryRowContext(ctx, `SELECT `+workerCols+` FROM workers WHERE id = ?`, id))
	if err != nil {
		return nil, mapErr(err)
	}
	return w, nil
}

// WorkerCommand implements app.WorkerStore: one read by primary key.
func (s *Store) WorkerCommand(ctx context.Context, id string) (string, error) {
	var cmd string
	if err := s.rdb.QueryRowContext(ctx, `SELECT command FROM workers WHERE id = ?`, id).Scan(&cmd); err != nil {
		return "", mapErr(err)
	}
	return cmd, nil
}
