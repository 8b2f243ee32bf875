package app_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/queuehq/queue/app"
	"github.com/queuehq/queue/memory"
	"github.com/queuehq/queue/worker"
)

// cappedService is a Service over the memory store that lets max long polls wait at once.
func cappedService(t *testing.T, max int) *app.Service {
	t.Helper()
	bus := app.NewBus()
	store := memory.New(app.StoreOptions{Bus: bus})
	t.Cleanup(func() { store.Close() })
	cfg := app.DefaultConfig()
	cfg.MaxWaiters = max
	return app.NewService(store, cfg, nil, bus, zerolog.Nop())
}

// waitFor polls cond for up to 5s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); !cond(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 5s", what)
		}
	}
}

// Beyond Config.MaxWaiters, a claim or get that would wait is refused
// with ErrTooManyWaiters (an ErrUnavailable); what needs no wait still
// answers; the places come back as waits end.
func TestLongPollsAreCapped(t *testing.T) {
	const max = 3
	svc := cappedService(t, max)
	ctx := t.Context()
	long := app.Duration(time.Minute)
	queued, err := svc.Submit(ctx, []app.SubmitInput{{Queue: "busy", Kind: "k"}})
	if err != nil {
		t.Fatal(err)
	}
	id := queued[0].Job.ID

	// max-1 claims and one get wait; each on its own queue name.
	type waiter struct {
		cancel context.CancelFunc
		done   chan error
	}
	var ws []waiter
	for i := range max {
		wctx, cancel := context.WithCancel(ctx)
		w := waiter{cancel, make(chan error, 1)}
		ws = append(ws, w)
		go func() {
			var err error
			if i == 0 {
				_, err = svc.Get(wctx, id, time.Minute, false)
			} else {
				_, err = svc.Claim(wctx, "empty-"+string(rune('a'+i)), app.ClaimInput{Wait: &long})
			}
			w.done <- err
		}()
	}
	waitFor(t, "3 waits under way", func() bool { return svc.Waiting() == max })

	second := app.Duration(time.Second) // if it is let through, it ends soon
	if _, err := svc.Claim(ctx, "another", app.ClaimInput{Wait: &second}); !errors.Is(err, app.ErrTooManyWaiters) || !errors.Is(err, app.ErrUnavailable) {
		t.Fatalf("claim %d with a wait, cap %d: err=%v, want ErrTooManyWaiters (and ErrUnavailable)", max+1, max, err)
	}
	if _, err := svc.Get(ctx, id, time.Second, false); !errors.Is(err, app.ErrTooManyWaiters) {
		t.Fatalf("get %d with a wait, cap %d: err=%v, want ErrTooManyWaiters", max+1, max, err)
	}
	if jobs, err := svc.Claim(ctx, "another", app.ClaimInput{}); err != nil || len(jobs) != 0 {
		t.Fatalf("claim without a wait while the cap is full: %d jobs, err=%v; want none and no error", len(jobs), err)
	}
	// A claim that finds a job at once never waits, so the cap does not stop it.
	if jobs, err := svc.Claim(ctx, "busy", app.ClaimInput{Wait: &long}); err != nil || len(jobs) != 1 {
		t.Fatalf("claim with a wait of a queued job while the cap is full: %d jobs, err=%v; want 1", len(jobs), err)
	}
	// The in-process workers are not capped.
	short := app.Duration(20 * time.Millisecond)
	if _, err := worker.LocalBackend(svc).Claim(ctx, "workers", app.ClaimInput{Wait: &short}); err != nil {
		t.Fatalf("a built-in worker's claim while the cap is full: %v", err)
	}
	if n := svc.Waiting(); n != max {
		t.Fatalf("Waiting after refused waits = %d, want %d", n, max)
	}

	ws[1].cancel()
	if err := <-ws[1].done; err != nil {
		t.Fatalf("a cancelled claim: %v", err)
	}
	waitFor(t, "a place back after one wait ended", func() bool { return svc.Waiting() == max-1 })
	if jobs, err := svc.Claim(ctx, "another", app.ClaimInput{Wait: &short}); err != nil || len(jobs) != 0 {
		t.Fatalf("claim with a wait after a place came back: %d jobs, err=%v", len(jobs), err)
	}
	svc.Stop() // the rest answer now
	for i, w := range ws {
		if i != 1 {
			if err := <-w.done; err != nil {
				t.Fatalf("wait %d after Stop: %v", i, err)
			}
		}
	}
	if n := svc.Waiting(); n != 0 {
		t.Fatalf("Waiting after every wait ended = %d, want 0", n)
	}
}

// Stats reuses its answer on unclaimed kinds for UnclaimedEvery (each
// /metrics scrape and page asks for Stats), then looks again.
func TestUnclaimedKindsAreReusedBriefly(t *testing.T) {
	ctx := context.Background()
	clock := app.NewFakeClock(time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC))
	bus := app.NewBus()
	store := memory.New(app.StoreOptions{Bus: bus, Clock: clock})
	svc := app.NewService(store, nil, clock, bus, zerolog.Nop())
	if _, err := svc.Submit(ctx, []app.SubmitInput{{Queue: "q", Kind: "orphan"}}); err != nil {
		t.Fatal(err)
	}
	clock.Advance(app.UnclaimedAfter + time.Second)
	count := func() int {
		st, err := svc.Stats(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return len(st.UnclaimedKinds)
	}
	if n := count(); n != 1 {
		t.Fatalf("%d unclaimed kinds, want the orphan", n)
	}
	if _, err := svc.Claim(ctx, "q", app.ClaimInput{WorkerID: "w"}); err != nil {
		t.Fatal(err)
	}
	clock.Advance(app.UnclaimedEvery / 2)
	if n := count(); n != 1 {
		t.Fatalf("%d unclaimed kinds within %v, want the answer reused", n, app.UnclaimedEvery)
	}
	clock.Advance(app.UnclaimedEvery)
	if n := count(); n != 0 {
		t.Fatalf("%d unclaimed kinds after %v, want a new look (the kind was claimed)", n, app.UnclaimedEvery)
	}
}
