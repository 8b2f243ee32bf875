// Command go-worker is a Go worker for queue: it submits a few jobs and
// runs a handler for them with the Go package, github.com/queuehq/queue/client.
//
//	./queue serve &
//	go run ./examples/go-worker                      # QUEUE_SERVER, QUEUE_TOKEN if set
//
// In a program of your own: go get github.com/queuehq/queue/client.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/queuehq/queue/client"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "go-worker:", err)
		os.Exit(1)
	}
}

func run() error {
	server := os.Getenv("QUEUE_SERVER")
	if server == "" {
		server = "http://127.0.0.1:8080"
	}
	if !strings.Contains(server, "://") {
		server = "http://" + server
	}
	c := client.New(server, client.WithToken(os.Getenv("QUEUE_TOKEN")))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	// The worker: one handler per kind. Returning a value completes the
	// job with it as the result; an error retries it with backoff;
	// client.Permanent(err) sends it to the dead-letter queue at once.
	w := client.NewWorker(c, "go-example")
	w.Handle("resize", func(ctx context.Context, job *client.Job) (any, error) {
		var p struct {
			Image string `json:"image"`
			Width int    `json:"width"`
		}
		if err := json.Unmarshal(job.Payload, &p); err != nil || p.Image == "" {
			return nil, client.Permanent(errors.New("payload needs an image"))
		}
		// A real handler would do the work here, watching ctx: it ends on
		// the job's timeout, a cancel, or shutdown.
		return map[string]any{"image": p.Image, "width": p.Width, "resized": true}, nil
	}, client.Concurrency(4))
	if err := w.Start(ctx); err != nil {
		return err
	}
	defer w.Stop(30 * time.Second) // running jobs get 30s to finish

	// Submit three jobs and wait for each to end.
	for i, img := range []string{"a.png", "b.png", "c.png"} {
		sub, err := c.Submit(ctx, client.SubmitInput{Queue: "go-example", Kind: "resize",
			Payload: json.RawMessage(fmt.Sprintf(`{"image":%q,"width":%d}`, img, 100*(i+1)))})
		if err != nil {
			return fmt.Errorf("submit: %w", err)
		}
		job, err := c.Get(ctx, sub.Job.ID, client.GetOptions{Wait: 30 * time.Second})
		if err != nil {
			return fmt.Errorf("wait for job %d: %w", sub.Job.ID, err)
		}
		fmt.Printf("job %d %s %s\n", job.ID, job.Status, job.Result)
		if job.Status != "done" {
			return fmt.Errorf("job %d ended %s", job.ID, job.Status)
		}
	}
	return nil
}
