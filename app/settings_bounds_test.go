package app_test

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/queuehq/queue/app"
	"github.com/queuehq/queue/memory"
)

// ValidateQueueConfig (the one check of the config file and the API)
// holds rate and timeout to the bounds its messages give.
func TestQueueConfigBounds(t *testing.T) {
	for _, c := range []struct {
		name  string
		q     app.QueueConfig
		field string // "": valid
	}{
		{"rate 0 (no limit)", app.QueueConfig{Rate: 0}, ""},
		{"rate 0.001", app.QueueConfig{Rate: 0.001}, ""},
		{"rate 50", app.QueueConfig{Rate: 50}, ""},
		{"rate 1e6", app.QueueConfig{Rate: 1e6}, ""},
		{"rate 1e308", app.QueueConfig{Rate: 1e308}, "rate"},
		{"rate 1e6+1", app.QueueConfig{Rate: 1e6 + 1}, "rate"},
		{"rate 1e-12", app.QueueConfig{Rate: 1e-12}, "rate"},
		{"rate -1", app.QueueConfig{Rate: -1}, "rate"},
		{"rate NaN", app.QueueConfig{Rate: math.NaN()}, "rate"},
		{"rate +Inf", app.QueueConfig{Rate: math.Inf(1)}, "rate"},
		{"timeout 0 (unset)", app.QueueConfig{}, ""},
		{"timeout 1ms", app.QueueConfig{Timeout: app.Duration(time.Millisecond)}, ""},
		{"timeout 24h", app.QueueConfig{Timeout: app.Duration(app.MaxTimeout)}, ""},
		{"timeout 1ns", app.QueueConfig{Timeout: 1}, "timeout"},
		{"timeout 999µs", app.QueueConfig{Timeout: app.Duration(999 * time.Microsecond)}, "timeout"},
		{"timeout 24h+1ns", app.QueueConfig{Timeout: app.Duration(app.MaxTimeout + 1)}, "timeout"},
		{"timeout -1s", app.QueueConfig{Timeout: app.Duration(-time.Second)}, "timeout"},
		{"key_rate 10/1m", app.QueueConfig{KeyRate: app.KeyRate{N: 10, Per: time.Minute}}, ""},
		{"key_rate 1/1ns", app.QueueConfig{KeyRate: app.KeyRate{N: 1, Per: 1}}, "key_rate"},
		{"key_rate 2000000/1s", app.QueueConfig{KeyRate: app.KeyRate{N: 2_000_000, Per: time.Second}}, "key_rate"},
	} {
		err := app.ValidateQueueConfig(c.q)
		var ie *app.InvalidError
		switch {
		case c.field == "" && err != nil:
			t.Errorf("%s: ValidateQueueConfig = %v, want nil", c.name, err)
		case c.field != "" && (!errors.As(err, &ie) || ie.Field != c.field):
			t.Errorf("%s: ValidateQueueConfig = %v, want an InvalidError of field %s", c.name, err, c.field)
		}
	}
}

// The API refuses the settings that made long-poll claims spin.
func TestPatchQueueSettingsBounds(t *testing.T) {
	bus := app.NewBus()
	store := memory.New(app.StoreOptions{Bus: bus})
	t.Cleanup(func() { store.Close() })
	svc := app.NewService(store, app.DefaultConfig(), nil, bus, zerolog.Nop())
	for body, field := range map[string]string{
		`{"rate": 1e308}`:    "rate",
		`{"rate": 1e-12}`:    "rate",
		`{"rate": 2e6}`:      "rate",
		`{"timeout": "1ns"}`: "timeout",
		`{"rate": 0.5}`:      "",
		`{"timeout": "1ms"}`: "",
	} {
		var patch map[string]json.RawMessage
		if err := json.Unmarshal([]byte(body), &patch); err != nil {
			t.Fatal(err)
		}
		_, err := svc.PatchQueueSettings(t.Context(), "d", patch, "t")
		var ie *app.InvalidError
		switch {
		case field == "" && err != nil:
			t.Errorf("PatchQueueSettings(%s) = %v, want nil", body, err)
		case field != "" && (!errors.As(err, &ie) || ie.Field != field):
			t.Errorf("PatchQueueSettings(%s) = %v, want an InvalidError of field %s", body, err, field)
		}
	}
}

// countingStore counts the claims that reach the store.
type countingStore struct {
	app.Store
	claims atomic.Int64
}

func (s *countingStore) Claim(ctx context.Context, req app.ClaimRequest) ([]*app.Job, error) {
	s.claims.Add(1)
	return s.Store.Claim(ctx, req)
}

// A long-poll claim on an empty queue whose rate (one stored before the
// bounds, or a config that skipped them) makes 1s/rate round to zero or
// overflow rechecks at most every 10ms: it does not spin on the store.
func TestClaimWaitDoesNotSpin(t *testing.T) {
	for _, rate := range []float64{1e308, 1e-12, 1e12} {
		bus := app.NewBus()
		mem := memory.New(app.StoreOptions{Bus: bus})
		t.Cleanup(func() { mem.Close() })
		store := &countingStore{Store: mem}
		cfg := app.DefaultConfig()
		cfg.Queues["d"] = app.QueueConfig{Rate: rate}
		svc := app.NewService(store, cfg, nil, bus, zerolog.Nop())
		wait := app.Duration(300 * time.Millisecond)
		jobs, err := svc.Claim(t.Context(), "d", app.ClaimInput{Wait: &wait})
		if err != nil || len(jobs) != 0 {
			t.Fatalf("rate %g: Claim = %d jobs, %v; want none", rate, len(jobs), err)
		}
		// 300ms at one recheck per 10ms at most, and the first look.
		if n := store.claims.Load(); n > 31 {
			t.Errorf("rate %g: a 300ms wait made %d store claims, want at most 31", rate, n)
		}
	}
}
