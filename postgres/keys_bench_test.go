package postgres

import (
	"os"
	"strconv"
	"testing"

	"github.com/queuehq/queue/app"
	"github.com/queuehq/queue/app/storetest"
)

// BenchmarkKeys is claim-and-complete with 10,000 keys at key_concurrency
// 1 (and under round robin) against the plain claim, over 1,000,000 queued
// jobs (QUEUE_BENCH_KEYS_QUEUED to change), 4 workers.
func BenchmarkKeys(b *testing.B) {
	queued := 1_000_000
	if n, err := strconv.Atoi(os.Getenv("QUEUE_BENCH_KEYS_QUEUED")); err == nil && n > 0 {
		queued = n
	}
	storetest.BenchKeys(b, func(b testing.TB, opts app.StoreOptions) app.Store {
		return mustOpen(b, Options{StoreOptions: opts, MaxConns: 16})
	}, queued, 10_000, 4)
}

// BenchmarkFairness is a small key's pickup beside a key with a backlog
// of 10,000 (100:1), FIFO against round robin.
func BenchmarkFairness(b *testing.B) {
	storetest.BenchFairness(b, func(b testing.TB, opts app.StoreOptions) app.Store {
		return mustOpen(b, Options{StoreOptions: opts, MaxConns: 16})
	}, 10_000, 4)
}

// BenchmarkSubmitKeyed is keyed submissions against plain ones, from one
// producer and from 16 (see storetest.BenchSubmitKeyed).
func BenchmarkSubmitKeyed(b *testing.B) {
	storetest.BenchSubmitKeyed(b, func(b testing.TB, opts app.StoreOptions) app.Store {
		return mustOpen(b, Options{StoreOptions: opts, MaxConns: 16})
	})
}
