package client_test

import (
	"context"
	"errors"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/queuehq/queue/app"
	"github.com/queuehq/queue/client"
	"github.com/queuehq/queue/memory"
	"github.com/queuehq/queue/ui"
)

// A Go Worker registers once for all its kinds (type go, the sum of their
// concurrency), Workers lists it, QuietWorker and StopWorker reach it, and
// Run returns once it is stopped, its running job given back.
func TestWorkerRegistersAndObeysStop(t *testing.T) {
	svc := app.NewService(memory.New(app.StoreOptions{}), nil, app.SystemClock{}, app.NewBus(), zerolog.Nop())
	srv := httptest.NewServer(ui.New(ui.Options{Service: svc, Log: zerolog.Nop()}))
	defer srv.Close()
	cl := client.New(srv.URL)
	ctx := t.Context()

	started := make(chan int64, 1)
	w := client.NewWorker(cl, "billing", client.WithWorkerID("go-billing-1"), client.WithPollWait(time.Second))
	w.Handle("invoice.render", func(ctx context.Context, job *client.Job) (any, error) {
		started <- job.ID
		<-ctx.Done()
		return nil, ctx.Err()
	}, client.Concurrency(3))
	w.Handle("invoice.send", func(ctx context.Context, job *client.Job) (any, error) { return nil, nil })
	ran := make(chan error, 1)
	go func() { ran <- w.Run(context.Background()) }()

	var info *client.WorkerInfo
	for deadline := time.Now().Add(10 * time.Second); info == nil; time.Sleep(20 * time.Millisecond) {
		ws, err := cl.Workers(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, x := range ws {
			if x.ID == "go-billing-1" {
				info = x
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("the worker is not listed within 10s")
		}
	}
	if info.Type != app.WorkerGo || info.Concurrency != 4 || len(info.Kinds) != 2 || info.Queues.Names[0] != "billing" || info.State != app.WorkerRunning {
		t.Fatalf("listed as %+v", info)
	}

	sub, err := cl.Submit(ctx, app.SubmitInput{Queue: "billing", Kind: "invoice.render"})
	if err != nil {
		t.Fatal(err)
	}
	<-started
	if j, _ := cl.Get(ctx, sub.Job.ID, client.GetOptions{}); j.WorkerID != "go-billing-1" {
		t.Fatalf("the job is held by %q, want the registered id", j.WorkerID)
	}
	if q, err := cl.QuietWorker(ctx, "go-billing-1"); err != nil || q.State != app.WorkerQuieted {
		t.Fatalf("QuietWorker: %+v, %v", q, err)
	}
	if s, err := cl.StopWorker(ctx, "go-billing-1"); err != nil || s.State != app.WorkerStopping {
		t.Fatalf("StopWorker: %+v, %v", s, err)
	}
	select {
	case err := <-ran:
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("Run did not return within 20s of the stop")
	}
	if j, _ := cl.Get(ctx, sub.Job.ID, client.GetOptions{}); j.Status != app.StatusQueued || j.Attempts != 0 {
		t.Fatalf("the running job after stop: %s, %d attempts; want queued, given back", j.Status, j.Attempts)
	}
	if _, err := cl.WorkerHeartbeat(ctx, "nobody", app.WorkerBeat{}); !errors.Is(err, app.ErrWorkerNotFound) {
		t.Fatalf("heartbeat of an unknown worker: %v, want ErrWorkerNotFound", err)
	}
	if _, err := cl.StopWorker(ctx, "nobody"); !errors.Is(err, app.ErrWorkerNotFound) {
		t.Fatalf("StopWorker of an unknown worker: %v, want ErrWorkerNotFound", err)
	}
}
