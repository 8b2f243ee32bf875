package sqlite_test

import (
	"testing"

	"github.com/queuehq/queue/app"
	"github.com/queuehq/queue/app/storetest"
	"github.com/queuehq/queue/sqlite"
)

// BenchmarkIntegrations is what webhooks and trace context cost the store
// (see storetest.BenchIntegrations), synchronous=FULL.
func BenchmarkIntegrations(b *testing.B) {
	storetest.BenchIntegrations(b, func(tb testing.TB, opts app.StoreOptions) app.Store {
		return MustOpen(tb, sqlite.Options{StoreOptions: opts})
	})
}

// BenchmarkWebhookDelivery is deliveries per second over real HTTP to a
// local receiver (see storetest.BenchWebhookDelivery), synchronous=FULL.
func BenchmarkWebhookDelivery(b *testing.B) {
	storetest.BenchWebhookDelivery(b, func(tb testing.TB, opts app.StoreOptions) app.Store {
		return MustOpen(tb, sqlite.Options{StoreOptions: opts})
	})
}
