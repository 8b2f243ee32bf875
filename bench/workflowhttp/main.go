// Command workflowhttp measures workflows and flow control by key from
// outside: the queue binary serving over HTTP, a plain client, 10,000 jobs
// submitted as ten batches of 1,000 plain jobs against one 10,000-step
// fan-out/fan-in workflow and against 10,000 keyed jobs (1,000 keys of 10
// jobs each) on a queue with key_concurrency = 1, eight HTTP workers
// (-workers) claiming up to 100 with a 1 s long poll and acknowledging in
// batches; the time from the first submission to the last job done, in
// rounds, with the ratios. `make bench` runs it on SQLite (and on PostgreSQL
// when QUEUE_TEST_POSTGRES_DSN is set); docs/benchmarks.md has the figures.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
)

func main() {
	bin := flag.String("bin", "../queue", "the queue binary")
	db := flag.String("db", "", "the database (default: a SQLite file in a temporary directory)")
	n := flag.Int("n", 10000, "jobs per run")
	rounds := flag.Int("rounds", 3, "rounds")
	workers := flag.Int("workers", 8, "HTTP workers")
	flag.Parse()
	if err := run(*bin, *db, *n, *rounds, *workers); err != nil {
		fmt.Fprintln(os.Stderr, "workflowhttp:", err)
		os.Exit(1)
	}
}

func run(bin, db string, n, rounds, workers int) error {
	dir, err := os.MkdirTemp("", "workflowhttp")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	if db == "" {
		db = filepath.Join(dir, "queue.db")
	}
	if strings.HasPrefix(db, "postgres") { // a schema of its own, dropped after
		schema := fmt.Sprintf("workflowhttp_%d", time.Now().UnixNano())
		sep := "?"
		if strings.Contains(db, "?") {
			sep = "&"
		}
		defer func() {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if conn, err := pgx.Connect(ctx, db); err == nil {
				conn.Exec(ctx, `DROP SCHEMA IF EXISTS `+pgx.Identifier{schema}.Sanitize()+` CASCADE`)
				conn.Close(ctx)
			}
		}()
		db += sep + "search_path=" + schema
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	addr := l.Addr().String()
	l.Close()
	cfg := filepath.Join(dir, "queue.toml") // keyed queues are named keyed*
	if err := os.WriteFile(cfg, []byte("[defaults]\nkey_concurrency = 1\n"), 0o600); err != nil {
		return err
	}
	cmd := exec.Command(bin, "serve", "--addr", addr, "--db", db, "--config", cfg)
	cmd.Env = append(os.Environ(), "QUEUE_TOKEN=", "QUEUE_CONFIG=") // an open server, whatever this shell holds
	if err := cmd.Start(); err != nil {
		return err
	}
	defer func() { cmd.Process.Signal(os.Interrupt); cmd.Wait() }()
	url := "http://" + addr
	for i := 0; ; i++ {
		if resp, err := httpc.Get(url + "/readyz"); err == nil && resp.StatusCode == 200 {
			resp.Body.Close()
			break
		}
		if i > 100 {
			return fmt.Errorf("%s serve not ready", bin)
		}
		time.Sleep(50 * time.Millisecond)
	}
	c := &client{url: url, workers: workers}
	fmt.Printf("%d jobs, %d HTTP workers, %s\n", n, workers, db)
	for round := range rounds {
		q := fmt.Sprintf("plain%d-%d", round, time.Now().UnixNano())
		plain, err := c.drain(q, n, func() error {
			for b := 0; b < n; b += 1000 {
				jobs := []map[string]any{}
				for range min(1000, n-b) {
					jobs = append(jobs, map[string]any{"queue": q, "kind": "k", "payload": map[string]int{"n": 1}})
				}
				if st := c.post("/api/jobs/batch", map[string]any{"jobs": jobs}, nil); st != 201 {
					return fmt.Errorf("batch: %d", st)
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
		q = fmt.Sprintf("wf%d-%d", round, time.Now().UnixNano())
		wf, err := c.drain(q, n, func() error {
			steps := []map[string]any{}
			for i := range n - 1 {
				steps = append(steps, map[string]any{"step": fmt.Sprint("s", i), "queue": q, "kind": "k", "payload": map[string]int{"n": 1}})
			}
			body := map[string]any{"name": "batch", "steps": steps, "callback": map[string]any{"queue": q, "kind": "k"}}
			if st := c.post("/api/workflows", body, nil); st != 201 {
				return fmt.Errorf("workflow: %d", st)
			}
			return nil
		})
		if err != nil {
			return err
		}
		q = fmt.Sprintf("keyed%d-%d", round, time.Now().UnixNano())
		keyed, err := c.drain(q, n, func() error {
			for b := 0; b < n; b += 1000 {
				jobs := []map[string]any{}
				for i := range min(1000, n-b) {
					jobs = append(jobs, map[string]any{"queue": q, "kind": "k", "key": fmt.Sprint("acct-", (b+i)%1000), "payload": map[string]int{"n": 1}})
				}
				if st := c.post("/api/jobs/batch", map[string]any{"jobs": jobs}, nil); st != 201 {
					return fmt.Errorf("batch: %d", st)
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
		fmt.Printf("round %d: plain %v, fan-out/fan-in %v (ratio %.2f), keyed %v (ratio %.2f)\n", round, plain.Round(time.Millisecond),
			wf.Round(time.Millisecond), float64(wf)/float64(plain), keyed.Round(time.Millisecond), float64(keyed)/float64(plain))
	}
	return nil
}

type client struct {
	url     string
	workers int
}

// httpc keeps a connection per worker: Go's default keeps two per host, and
// eight workers would open and close connections all run long (as the
// bench harness's httpClient says).
var httpc = func() *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = 64
	return &http.Client{Transport: tr, Timeout: 90 * time.Second}
}()

func (c *client) post(path string, body, out any) int {
	b, _ := json.Marshal(body)
	resp, err := httpc.Post(c.url+path, "application/json", bytes.NewReader(b))
	if err != nil {
		return 0
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 300 {
		var e bytes.Buffer
		e.ReadFrom(resp.Body)
		fmt.Fprintf(os.Stderr, "POST %s: %d %s\n", path, resp.StatusCode, e.String())
	} else if out != nil {
		json.NewDecoder(resp.Body).Decode(out)
	}
	return resp.StatusCode
}

// drain runs submit while c.workers workers claim and complete from queue,
// until n jobs are done, and says how long it took.
func (c *client) drain(queue string, n int, submit func() error) (time.Duration, error) {
	var done atomic.Int64
	start := time.Now()
	var wg sync.WaitGroup
	stop := make(chan struct{})
	var once sync.Once
	for range c.workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				var claim struct {
					Jobs []struct {
						ID    int64 `json:"id"`
						Lease int64 `json:"lease"`
					} `json:"jobs"`
				}
				c.post("/api/queues/"+queue+"/claim", map[string]any{"limit": 100, "wait": "1s"}, &claim)
				if len(claim.Jobs) == 0 {
					continue
				}
				items := make([]map[string]any, len(claim.Jobs))
				for i, j := range claim.Jobs {
					items[i] = map[string]any{"id": j.ID, "lease": j.Lease, "result": 1}
				}
				if c.post("/api/jobs/complete", map[string]any{"jobs": items}, nil) != http.StatusOK {
					continue // not done: the leases expire and the jobs run again
				}
				if done.Add(int64(len(claim.Jobs))) >= int64(n) {
					once.Do(func() { close(stop) })
					return
				}
			}
		}()
	}
	if err := submit(); err != nil {
		once.Do(func() { close(stop) })
		wg.Wait()
		return 0, err
	}
	wg.Wait()
	return time.Since(start), nil
}
