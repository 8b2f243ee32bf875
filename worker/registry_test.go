package worker_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/queuehq/queue/app"
	"github.com/queuehq/queue/memory"
	"github.com/queuehq/queue/worker"
)

// waitFor polls cond until it holds or 10 seconds pass.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A pool with a Presence registers, reports its counts, and obeys: quiet
// lets the running job finish and claims nothing more; stop gives the
// running job back (attempt not used up) and ends the pool.
func TestPresenceQuietThenStop(t *testing.T) {
	ctx := t.Context()
	store := memory.New(app.StoreOptions{})
	svc := app.NewService(store, nil, nil, nil, zerolog.Nop())
	log := zerolog.New(zerolog.NewTestWriter(t))

	release := make(chan struct{})
	started := make(chan int64, 10)
	stopped := make(chan struct{})
	var pool *worker.Pool
	pres := &worker.Presence{
		Registry: worker.LocalBackend(svc).(worker.Registry),
		Info:     app.WorkerInput{Queues: &app.QueueChoice{Names: []string{"q"}}, Concurrency: 1, Type: app.WorkerBuiltin},
		OnStop:   func() { pool.Stop(0); close(stopped) },
		Log:      log,
	}
	if err := pres.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer pres.Stop()
	pool = &worker.Pool{
		Backend: worker.LocalBackend(svc), Queue: "q", Concurrency: 1, PollWait: 2 * time.Second, Presence: pres, Log: log,
		Handler: func(ctx context.Context, job *app.Job) (any, error) {
			started <- job.ID
			select {
			case <-release:
				return "ok", nil
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		},
	}
	if err := pool.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer pool.Stop(0)
	id := pres.ID()
	if pool.WorkerID != id {
		t.Fatalf("pool claims as %q, want the presence's id %q", pool.WorkerID, id)
	}
	worker := func() *app.Worker {
		w, err := svc.Worker(ctx, id)
		if err != nil {
			return nil
		}
		return w
	}
	waitFor(t, "the registration", func() bool { return worker() != nil })
	if w := worker(); w.Type != app.WorkerBuiltin || w.Queues.Names[0] != "q" || w.Concurrency != 1 || w.PID == 0 || w.Host == "" {
		t.Fatalf("registered as %+v", w)
	}

	submit := func() int64 {
		res, err := svc.Submit(ctx, []app.SubmitInput{{Queue: "q", Kind: "k"}})
		if err != nil {
			t.Fatal(err)
		}
		return res[0].Job.ID
	}
	first := submit()
	if got := <-started; got != first {
		t.Fatalf("started job %d, want %d", got, first)
	}
	waitFor(t, "a heartbeat with one job in flight", func() bool { w := worker(); return w != nil && w.InFlight == 1 })

	// Quiet: the running job finishes; the next one is not claimed.
	if _, err := svc.SetWorkerCommand(ctx, id, app.WorkerQuiet, "test"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the worker to hear quiet", func() bool { return pres.Command() == app.WorkerQuiet })
	second := submit()
	close(release)
	waitFor(t, "the running job to finish", func() bool {
		j, _ := svc.Get(ctx, first, 0, false)
		return j.Status == app.StatusDone
	})
	waitFor(t, "done counted", func() bool { w := worker(); return w.Done == 1 && w.InFlight == 0 })
	time.Sleep(1500 * time.Millisecond) // a claim loop that ignored quiet would have taken it by now
	if j, _ := svc.Get(ctx, second, 0, false); j.Status != app.StatusQueued {
		t.Fatalf("a quiet worker claimed job %d (%s)", second, j.Status)
	}
	if w := worker(); w.State != app.WorkerQuieted {
		t.Fatalf("state %q, want quiet", w.State)
	}

	// Stop: no claims, and the pool ends (OnStop).
	if _, err := svc.SetWorkerCommand(ctx, id, app.WorkerStop, "test"); err != nil {
		t.Fatal(err)
	}
	select {
	case <-stopped:
	case <-time.After(10 * time.Second):
		t.Fatal("the pool did not stop within 10s of the stop command")
	}
	if j, _ := svc.Get(ctx, second, 0, false); j.Status != app.StatusQueued {
		t.Fatalf("job %d is %s after stop, want queued", second, j.Status)
	}
}

// Stop interrupts a running job and gives it back without using up its
// attempt; an unknown id (the server forgot the worker) registers again.
func TestPresenceStopGivesRunningJobsBack(t *testing.T) {
	ctx := t.Context()
	store := memory.New(app.StoreOptions{})
	svc := app.NewService(store, nil, nil, nil, zerolog.Nop())
	log := zerolog.New(zerolog.NewTestWriter(t))
	started := make(chan struct{}, 1)
	stopped := make(chan struct{})
	var pool *worker.Pool
	pres := &worker.Presence{
		Registry: worker.LocalBackend(svc).(worker.Registry),
		Info:     app.WorkerInput{ID: "fixed-id", Queues: &app.QueueChoice{Names: []string{"q"}}, Concurrency: 1, Type: app.WorkerGo},
		OnStop:   func() { pool.Stop(0); close(stopped) },
		Log:      log,
	}
	if err := pres.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer pres.Stop()
	pool = &worker.Pool{
		Backend: worker.LocalBackend(svc), Queue: "q", Concurrency: 1, PollWait: 2 * time.Second, Presence: pres, Log: log,
		Handler: func(ctx context.Context, job *app.Job) (any, error) {
			started <- struct{}{}
			<-ctx.Done()
			return nil, ctx.Err()
		},
	}
	if err := pool.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer pool.Stop(0)
	res, err := svc.Submit(ctx, []app.SubmitInput{{Queue: "q", Kind: "k"}})
	if err != nil {
		t.Fatal(err)
	}
	<-started
	waitFor(t, "the registration", func() bool { _, err := svc.Worker(ctx, "fixed-id"); return err == nil })
	if _, err := svc.SetWorkerCommand(ctx, "fixed-id", app.WorkerStop, "test"); err != nil {
		t.Fatal(err)
	}
	select {
	case <-stopped:
	case <-time.After(15 * time.Second):
		t.Fatal("the pool did not stop within 15s of the stop command")
	}
	j, err := svc.Get(ctx, res[0].Job.ID, 0, false)
	if err != nil || j.Status != app.StatusQueued || j.Attempts != 0 {
		t.Fatalf("job after stop: %+v %v; want queued with its attempt given back", j, err)
	}
	if w, _ := svc.Worker(ctx, "fixed-id"); w.Failed != 0 || w.Done != 0 {
		t.Fatalf("a given-back job was counted: %+v", w)
	}
}

// A server that forgot the worker (404 worker_not_found) gets a new
// registration at the next heartbeat.
func TestPresenceRegistersAgain(t *testing.T) {
	ctx := t.Context()
	clock := app.NewFakeClock(time.Now())
	store := memory.New(app.StoreOptions{Clock: clock})
	svc := app.NewService(store, nil, clock, nil, zerolog.Nop())
	pres := &worker.Presence{
		Registry: worker.LocalBackend(svc).(worker.Registry),
		Info:     app.WorkerInput{ID: "again", Queues: &app.QueueChoice{Names: []string{"q"}}, Concurrency: 1},
		Log:      zerolog.New(zerolog.NewTestWriter(t)),
	}
	if err := pres.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer pres.Stop()
	waitFor(t, "the registration", func() bool { _, err := svc.Worker(ctx, "again"); return err == nil })
	clock.Advance(2 * app.WorkerRetention)
	if n, err := app.PruneWorkers(ctx, store, clock.Now().Add(-app.WorkerRetention), 10); err != nil || n != 1 {
		t.Fatalf("prune: %d, %v", n, err)
	}
	pres.Poke()
	waitFor(t, "the registration again", func() bool { _, err := svc.Worker(ctx, "again"); return err == nil })
}

// fakeRegistry answers heartbeats with the command a test sets, and knows
// nothing the Service would enforce: only the pool's own obedience holds
// its claims back.
type fakeRegistry struct{ cmd atomic.Value }

func (f *fakeRegistry) RegisterWorker(ctx context.Context, in app.WorkerInput) (*app.WorkerRegistered, error) {
	return &app.WorkerRegistered{ID: in.ID, Command: app.WorkerRun, HeartbeatInterval: app.Duration(50 * time.Millisecond)}, nil
}

func (f *fakeRegistry) WorkerHeartbeat(ctx context.Context, id string, b app.WorkerBeat) (string, error) {
	return f.cmd.Load().(string), nil
}

// The pool itself claims nothing while its Presence says quiet, and claims
// again when it says run (the server is not told: its claims would be
// served).
func TestPoolObeysQuietItself(t *testing.T) {
	ctx := t.Context()
	svc := app.NewService(memory.New(app.StoreOptions{}), nil, nil, nil, zerolog.Nop())
	reg := &fakeRegistry{}
	reg.cmd.Store(app.WorkerRun)
	pres := &worker.Presence{Registry: reg, Info: app.WorkerInput{ID: "self", Queues: &app.QueueChoice{Names: []string{"q"}}, Concurrency: 1}}
	if err := pres.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer pres.Stop()
	pool := &worker.Pool{Backend: worker.LocalBackend(svc), Queue: "q", PollWait: time.Second, Presence: pres,
		Handler: func(ctx context.Context, job *app.Job) (any, error) { return nil, nil }}
	if err := pool.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer pool.Stop(0)
	reg.cmd.Store(app.WorkerQuiet)
	waitFor(t, "the worker to hear quiet", func() bool { return pres.Command() == app.WorkerQuiet })
	time.Sleep(1200 * time.Millisecond) // the long poll under way when quiet came (PollWait 1s) ends
	res, err := svc.Submit(ctx, []app.SubmitInput{{Queue: "q", Kind: "k"}})
	if err != nil {
		t.Fatal(err)
	}
	id := res[0].Job.ID
	time.Sleep(1500 * time.Millisecond) // a claim loop that ignored quiet would have run it by now
	if j, _ := svc.Get(ctx, id, 0, false); j.Status != app.StatusQueued {
		t.Fatalf("a quiet pool ran job %d (%s)", id, j.Status)
	}
	reg.cmd.Store(app.WorkerRun)
	waitFor(t, "the job to run once the worker runs again", func() bool {
		j, _ := svc.Get(ctx, id, 0, false)
		return j.Status == app.StatusDone
	})
}
