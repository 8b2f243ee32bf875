package ui_test

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/queuehq/queue/app"
	"github.com/queuehq/queue/internal/openapitest"
	"github.com/queuehq/queue/ui"
)

// TestBrowserLiveEdges: the live pages' answers that are not the server
// going away. A stream the server refuses is reopened on a backoff, never
// in a loop (a refused stream's error must not reconnect it at once); a
// page that answers 400 (its form with the message) is still the page,
// with no banner; a job page whose job is deleted says so and stops
// reading itself.
func TestBrowserLiveEdges(t *testing.T) {
	browser := newBrowser(t)
	env := newUIEnv(t, ui.Options{}, false)
	inner := openapitest.Handler(t, ui.New(ui.Options{Service: env.svc, Scheduler: env.sched,
		Log: zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.ErrorLevel)}))
	var streams, listReads, jobReads atomic.Int64 // requests for /api/events, /jobs, /jobs/{id}
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/api/events" {
			streams.Add(1)
		}
		if r.URL.Path == "/jobs" {
			listReads.Add(1)
		}
		if strings.HasPrefix(r.URL.Path, "/jobs/") {
			jobReads.Add(1)
		}
		inner.ServeHTTP(w, r)
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: handler}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("serve: %v", err)
		}
	}()
	t.Cleanup(func() { srv.Close() })
	tb := newTab(t, browser, "http://"+ln.Addr().String(), true)
	banner := `!document.querySelector("[data-down-banner]").hidden`

	t.Run("RefusedStreamBacksOff", func(t *testing.T) {
		tb.t = t
		// The page answers 400 (no such queue name) and its stream,
		// /api/events?queue=bad%20queue, is refused (400) every time.
		tb.openStatus("/jobs?queue=bad%20queue")
		start := streams.Load()
		time.Sleep(5 * time.Second)
		// Backoff from 2 s: the first stream and at most two more.
		if n := streams.Load() - start; n > 3 {
			t.Errorf("a refused stream was asked for %d times in 5 s: it reconnects in a loop", n)
		}
	})

	t.Run("BadInputPageIsThePage", func(t *testing.T) {
		tb.t = t
		if code := tb.openStatus("/jobs?kind=bad%20kind"); code != http.StatusBadRequest {
			t.Fatalf("/jobs?kind=bad%%20kind answers %d, want 400", code)
		}
		if _, ok := tb.waitFor(liveOpen, 5*time.Second); !ok {
			t.Fatalf("the live bar says %q, want the event stream open", tb.text("[data-live-status]"))
		}
		before := listReads.Load()
		mustSubmit(t, env.svc, app.SubmitInput{Queue: "emails", Kind: "edge.bad"}) // an event: the page reads itself
		for deadline := time.Now().Add(5 * time.Second); listReads.Load() == before; time.Sleep(50 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatal("the page did not read itself after an event")
			}
		}
		time.Sleep(time.Second) // the answer arrives and is shown
		if tb.visible("[data-down-banner]") {
			t.Errorf("a page that answers 400 with its form shows the banner: %q", tb.text("[data-down-banner]"))
		}
	})

	t.Run("DeletedJobStops", func(t *testing.T) {
		tb.t = t
		job := mustSubmit(t, env.svc, app.SubmitInput{Queue: "edges", Kind: "edge.gone"})[0]
		if _, err := env.svc.Cancel(t.Context(), job.ID, nil, "test"); err != nil {
			t.Fatal(err)
		}
		tb.open(fmt.Sprintf("/jobs/%d", job.ID))
		if _, ok := tb.waitFor(liveOpen, 5*time.Second); !ok {
			t.Fatalf("the live bar says %q, want the event stream open", tb.text("[data-live-status]"))
		}
		if _, err := env.svc.BulkLive(t.Context(), app.LiveDelete, app.LiveBulkInput{IDs: []int64{job.ID}}, "test"); err != nil {
			t.Fatal(err)
		}
		if _, ok := tb.waitFor(banner, 8*time.Second); !ok {
			t.Fatalf("the job was deleted but its open page says nothing (live bar %q)", tb.text("[data-live-status]"))
		}
		tb.wantText("[data-down-banner]", "no longer exists")
		n := jobReads.Load()
		time.Sleep(6 * time.Second) // past the fallback poll (5 s)
		if m := jobReads.Load(); m != n {
			t.Errorf("the page of a deleted job read itself %d more times", m-n)
		}
	})
	tb.t = t
	for _, p := range tb.problems() {
		if strings.Contains(p, "status of 400") || strings.Contains(p, "status of 404") {
			continue // the refused stream, the bad filter, the deleted job: on purpose
		}
		t.Errorf("%s", p)
	}
}
