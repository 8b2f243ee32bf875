package memory

import (
	"context"
	"errors"
	"testing"

	"github.com/queuehq/queue/app"
)

// The memory store's own write path refuses what the databases' status
// guard refuses: a job row with status dead_letter, inserted or updated to
// it (SPEC: the DLQ is a table of its own); nothing changes.
func TestWritePathRefusesDeadLetterStatus(t *testing.T) {
	s := New(app.StoreOptions{})
	ctx := context.Background()
	err := s.write(ctx, func(t *tx) error {
		return t.putJob(&app.Job{ID: 1, Queue: "q", Kind: "k", Status: app.StatusDeadLetter})
	})
	if !errors.Is(err, app.ErrInvalidStatus) || len(s.jobs) != 0 {
		t.Fatalf("insert as dead_letter: %v, %d jobs; want ErrInvalidStatus and none", err, len(s.jobs))
	}
	if err := s.write(ctx, func(t *tx) error {
		return t.putJob(&app.Job{ID: 2, Queue: "q", Kind: "k", Status: app.StatusQueued})
	}); err != nil {
		t.Fatal(err)
	}
	err = s.write(ctx, func(t *tx) error {
		return t.putJob(&app.Job{ID: 2, Queue: "q", Kind: "k", Status: app.StatusDeadLetter})
	})
	if err == nil || s.jobs[2].Status != app.StatusQueued {
		t.Fatalf("update to dead_letter: %v, job %+v; want an error and the job queued", err, s.jobs[2])
	}
}
