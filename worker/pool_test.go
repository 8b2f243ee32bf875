package worker

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
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

// A handler's result as the pool reports it: an empty json.RawMessage (a
// command that printed nothing) is no result, like nil, not invalid JSON.
func TestEncodeResult(t *testing.T) {
	for _, tc := range []struct {
		result any
		want   string
		err    string
	}{
		{nil, "", ""},
		{json.RawMessage(nil), "", ""},
		{json.RawMessage{}, "", ""},
		{json.RawMessage(`{"ok":true}`), `{"ok":true}`, ""},
		{json.RawMessage(`{`), "", "not valid JSON"},
		{map[string]int{"n": 1}, `{"n":1}`, ""},
		{func() {}, "", "cannot be JSON"},
	} {
		raw, err := encodeResult(tc.result)
		if string(raw) != tc.want || (err == nil) != (tc.err == "") || (err != nil && !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("encodeResult(%#v) = %s, %v; want %s, %q", tc.result, raw, err, tc.want, tc.err)
		}
	}
}
