package ui

import (
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/queuehq/queue/app"
	"github.com/queuehq/queue/memory"
)

// BenchmarkMetricsJobEvents is what the metrics cost a job's three events
// (submitted, started, succeeded): the bus calls its observers on the
// store's writer goroutine, before the requests of the batch are answered.
func BenchmarkMetricsJobEvents(b *testing.B) {
	bus := app.NewBus()
	store := memory.New(app.StoreOptions{Bus: bus})
	defer store.Close()
	m := NewMetrics(app.NewService(store, nil, nil, bus, zerolog.Nop()))
	now := time.Now()
	j := &app.Job{ID: 1, Queue: "default", Kind: "email.send", Attempts: 1, Lease: 1, RunAt: now, StartedAt: &now}
	events := []app.Event{
		{Type: app.EventSubmitted, JobID: 1, Queue: j.Queue, Kind: j.Kind},
		{Type: app.EventStarted, JobID: 1, Queue: j.Queue, Kind: j.Kind, Data: app.StartedData(j)},
		{Type: app.EventSucceeded, JobID: 1, Queue: j.Queue, Kind: j.Kind, Data: app.FinishedData(&now, now.Add(3*time.Millisecond))},
	}
	b.ReportAllocs()
	for b.Loop() {
		for i := range events {
			m.observe(&events[i])
		}
	}
}
