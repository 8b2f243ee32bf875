package client_test

// The worker contract (SPEC section 5), run against both ways a worker
// reaches the queue: in process (worker.LocalBackend over a Service, as the
// built-in workers of `queue serve` do) and over HTTP (a *client.Client
// against ui.New, as `queue work` and Go programs do). Each case runs the
// command handler or Go handlers through an worker.Pool or a client.Worker.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/queuehq/queue/app"
	"github.com/queuehq/queue/client"
	"github.com/queuehq/queue/memory"
	"github.com/queuehq/queue/ui"
	"github.com/queuehq/queue/worker"
)

// harness is a queue with a maintenance loop, and a Backend to it.
type harness struct {
	svc     *app.Service
	backend worker.Backend
	log     zerolog.Logger
	dir     string // where commands write their pid files
}

func newHarness(t *testing.T, overHTTP bool) *harness {
	t.Helper()
	log := zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.InfoLevel).With().Timestamp().Logger()
	bus := app.NewBus()
	store := memory.New(app.StoreOptions{Bus: bus})
	svc := app.NewService(store, nil, nil, bus, log)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); (&app.Maintainer{Service: svc}).Run(ctx, 50*time.Millisecond) }()
	t.Cleanup(func() { cancel(); <-done })
	h := &harness{svc: svc, log: log, dir: t.TempDir()}
	if overHTTP {
		srv := httptest.NewServer(ui.New(ui.Options{Service: svc, Log: log}))
		t.Cleanup(srv.Close)
		h.backend = client.New(srv.URL)
	} else {
		h.backend = client.Local(svc)
	}
	t.Cleanup(svc.Stop) // runs first: long polls answer, so the server can close
	return h
}

// contract runs every case against both backends.
func TestWorkerContract(t *testing.T) {
	cases := map[string]func(*testing.T, *harness){
		"CommandResult":             testCommandResult,
		"CommandExit65DeadLetters":  testCommandExit65,
		"CommandExit1Retries":       testCommandExit1,
		"CommandTimeoutKillsGroup":  testCommandTimeout,
		"CommandCancelStops":        testCommandCancel,
		"CommandLeaseLostStops":     testCommandLeaseLost,
		"StopGivesLeaseBack":        testStopGivesLeaseBack,
		"StopLetsJobFinish":         testStopLetsJobFinish,
		"InterruptEndsGrace":        testInterruptEndsGrace,
		"GoPermanent":               testGoPermanent,
		"GoPanic":                   testGoPanic,
		"GoCancelEndsContext":       testGoCancel,
		"GoTimeoutEndsContext":      testGoTimeout,
		"CompletionsBatched":        testCompletionsBatched,
		"BackendErrorsRetried":      testBackendErrorsRetried,
		"WorkerPerKindConcurrency":  testWorkerPerKind,
		"OnceRunsSideEffectOnce":    testOnce,
		"ClaimWakesOnSubmission":    testClaimWakes,
		"WorkerRunStopsOnCtxCancel": testWorkerRun,
	}
	for _, mode := range []string{"local", "http"} {
		t.Run(mode, func(t *testing.T) {
			for name, run := range cases {
				t.Run(name, func(t *testing.T) {
					t.Parallel()
					run(t, newHarness(t, mode == "http"))
				})
			}
		})
	}
}

func (h *harness) submit(t *testing.T, queue, kind, payload string, timeout time.Duration) *app.Job {
	t.Helper()
	in := app.SubmitInput{Queue: queue, Kind: kind, Payload: json.RawMessage(payload)}
	if timeout > 0 {
		d := app.Duration(timeout)
		in.Timeout = &d
	}
	res, err := h.svc.Submit(t.Context(), []app.SubmitInput{in})
	if err != nil {
		t.Fatalf("submit: %v", err)
	}
	return res[0].Job
}

func (h *harness) get(t *testing.T, id int64) *app.Job {
	t.Helper()
	job, err := h.svc.Get(context.Background(), id, 0, false)
	if err != nil {
		t.Fatalf("get job %d: %v", id, err)
	}
	return job
}

// waitJob polls job id until ok holds, or fails after within.
func (h *harness) waitJob(t *testing.T, id int64, within time.Duration, what string, ok func(*app.Job) bool) *app.Job {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		job := h.get(t, id)
		if ok(job) {
			return job
		}
		if time.Now().After(deadline) {
			b, _ := json.Marshal(job)
			t.Fatalf("job %d not %s within %v: %s", id, what, within, b)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func isStatus(s app.Status) func(*app.Job) bool {
	return func(j *app.Job) bool { return j.Status == s }
}

func failedOnce(j *app.Job) bool { return len(j.Errors) >= 1 }

// pool starts a Pool over the harness's backend, stopped at the end of the test.
func (h *harness) pool(t *testing.T, queue string, handler worker.Handler, concurrency int) *worker.Pool {
	t.Helper()
	p := &worker.Pool{Backend: h.backend, Queue: queue, Handler: handler, Concurrency: concurrency,
		PollWait: 5 * time.Second, AbandonAfter: 5 * time.Second, Log: h.log}
	if err := p.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Stop(0) })
	return p
}

// commandPool runs script with sh -c for each job; the script may write its
// pid to $PIDS/$QUEUE_JOB_ID.
func (h *harness) commandPool(t *testing.T, queue, script string, killGrace time.Duration) *worker.Pool {
	t.Helper()
	return h.pool(t, queue, worker.CommandHandler(worker.CommandConfig{
		Command: []string{"sh", "-c", script}, KillGrace: killGrace, Env: map[string]string{"PIDS": h.dir},
	}), 2)
}

func (h *harness) pid(t *testing.T, jobID int64) int {
	t.Helper()
	path := filepath.Join(h.dir, strconv.FormatInt(jobID, 10))
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if b, err := os.ReadFile(path); err == nil && strings.HasSuffix(string(b), "\n") {
			if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
				return pid
			}
		}
	}
	t.Fatalf("job %d never wrote its pid", jobID)
	return 0
}

// alive reports whether pid runs (a zombie waiting for its reaper does not).
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || (s[i+2] != 'Z' && s[i+2] != 'X')
}

func waitDead(t *testing.T, pid int, within time.Duration, what string) time.Duration {
	t.Helper()
	start := time.Now()
	for time.Since(start) < within {
		if !alive(pid) {
			return time.Since(start)
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("%s: process %d still runs %v later", what, pid, within)
	return 0
}

// A sleeping command whose child (a sleep in the background) shares its group.
const sleeper = `sleep 30 & echo $! > "$PIDS/$QUEUE_JOB_ID"; wait`

func testCommandResult(t *testing.T, h *harness) {
	h.commandPool(t, "q", `cat >/dev/null; echo '{"ok":true}'`, 0)
	ids := []int64{}
	for i := 0; i < 3; i++ {
		ids = append(ids, h.submit(t, "q", "k", `{"n":1}`, 0).ID)
	}
	for _, id := range ids {
		job := h.waitJob(t, id, 5*time.Second, "done", isStatus(app.StatusDone))
		if string(job.Result) != `{"ok":true}` || job.Attempts != 1 {
			t.Fatalf("job %d: result %s attempts %d, want {\"ok\":true} after 1 attempt", id, job.Result, job.Attempts)
		}
	}
}

func testCommandExit65(t *testing.T, h *harness) {
	h.commandPool(t, "q", `echo "no such customer" >&2; exit 65`, 0)
	id := h.submit(t, "q", "k", `{}`, 0).ID
	job := h.waitJob(t, id, 5*time.Second, "dead-lettered", isStatus(app.StatusDeadLetter))
	if job.DeadLetter.Reason != app.ReasonPermanentFailure || !strings.Contains(job.DeadLetter.LastError, "exit status 65") ||
		!strings.Contains(job.DeadLetter.LastError, "no such customer") || job.Attempts != 1 {
		t.Fatalf("dead letter %+v after %d attempts; want permanent_failure naming exit 65 and stderr", job.DeadLetter, job.Attempts)
	}
}

func testCommandExit1(t *testing.T, h *harness) {
	h.commandPool(t, "q", `echo "connection refused" >&2; exit 1`, 0)
	id := h.submit(t, "q", "k", `{}`, 0).ID
	job := h.waitJob(t, id, 5*time.Second, "failed once", failedOnce)
	if e := job.Errors[0]; e.Attempt != 1 || !strings.Contains(e.Error, "exit status 1; stderr: connection refused") {
		t.Fatalf("errors[0] = %+v; want attempt 1 with the exit status and stderr", e)
	}
	if job.Status != app.StatusQueued && job.Status != app.StatusProcessing {
		t.Fatalf("status %s; want the retry scheduled", job.Status)
	}
}

func testCommandTimeout(t *testing.T, h *harness) {
	h.commandPool(t, "q", sleeper, 2*time.Second)
	id := h.submit(t, "q", "k", `{}`, time.Second).ID
	child := h.pid(t, id)
	job := h.waitJob(t, id, 5*time.Second, "failed once", failedOnce)
	if e := job.Errors[0].Error; !strings.Contains(e, "timed out after 1s") || !strings.Contains(e, "SIGTERM") {
		t.Fatalf("errors[0] = %q; want a timeout and SIGTERM", e)
	}
	if job.Status == app.StatusDeadLetter {
		t.Fatalf("a timeout dead-lettered the job; want a retry")
	}
	waitDead(t, child, time.Second, "the command's child after the timeout")
}

func testCommandCancel(t *testing.T, h *harness) {
	h.commandPool(t, "q", sleeper, 5*time.Second)
	const timeout = 1500 * time.Millisecond // heartbeats every 500ms
	id := h.submit(t, "q", "k", `{}`, timeout).ID
	child := h.pid(t, id)
	start := time.Now()
	if _, err := h.svc.Cancel(t.Context(), id, nil, "test"); err != nil {
		t.Fatal(err)
	}
	took := waitDead(t, child, 2*time.Second, "the command after a cancel")
	job := h.waitJob(t, id, 2*time.Second, "cancelled", isStatus(app.StatusCancelled))
	t.Logf("cancel to process gone: %v; to job cancelled: %v", took, time.Since(start))
	if took > 2*timeout/3+200*time.Millisecond {
		t.Fatalf("the process stopped %v after the cancel; want within 2 heartbeats (%v)", took, 2*timeout/3)
	}
	if job.CancelReason != app.CancelRequested || len(job.Errors) != 0 {
		t.Fatalf("job %+v; want cancelled (requested) with no failed attempt", job)
	}
}

func testCommandLeaseLost(t *testing.T, h *harness) {
	h.commandPool(t, "q", sleeper, 5*time.Second)
	id := h.submit(t, "q", "k", `{}`, 1500*time.Millisecond).ID
	child := h.pid(t, id)
	job := h.get(t, id)
	// Someone else moves the job on under the worker (as stale recovery
	// would): the worker's lease is stale from here on.
	if _, err := h.svc.Snooze(t.Context(), id, job.Lease, time.Hour); err != nil {
		t.Fatal(err)
	}
	took := waitDead(t, child, 2*time.Second, "the command after its lease was lost")
	t.Logf("lease lost to process gone: %v", took)
	time.Sleep(200 * time.Millisecond)
	if job := h.get(t, id); job.Status != app.StatusQueued || len(job.Errors) != 0 || job.Attempts != 0 {
		t.Fatalf("job %s attempts %d errors %v; the worker must report nothing after losing its lease", job.Status, job.Attempts, job.Errors)
	}
}

func testStopGivesLeaseBack(t *testing.T, h *harness) {
	p := h.commandPool(t, "q", sleeper, 2*time.Second)
	id := h.submit(t, "q", "k", `{}`, 30*time.Second).ID
	child := h.pid(t, id)
	start := time.Now()
	p.Stop(300 * time.Millisecond)
	took := time.Since(start)
	if took < 300*time.Millisecond || took > 3*time.Second {
		t.Fatalf("Stop(300ms) took %v", took)
	}
	waitDead(t, child, time.Second, "the command after the grace period")
	job := h.get(t, id)
	if job.Status != app.StatusQueued || job.Attempts != 0 || len(job.Errors) != 0 || time.Until(job.RunAt) > 0 {
		t.Fatalf("after Stop: %s attempts %d errors %v run_at in %v; want queued at once, the attempt not counted",
			job.Status, job.Attempts, job.Errors, time.Until(job.RunAt))
	}
	// Another worker takes it at once, as attempt 1.
	h.commandPool(t, "q", `echo '"again"'`, 0)
	job = h.waitJob(t, id, 3*time.Second, "done", isStatus(app.StatusDone))
	if job.Attempts != 1 || string(job.Result) != `"again"` {
		t.Fatalf("rerun: attempts %d result %s; want 1 and \"again\"", job.Attempts, job.Result)
	}
}

func testStopLetsJobFinish(t *testing.T, h *harness) {
	p := h.commandPool(t, "q", `echo $$ > "$PIDS/$QUEUE_JOB_ID"; sleep 0.4; echo '"finished"'`, 0)
	id := h.submit(t, "q", "k", `{}`, 30*time.Second).ID
	h.pid(t, id)
	p.Stop(5 * time.Second)
	if job := h.get(t, id); job.Status != app.StatusDone || string(job.Result) != `"finished"` || job.Attempts != 1 {
		t.Fatalf("after Stop: %s result %s attempts %d; want done within the grace period", job.Status, job.Result, job.Attempts)
	}
}

func testInterruptEndsGrace(t *testing.T, h *harness) {
	p := h.commandPool(t, "q", sleeper, 2*time.Second)
	id := h.submit(t, "q", "k", `{}`, 30*time.Second).ID
	child := h.pid(t, id)
	stopped := make(chan struct{})
	start := time.Now()
	go func() { p.Stop(time.Minute); close(stopped) }()
	time.Sleep(100 * time.Millisecond)
	p.Interrupt() // a second SIGINT
	select {
	case <-stopped:
	case <-time.After(5 * time.Second):
		t.Fatal("Stop(1m) still waits 5s after Interrupt")
	}
	t.Logf("Stop(1m) with Interrupt after 100ms took %v", time.Since(start))
	waitDead(t, child, time.Second, "the command after Interrupt")
	if job := h.get(t, id); job.Status != app.StatusQueued || job.Attempts != 0 {
		t.Fatalf("after Interrupt: %s attempts %d; want queued, the attempt not counted", job.Status, job.Attempts)
	}
}

func testGoPermanent(t *testing.T, h *harness) {
	h.pool(t, "q", func(ctx context.Context, job *app.Job) (any, error) {
		return nil, client.Permanent(fmt.Errorf("payload %s: unknown customer", job.Payload))
	}, 1)
	id := h.submit(t, "q", "k", `7`, 0).ID
	job := h.waitJob(t, id, 5*time.Second, "dead-lettered", isStatus(app.StatusDeadLetter))
	if job.DeadLetter.Reason != app.ReasonPermanentFailure || !strings.Contains(job.DeadLetter.LastError, "payload 7: unknown customer") {
		t.Fatalf("dead letter %+v", job.DeadLetter)
	}
}

func testGoPanic(t *testing.T, h *harness) {
	h.pool(t, "q", func(ctx context.Context, job *app.Job) (any, error) { panic("kaboom") }, 1)
	id := h.submit(t, "q", "k", `{}`, 0).ID
	job := h.waitJob(t, id, 5*time.Second, "failed once", failedOnce)
	if !strings.Contains(job.Errors[0].Error, "handler panicked: kaboom") || job.Status == app.StatusDeadLetter {
		t.Fatalf("job %s errors %v; want a retried failure naming the panic", job.Status, job.Errors)
	}
}

func testGoCancel(t *testing.T, h *harness) {
	started := make(chan struct{})
	sawCancel := make(chan error, 1)
	h.pool(t, "q", func(ctx context.Context, job *app.Job) (any, error) {
		close(started)
		<-ctx.Done()
		sawCancel <- ctx.Err()
		return nil, ctx.Err()
	}, 1)
	id := h.submit(t, "q", "k", `{}`, 600*time.Millisecond).ID
	<-started
	if _, err := h.svc.Cancel(t.Context(), id, nil, "test"); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-sawCancel:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("ctx.Err() = %v, want context.Canceled", err)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("the handler's context did not end after the cancel")
	}
	h.waitJob(t, id, 2*time.Second, "cancelled", isStatus(app.StatusCancelled))
}

func testGoTimeout(t *testing.T, h *harness) {
	h.pool(t, "q", func(ctx context.Context, job *app.Job) (any, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	}, 1)
	id := h.submit(t, "q", "k", `{}`, 600*time.Millisecond).ID
	job := h.waitJob(t, id, 3*time.Second, "failed once", failedOnce)
	if e := job.Errors[0].Error; !strings.Contains(e, "timed out after 600ms") {
		t.Fatalf("errors[0] = %q; want a timeout", e)
	}
}

// countingBackend counts CompleteBatch calls and can fail calls on purpose.
type countingBackend struct {
	worker.Backend
	batches, items atomic.Int64
	failClaims     atomic.Int64 // fail this many claims
	failCompletes  atomic.Int64 // fail this many CompleteBatch calls
}

var errDown = errors.New("dial tcp 127.0.0.1:1: connect: connection refused")

func (b *countingBackend) Claim(ctx context.Context, queue string, in app.ClaimInput) ([]*app.Job, error) {
	if b.failClaims.Add(-1) >= 0 {
		return nil, errDown
	}
	return b.Backend.Claim(ctx, queue, in)
}

func (b *countingBackend) CompleteBatch(ctx context.Context, items []app.Completion) ([]error, error) {
	if b.failCompletes.Add(-1) >= 0 {
		return nil, errDown
	}
	b.batches.Add(1)
	b.items.Add(int64(len(items)))
	return b.Backend.CompleteBatch(ctx, items)
}

func testCompletionsBatched(t *testing.T, h *harness) {
	cb := &countingBackend{Backend: h.backend}
	h.backend = cb
	const n = 60
	ins := make([]app.SubmitInput, n)
	for i := range ins {
		ins[i] = app.SubmitInput{Queue: "q", Kind: "k", Payload: json.RawMessage(strconv.Itoa(i))}
	}
	res, err := h.svc.Submit(t.Context(), ins)
	if err != nil {
		t.Fatal(err)
	}
	h.pool(t, "q", func(ctx context.Context, job *app.Job) (any, error) {
		time.Sleep(5 * time.Millisecond)
		return map[string]json.RawMessage{"n": job.Payload}, nil
	}, 10)
	for _, r := range res {
		job := h.waitJob(t, r.Job.ID, 10*time.Second, "done", isStatus(app.StatusDone))
		if want := fmt.Sprintf(`{"n":%s}`, r.Job.Payload); string(job.Result) != want {
			t.Fatalf("result %s, want %s", job.Result, want)
		}
	}
	t.Logf("%d completions in %d calls", cb.items.Load(), cb.batches.Load())
	if cb.items.Load() != n || cb.batches.Load() >= n {
		t.Fatalf("%d completions in %d calls; want %d completions batched into fewer calls", cb.items.Load(), cb.batches.Load(), n)
	}
}

func testBackendErrorsRetried(t *testing.T, h *harness) {
	cb := &countingBackend{Backend: h.backend}
	cb.failClaims.Store(3)
	cb.failCompletes.Store(2)
	h.backend = cb
	h.pool(t, "q", func(ctx context.Context, job *app.Job) (any, error) { return "ok", nil }, 1)
	id := h.submit(t, "q", "k", `{}`, 0).ID
	job := h.waitJob(t, id, 10*time.Second, "done", isStatus(app.StatusDone))
	if string(job.Result) != `"ok"` || job.Attempts != 1 {
		t.Fatalf("result %s attempts %d", job.Result, job.Attempts)
	}
}

func testWorkerPerKind(t *testing.T, h *harness) {
	w := client.NewWorker(h.backend, "q", client.WithLogger(h.log), client.WithPollWait(5*time.Second))
	var mu sync.Mutex
	running := map[string]int{}
	peak := map[string]int{}
	track := func(kind string) client.HandlerFunc {
		return func(ctx context.Context, job *client.Job) (any, error) {
			mu.Lock()
			running[kind]++
			peak[kind] = max(peak[kind], running[kind])
			mu.Unlock()
			time.Sleep(50 * time.Millisecond)
			mu.Lock()
			running[kind]--
			mu.Unlock()
			return kind, nil
		}
	}
	w.Handle("slow", track("slow"), client.Concurrency(1))
	w.Handle("fast", track("fast"), client.Concurrency(4))
	if err := w.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Stop(0) })
	var ids []int64
	for i := 0; i < 8; i++ {
		ids = append(ids, h.submit(t, "q", "slow", `{}`, 0).ID, h.submit(t, "q", "fast", `{}`, 0).ID)
	}
	for _, id := range ids {
		job := h.waitJob(t, id, 10*time.Second, "done", isStatus(app.StatusDone))
		if string(job.Result) != `"`+job.Kind+`"` {
			t.Fatalf("job of kind %s got result %s", job.Kind, job.Result)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if peak["slow"] != 1 || peak["fast"] < 2 || peak["fast"] > 4 {
		t.Fatalf("peak concurrency %v; want slow 1 and fast 2..4", peak)
	}
	w2 := client.NewWorker(h.backend, "q")
	w2.Handle("a", track("a"))
	w2.Handle("a", track("a"))
	if err := w2.Start(t.Context()); err == nil || !strings.Contains(err.Error(), "registered twice") {
		t.Fatalf("Start with a kind registered twice: %v", err)
	}
}

func testOnce(t *testing.T, h *harness) {
	var sideEffects atomic.Int64
	w := client.NewWorker(h.backend, "q", client.WithLogger(h.log), client.WithPollWait(5*time.Second))
	w.Handle("charge", func(ctx context.Context, job *client.Job) (any, error) {
		res, err := client.Once(ctx, "charge-"+string(job.Payload), func(ctx context.Context) (any, error) {
			return map[string]int64{"charge": sideEffects.Add(1)}, nil
		})
		if err != nil {
			return nil, err
		}
		return res, nil
	})
	if err := w.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Stop(0) })
	a := h.submit(t, "q", "charge", `1`, 0).ID
	h.waitJob(t, a, 5*time.Second, "done", isStatus(app.StatusDone))
	b := h.submit(t, "q", "charge", `1`, 0).ID // the same side effect, run again
	job := h.waitJob(t, b, 5*time.Second, "done", isStatus(app.StatusDone))
	if n := sideEffects.Load(); n != 1 || string(job.Result) != `{"charge":1}` {
		t.Fatalf("side effect ran %d times; second result %s", n, job.Result)
	}
	if _, err := client.Once(t.Context(), "k", func(context.Context) (any, error) { return nil, nil }); err == nil {
		t.Fatal("client.Once outside a handler: want an error")
	}
}

func testClaimWakes(t *testing.T, h *harness) {
	got := make(chan time.Time, 1)
	h.pool(t, "q", func(ctx context.Context, job *app.Job) (any, error) {
		got <- time.Now()
		return nil, nil
	}, 1)
	time.Sleep(200 * time.Millisecond) // the claim is waiting
	sent := time.Now()
	h.submit(t, "q", "k", `{}`, 0)
	select {
	case at := <-got:
		if d := at.Sub(sent); d > 500*time.Millisecond {
			t.Fatalf("the waiting worker got the job %v after it landed", d)
		}
	case <-time.After(3 * time.Second):
		t.Fatal("the job never reached the waiting worker")
	}
}

func testWorkerRun(t *testing.T, h *harness) {
	ctx, cancel := context.WithCancel(t.Context())
	w := client.NewWorker(h.backend, "q", client.WithLogger(h.log), client.WithGrace(time.Second), client.WithPollWait(5*time.Second))
	w.Handle("k", func(ctx context.Context, job *client.Job) (any, error) { return nil, nil })
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	id := h.submit(t, "q", "k", `{}`, 0).ID
	h.waitJob(t, id, 5*time.Second, "done", isStatus(app.StatusDone))
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(3 * time.Second):
		t.Fatal("Run did not return after its ctx ended")
	}
}
