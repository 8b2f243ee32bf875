package client_test

import (
	"net/http/httptest"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/queuehq/queue/app"
	"github.com/queuehq/queue/client"
	"github.com/queuehq/queue/memory"
	"github.com/queuehq/queue/ui"
)

// Queues decodes GET /api/queues as the server writes it (snake_case keys,
// durations such as "30d"), every policy field included.
func TestQueuesDecodesThePolicy(t *testing.T) {
	cfg := app.DefaultConfig()
	cfg.Queues["mail"] = app.QueueConfig{MaxAttempts: 3, Timeout: app.Duration(2 * time.Minute), Concurrency: 4, Rate: 2.5, MaxQueued: 100}
	svc := app.NewService(memory.New(app.StoreOptions{}), cfg, app.SystemClock{}, app.NewBus(), zerolog.Nop())
	srv := httptest.NewServer(ui.New(ui.Options{Service: svc, Log: zerolog.Nop()}))
	defer srv.Close()
	qs, err := client.New(srv.URL).Queues(t.Context())
	if err != nil || len(qs) != 1 {
		t.Fatalf("Queues: %v, %v", qs, err)
	}
	got, want := qs[0].Config, cfg.Queue("mail")
	if got != want || got.DLQRetention.D() != 30*24*time.Hour || got.MaxAttempts != 3 {
		t.Fatalf("mail's policy over HTTP: %+v, want %+v", got, want)
	}
}
