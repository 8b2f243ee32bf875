package ui

import (
	"encoding/json"
	"fmt"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/queuehq/queue/app"
)

// sseHeartbeat keeps proxies from closing an idle event stream.
const sseHeartbeat = 15 * time.Second

// defaultMaxStreams caps open event streams when Options.MaxStreams is zero.
const defaultMaxStreams = 256

// streamCount counts the open event streams of a handler, server-wide.
// Each holds a connection and a buffer of 4096 events.
type streamCount struct{ n atomic.Int64 }

// enter takes a place for one more stream, or reports false when limit
// streams are open already.
func (s *streamCount) enter(limit int) bool {
	if limit <= 0 {
		limit = defaultMaxStreams
	}
	for {
		n := s.n.Load()
		if n >= int64(limit) {
			return false
		}
		if s.n.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

// leave gives a place back.
func (s *streamCount) leave() { s.n.Add(-1) }

// events streams lifecycle events as Server-Sent Events, filtered by queue
// and kind. A reader too slow to keep up is dropped with a final
// "event: overflow" rather than slowing any writer. Beyond
// Options.MaxStreams open streams it answers 503 (with Retry-After).
func (h *handler) events(c echo.Context) error {
	queue, kind := c.QueryParam("queue"), c.QueryParam("kind")
	job, logs, err := eventsJobQuery(c) // ?job= and ?logs= (api_progress.go)
	if err != nil {
		return err
	}
	if queue != "" {
		if err := app.ValidateQueue(queue); err != nil {
			return app.Invalid("queue", "%v", err)
		}
	}
	if kind != "" {
		if err := app.ValidateKind(kind); err != nil {
			return app.Invalid("kind", "kind %v", err)
		}
	}
	if !h.streams.enter(h.opts.MaxStreams) {
		return &busyError{newError(http.StatusServiceUnavailable, "unavailable", "the server holds as many event streams as it allows (server.max_streams); try again shortly")}
	}
	defer h.streams.leave()
	// Workflow events (workflow.*) carry no queue and no kind, so only a
	// stream without those filters gets them; a token with a queue list
	// always has a queue filter (scopedQueueParam), so it never sees a
	// workflow, which spans queues.
	sub := h.svc.Bus.Subscribe(4096, func(e *app.Event) bool {
		return (queue == "" || e.Queue == queue) && (kind == "" || e.Kind == kind) &&
			(job == 0 || e.JobID == job) && (logs || e.Type != app.EventLog)
	})
	defer sub.Close()
	w, rc := openStream(c)
	tick := time.NewTicker(sseHeartbeat)
	defer tick.Stop()
	ctx := c.Request().Context()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
			if _, err := fmt.Fprint(w, ": ping\n\n"); err != nil {
				return nil
			}
			rc.Flush()
		case ev, ok := <-sub.C:
			if !ok {
				fmt.Fprint(w, "event: overflow\ndata: {\"message\":\"the stream fell behind and was closed; reconnect\"}\n\n")
				rc.Flush()
				return nil
			}
			data, _ := json.Marshal(ev)
			if ev.ID > 0 {
				fmt.Fprintf(w, "id: %d\n", ev.ID)
			}
			if _, err := fmt.Fprintf(w, "event: %s\ndata: %s\n\n", ev.Type, data); err != nil {
				return nil
			}
			for more := true; more; { // send what is waiting in one flush
				select {
				case ev, ok := <-sub.C:
					if !ok {
						more = false
						break
					}
					data, _ := json.Marshal(ev)
					fmt.Fprintf(w, "event: %s\ndata: %s\n\n", ev.Type, data)
				default:
					more = false
				}
			}
			rc.Flush()
		}
	}
}

// openStream answers c with the head of an event stream (no write
// deadline, no caching or proxy buffering) and its first comment, flushed:
// /api/events and a log's tail.
func openStream(c echo.Context) (*echo.Response, *http.ResponseController) {
	w := c.Response()
	rc := http.NewResponseController(w)
	rc.SetWriteDeadline(time.Time{}) // a stream outlives the server's write timeout
	hd := w.Header()
	hd.Set("Content-Type", "text/event-stream")
	hd.Set("Cache-Control", "no-cache")
	hd.Set("Connection", "keep-alive")
	hd.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	fmt.Fprint(w, ": connected\n\n")
	rc.Flush()
	return w, rc
}
