package app_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/queuehq/queue/app"
)

// A queue's policy is its own section, then [defaults], then the built-in
// defaults, field by field.
func TestConfigQueuePolicyMerges(t *testing.T) {
	cfg := app.DefaultConfig()
	cfg.Defaults = app.QueueConfig{MaxAttempts: 8, Timeout: app.Duration(time.Minute)}
	cfg.Queues["mail"] = app.QueueConfig{MaxAttempts: 3, Retention: app.Duration(2 * time.Second),
		DLQRetention: app.Duration(90 * 24 * time.Hour), Concurrency: 2, Rate: 10, MaxQueued: 100}
	mail, other := cfg.Queue("mail"), cfg.Queue("other")
	if mail.MaxAttempts != 3 || mail.Timeout.D() != time.Minute || mail.Retention.D() != 2*time.Second ||
		mail.DLQRetention.D() != 90*24*time.Hour || mail.Concurrency != 2 || mail.Rate != 10 || mail.MaxQueued != 100 {
		t.Fatalf("mail policy %+v", mail)
	}
	if other.MaxAttempts != 8 || other.Timeout.D() != time.Minute || other.Retention.D() != 24*time.Hour ||
		other.DLQRetention.D() != 30*24*time.Hour || other.BackoffBase.D() != time.Second || other.BackoffMax.D() != time.Hour {
		t.Fatalf("default policy %+v", other)
	}
	if got := cfg.MaxQueued(); got["mail"] != 100 || len(got) != 1 {
		t.Fatalf("MaxQueued %v", got)
	}
}

func TestBackoffStaysInItsBand(t *testing.T) {
	for n, want := range map[int]time.Duration{1: time.Second, 2: 2 * time.Second, 5: 16 * time.Second, 13: time.Hour, 100: time.Hour} {
		for i := 0; i < 50; i++ {
			d := app.Backoff(n, 0, 0)
			if d < want*8/10 || d > want*12/10 {
				t.Fatalf("Backoff(%d) = %v, want %v ±20%%", n, d, want)
			}
		}
	}
	if d := app.Backoff(3, 10*time.Millisecond, 25*time.Millisecond); d < 20*time.Millisecond || d > 30*time.Millisecond {
		t.Fatalf("capped backoff %v", d)
	}
}

func TestTransitionTable(t *testing.T) {
	all := []app.Status{app.StatusQueued, app.StatusProcessing, app.StatusDone, app.StatusCancelled}
	legal := map[[2]app.Status]bool{
		{app.StatusQueued, app.StatusProcessing}: true, {app.StatusQueued, app.StatusCancelled}: true,
		{app.StatusProcessing, app.StatusDone}: true, {app.StatusProcessing, app.StatusQueued}: true,
		{app.StatusProcessing, app.StatusCancelled}: true,
	}
	for _, from := range all {
		for _, to := range all {
			err := app.Transition(from, to)
			if ok := legal[[2]app.Status{from, to}] || from == to; ok != (err == nil) {
				t.Errorf("Transition(%s, %s) = %v", from, to, err)
			}
		}
		for _, bad := range []app.Status{"dead_letter", "", "RUNNING", "failed"} {
			if err := app.Transition(from, bad); !errors.Is(err, app.ErrInvalidStatus) {
				t.Errorf("Transition(%s, %q) = %v", from, bad, err)
			}
		}
	}
	if err := app.Transition(app.StatusQueued, "dead_letter"); !strings.Contains(err.Error(), "dead_letter_jobs") {
		t.Errorf("dead_letter message: %v", err)
	}
	if app.InsertStatus(app.StatusQueued) != nil || app.InsertStatus(app.StatusDone) == nil || app.InsertStatus("dead_letter") == nil {
		t.Errorf("InsertStatus allows the wrong statuses")
	}
}

func TestCursorRoundTripsAndRejectsForgeries(t *testing.T) {
	for _, asc := range []bool{true, false} {
		id, gotAsc, err := app.DecodeCursor(app.EncodeCursor(42, asc))
		if err != nil || id != 42 || gotAsc != asc {
			t.Fatalf("round trip: %d %v %v", id, gotAsc, err)
		}
	}
	for _, c := range []string{"", "x", "' OR 1=1 --", "ZDA", "ZC0x", "eDQy", strings.Repeat("A", 100)} {
		if _, _, err := app.DecodeCursor(c); c != "" && err == nil {
			t.Errorf("DecodeCursor(%q) accepted", c)
		}
	}
}

func TestParseDuration(t *testing.T) {
	for in, want := range map[string]time.Duration{"30s": 30 * time.Second, "90": 90 * time.Second, "7d": 7 * 24 * time.Hour, "1.5": 1500 * time.Millisecond, "250ms": 250 * time.Millisecond} {
		if got, err := app.ParseDuration(in); err != nil || got != want {
			t.Errorf("ParseDuration(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "soon", "1e300", "5 seconds", "d"} {
		if _, err := app.ParseDuration(in); err == nil {
			t.Errorf("ParseDuration(%q) accepted", in)
		}
	}
}
