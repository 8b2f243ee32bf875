package memory_test

import (
	"testing"

	"github.com/queuehq/queue/app"
	"github.com/queuehq/queue/app/storetest"
	"github.com/queuehq/queue/memory"
)

func TestStore(t *testing.T) {
	storetest.Run(t, func(t *testing.T, opts app.StoreOptions) app.Store {
		s := memory.New(opts)
		t.Cleanup(func() { s.Close() })
		return s
	})
}
