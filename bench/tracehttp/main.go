// Command tracehttp measures what tracing costs a submission from outside:
// the queue binary serving over HTTP on a fresh SQLite file (or the
// PostgreSQL database -db names), plain net/http producers (-producers,
// comma-separated) each POSTing one job to /api/jobs with a traceparent
// header, for a window of -duration after a warm-up, with [tracing]
// endpoint pointing at a local sink that answers 200 to /v1/traces
// ("traced") and without it ("off": the traceparent is still stored and
// passed on). Modes alternate within each round. It prints submits/s and
// the server's CPU per 1,000 submits; docs/benchmarks.md, "Integrations
// (issue 27)", has the figures.
package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
)

func main() {
	bin := flag.String("bin", "../queue", "the queue binary")
	db := flag.String("db", "", "the database (default: a SQLite file in a temporary directory per run)")
	producers := flag.String("producers", "1,8", "concurrent producers, comma-separated")
	rounds := flag.Int("rounds", 3, "rounds (each runs every mode and producer count)")
	duration := flag.Duration("duration", 3*time.Second, "measured window")
	warmup := flag.Duration("warmup", time.Second, "load before the window")
	flag.Parse()
	var ps []int
	for _, f := range strings.Split(*producers, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			fmt.Fprintln(os.Stderr, "tracehttp: bad -producers", *producers)
			os.Exit(2)
		}
		ps = append(ps, n)
	}
	if err := run(*bin, *db, ps, *rounds, *duration, *warmup); err != nil {
		fmt.Fprintln(os.Stderr, "tracehttp:", err)
		os.Exit(1)
	}
}

// sink is an OTLP/HTTP receiver that keeps nothing: 200 to every POST.
type sink struct{ requests, bytes atomic.Int64 }

func (s *sink) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	n, _ := io.Copy(io.Discard, r.Body)
	s.requests.Add(1)
	s.bytes.Add(n)
	w.Header().Set("Content-Type", "application/x-protobuf")
	w.WriteHeader(http.StatusOK)
}

func run(bin, db string, producers []int, rounds int, duration, warmup time.Duration) error {
	sk := &sink{}
	sl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	go http.Serve(sl, sk)
	endpoint := "http://" + sl.Addr().String()
	fmt.Printf("| round | mode | producers | submits/s | server CPU s / 1k submits | OTLP requests (KB) |\n|---|---|---:|---:|---:|---:|\n")
	for round := range rounds {
		modes := []string{"off", "traced"}
		if round%2 == 1 {
			modes = []string{"traced", "off"}
		}
		for _, p := range producers {
			for _, mode := range modes {
				ep := ""
				if mode == "traced" {
					ep = endpoint
				}
				r0, b0 := sk.requests.Load(), sk.bytes.Load()
				rate, cpu, err := once(bin, db, ep, p, duration, warmup)
				if err != nil {
					return fmt.Errorf("%s, %d producers: %w", mode, p, err)
				}
				time.Sleep(200 * time.Millisecond) // the batch processor's flush at shutdown
				fmt.Printf("| %d | %s | %d | %.0f | %.3f | %d (%d) |\n", round+1, mode, p, rate, cpu,
					sk.requests.Load()-r0, (sk.bytes.Load()-b0)/1024)
			}
		}
	}
	return nil
}

// once starts a server (tracing to endpoint, or not when it is empty) on a
// fresh database and measures p producers' submissions.
func once(bin, db, endpoint string, p int, duration, warmup time.Duration) (rate, cpuPer1k float64, err error) {
	dir, err := os.MkdirTemp("", "tracehttp")
	if err != nil {
		return 0, 0, err
	}
	defer os.RemoveAll(dir)
	if db == "" {
		db = filepath.Join(dir, "queue.db")
	} else if strings.HasPrefix(db, "postgres") { // a schema of its own, dropped after
		schema := fmt.Sprintf("tracehttp_%d", time.Now().UnixNano())
		sep := "?"
		if strings.Contains(db, "?") {
			sep = "&"
		}
		base := db
		defer func() {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if conn, err := pgx.Connect(ctx, base); err == nil {
				conn.Exec(ctx, `DROP SCHEMA IF EXISTS `+pgx.Identifier{schema}.Sanitize()+` CASCADE`)
				conn.Close(ctx)
			}
		}()
		db += sep + "search_path=" + schema
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, 0, err
	}
	addr := l.Addr().String()
	l.Close()
	cfg := filepath.Join(dir, "queue.toml")
	conf := ""
	if endpoint != "" {
		conf = fmt.Sprintf("[tracing]\nendpoint = %q\n", endpoint)
	}
	if err := os.WriteFile(cfg, []byte(conf), 0o600); err != nil {
		return 0, 0, err
	}
	cmd := exec.Command(bin, "serve", "--addr", addr, "--db", db, "--config", cfg, "--sync", "full", "--log-level", "warn")
	env := []string{"QUEUE_TOKEN=", "QUEUE_CONFIG="} // an open server, whatever this shell holds
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "OTEL_") { // only the config file decides
			env = append(env, kv)
		}
	}
	cmd.Env = env
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return 0, 0, err
	}
	defer func() { cmd.Process.Signal(os.Interrupt); cmd.Wait() }()
	url := "http://" + addr
	for i := 0; ; i++ {
		if resp, err := httpc.Get(url + "/readyz"); err == nil && resp.StatusCode == 200 {
			resp.Body.Close()
			break
		}
		if i > 200 {
			return 0, 0, fmt.Errorf("%s serve not ready", bin)
		}
		time.Sleep(50 * time.Millisecond)
	}
	body := []byte(`{"queue":"traced","kind":"k","payload":{"n":1}}`)
	var count atomic.Int64
	var counting atomic.Bool
	var failed atomic.Value
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := range p {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				req, _ := http.NewRequest(http.MethodPost, url+"/api/jobs", bytes.NewReader(body))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("traceparent", fmt.Sprintf("00-%016x%016x-%016x-01", w+1, i+1, i+1))
				resp, err := httpc.Do(req)
				if err != nil {
					failed.Store(err)
					return
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusCreated {
					failed.Store(fmt.Errorf("POST /api/jobs: %d", resp.StatusCode))
					return
				}
				if counting.Load() {
					count.Add(1)
				}
			}
		}()
	}
	time.Sleep(warmup)
	cpu0 := cpuSeconds(cmd.Process.Pid)
	counting.Store(true)
	start := time.Now()
	time.Sleep(duration)
	counting.Store(false)
	el := time.Since(start)
	cpu := cpuSeconds(cmd.Process.Pid) - cpu0
	close(stop)
	wg.Wait()
	if e := failed.Load(); e != nil {
		return 0, 0, e.(error)
	}
	n := float64(count.Load())
	return n / el.Seconds(), cpu / n * 1000, nil
}

// cpuSeconds is the user and system CPU time of process pid so far.
func cpuSeconds(pid int) float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	u, _ := strconv.ParseFloat(f[11], 64)
	k, _ := strconv.ParseFloat(f[12], 64)
	return (u + k) / 100 // clock ticks (USER_HZ)
}

// httpc keeps a connection per producer (Go's default keeps two per host).
var httpc = func() *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = 64
	return &http.Client{Transport: tr, Timeout: 30 * time.Second}
}()
