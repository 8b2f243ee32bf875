package memory

import (
	"context"
	"slices"
	"sort"
	"time"

	"github.com/queuehq/queue/app"
)

// The worker registry (see app/workers.go): a map by id, copied in and out.

func copyWorker(w *app.Worker) *app.Worker {
	c := *w
	c.Kinds = slices.Clone(w.Kinds)
	c.Queues.Names, c.Queues.Weights = slices.Clone(w.Queues.Names), slices.Clone(w.Queues.Weights)
	return &c
}

// workerMap is the registry, made when first used.
func (s *Store) workerMap() map[string]*app.Worker {
	if s.workers == nil {
		s.workers = map[string]*app.Worker{}
	}
	return s.workers
}

// PutWorker implements app.Tx.
func (t *tx) PutWorker(w *app.Worker) error {
	c := copyWorker(w)
	c.State = ""
	put(t, t.s.workerMap(), w.ID, c)
	return nil
}

// BeatWorker implements app.Tx.
func (t *tx) BeatWorker(id string, b app.WorkerBeat) (*app.Worker, error) {
	old, ok := t.s.workerMap()[id]
	if !ok {
		return nil, app.ErrNotFound
	}
	c := copyWorker(old)
	c.LastSeenAt, c.InFlight, c.Done, c.Failed = t.now, b.InFlight, b.Done, b.Failed
	put(t, t.s.workers, id, c)
	return copyWorker(c), nil
}

// Worker implements app.Tx.
func (t *tx) Worker(id string) (*app.Worker, error) {
	w, ok := t.s.workerMap()[id]
	if !ok {
		return nil, app.ErrNotFound
	}
	return copyWorker(w), nil
}

// SetWorkerCommand implements app.Tx.
func (t *tx) SetWorkerCommand(id, command string) error {
	old, ok := t.s.workerMap()[id]
	if !ok {
		return app.ErrNotFound
	}
	c := copyWorker(old)
	c.Command = command
	put(t, t.s.workers, id, c)
	return nil
}

// DeleteWorkers implements app.Tx.
func (t *tx) DeleteWorkers(before time.Time, limit int) (int, error) {
	return dropKeys(t, t.s.workerMap(), limit, func(_ string, w *app.Worker) bool { return w.LastSeenAt.Before(before) }), nil
}

// Workers implements app.WorkerStore: Go compares strings byte by byte.
func (s *Store) Workers(ctx context.Context, limit int) ([]*app.Worker, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]*app.Worker, 0, len(s.workers))
	for _, w := range s.workers {
		out = append(out, copyWorker(w))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	if limit > 0 && len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}

// Worker implements app.WorkerStore.
func (s *Store) Worker(ctx context.Context, id string) (*app.Worker, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	w, ok := s.workers[id]
	if !ok {
		return nil, app.ErrNotFound
	}
	return copyWorker(w), nil
}

// WorkerCommand implements app.WorkerStore.
func (s *Store) WorkerCommand(ctx context.Context, id string) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	w, ok := s.workers[id]
	if !ok {
		return "", app.ErrNotFound
	}
	return w.Command, nil
}
