package postgres

import (
	"os"
	"strconv"
	"testing"

	"github.com/queuehq/queue/app"
	"github.com/queuehq/queue/app/storetest"
)

// BenchmarkWorkflow is 10,000 jobs from submission to the last one done, 8
// workers: plain, as a fan-out/fan-in workflow, and as 5,000 parent-child
// pairs (see storetest.BenchWorkflows); QUEUE_BENCH_WORKFLOW_N sets the size.
func BenchmarkWorkflow(b *testing.B) {
	n := 10000
	if v, err := strconv.Atoi(os.Getenv("QUEUE_BENCH_WORKFLOW_N")); err == nil && v > 1 {
		n = v
	}
	storetest.BenchWorkflows(b, func(b *testing.B) app.Store { return mustOpen(b, Options{MaxConns: 16}) }, n, 8)
}
