package postgres

import (
	"testing"

	"github.com/queuehq/queue/app"
	"github.com/queuehq/queue/app/storetest"
)

// BenchmarkLive is progress reports and log appends of running jobs (see
// storetest.BenchLive).
func BenchmarkLive(b *testing.B) {
	storetest.BenchLive(b, func(tb testing.TB, opts app.StoreOptions) app.Store {
		return mustOpen(tb, Options{StoreOptions: opts, MaxConns: 16})
	})
}
