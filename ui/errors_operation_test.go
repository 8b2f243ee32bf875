package ui

import (
	"fmt"
	"testing"

	"github.com/queuehq/queue/app"
)

// An operation's name (app.WithOperation) is for the log: a client gets
// the same answer as for the error it wraps.
func TestOperationNamesStayOutOfAnswers(t *testing.T) {
	for _, inner := range []error{
		fmt.Errorf("job %d: %w", 3, app.ErrLeaseLost),
		fmt.Errorf("job %d: %w", 999, app.ErrNotFound),
		fmt.Errorf("dead-letter row %d: %w", 999, app.ErrNotFound),
		fmt.Errorf("%w: queue %q holds %d queued jobs (max_queued %d)", app.ErrQueueFull, "capped", 1, 1),
		fmt.Errorf("%w: key %q in queue %q belongs to job %d", app.ErrIdempotencyConflict, "once", "default", 2),
		fmt.Errorf("job %d is in the dead-letter queue: %w", 3, app.ErrIllegalTransition),
	} {
		want, _ := toAPIError(inner)
		for _, op := range []string{"submit", "heartbeat", "complete", "replay", "purge"} {
			got, _ := toAPIError(app.WithOperation(op, inner))
			if *got != *want {
				t.Errorf("%s: %v: answer %+v, want %+v", op, inner, *got, *want)
			}
		}
	}
}
