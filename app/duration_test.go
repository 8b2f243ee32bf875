package app_test

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/queuehq/queue/app"
)

// Every answer writes durations one way: whole days as days, otherwise
// Go's form without trailing zero units; ParseDuration reads each back.
func TestFormatDurationIsTheAPIForm(t *testing.T) {
	for d, want := range map[time.Duration]string{
		0:                                "0s",
		250 * time.Millisecond:           "250ms",
		1500 * time.Millisecond:          "1.5s",
		30 * time.Second:                 "30s",
		5 * time.Minute:                  "5m",
		90 * time.Minute:                 "1h30m",
		time.Hour:                        "1h",
		time.Hour + 5*time.Second:        "1h0m5s",
		24 * time.Hour:                   "1d",
		36 * time.Hour:                   "36h",
		720 * time.Hour:                  "30d",
		-5 * time.Minute:                 "-5m",
		7*24*time.Hour + time.Nanosecond: "168h0m0.000000001s",
	} {
		if got := app.FormatDuration(d); got != want {
			t.Errorf("FormatDuration(%v) = %q, want %q", d, got, want)
		}
		back, err := app.ParseDuration(app.FormatDuration(d))
		if err != nil || back != d {
			t.Errorf("ParseDuration(%q) = %v, %v; want %v", app.FormatDuration(d), back, err, d)
		}
	}
	b, _ := json.Marshal(app.QueueConfig{DLQRetention: app.Duration(720 * time.Hour), Timeout: app.Duration(5 * time.Minute)})
	var m map[string]any
	json.Unmarshal(b, &m)
	if m["dlq_retention"] != "30d" || m["timeout"] != "5m" || m["max_attempts"] == nil {
		t.Errorf("QueueConfig as JSON: %s; want snake_case keys, \"30d\" and \"5m\"", b)
	}
}

// A duration that does not parse is a type error naming its field, so the
// API can say which field it was ("wait", not just "invalid duration").
func TestDurationErrorNamesTheField(t *testing.T) {
	for _, body := range []string{`{"wait":"soon"}`, `{"wait":true}`, `{"wait":1e300}`} {
		var in app.ClaimInput
		err := json.Unmarshal([]byte(body), &in)
		var te *json.UnmarshalTypeError
		if !errors.As(err, &te) || te.Field != "wait" {
			t.Errorf("decode %s: %v; want a type error of field wait", body, err)
		}
	}
	var in app.ClaimInput
	if err := json.Unmarshal([]byte(`{"wait":"7d"}`), &in); err != nil || in.Wait == nil || in.Wait.D() != 7*24*time.Hour {
		t.Errorf(`decode {"wait":"7d"}: %v, %v`, in.Wait, err)
	}
}
