package app_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/queuehq/queue/app"
)

// An operation stays in the error for the logs and in errors.Is, and out of
// the message a client is told.
func TestOperationErrorStaysOutOfUserMessage(t *testing.T) {
	inner := fmt.Errorf("job %d: %w", 3, app.ErrLeaseLost)
	for _, tc := range []struct {
		err       error
		log, user string
	}{
		{app.WithOperation("heartbeat", inner), "heartbeat: job 3: lease lost", "job 3: lease lost"},
		{app.WithOperation("replay", app.WithOperation("bulk", inner)), "replay: bulk: job 3: lease lost", "job 3: lease lost"},
		{fmt.Errorf("batch item 2: %w", app.WithOperation("complete", inner)), "batch item 2: complete: job 3: lease lost", "batch item 2: complete: job 3: lease lost"},
		{inner, "job 3: lease lost", "job 3: lease lost"},
	} {
		if got := tc.err.Error(); got != tc.log {
			t.Errorf("Error() = %q, want %q", got, tc.log)
		}
		if got := app.UserMessage(tc.err); got != tc.user {
			t.Errorf("UserMessage(%q) = %q, want %q", tc.log, got, tc.user)
		}
		if !errors.Is(tc.err, app.ErrLeaseLost) {
			t.Errorf("errors.Is(%q, ErrLeaseLost) = false", tc.log)
		}
	}
	if err := app.WithOperation("submit", nil); err != nil {
		t.Errorf("WithOperation(\"submit\", nil) = %v, want nil", err)
	}
}
