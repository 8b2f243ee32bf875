package app

import (
	"encoding/json"
	"testing"
	"time"
)

// The data of job.started and job.succeeded is the JSON the API documents,
// for any attempt, lease and duration.
func TestEventData(t *testing.T) {
	runAt := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	started := runAt.Add(1500 * time.Millisecond)
	for _, c := range []struct {
		job  Job
		want string
	}{
		{Job{Attempts: 1, Lease: 1, RunAt: runAt, StartedAt: &started}, `{"attempt":1,"lease":1,"wait_ms":1500}`},
		{Job{Attempts: 25, Lease: 9223372036854775807, RunAt: started, StartedAt: &runAt}, `{"attempt":25,"lease":9223372036854775807,"wait_ms":0}`},
		{Job{Attempts: 3, Lease: 7, RunAt: runAt}, `{"attempt":3,"lease":7,"wait_ms":0}`},
	} {
		got := StartedData(&c.job)
		if string(got) != c.want || !json.Valid(got) {
			t.Errorf("StartedData = %s, want %s", got, c.want)
		}
	}
	if got := string(FinishedData(&runAt, started)); got != `{"duration_ms":1500}` {
		t.Errorf("FinishedData = %s", got)
	}
	if got := string(FinishedData(&started, runAt)); got != `{"duration_ms":0}` {
		t.Errorf("FinishedData of a clock that went back = %s", got)
	}
	if got := FinishedData(nil, runAt); got != nil {
		t.Errorf("FinishedData without a start = %s, want none", got)
	}
}
