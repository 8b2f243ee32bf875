package sqlite_test

import (
	"os"
	"strconv"
	"testing"

	"github.com/queuehq/queue/app"
	"github.com/queuehq/queue/app/storetest"
	"github.com/queuehq/queue/sqlite"
)

// BenchmarkWorkflow is 10,000 jobs from submission to the last one done,
// synchronous=FULL, 8 workers: plain, as a fan-out/fan-in workflow, and as
// 5,000 parent-child pairs (see storetest.BenchWorkflows).
func BenchmarkWorkflow(b *testing.B) {
	storetest.BenchWorkflows(b, func(b *testing.B) app.Store { return MustOpen(b, sqlite.Options{}) }, benchN(), 8)
}

// benchN is the size of BenchmarkWorkflow's runs: QUEUE_BENCH_WORKFLOW_N, else 10,000.
func benchN() int {
	if n, err := strconv.Atoi(os.Getenv("QUEUE_BENCH_WORKFLOW_N")); err == nil && n > 1 {
		return n
	}
	return 10000
}
