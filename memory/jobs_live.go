package memory

import (
	"fmt"
	"time"

	"github.com/queuehq/queue/app"
)

// Reschedule implements app.Tx.
func (t *tx) Reschedule(j *app.Job, runAt time.Time) (*app.Job, error) {
	if cur, ok := t.s.jobs[j.ID]; !ok || cur.Status != app.StatusQueued {
		return nil, fmt.Errorf("reschedule job %d: %w", j.ID, app.ErrNotFound)
	}
	return t.change(j, func(nj *app.Job) { nj.RunAt = runAt.UTC().Truncate(time.Millisecond) })
}

// Reprioritize implements app.Tx.
func (t *tx) Reprioritize(j *app.Job, priority int) (*app.Job, error) {
	if cur, ok := t.s.jobs[j.ID]; !ok || cur.Status != app.StatusQueued {
		return nil, fmt.Errorf("reprioritize job %d: %w", j.ID, app.ErrNotFound)
	}
	return t.change(j, func(nj *app.Job) { nj.Priority = priority })
}
