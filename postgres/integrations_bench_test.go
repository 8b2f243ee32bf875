package postgres

import (
	"testing"

	"github.com/queuehq/queue/app"
	"github.com/queuehq/queue/app/storetest"
)

// BenchmarkIntegrations is what webhooks and trace context cost the store
// (see storetest.BenchIntegrations).
func BenchmarkIntegrations(b *testing.B) {
	storetest.BenchIntegrations(b, func(tb testing.TB, opts app.StoreOptions) app.Store {
		return mustOpen(tb, Options{StoreOptions: opts, MaxConns: 16})
	})
}

// BenchmarkWebhookDelivery is deliveries per second over real HTTP to a
// local receiver (see storetest.BenchWebhookDelivery).
func BenchmarkWebhookDelivery(b *testing.B) {
	storetest.BenchWebhookDelivery(b, func(tb testing.TB, opts app.StoreOptions) app.Store {
		return mustOpen(tb, Options{StoreOptions: opts, MaxConns: 16})
	})
}
