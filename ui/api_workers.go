package ui

import (
	"errors"
	"net/http"
	"net/url"

	"github.com/labstack/echo/v4"

	"github.com/queuehq/queue/app"
)

// workerRoutes adds the worker registry (issue 26, app/workers.go):
// workers register and heartbeat (role work), anyone who reads lists them,
// an admin quiets or stops one. A token with a queue list sees and touches
// only the workers whose queues are all on its list.
func (h *handler) workerRoutes(api *echo.Group) {
	api.POST("/workers", h.registerWorker)
	api.GET("/workers", h.listWorkers)
	api.GET("/workers/:id", h.getWorker)
	api.POST("/workers/:id/heartbeat", h.workerHeartbeat)
	api.POST("/workers/:id/quiet", h.workerCommand(app.WorkerQuiet))
	api.POST("/workers/:id/stop", h.workerCommand(app.WorkerStop))
}

// workerID is the route's worker id. Echo leaves a parameter escaped when
// the path had to be (an id with a slash: host:1/builtin-0 sent as
// host:1%2Fbuiltin-0), so it is unescaped here, once.
func workerID(c echo.Context) (string, error) {
	id := c.Param("id")
	if c.Request().URL.RawPath != "" {
		u, err := url.PathUnescape(id)
		if err != nil {
			return "", app.Invalid("id", "the worker id in the path is not escaped properly")
		}
		id = u
	}
	return id, app.ValidateWorkerID(id)
}

// workerErr answers an unknown worker with 404 worker_not_found: the
// worker registers again.
func workerErr(err error) error {
	if errors.Is(err, app.ErrWorkerNotFound) {
		return newError(http.StatusNotFound, "worker_not_found", "%s", message(err))
	}
	return err
}

// checkWorkerQueues refuses a worker of a queue the token may not touch.
func checkWorkerQueues(c echo.Context, names []string) error {
	for _, q := range names {
		if err := checkQueue(c, q); err != nil {
			return err
		}
	}
	return nil
}

// checkWorker refuses worker id to a token that may not touch one of its
// queues; a token with a queue list pays one read for it.
func (h *handler) checkWorker(c echo.Context, id string) error {
	if !who(c).restricted() {
		return nil
	}
	w, err := h.svc.Worker(c.Request().Context(), id)
	if err != nil {
		return workerErr(err)
	}
	return checkWorkerQueues(c, w.QueueNames())
}

// registerWorker is POST /api/workers: 201 {"id", "command",
// "heartbeat_interval"}. An id already registered is taken over (a
// restart) and starts over with command run.
func (h *handler) registerWorker(c echo.Context) error {
	var in app.WorkerInput
	if err := bind(c, &in, smallBody, false); err != nil {
		return err
	}
	if in.Queues != nil {
		if err := checkWorkerQueues(c, in.Queues.Names); err != nil {
			return err
		}
	}
	if in.ID != "" && who(c).restricted() { // taking over a row needs its queues too
		if err := h.checkWorker(c, in.ID); err != nil && !isWorkerNotFound(err) {
			return err
		}
	}
	reg, err := h.svc.RegisterWorker(c.Request().Context(), in)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusCreated, reg)
}

func isWorkerNotFound(err error) bool {
	var ae *apiError
	return errors.As(err, &ae) && ae.Code == "worker_not_found"
}

// workerHeartbeat is POST /api/workers/{id}/heartbeat {"in_flight",
// "done", "failed"}: 200 {"command"}, or 404 worker_not_found.
func (h *handler) workerHeartbeat(c echo.Context) error {
	var in app.WorkerBeat
	if err := bind(c, &in, smallBody, true); err != nil {
		return err
	}
	id, err := workerID(c)
	if err != nil {
		return err
	}
	if err := h.checkWorker(c, id); err != nil {
		return err
	}
	cmd, err := h.svc.WorkerHeartbeat(c.Request().Context(), id, in)
	if err != nil {
		return workerErr(err)
	}
	return c.JSON(http.StatusOK, map[string]string{"command": cmd})
}

// listWorkers is GET /api/workers: {"workers": [...], "truncated"}, each
// with its state, the first app.MaxWorkersListed in id order; truncated
// says more are registered (GET /api/workers/{id} reads any of them). A
// token with a queue list sees only the workers whose queues are all on
// it.
func (h *handler) listWorkers(c echo.Context) error {
	ws, truncated, err := h.svc.Workers(c.Request().Context())
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]any{"workers": visibleWorkers(who(c), ws), "truncated": truncated})
}

// visibleWorkers keeps the workers whose queues p may all see.
func visibleWorkers(p *principal, ws []*app.Worker) []*app.Worker {
	if !p.restricted() {
		return ws
	}
	kept := []*app.Worker{}
	for _, w := range ws {
		if app.WorkerQueuesIn(w, p.allowsQueue) {
			kept = append(kept, w)
		}
	}
	return kept
}

// getWorker is GET /api/workers/{id}.
func (h *handler) getWorker(c echo.Context) error {
	id, err := workerID(c)
	if err != nil {
		return err
	}
	w, err := h.svc.Worker(c.Request().Context(), id)
	if err != nil {
		return workerErr(err)
	}
	if err := checkWorkerQueues(c, w.QueueNames()); err != nil {
		return err
	}
	return c.JSON(http.StatusOK, w)
}

// workerCommand is POST /api/workers/{id}/quiet and /stop (admin):
// stored and audited (worker.quiet, worker.stop) in one write; 200 with
// the worker. The worker obeys at its next heartbeat or claim.
func (h *handler) workerCommand(command string) echo.HandlerFunc {
	return func(c echo.Context) error {
		var in struct{}
		if err := bind(c, &in, smallBody, true); err != nil {
			return err
		}
		id, err := workerID(c)
		if err != nil {
			return err
		}
		if err := h.checkWorker(c, id); err != nil {
			return err
		}
		w, err := h.svc.SetWorkerCommand(c.Request().Context(), id, command, actor(c))
		if err != nil {
			return workerErr(err)
		}
		return c.JSON(http.StatusOK, w)
	}
}

// claimCommand is what a claim's answer adds for a registered worker:
// the command it is to obey ("" for a worker id nobody registered).
func (h *handler) claimCommand(c echo.Context, workerID string) string {
	cmd, err := h.svc.WorkerCommand(c.Request().Context(), workerID)
	if err != nil {
		return ""
	}
	return cmd
}
