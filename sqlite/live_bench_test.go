package sqlite_test

import (
	"testing"

	"github.com/queuehq/queue/app"
	"github.com/queuehq/queue/app/storetest"
	"github.com/queuehq/queue/sqlite"
)

// BenchmarkLive is progress reports and log appends of running jobs (see
// storetest.BenchLive), synchronous=FULL.
func BenchmarkLive(b *testing.B) {
	storetest.BenchLive(b, func(tb testing.TB, opts app.StoreOptions) app.Store {
		return MustOpen(tb, sqlite.Options{StoreOptions: opts})
	})
}
