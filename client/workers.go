package client

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"

	"github.com/queuehq/queue/app"
	"github.com/queuehq/queue/worker"
)

// A Client keeps a Worker in the server's registry of workers (see
// docs/workers.md, "The worker registry").
var _ worker.Registry = (*Client)(nil)

// WorkerInfo is a registered worker as GET /api/workers lists it, with its
// state: running, quiet, stopping or gone.
type WorkerInfo = app.Worker

// RegisterWorker registers a worker process (POST /api/workers): the
// answer holds its id (the server makes one if in.ID is empty), the
// command to obey and how often to heartbeat. A worker registered under
// the id before is taken over and starts over with command run.
func (c *Client) RegisterWorker(ctx context.Context, in app.WorkerInput) (*app.WorkerRegistered, error) {
	var out app.WorkerRegistered
	if _, _, err := c.do(ctx, http.MethodPost, "/api/workers", in, &out, nil); err != nil {
		return nil, err
	}
	return &out, nil
}

// WorkerHeartbeat reports a registered worker's counts (POST
// /api/workers/{id}/heartbeat) and returns the command it is to obey:
// run, quiet or stop. A worker the server does not know (it aged out) is
// an error matching app.ErrWorkerNotFound: register again.
func (c *Client) WorkerHeartbeat(ctx context.Context, id string, b app.WorkerBeat) (string, error) {
	var out struct {
		Command string `json:"command"`
	}
	_, _, err := c.do(ctx, http.MethodPost, "/api/workers/"+url.PathEscape(id)+"/heartbeat", b, &out, nil)
	if err != nil {
		return "", workerErr(err)
	}
	return out.Command, nil
}

// Workers lists the registered workers (GET /api/workers); a token with a
// queue list sees those whose queues are all on it.
func (c *Client) Workers(ctx context.Context) ([]*WorkerInfo, error) {
	var out struct {
		Workers []*WorkerInfo `json:"workers"`
	}
	_, _, err := c.do(ctx, http.MethodGet, "/api/workers", nil, &out, nil)
	return out.Workers, err
}

// QuietWorker tells worker id to claim nothing more and finish what it
// runs (admin; audited as worker.quiet). It obeys at its next heartbeat
// or claim.
func (c *Client) QuietWorker(ctx context.Context, id string) (*WorkerInfo, error) {
	return c.workerCommand(ctx, id, app.WorkerQuiet)
}

// StopWorker tells worker id to claim nothing more, give its running jobs
// back to the queue without using up their attempt, and exit (admin;
// audited as worker.stop).
func (c *Client) StopWorker(ctx context.Context, id string) (*WorkerInfo, error) {
	return c.workerCommand(ctx, id, app.WorkerStop)
}

func (c *Client) workerCommand(ctx context.Context, id, command string) (*WorkerInfo, error) {
	var out WorkerInfo
	if _, _, err := c.do(ctx, http.MethodPost, "/api/workers/"+url.PathEscape(id)+"/"+command, nil, &out, nil); err != nil {
		return nil, workerErr(err)
	}
	return &out, nil
}

// workerErr makes the server's 404 worker_not_found match
// app.ErrWorkerNotFound.
func workerErr(err error) error {
	var e *Error
	if errors.As(err, &e) && e.Code == "worker_not_found" {
		return fmt.Errorf("%w: %w", app.ErrWorkerNotFound, err)
	}
	return err
}
