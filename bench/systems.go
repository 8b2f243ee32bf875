package main

import (
	"context"
	"encoding/json"
	"strconv"
)

// system is one queue under test, as a scenario drives it. Every job
// carries one number, t: the Unix nanosecond at which it was submitted (0
// for jobs whose latency is not measured).
type system interface {
	// Submit stores one job and returns once the store acknowledged it.
	Submit(ctx context.Context, t int64) error
	// SubmitBatch stores n jobs in one call.
	SubmitBatch(ctx context.Context, n int, t int64) error
	// Work starts the system's workers with a no-op handler that calls
	// handle with the job's t when it starts. stop stops them gracefully:
	// when it returns, every handled job is acknowledged.
	Work(ctx context.Context, handle func(t int64)) (stop func(), err error)
	// Completed counts the jobs the store holds as completed.
	Completed(ctx context.Context) (int64, error)
	// Close releases everything the system holds.
	Close() error
}

// serverProc is implemented by systems that run in a process of their own:
// its pid is measured beside the bench process.
type serverProc interface {
	ServerPID() int
}

// systemInfo names a system and says how to open it.
type systemInfo struct {
	Name  string // flag value and table key
	Label string // table label
	Ours  bool
	SQL   string // "sqlite" or "postgres"
	// Plain systems are `queue serve` driven by plain net/http (no client
	// package): they run the issue 29 HTTP scenarios only.
	Plain bool
	open  func(ctx context.Context, e *env) (system, error)
}

var systems = []systemInfo{
	{Name: "queue", Label: "queue, in-process (SQLite)", Ours: true, SQL: "sqlite", open: openQueueLocal},
	{Name: "queue-http", Label: "queue, over HTTP (SQLite)", Ours: true, SQL: "sqlite", open: openQueueHTTP},
	{Name: "queue-pg", Label: "queue, in-process (PostgreSQL)", Ours: true, SQL: "postgres", open: openQueuePG},
	{Name: "river-sqlite", Label: "River 0.51.2 (SQLite)", SQL: "sqlite", open: openRiverSQLite},
	{Name: "river-pg", Label: "River 0.51.2 (PostgreSQL)", SQL: "postgres", open: openRiverPG},
	{Name: "goqite", Label: "goqite 0.2.3 (SQLite)", SQL: "sqlite", open: openGoqite},
	{Name: "http-sqlite", Label: "queue serve (SQLite), plain HTTP client", Ours: true, SQL: "sqlite", Plain: true, open: openPlainSQLite},
	{Name: "http-pg", Label: "queue serve (PostgreSQL), plain HTTP client", Ours: true, SQL: "postgres", Plain: true, open: openPlainPG},
	// For profiling the HTTP path in one process; not in the default list.
	{Name: "queue-http-local", Label: "queue, HTTP API in the bench process (SQLite)", Ours: true, SQL: "sqlite", open: openQueueHTTPLocal},
}

func findSystem(name string) (systemInfo, bool) {
	for _, s := range systems {
		if s.Name == name {
			return s, true
		}
	}
	return systemInfo{}, false
}

// payload is the JSON body of every job.
func payload(t int64) []byte {
	return []byte(`{"t":` + strconv.FormatInt(t, 10) + `}`)
}

// payloadT reads t back from a job's JSON body.
func payloadT(b []byte) int64 {
	var p struct {
		T int64 `json:"t"`
	}
	if err := json.Unmarshal(b, &p); err != nil {
		return 0
	}
	return p.T
}

// env is what a child run knows: its scratch directory, durability, the
// PostgreSQL address, and the settings of every system.
type env struct {
	Dir         string // scratch directory of this run (removed afterwards)
	Sync        string // "full" or "normal" (SQLite only; PostgreSQL always commits durably)
	PostgresDSN string // server address; each run makes and drops its own database
	QueueBin    string // the queue binary for queue-http
	DBFile      string // if set, an existing SQLite file (a copy of the 1M template) to open
	PGTemplate  string // if set, queue-pg's database is a copy of this one (the 1M template)
	PGPrepare   string // prepare-postgres: the name of the template database to create and keep

	Concurrency   int // queue: jobs run at once per worker (claim batch size)
	HTTPWorkers   int // queue-http: worker processes' worth of client.Workers
	Claimers      int // http-sqlite, http-pg: claiming workers (set by the scenario)
	RiverWorkers  int
	RiverCooldown string
	RiverPoll     string
	RiverConns    int
	GoqiteWorkers int
	GoqitePoll    string
	PGConns       int

	pgDB    string // the database this run created: its backends' CPU counts too
	cleanup []func()
}

func (e *env) atExit(f func()) { e.cleanup = append(e.cleanup, f) }

func (e *env) close() {
	for i := len(e.cleanup) - 1; i >= 0; i-- {
		e.cleanup[i]()
	}
}

func sqliteSync(s string) string {
	if s == "normal" {
		return "NORMAL"
	}
	return "FULL"
}
