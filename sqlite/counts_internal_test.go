package sqlite

import (
	"context"

	"github.com/queuehq/queue/app"
)

// RowStats is Stats from a count of every row, the truth the counters must
// equal: a read-only store's Stats with its counts taken from the rows.
func (s *Store) RowStats(ctx context.Context) ([]app.QueueStats, error) {
	ro, err := Open(ctx, s.path, Options{ReadOnly: true, StoreOptions: app.StoreOptions{Clock: s.clock}})
	if err != nil {
		return nil, err
	}
	defer ro.Close()
	if ro.counts, err = readCounts(ctx, ro.rdb, countRowsSQL); err != nil {
		return nil, err
	}
	return ro.Stats(ctx)
}
