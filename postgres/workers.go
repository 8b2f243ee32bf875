package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/queuehq/queue/app"
)

// The worker registry (see app/workers.go), table workers (migration
// 0009): queues in the command line's form, kinds a text array.

const workerCols = `id, host, pid, version, queues, kinds, concurrency, type, command,
	started_at, last_seen_at, in_flight, done, failed`

func scanWorker(row pgx.Row) (*app.Worker, error) {
	var w app.Worker
	var queues string
	if err := row.Scan(&w.ID, &w.Host, &w.PID, &w.Version, &queues, &w.Kinds, &w.Concurrency, &w.Type, &w.Command,
		&w.StartedAt, &w.LastSeenAt, &w.InFlight, &w.Done, &w.Failed); err != nil {
		return nil, err
	}
	qs, err := app.ParseQueueChoice(queues)
	if err != nil {
		return nil, fmt.Errorf("worker %s queues: %w", w.ID, err)
	}
	w.Queues = *qs
	if len(w.Kinds) == 0 {
		w.Kinds = nil
	}
	w.StartedAt, w.LastSeenAt = ms(w.StartedAt), ms(w.LastSeenAt)
	return &w, nil
}

// PutWorker implements app.Tx: a registration replaces the row of its id.
func (w *wtx) PutWorker(wk *app.Worker) error {
	kinds := wk.Kinds
	if kinds == nil {
		kinds = []string{}
	}
	_, err := w.exec(`INSERT INTO workers (`+workerCols+`) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, 0, 0, 0)
		ON CONFLICT (id) DO UPDATE SET host = excluded.host, pid = excluded.pid, version = excluded.version,
			queues = excluded.queues, kinds = excluded.kinds, concurrency = excluded.concurrency, type = excluded.type,
			command = excluded.command, started_at = excluded.started_at, last_seen_at = excluded.last_seen_at,
			in_flight = 0, done = 0, failed = 0`,
		wk.ID, wk.Host, wk.PID, wk.Version, wk.Queues.String(), kinds, wk.Concurrency, wk.Type,
		wk.Command, ms(wk.StartedAt), ms(wk.LastSeenAt))
	return err
}

// BeatWorker implements app.Tx.
func (w *wtx) BeatWorker(id string, b app.WorkerBeat) (*app.Worker, error) {
	return scanWorker(w.queryRow(`UPDATE workers SET last_seen_at = $1, in_flight = $2, done = $3, failed = $4
		WHERE id = $5 RETURNING `+workerCols, w.now, b.InFlight, b.Done, b.Failed, id))
}

// Worker implements app.Tx: the row is locked to the commit.
func (w *wtx) Worker(id string) (*app.Worker, error) {
	return scanWorker(w.queryRow(`SELECT `+workerCols+` FROM workers WHERE id = $1 FOR UPDATE`, id))
}

// SetWorkerCommand implements app.Tx.
func (w *wtx) SetWorkerCommand(id, command string) error {
	tag, err := w.exec(`UPDATE workers SET command = $1 WHERE id = $2`, command, id)
	if err == nil && tag.RowsAffected() == 0 {
		return app.ErrNotFound
	}
	return err
}

// DeleteWorkers implements app.Tx: one statement over workers_last_seen,
// skipping rows another transaction holds.
func (w *wtx) DeleteWorkers(before time.Time, limit int) (int, error) {
	tag, err := w.exec(`DELETE FROM workers WHERE id IN (
		SELECT id FROM workers WHERE last_seen_at < $1 LIMIT $2 FOR UPDATE SKIP LOCKED)`, ms(before), limit)
	if err != nil {
		return 0, err
	}
	return int(tag.RowsAffected()), nil
}

// Workers implements app.WorkerStore: in byte order (COLLATE "C") as
// SQLite and memory list them, whatever the database's collation.
func (s *Store) Workers(ctx context.Context, limit int) ([]*app.Worker, error) {
	out, err := readRows(ctx, s, scanWorker, `SELECT `+workerCols+` FROM workers ORDER BY id COLLATE "C" LIMIT $1`, limit)
	if err != nil {
		return nil, fmt.Errorf("list workers: %w", err)
	}
	return out, nil
}

// Worker implements app.WorkerStore: one read by primary key.
func (s *Store) Worker(ctx context.Context, id string) (*app.Worker, error) {
	if err := s.enter(); err != nil {
		return nil, err
	}
	defer s.leave()
	w, err := scanWorker(s.pool.QueryRow(ctx, `SELECT `+workerCols+` FROM workers WHERE id = $1`, id))
	if err != nil {
		return nil, mapErr(err)
	}
	return w, nil
}

// WorkerCommand implements app.WorkerStore: one read by primary key.
func (s *Store) WorkerCommand(ctx context.Context, id string) (string, error) {
	var cmd string
	if err := s.readRow(ctx, `SELECT command FROM workers WHERE id = $1`, []any{id}, &cmd); err != nil {
		return "", err
	}
	return cmd, nil
}
