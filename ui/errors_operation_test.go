package ui

import (
	"fmt"
	"testing"

	"github.com/queuehq/queue/app"
)

// A call site that wraps with app.WithOperation instead of
// fmt.Errorf("op: %w") gets the same answer without the unconverted list:
// converting the rest and then deleting the list changes no answer.
func TestConvertedOperationsAnswerAlike(t *testing.T) {
	for _, inner := range []error{
		fmt.Errorf("job %d: %w", 3, app.ErrLeaseLost),
		fmt.Errorf("job %d: %w", 999, app.ErrNotFound),
		fmt.Errorf("dead-letter row %d: %w", 999, app.ErrNotFound),
		fmt.Errorf("%w: queue %q holds %d queued jobs (max_queued %d)", app.ErrQueueFull, "capped", 1, 1),
		fmt.Errorf("%w: key %q in queue %q belongs to job %d", app.ErrIdempotencyConflict, "once", "default", 2),
		fmt.Errorf("job %d is in the dead-letter queue: %w", 3, app.ErrIllegalTransition),
	} {
		for _, op := range []string{"submit", "heartbeat", "complete", "replay", "purge"} {
			legacy, _ := toAPIError(fmt.Errorf("%s: %w", op, inner))
			converted, _ := toAPIError(app.WithOperation(op, inner))
			if *converted != *legacy {
				t.Errorf("%s: %v: converted %+v, legacy %+v", op, inner, *converted, *legacy)
			}
			if got := app.UserMessage(app.WithOperation(op, inner)); got != message(fmt.Errorf("%s: %w", op, inner)) {
				t.Errorf("%s: app.UserMessage = %q, want %q without the unconverted list", op, got, message(fmt.Errorf("%s: %w", op, inner)))
			}
		}
	}
}
