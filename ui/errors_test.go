package ui_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/queuehq/queue/app"
	"github.com/queuehq/queue/internal/openapitest"
	"github.com/queuehq/queue/memory"
	"github.com/queuehq/queue/sqlite"
	"github.com/queuehq/queue/ui"
)

// An error answer names the job, row or queue and the problem, never the
// operation it went through inside the server ("submit: ", "replay: "):
// that context is for the log. Each store gives the same answer.
func TestErrorMessagesLeaveOutTheOperation(t *testing.T) {
	for _, withSQLite := range []bool{false, true} {
		t.Run(map[bool]string{false: "memory", true: "sqlite"}[withSQLite], func(t *testing.T) {
			s := errorServer(t, withSQLite)
			s.submit(`{"queue":"capped","kind":"k"}`)
			s.submit(`{"kind":"k","idempotency_key":"once"}`)
			id := num(s.submit(`{"queue":"work","kind":"k"}`), "id")
			lease := num(s.claim("work"), "lease")
			if a := s.post(fmt.Sprintf("/api/jobs/%d/complete", id), fmt.Sprintf(`{"lease":%d}`, lease)); a.status != http.StatusOK {
				t.Fatalf("complete: %d %s", a.status, a.body)
			}
			for _, tc := range []struct {
				name     string
				answer   answer
				status   int
				wantBody string
			}{
				{"full queue", s.post("/api/jobs", `{"queue":"capped","kind":"k"}`), http.StatusTooManyRequests, `{"error":{"code":"queue_full","message":"queue full: queue \"capped\" holds 1 queued jobs (max_queued 1)"}}`},
				{"key of another kind", s.post("/api/jobs", `{"kind":"other","idempotency_key":"once"}`), http.StatusConflict, `{"error":{"code":"idempotency_conflict","message":"idempotency key conflict: key \"once\" in queue \"default\" belongs to job 2"}}`},
				{"stale heartbeat", s.post(fmt.Sprintf("/api/jobs/%d/heartbeat", id), fmt.Sprintf(`{"lease":%d}`, lease)), http.StatusConflict, `{"error":{"code":"lease_lost","message":"job 3: lease lost: the lease is stale (the job was recovered, finished or claimed again); nothing was changed"}}`},
				{"stale complete", s.post(fmt.Sprintf("/api/jobs/%d/complete", id), fmt.Sprintf(`{"lease":%d}`, lease)), http.StatusConflict, `{"error":{"code":"lease_lost","message":"job 3: lease lost: the lease is stale (the job was recovered, finished or claimed again); nothing was changed"}}`},
				{"unknown heartbeat", s.post("/api/jobs/999/heartbeat", `{"lease":1}`), http.StatusNotFound, `{"error":{"code":"not_found","message":"job 999: not found"}}`},
				{"unknown complete", s.post("/api/jobs/999/complete", `{"lease":1}`), http.StatusNotFound, `{"error":{"code":"not_found","message":"job 999: not found"}}`},
				{"unknown replay", s.post("/api/dlq/999/replay", `{}`), http.StatusNotFound, `{"error":{"code":"not_found","message":"dead-letter row 999: not found"}}`},
				{"unknown purge", s.do(http.MethodDelete, "/api/dlq/999", "", nil), http.StatusNotFound, `{"error":{"code":"not_found","message":"dead-letter row 999: not found"}}`},
			} {
				got := strings.TrimSpace(string(tc.answer.body))
				if tc.answer.status != tc.status || got != tc.wantBody {
					t.Errorf("%s: %d %s\nwant %d %s", tc.name, tc.answer.status, got, tc.status, tc.wantBody)
				}
			}
		})
	}
}

// errorServer is newServer with a queue "capped" that holds one job.
func errorServer(t *testing.T, withSQLite bool) *server {
	t.Helper()
	bus := app.NewBus()
	clock := app.NewFakeClock(time.Now().UTC().Truncate(time.Millisecond))
	sopts := app.StoreOptions{Clock: clock, Bus: bus}
	var store app.Store = memory.New(sopts)
	if withSQLite {
		st, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "q.db"), sqlite.Options{StoreOptions: sopts, Sync: "normal"})
		if err != nil {
			t.Fatal(err)
		}
		store = st
	}
	t.Cleanup(func() { store.Close() })
	cfg := app.DefaultConfig()
	cfg.Queues["capped"] = app.QueueConfig{MaxQueued: 1}
	svc := app.NewService(store, cfg, clock, bus, zerolog.Nop())
	srv := httptest.NewServer(openapitest.Handler(t, ui.New(ui.Options{Service: svc, Log: zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel)})))
	t.Cleanup(srv.Close)
	return &server{t: t, url: srv.URL, svc: svc, clock: clock}
}
