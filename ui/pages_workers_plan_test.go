package ui_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/queuehq/queue/app"
	"github.com/queuehq/queue/memory"
	"github.com/queuehq/queue/ui"
)

// listingStore records the filters of the listings read through it.
type listingStore struct {
	app.Store
	mu      sync.Mutex
	filters []app.JobFilter
}

func (s *listingStore) List(ctx context.Context, f app.JobFilter) ([]*app.Job, error) {
	s.mu.Lock()
	s.filters = append(s.filters, f)
	s.mu.Unlock()
	return s.Store.List(ctx, f)
}

// The workers page reads its processing jobs in run order, the listing
// SQLite serves from the partial index of processing jobs
// (sqlite.TestProcessingListingUsesItsIndex); by id it walked the whole
// table on every refresh.
func TestPagesWorkersReadProcessingJobsThroughTheirIndex(t *testing.T) {
	clock := app.NewFakeClock(time.Now().UTC().Truncate(time.Millisecond))
	bus := app.NewBus()
	store := &listingStore{Store: memory.New(app.StoreOptions{Clock: clock, Bus: bus})}
	t.Cleanup(func() { store.Close() })
	svc := app.NewService(store, uiConfig(t), clock, bus, zerolog.Nop())
	srv := httptest.NewServer(ui.New(ui.Options{Service: svc, Log: zerolog.Nop(), Version: "v0.0.0-test"}))
	t.Cleanup(srv.Close)
	a := newUIClient(t, srv.URL).get("/workers")
	wantStatus(t, "workers", a, http.StatusOK)
	store.mu.Lock()
	defer store.mu.Unlock()
	found := false
	for _, f := range store.filters {
		if f.Status != string(app.StatusProcessing) {
			continue
		}
		found = true
		if f.Order != app.OrderRunAt || f.Limit < 1 || f.Limit > 500 {
			t.Errorf("the workers page lists processing jobs with order %q, limit %d; want run order (jobs_processing), at most 500", f.Order, f.Limit)
		}
	}
	if !found {
		t.Fatalf("the workers page read no processing jobs: %+v", store.filters)
	}
}
