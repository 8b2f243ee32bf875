package app_test

import (
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/queuehq/queue/app"
	"github.com/queuehq/queue/memory"
)

// never is a Schedule that matches no time: robfig/cron's Next answers the
// zero time for "0 0 30 2 *" (30 February). After 1000 calls it answers a
// far future instead, so a scheduler that loops on it fails the test
// rather than hanging it.
type never struct{ calls *atomic.Int64 }

func (n never) Next(time.Time) time.Time {
	if n.calls.Add(1) > 1000 {
		return time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC)
	}
	return time.Time{}
}

// everySecond fires on each whole second.
type everySecond struct{}

func (everySecond) Next(t time.Time) time.Time { return t.Truncate(time.Second).Add(time.Second) }

func parserOf(s app.Schedule) app.ScheduleParser {
	return func(string, *time.Location) (app.Schedule, error) { return s, nil }
}

// A schedule that never fires is refused, through the API and the config
// file alike (both call ValidatePeriodic), naming cron.
func TestPeriodicNeverFiresIsRefused(t *testing.T) {
	calls := &atomic.Int64{}
	p := app.PeriodicConfig{Name: "feb30", Cron: "0 0 30 2 *", Kind: "k"}
	err := app.ValidatePeriodic(&p, parserOf(never{calls}))
	var ie *app.InvalidError
	if !errors.As(err, &ie) || ie.Field != "cron" || !strings.Contains(ie.Message, "never fires") {
		t.Fatalf("ValidatePeriodic(%q) = %v, want an InvalidError of field cron saying it never fires", p.Cron, err)
	}
	bus := app.NewBus()
	store := memory.New(app.StoreOptions{Bus: bus})
	t.Cleanup(func() { store.Close() })
	cfg := app.DefaultConfig()
	cfg.ParseSchedule = parserOf(never{calls})
	svc := app.NewService(store, cfg, nil, bus, zerolog.Nop())
	_, err = svc.CreatePeriodic(t.Context(), app.PeriodicInput{Name: "feb30", Cron: "0 0 30 2 *", Kind: "k"}, "t")
	if !errors.As(err, &ie) || ie.Field != "cron" {
		t.Fatalf("CreatePeriodic(%q) = %v, want an InvalidError of field cron", "0 0 30 2 *", err)
	}
}

// An entry whose schedule never fires (one of the config file, or stored
// before the check) is "never" to the Scheduler: Start and Due return,
// enqueue nothing of it, and the other entries still fire; its next_fire
// is null.
func TestPeriodicNeverFiresStallsNothing(t *testing.T) {
	ctx := t.Context()
	clock := app.NewFakeClock(time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC))
	bus := app.NewBus()
	store := memory.New(app.StoreOptions{Bus: bus, Clock: clock})
	t.Cleanup(func() { store.Close() })
	calls := &atomic.Int64{}
	nv := app.PeriodicConfig{Name: "feb30", Cron: "@every 1s", Queue: "never", Kind: "k"}
	tick := app.PeriodicConfig{Name: "tick", Cron: "@every 1s", Queue: "cron", Kind: "tick"}
	for _, p := range []*app.PeriodicConfig{&nv, &tick} {
		if err := app.ValidatePeriodic(p, parserOf(everySecond{})); err != nil {
			t.Fatal(err)
		}
	}
	nv.Cron, nv.Schedule = "0 0 30 2 *", never{calls} // past the check, as if stored before it
	cfg := app.DefaultConfig()
	cfg.Periodic = []app.PeriodicConfig{nv, tick}
	svc := app.NewService(store, cfg, clock, bus, zerolog.Nop())
	if _, err := svc.RunPeriodic(ctx, "feb30", "t"); err != nil { // a last fire, so Start looks for missed ones
		t.Fatal(err)
	}
	clock.Advance(time.Hour)
	count := func(queue string) int {
		t.Helper()
		n, err := store.CountJobs(ctx, app.JobFilter{Queue: queue})
		if err != nil {
			t.Fatal(err)
		}
		return n
	}

	s := &app.Scheduler{Service: svc}
	if err := s.Start(ctx); err != nil {
		t.Fatalf("Start: %v", err)
	}
	for range 3 {
		clock.Advance(time.Second)
		next, err := s.Due(ctx)
		if err != nil {
			t.Fatalf("Due: %v", err)
		}
		if now := clock.Now(); !next.After(now) || next.Sub(now) > time.Second {
			t.Fatalf("Due = next fire %v at %v, want the tick's, within a second", next, now)
		}
	}
	if n := count("cron"); n != 3 {
		t.Errorf("the other entry after 3 seconds: %d jobs, want 3", n)
	}
	if n := count("never"); n != 1 { // the run-now job alone
		t.Errorf("the entry that never fires: %d jobs, want 1 (its run now)", n)
	}
	if n := calls.Load(); n > 10 {
		t.Errorf("Start and 3 Dues asked the never-firing schedule %d times, want at most 10", n)
	}

	st, err := svc.PeriodicStatus(ctx)
	if err != nil || len(st) != 2 {
		t.Fatalf("PeriodicStatus = %d entries, %v; want 2", len(st), err)
	}
	for _, e := range st {
		if (e.NextFire == nil) != (e.Name == "feb30") {
			t.Errorf("PeriodicStatus %s: next_fire %v, want null only for feb30", e.Name, e.NextFire)
		}
	}
}
