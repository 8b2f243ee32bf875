package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http/httptest"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/queuehq/queue/app"
	"github.com/queuehq/queue/client"
	"github.com/queuehq/queue/memory"
	"github.com/queuehq/queue/ui"
)

// newServer starts a queue server in memory, as `queue serve --db memory`
// would; a real program points client.New at its server's URL instead.
func newServer() (*app.Service, *httptest.Server) {
	bus := app.NewBus()
	svc := app.NewService(memory.New(app.StoreOptions{Bus: bus}), nil, nil, bus, zerolog.Nop())
	return svc, httptest.NewServer(ui.New(ui.Options{Service: svc, Log: zerolog.Nop()}))
}

// Submit a job over HTTP and work it with a Go handler.
func Example() {
	svc, srv := newServer()
	defer srv.Close()
	defer svc.Stop()
	ctx := context.Background()

	c := client.New(srv.URL) // client.WithToken(token) when the server has one

	// A worker for the "emails" queue: one handler per kind, each with its
	// own concurrency.
	w := client.NewWorker(c, "emails")
	w.Handle("email.send", func(ctx context.Context, job *client.Job) (any, error) {
		var p struct {
			To string `json:"to"`
		}
		if err := json.Unmarshal(job.Payload, &p); err != nil {
			return nil, client.Permanent(fmt.Errorf("bad payload: %w", err)) // no retry
		}
		// ... send the email; honour ctx, it ends on timeout or cancel ...
		return map[string]string{"sent_to": p.To}, nil
	}, client.Concurrency(4))
	if err := w.Start(ctx); err != nil {
		fmt.Println(err)
		return
	}
	defer w.Stop(30 * time.Second) // finish running jobs, give the rest back

	sub, err := c.Submit(ctx, client.SubmitInput{Queue: "emails", Kind: "email.send",
		Payload: json.RawMessage(`{"to":"ada@example.com"}`)})
	if err != nil {
		fmt.Println(err)
		return
	}
	job, err := c.Get(ctx, sub.Job.ID, client.GetOptions{Wait: 10 * time.Second}) // until it is finished
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(job.Status, string(job.Result), job.Attempts)
	// Output: done {"sent_to":"ada@example.com"} 1
}

// A handler that returns a Permanent error sends its job straight to the
// dead-letter queue; any other error retries it with backoff.
func ExamplePermanent() {
	svc, srv := newServer()
	defer srv.Close()
	defer svc.Stop()
	ctx := context.Background()
	c := client.New(srv.URL)

	w := client.NewWorker(c, "default")
	w.Handle("invoice.send", func(ctx context.Context, job *client.Job) (any, error) {
		return nil, client.Permanent(errors.New("customer 7 has no address"))
	})
	if err := w.Start(ctx); err != nil {
		fmt.Println(err)
		return
	}
	defer w.Stop(time.Second)

	sub, _ := c.Submit(ctx, client.SubmitInput{Kind: "invoice.send"})
	job, err := c.Get(ctx, sub.Job.ID, client.GetOptions{Wait: 10 * time.Second})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(job.Status, job.DeadLetter.Reason, job.DeadLetter.LastError)
	// Output: dead_letter permanent_failure permanent failure: customer 7 has no address
}

// A Worker can also run in the process that serves the queue, without HTTP.
func ExampleLocal() {
	bus := app.NewBus()
	svc := app.NewService(memory.New(app.StoreOptions{Bus: bus}), nil, nil, bus, zerolog.Nop())
	defer svc.Stop()
	ctx := context.Background()

	w := client.NewWorker(client.Local(svc), "thumbnails")
	w.Handle("resize", func(ctx context.Context, job *client.Job) (any, error) {
		return json.RawMessage(`{"width":128}`), nil
	})
	if err := w.Start(ctx); err != nil {
		fmt.Println(err)
		return
	}
	defer w.Stop(time.Second)

	res, err := svc.Submit(ctx, []app.SubmitInput{{Queue: "thumbnails", Kind: "resize"}})
	if err != nil {
		fmt.Println(err)
		return
	}
	job, err := svc.Get(ctx, res[0].Job.ID, 10*time.Second, false)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(job.Status, string(job.Result))
	// Output: done {"width":128}
}

// Once keeps a side effect from repeating when a job runs again (jobs run
// at least once): the second job with the same key gets the stored result.
func ExampleOnce() {
	svc, srv := newServer()
	defer srv.Close()
	defer svc.Stop()
	ctx := context.Background()
	c := client.New(srv.URL)

	var charges atomic.Int64 // handlers run on other goroutines
	w := client.NewWorker(c, "payments")
	w.Handle("charge", func(ctx context.Context, job *client.Job) (any, error) {
		var p struct {
			Order string `json:"order"`
		}
		if err := json.Unmarshal(job.Payload, &p); err != nil {
			return nil, client.Permanent(err)
		}
		return client.Once(ctx, "charge:"+p.Order, func(ctx context.Context) (any, error) {
			n := charges.Add(1) // the side effect: charge the card
			return map[string]int64{"charge_id": 1000 + n}, nil
		})
	})
	if err := w.Start(ctx); err != nil {
		fmt.Println(err)
		return
	}
	defer w.Stop(time.Second)

	for i := 0; i < 2; i++ { // the same order twice, as a retry would
		sub, _ := c.Submit(ctx, client.SubmitInput{Queue: "payments", Kind: "charge", Payload: json.RawMessage(`{"order":"A-17"}`)})
		job, err := c.Get(ctx, sub.Job.ID, client.GetOptions{Wait: 10 * time.Second})
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Println(job.Status, string(job.Result))
	}
	fmt.Println("charged", charges.Load(), "time(s)")
	// Output:
	// done {"charge_id":1001}
	// done {"charge_id":1001}
	// charged 1 time(s)
}

// A unique submission answers with the job already pending for the same
// thing (Duplicate) instead of making a second one; see docs/flow-control.md.
func ExampleClient_Submit_unique() {
	svc, srv := newServer()
	defer srv.Close()
	defer svc.Stop()
	ctx := context.Background()

	c := client.New(srv.URL)
	in := client.SubmitInput{Queue: "reports", Kind: "report.build", Key: "doc-7",
		Unique: &app.UniqueRule{By: []string{"key", "kind"}, For: app.Duration(10 * time.Minute)}}
	first, _ := c.Submit(ctx, in)
	again, _ := c.Submit(ctx, in)
	fmt.Println(first.Duplicate, again.Duplicate, again.Job.ID == first.Job.ID)
	// Output: false true true
}

// One Worker over several queues: by weight (critical=6,default=3), or in
// a strict order ("critical,default").
func ExampleWithQueues() {
	svc, srv := newServer()
	defer srv.Close()
	defer svc.Stop()
	ctx := context.Background()

	qs, err := app.ParseQueueChoice("critical=6,default=3")
	if err != nil {
		fmt.Println(err)
		return
	}
	c := client.New(srv.URL)
	w := client.NewWorker(c, "", client.WithQueues(qs))
	w.Handle("ping", func(ctx context.Context, job *client.Job) (any, error) { return job.Queue, nil })
	if err := w.Start(ctx); err != nil {
		fmt.Println(err)
		return
	}
	defer w.Stop(time.Second)

	for _, q := range []string{"critical", "default"} {
		sub, _ := c.Submit(ctx, client.SubmitInput{Queue: q, Kind: "ping"})
		job, _ := c.Get(ctx, sub.Job.ID, client.GetOptions{Wait: 10 * time.Second})
		fmt.Println(job.Status, string(job.Result))
	}
	// Output:
	// done "critical"
	// done "default"
}
