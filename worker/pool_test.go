package worker

import (
	"context"
	"errors"
	"testing"
	"time"
)

// A handler whose time ran out reads why from its context: the timeout
// and its length, as the failure it is reported with says.
func TestJobTimeoutCause(t *testing.T) {
	ctx, cancel := context.WithTimeoutCause(context.Background(), time.Nanosecond, jobTimeout(30*time.Second))
	defer cancel()
	<-ctx.Done()
	cause := context.Cause(ctx)
	if !errors.Is(cause, errJobTimeout) || cause.Error() != "job timed out after 30s" {
		t.Fatalf("cause = %v, want job timed out after 30s (and errJobTimeout)", cause)
	}
}
