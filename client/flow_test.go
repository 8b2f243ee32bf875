package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/queuehq/queue/app"
	"github.com/queuehq/queue/client"
	"github.com/queuehq/queue/memory"
	"github.com/queuehq/queue/ui"
	"github.com/queuehq/queue/worker"
)

// flowServer serves the API over a memory store whose queue "sync" runs
// one job per key at once, and returns a Client to it and the Service.
func flowServer(t *testing.T) (*client.Client, *app.Service) {
	t.Helper()
	cfg := app.DefaultConfig()
	cfg.Queues["sync"] = app.QueueConfig{KeyConcurrency: 1, KeyRate: app.KeyRate{N: 10, Per: time.Minute}}
	bus := app.NewBus()
	store := memory.New(app.StoreOptions{Bus: bus, KeyLimits: cfg.KeyLimits})
	log := zerolog.New(zerolog.NewTestWriter(t))
	svc := app.NewService(store, cfg, app.SystemClock{}, bus, log)
	srv := httptest.NewServer(ui.New(ui.Options{Service: svc, Log: log}))
	t.Cleanup(srv.Close)
	t.Cleanup(svc.Stop) // runs first: long polls answer, so the server can close
	return client.New(srv.URL), svc
}

func dur(d time.Duration) *app.Duration { v := app.Duration(d); return &v }

// Submit tells a job that a unique, debounce or throttle rule answered
// with (Duplicate) from a new one, and from an idempotent replay.
func TestSubmitDuplicate(t *testing.T) {
	cl, _ := flowServer(t)
	ctx := t.Context()
	in := app.SubmitInput{Kind: "report.build", Key: "doc-7", Payload: json.RawMessage(`{"v":1}`),
		Unique: &app.UniqueRule{By: []string{"key", "kind"}, For: app.Duration(10 * time.Minute)}}
	first, err := cl.Submit(ctx, in)
	if err != nil || first.Duplicate || first.Replayed {
		t.Fatalf("first unique Submit: %+v, %v; want a new job", first, err)
	}
	in.Payload = json.RawMessage(`{"v":2}`)
	again, err := cl.Submit(ctx, in)
	if err != nil || !again.Duplicate || again.Replayed || again.Job.ID != first.Job.ID || string(again.Job.Payload) != `{"v":1}` {
		t.Fatalf("unique Submit again: %+v, %v; want job %d, Duplicate", again, err, first.Job.ID)
	}
	plain, err := cl.Submit(ctx, app.SubmitInput{Kind: "report.build", Key: "doc-7", IdempotencyKey: "once"})
	replay, err2 := cl.Submit(ctx, app.SubmitInput{Kind: "report.build", Key: "doc-7", IdempotencyKey: "once"})
	if err != nil || err2 != nil || plain.Duplicate || replay.Duplicate || !replay.Replayed || replay.Job.Key != "doc-7" {
		t.Fatalf("idempotent replay: %+v then %+v (%v, %v); want Replayed, not Duplicate", plain, replay, err, err2)
	}

	// Twenty at once make one job.
	var wg sync.WaitGroup
	ids := make(chan int64, 20)
	for i := range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := cl.Submit(ctx, app.SubmitInput{Kind: "k", Key: "burst", Unique: &app.UniqueRule{}, Payload: json.RawMessage(`{}`)})
			if err != nil {
				t.Errorf("concurrent unique Submit %d: %v", i, err)
				return
			}
			ids <- res.Job.ID
		}()
	}
	wg.Wait()
	close(ids)
	seen := map[int64]bool{}
	for id := range ids {
		seen[id] = true
	}
	if len(seen) != 1 {
		t.Errorf("20 concurrent unique submissions made jobs %v, want one", seen)
	}

	// Debounce: the last payload wins; throttle: the first job stays.
	var jobs []*client.Submitted
	for i, p := range []string{`{"n":1}`, `{"n":2}`, `{"n":3}`} {
		res, err := cl.Submit(ctx, app.SubmitInput{Queue: "hooks", Kind: "webhook", Key: "repo-9", Debounce: dur(30 * time.Second), Payload: json.RawMessage(p)})
		if err != nil || res.Duplicate != (i > 0) {
			t.Fatalf("debounce %d: %+v, %v", i, res, err)
		}
		jobs = append(jobs, res)
	}
	if last := jobs[2].Job; last.ID != jobs[0].Job.ID || string(last.Payload) != `{"n":3}` || time.Until(last.RunAt) < 25*time.Second {
		t.Errorf("debounced job %d: payload %s, run_at %s; want job %d with the last payload, 30s on", last.ID, last.Payload, last.RunAt, jobs[0].Job.ID)
	}
	t1, err := cl.Submit(ctx, app.SubmitInput{Queue: "hooks", Kind: "notify", Key: "acct-1", Throttle: dur(time.Minute), Payload: json.RawMessage(`1`)})
	t2, err2 := cl.Submit(ctx, app.SubmitInput{Queue: "hooks", Kind: "notify", Key: "acct-1", Throttle: dur(time.Minute), Payload: json.RawMessage(`2`)})
	if err != nil || err2 != nil || t1.Duplicate || !t2.Duplicate || t2.Job.ID != t1.Job.ID || string(t2.Job.Payload) != `1` {
		t.Errorf("throttle: %+v then %+v (%v, %v); want the first job kept", t1, t2, err, err2)
	}
}

// ClaimQueues claims over several queues: in a strict order, the first
// queue with work; by weight, in roughly the ratio; a long poll wakes on
// any of them.
func TestClaimQueues(t *testing.T) {
	cl, svc := flowServer(t)
	ctx := t.Context()
	submit := func(queue string, n int) {
		t.Helper()
		ins := make([]app.SubmitInput, n)
		for i := range ins {
			ins[i] = app.SubmitInput{Queue: queue, Kind: "k"}
		}
		if _, err := svc.Submit(ctx, ins); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := cl.ClaimQueues(ctx, app.ClaimInput{}); err == nil || !strings.Contains(err.Error(), "name the queues") {
		t.Errorf("ClaimQueues without queues: %v", err)
	}
	strict, _ := app.ParseQueueChoice("critical,default")
	submit("default", 2)
	submit("critical", 1)
	for i, want := range []string{"critical", "default", "default"} {
		jobs, err := cl.ClaimQueues(ctx, app.ClaimInput{Queues: strict, WorkerID: "w"})
		if err != nil || len(jobs) != 1 || jobs[0].Queue != want {
			t.Fatalf("strict claim %d: %v, %v; want a job of %s", i, jobs, err, want)
		}
	}

	weighted, _ := app.ParseQueueChoice("a=6,b=3,c=1")
	for _, q := range []string{"a", "b", "c"} {
		submit(q, 300)
	}
	got := map[string]int{}
	for range 200 {
		jobs, err := cl.ClaimQueues(ctx, app.ClaimInput{Queues: weighted, WorkerID: "w"})
		if err != nil || len(jobs) != 1 {
			t.Fatalf("weighted claim: %v, %v", jobs, err)
		}
		got[jobs[0].Queue]++
	}
	// 200 draws of 0.6/0.3/0.1: each count within about five standard deviations.
	if got["a"] < 85 || got["a"] > 155 || got["b"] < 30 || got["b"] > 90 || got["c"] < 3 || got["c"] > 45 {
		t.Errorf("200 claims over a=6,b=3,c=1 went %v, want about 120, 60, 20", got)
	}

	idle, _ := app.ParseQueueChoice("x=1,y=1")
	done := make(chan []*app.Job, 1)
	go func() {
		jobs, err := cl.ClaimQueues(ctx, app.ClaimInput{Queues: idle, Wait: dur(10 * time.Second), WorkerID: "w"})
		if err != nil {
			t.Errorf("long poll: %v", err)
		}
		done <- jobs
	}()
	time.Sleep(100 * time.Millisecond)
	began := time.Now()
	submit("y", 1)
	select {
	case jobs := <-done:
		if len(jobs) != 1 || jobs[0].Queue != "y" || time.Since(began) > 2*time.Second {
			t.Errorf("long poll over x and y: %v after %s; want y's job at once", jobs, time.Since(began))
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a long poll over x and y did not wake on y's job")
	}
}

// QueueKeys shows a queue's key limits and the keys holding jobs back;
// List filters by key.
func TestQueueKeysAndListByKey(t *testing.T) {
	cl, svc := flowServer(t)
	ctx := t.Context()
	for _, k := range []string{"acct-1", "acct-1", "acct-1", "acct-2"} {
		if _, err := svc.Submit(ctx, []app.SubmitInput{{Queue: "sync", Kind: "k", Key: k}}); err != nil {
			t.Fatal(err)
		}
	}
	st, err := cl.QueueKeys(ctx, "sync", 5)
	if err != nil {
		t.Fatal(err)
	}
	if st.Queue != "sync" || st.Limits != (client.KeyLimits{KeyConcurrency: 1, KeyRate: "10/1m"}) || st.Held != 2 ||
		len(st.AtLimit) != 1 || st.AtLimit[0] != (app.KeyCount{Key: "acct-1", Queued: 3, Held: 2}) || len(st.Busiest) != 2 {
		t.Errorf("QueueKeys(sync) = %+v", st)
	}
	if _, err := cl.QueueKeys(ctx, "sync", 500); err == nil {
		t.Errorf("QueueKeys(sync, 500): no error")
	}
	page, err := cl.List(ctx, client.ListOptions{Key: "acct-1"})
	if err != nil || len(page.Jobs) != 3 {
		t.Fatalf("List(Key acct-1): %v, %v", page, err)
	}
	for _, j := range page.Jobs {
		if j.Key != "acct-1" || j.Held != (j.ID != 1) {
			t.Errorf("List(Key acct-1): job %d key %q waiting_for_key %v", j.ID, j.Key, j.Held)
		}
	}
}

// A Worker over several queues (WithQueues) runs the jobs of each, over
// HTTP and in process; naming a queue too is an error at Start.
func TestWorkerWithQueues(t *testing.T) {
	cl, svc := flowServer(t)
	for name, b := range map[string]client.Backend{"http": cl, "local": client.Local(svc)} {
		t.Run(name, func(t *testing.T) {
			qs, _ := app.ParseQueueChoice(name + "-hi=3," + name + "-lo=1")
			w := client.NewWorker(b, "", client.WithQueues(qs), client.WithPollWait(time.Second))
			var mu sync.Mutex
			ran := map[string]int{}
			w.Handle("k", func(ctx context.Context, job *client.Job) (any, error) {
				mu.Lock()
				defer mu.Unlock()
				ran[job.Queue]++
				return nil, nil
			}, client.Concurrency(4))
			if err := w.Start(t.Context()); err != nil {
				t.Fatal(err)
			}
			defer w.Stop(time.Second)
			for _, q := range []string{name + "-hi", name + "-lo", name + "-hi"} {
				if _, err := svc.Submit(t.Context(), []app.SubmitInput{{Queue: q, Kind: "k"}}); err != nil {
					t.Fatal(err)
				}
			}
			for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
				mu.Lock()
				hi, lo := ran[name+"-hi"], ran[name+"-lo"]
				mu.Unlock()
				if hi == 2 && lo == 1 {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("after 5s the worker ran %d jobs of %s-hi and %d of %s-lo, want 2 and 1", hi, name, lo, name)
				}
			}
		})
	}

	qs, _ := app.ParseQueueChoice("a,b")
	w := client.NewWorker(cl, "a", client.WithQueues(qs))
	w.Handle("k", func(context.Context, *client.Job) (any, error) { return nil, nil })
	if err := w.Start(t.Context()); err == nil || !strings.Contains(err.Error(), `NewWorker's queue "a" and WithQueues both name the queues`) {
		t.Errorf("NewWorker(cl, \"a\", WithQueues(a,b)).Start: %v", err)
	}
}

// claimOnly is a Backend that cannot claim from several queues.
type claimOnly struct{ worker.Backend }

// A Pool checks Queues at Start: a Backend that claims from several
// queues, no Queue beside it, app's rules for the names and weights.
func TestPoolQueuesChecked(t *testing.T) {
	cl, _ := flowServer(t)
	handler := func(context.Context, *app.Job) (any, error) { return nil, nil }
	for _, tc := range []struct {
		name string
		pool *worker.Pool
		want string
	}{
		{"backend", &worker.Pool{Backend: claimOnly{cl}, Queues: &app.QueueChoice{Names: []string{"a"}}, Handler: handler}, "Queues needs a Backend that claims from several queues"},
		{"queue too", &worker.Pool{Backend: cl, Queue: "a", Queues: &app.QueueChoice{Names: []string{"b"}}, Handler: handler}, `Queue "a" and Queues "b" both set`},
		{"weights", &worker.Pool{Backend: cl, Queues: &app.QueueChoice{Names: []string{"a", "b"}, Weights: []int{1}}, Handler: handler}, "2 names and 1 weights"},
		{"zero weight", &worker.Pool{Backend: cl, Queues: &app.QueueChoice{Names: []string{"a"}, Weights: []int{0}}, Handler: handler}, `the weight of queue "a" is 0`},
		{"bad name", &worker.Pool{Backend: cl, Queues: &app.QueueChoice{Names: []string{"a b"}}, Handler: handler}, `queue name "a b"`},
		{"none", &worker.Pool{Backend: cl, Queues: &app.QueueChoice{}, Handler: handler}, "Queues names no queue"},
	} {
		err := tc.pool.Start(t.Context())
		if err == nil {
			tc.pool.Stop(0)
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: Start = %v, want %q", tc.name, err, tc.want)
		}
	}
	var ie *app.InvalidError
	if _, err := cl.ClaimQueues(t.Context(), app.ClaimInput{}); !errors.As(err, &ie) {
		t.Errorf("ClaimQueues without queues: %T %v, want an *app.InvalidError", err, err)
	}
}
