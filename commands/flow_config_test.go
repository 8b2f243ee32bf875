package commands

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/queuehq/queue/app"
	"github.com/queuehq/queue/memory"
)

// key_concurrency, key_rate (a string "N/period", or a TOML number: jobs
// per second) and fairness reach the Service's config per queue, with
// [defaults] under them; a periodic entry's key is kept.
func TestConfigKeyLimits(t *testing.T) {
	file, err := parseConfig("q.toml", []byte(`
[defaults]
key_concurrency = 2

[queues.sync]
key_concurrency = 1
key_rate = "10/1m"
fairness = "round_robin"

[queues.hooks]
key_rate = 5

[[periodic]]
cron = "@every 1m"
kind = "account.sync"
key = "acct-42"
`))
	if err != nil {
		t.Fatal(err)
	}
	cfg := file.serviceConfig()
	for _, tc := range []struct {
		queue string
		want  app.KeyLimits
	}{
		{"sync", app.KeyLimits{Concurrency: 1, Rate: app.KeyRate{N: 10, Per: time.Minute}, RoundRobin: true}},
		{"hooks", app.KeyLimits{Concurrency: 2, Rate: app.KeyRate{N: 5, Per: time.Second}}},
		{"other", app.KeyLimits{Concurrency: 2}},
	} {
		if got := cfg.KeyLimits(tc.queue); got != tc.want {
			t.Errorf("KeyLimits(%q) = %+v, want %+v", tc.queue, got, tc.want)
		}
	}
	if got := cfg.Periodic[0].Key; got != "acct-42" {
		t.Errorf("periodic key %q, want acct-42", got)
	}
}

// A bad key limit stops the load with the key, its line and the fix.
func TestConfigKeyLimitErrors(t *testing.T) {
	for _, tc := range []struct {
		name, text, key, want string
		line                  int
	}{
		{"negative concurrency", "[queues.q]\nkey_concurrency = -1\n", "queues.q.key_concurrency", "must be positive", 2},
		{"rate without number", "[queues.q]\n\nkey_rate = \"fast\"\n", "queues.q.key_rate", `give jobs per period, like "10/1m"`, 3},
		{"rate with a bad period", "[queues.q]\nkey_rate = \"10/fortnight\"\n", "queues.q.key_rate", "the period must be a duration", 2},
		{"rate as a fraction", "[queues.q]\nkey_rate = 0.5\n", "queues.q.key_rate", `give whole jobs per period: "1/2s"`, 2},
		{"negative rate", "[defaults]\nkey_rate = \"-3/1s\"\n", "defaults.key_rate", "give jobs per period", 2},
		{"unknown fairness", "[queues.q]\nfairness = \"fifo\"\n", "queues.q.fairness", `"fifo" is not "round_robin" (hand out keys in turn) or ""`, 2},
		{"fairness in defaults", "[defaults]\nfairness = \"RoundRobin\"\n", "defaults.fairness", `is not "round_robin"`, 2},
		{"long periodic key", "[[periodic]]\nkind = \"k\"\ncron = \"@daily\"\nkey = \"" + strings.Repeat("k", 256) + "\"\n", "periodic[0].key", "at most 255 bytes", 4},
	} {
		_, err := parseConfig("queue.toml", []byte(tc.text))
		var ce *configError
		if !errors.As(err, &ce) || ce.Key != tc.key || ce.Line != tc.line || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v (key %q, line %d), want a ConfigError at %s, line %d, saying %q", tc.name, err, keyOf(ce), lineOf(ce), tc.key, tc.line, tc.want)
		}
	}
}

func keyOf(ce *configError) string {
	if ce == nil {
		return ""
	}
	return ce.Key
}

func lineOf(ce *configError) int {
	if ce == nil {
		return 0
	}
	return ce.Line
}

// serve opens its store with the config's key limits: on a queue with
// key_concurrency = 1, a key's second job waits for its key.
func TestOpenServiceHandsKeyLimitsToTheStore(t *testing.T) {
	cfg, err := parseConfig("q.toml", []byte("[server]\ndb = \"memory\"\n\n[queues.sync]\nkey_concurrency = 1\n"))
	if err != nil {
		t.Fatal(err)
	}
	store, svc, _, err := openService(t.Context(), cfg, zerolog.New(zerolog.NewTestWriter(t)))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	var jobs []*app.Job
	for _, q := range []string{"sync", "sync", "other", "other"} {
		res, err := svc.Submit(t.Context(), []app.SubmitInput{{Queue: q, Kind: "k", Key: "acct-1", Payload: json.RawMessage(`{}`)}})
		if err != nil {
			t.Fatal(err)
		}
		j, err := svc.Get(t.Context(), res[0].Job.ID, 0, false)
		if err != nil {
			t.Fatal(err)
		}
		jobs = append(jobs, j)
	}
	for i, want := range []bool{false, true, false, false} {
		if got := jobs[i].Held; got != want {
			t.Errorf("job %d of %s (key acct-1): waiting_for_key %v, want %v", i+1, jobs[i].Queue, got, want)
		}
	}
}

// The leader's key sweep runs at once and then every interval, and logs
// what it released: here the held job of a limit since lifted.
func TestSweepKeysReleasesAndLogs(t *testing.T) {
	var limit atomic.Int64
	limit.Store(1)
	store := memory.New(app.StoreOptions{KeyLimits: func(string) app.KeyLimits {
		return app.KeyLimits{Concurrency: int(limit.Load())}
	}})
	svc := app.NewService(store, nil, nil, nil, zerolog.Nop())
	for range 2 {
		if _, err := svc.Submit(t.Context(), []app.SubmitInput{{Queue: "q", Kind: "k", Key: "a"}}); err != nil {
			t.Fatal(err)
		}
	}
	limit.Store(0) // the config no longer limits the queue's keys
	var out lockedLog
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { defer close(done); sweepKeys(ctx, store, time.Hour, zerolog.New(&out)) }()
	for deadline := time.Now().Add(5 * time.Second); !strings.Contains(out.String(), "key sweep released held jobs"); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no release logged at start within 5s; log: %s", out.String())
		}
	}
	cancel()
	<-done
	if !strings.Contains(out.String(), `"jobs":1`) {
		t.Errorf("log %s, want jobs 1", out.String())
	}
	page, err := svc.List(t.Context(), app.ListInput{Queue: "q"})
	if err != nil {
		t.Fatal(err)
	}
	for _, j := range page.Jobs {
		if j.Held {
			t.Errorf("job %d still waits for its key after the sweep", j.ID)
		}
	}
}

// lockedLog is a log buffer that a goroutine writes and the test reads.
type lockedLog struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
