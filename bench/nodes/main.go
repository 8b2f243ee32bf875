// Command nodes measures several `queue serve` on one PostgreSQL database,
// the way a user scales out when one host is not enough: for 1, 2 and 4
// nodes (-nodes) on a fresh database each, producers and claiming workers
// spread over the nodes round-robin (a plain net/http client, one POST
// /api/jobs per job; each worker loops POST /api/queues/default/claim
// {"limit":500,"wait":"1s"} and acknowledges the batch with POST
// /api/jobs/complete), it reports the paced latency (100 jobs/s, submit to
// claim, p50/p99) and the aggregate e2e rate, in interleaved rounds. With 2 nodes or more it then
// kills the maintenance leader with SIGKILL and measures how long until
// another node holds the leader lock, fires the periodic job (one every
// second) and recovers a job whose lease the killed node held, and checks
// that no periodic fire was lost or doubled. `make bench` runs it when
// QUEUE_TEST_POSTGRES_DSN is set; docs/benchmarks.md explains the numbers.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/queuehq/queue/bench/internal/benchkit"
)

type options struct {
	bin, server       string
	nodes             []int
	producers         int
	claimers          int
	warmup, duration  time.Duration
	rate              float64
	latencyDuration   time.Duration
	pool              int
	rounds            int
	failover          bool
	staleTimeout      time.Duration
	afterTakeoverWait time.Duration
}

func main() {
	o := options{}
	nodes := flag.String("nodes", "1,2,4", "node counts to measure, comma-separated")
	flag.StringVar(&o.bin, "bin", "../queue", "the queue binary (make build)")
	flag.StringVar(&o.server, "db", envOr("QUEUE_TEST_POSTGRES_DSN", "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"), "PostgreSQL server; each node count gets a fresh database, dropped after [$QUEUE_TEST_POSTGRES_DSN]")
	flag.IntVar(&o.producers, "producers", 8, "producers in all, spread over the nodes (one POST /api/jobs per job)")
	flag.IntVar(&o.claimers, "claimers", 8, "claiming workers in all, spread over the nodes (claim 500, wait 1s, ack the batch)")
	flag.DurationVar(&o.warmup, "warmup", time.Second, "load before each measured window")
	flag.DurationVar(&o.duration, "duration", 5*time.Second, "measured window of the e2e run")
	flag.Float64Var(&o.rate, "rate", 100, "jobs per second of the paced run")
	flag.DurationVar(&o.latencyDuration, "latency-duration", 5*time.Second, "measured window of the paced run")
	flag.IntVar(&o.pool, "pool", 8, "pool_max_conns of each node (each also holds a LISTEN and a leader connection)")
	flag.BoolVar(&o.failover, "failover", true, "with 2 nodes or more, kill the leader and measure the takeover")
	flag.DurationVar(&o.staleTimeout, "stale-timeout", 2*time.Second, "lease of the job claimed on the leader just before it is killed")
	flag.DurationVar(&o.afterTakeoverWait, "after", 4*time.Second, "how long to keep watching the periodic fires after the takeover")
	flag.IntVar(&o.rounds, "rounds", 3, "rounds: each measures every node count once, in turn")
	short := flag.Bool("short", false, "1 round, 2 s windows, 0.5 s warm-up, 3 s paced runs")
	flag.Parse()
	if o.bin != "" { // the servers run in directories of their own
		if abs, err := filepath.Abs(o.bin); err == nil {
			o.bin = abs
		}
	}
	if *short {
		o.rounds, o.warmup, o.duration, o.latencyDuration = 1, 500*time.Millisecond, 2*time.Second, 3*time.Second
	}
	for _, f := range strings.Split(*nodes, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			fatal(fmt.Errorf("-nodes: %q is not a node count", f))
		}
		o.nodes = append(o.nodes, n)
	}
	if err := run(o); err != nil {
		fatal(err)
	}
}

func fatal(err error) {
	fmt.Fprintln(os.Stderr, "nodes:", err)
	os.Exit(1)
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "%s "+format+"\n", append([]any{time.Now().Format("15:04:05")}, args...)...)
}

// point is what one node count measured.
type point struct {
	round, nodes      int
	rate, submitted   float64
	submitP50, p99Sub float64
	latP50, latP99    float64
	latSamples        int
	fo                *failover
	notes             []string
}

func run(o options) error {
	began := time.Now()
	dir, err := os.MkdirTemp("", "queue-nodes-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	var points []*point
	for r := 1; r <= o.rounds; r++ {
		for _, n := range o.nodes {
			p, err := measure(o, dir, n)
			if err != nil {
				return fmt.Errorf("round %d, %d node(s): %w", r, n, err)
			}
			p.round = r
			points = append(points, p)
		}
	}
	report(o, points, time.Since(began))
	return nil
}

// cluster is n `queue serve` on one database.
type cluster struct {
	dsn   string // the database, as the nodes open it
	db    *pgx.Conn
	dbOID uint32
	nodes []*node
}

type node struct {
	i      int
	base   string
	cmd    *exec.Cmd
	log    string
	exited chan struct{}
	killed bool
}

// config is every node's config file: a periodic job firing every second
// into a queue nobody claims (its jobs stay queued, so each fire's job can
// be counted), and retention passes rare enough not to delete fire records
// while we watch them.
const config = `[maintenance]
retention = "@every 1h"

[[periodic]]
name = "tick"
cron = "@every 1s"
queue = "tick"
kind = "tick"
catch_up = "one"
`

func measure(o options, dir string, n int) (*point, error) {
	ctx := context.Background()
	name := fmt.Sprintf("bench_nodes_%d_%d", os.Getpid(), n)
	admin, err := pgx.Connect(ctx, o.server)
	if err != nil {
		return nil, fmt.Errorf("connect to PostgreSQL: %w", err)
	}
	defer admin.Close(ctx)
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		return nil, err
	}
	defer func() {
		if _, err := admin.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)"); err != nil {
			logf("drop database %s: %v", name, err)
		}
	}()
	u, err := url.Parse(o.server)
	if err != nil {
		return nil, err
	}
	u.Path = "/" + name
	watch := u.String()
	q := u.Query()
	q.Set("pool_max_conns", strconv.Itoa(o.pool))
	u.RawQuery = q.Encode()
	c := &cluster{dsn: u.String()}
	cfg := filepath.Join(dir, "queue.toml")
	if err := os.WriteFile(cfg, []byte(config), 0o600); err != nil {
		return nil, err
	}
	defer c.stop()
	// One after the other, each to /readyz: the first migrates the fresh database.
	t0 := time.Now()
	for i := range n {
		nd, err := startNode(o.bin, c.dsn, cfg, dir, fmt.Sprintf("%d-%d", n, i), i)
		if err != nil {
			return nil, err
		}
		c.nodes = append(c.nodes, nd)
	}
	if c.db, err = pgx.Connect(ctx, watch); err != nil {
		return nil, err
	}
	defer c.db.Close(ctx)
	if err := c.db.QueryRow(ctx, `SELECT oid FROM pg_database WHERE datname = current_database()`).Scan(&c.dbOID); err != nil {
		return nil, err
	}
	logf("%d node(s) serving on one database (started in %s)", n, time.Since(t0).Round(time.Millisecond))

	p := &point{nodes: n}
	hc := benchkit.HTTPClient()
	bases := make([]string, n)
	for i, nd := range c.nodes {
		bases[i] = nd.base
	}

	// Paced first, on an empty queue.
	lat, err := paced(hc, bases, o)
	if err != nil {
		return nil, fmt.Errorf("paced run: %w", err)
	}
	if len(lat) > 0 {
		slices.Sort(lat)
		p.latP50, p.latP99, p.latSamples = msOf(pct(lat, 50)), msOf(pct(lat, 99)), len(lat)
	}
	logf("%d node(s): paced %.0f jobs/s: submit->claim p50 %.2f ms, p99 %.2f ms (%d jobs)", n, o.rate, p.latP50, p.latP99, p.latSamples)

	if err := e2e(hc, bases, o, p); err != nil {
		return nil, fmt.Errorf("e2e: %w", err)
	}
	logf("%d node(s): e2e %.0f jobs/s (submitted %.0f/s, submit p50 %.2f ms p99 %.2f ms)", n, p.rate, p.submitted, p.submitP50, p.p99Sub)

	if n >= 2 && o.failover {
		fo, err := c.failover(hc, o)
		if err != nil {
			return nil, fmt.Errorf("failover: %w", err)
		}
		p.fo = fo
		logf("%d node(s): %s", n, fo.summary())
	}
	return p, nil
}

func startNode(bin, dsn, cfg, dir, tag string, i int) (*node, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	addr := ln.Addr().String()
	ln.Close()
	logPath := filepath.Join(dir, "node-"+tag+".log")
	lf, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, "serve", "--db", dsn, "--addr", addr, "--config", cfg, "--log-format", "json", "--log-level", "info")
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = lf, lf
	cmd.Env = append(os.Environ(), "QUEUE_TOKEN=", "QUEUE_CONFIG=") // an open server, whatever this shell holds
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		lf.Close()
		return nil, err
	}
	nd := &node{i: i, base: "http://" + addr, cmd: cmd, log: logPath, exited: make(chan struct{})}
	go func() { cmd.Wait(); lf.Close(); close(nd.exited) }()
	deadline := time.Now().Add(time.Minute)
	for {
		resp, err := http.Get(nd.base + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nd, nil
			}
		}
		select {
		case <-nd.exited:
			b, _ := os.ReadFile(logPath)
			return nil, fmt.Errorf("node %s exited before it was ready: %s", tag, lastLines(string(b), 5))
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			return nil, fmt.Errorf("node %s not ready after a minute", tag)
		}
	}
}

func (c *cluster) stop() {
	t0 := time.Now()
	defer func() { logf("%d node(s) stopped in %s", len(c.nodes), time.Since(t0).Round(time.Millisecond)) }()
	for _, nd := range c.nodes {
		nd.cmd.Process.Signal(syscall.SIGTERM)
	}
	for _, nd := range c.nodes {
		select {
		case <-nd.exited:
		case <-time.After(20 * time.Second):
			nd.cmd.Process.Kill()
			<-nd.exited
		}
	}
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " / ")
}

func get(hc *http.Client, url string, out any) error {
	resp, err := hc.Get(url)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return json.NewDecoder(resp.Body).Decode(out)
}

// submit posts one job to queue on base, its payload the submit time.
func submit(hc *http.Client, base, queue string, extra string) (int64, error) {
	body := `{"queue":"` + queue + `","kind":"bench","payload":{"t":` + strconv.FormatInt(time.Now().UnixNano(), 10) + `}` + extra + `}`
	var job struct {
		ID int64 `json:"id"`
	}
	err := benchkit.Post(context.Background(), hc, base+"/api/jobs", []byte(body), &job)
	return job.ID, err
}

type claimed struct {
	ID      int64 `json:"id"`
	Lease   int64 `json:"lease"`
	Payload struct {
		T int64 `json:"t"`
	} `json:"payload"`
}

// errCount counts failed calls, keeping the first error.
type errCount struct {
	n     atomic.Int64
	mu    sync.Mutex
	first error
}

func (e *errCount) add(err error) {
	if e.n.Add(1) == 1 {
		e.mu.Lock()
		e.first = err
		e.mu.Unlock()
	}
}

func (e *errCount) err(what string) error {
	if e.n.Load() == 0 {
		return nil
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	return fmt.Errorf("%d %s errors, first: %w", e.n.Load(), what, e.first)
}

// workers runs claimers spread over bases; each claim's jobs go to
// onClaim with the time the claim returned, then are acknowledged in one
// call. stop lets each finish its current claim and acknowledge it.
func workers(hc *http.Client, bases []string, claimers int, onClaim func(at time.Time, jobs []claimed)) (stop func() error) {
	var stopping atomic.Bool
	var wg sync.WaitGroup
	var errs errCount
	for i := range claimers {
		base := bases[i%len(bases)]
		wg.Add(1)
		go func() {
			defer wg.Done()
			claim := []byte(`{"worker_id":"nodes-` + strconv.Itoa(i) + `","limit":500,"wait":"1s"}`)
			for !stopping.Load() {
				var got struct {
					Jobs []claimed `json:"jobs"`
				}
				if err := benchkit.Post(context.Background(), hc, base+"/api/queues/default/claim", claim, &got); err != nil {
					errs.add(err)
					time.Sleep(10 * time.Millisecond)
					continue
				}
				if len(got.Jobs) == 0 {
					continue
				}
				onClaim(time.Now(), got.Jobs)
				type ack struct {
					ID    int64 `json:"id"`
					Lease int64 `json:"lease"`
				}
				acks := make([]ack, len(got.Jobs))
				for k, j := range got.Jobs {
					acks[k] = ack{j.ID, j.Lease}
				}
				body, _ := json.Marshal(map[string]any{"jobs": acks})
				var res struct {
					Results []struct {
						OK bool `json:"ok"`
					} `json:"results"`
				}
				if err := benchkit.Post(context.Background(), hc, base+"/api/jobs/complete", body, &res); err != nil {
					errs.add(err)
					continue
				}
				for _, r := range res.Results {
					if !r.OK {
						errs.add(errors.New("a completion was refused"))
					}
				}
			}
		}()
	}
	return func() error {
		stopping.Store(true)
		wg.Wait()
		return errs.err("worker")
	}
}

// paced submits Rate jobs per second (each from its own goroutine, to the
// nodes in turn) and returns each measured job's time from just before
// its submit to the return of the claim that got it.
func paced(hc *http.Client, bases []string, o options) ([]time.Duration, error) {
	var mu sync.Mutex
	var lat []time.Duration
	var got atomic.Int64
	from := time.Now().Add(o.warmup).UnixNano()
	stop := workers(hc, bases, o.claimers, func(at time.Time, jobs []claimed) {
		got.Add(int64(len(jobs)))
		mu.Lock()
		for _, j := range jobs {
			if j.Payload.T >= from {
				lat = append(lat, time.Duration(at.UnixNano()-j.Payload.T))
			}
		}
		mu.Unlock()
	})
	var errs errCount
	var sent atomic.Int64
	var wg sync.WaitGroup
	interval := time.Duration(float64(time.Second) / o.rate)
	total := int((o.warmup + o.latencyDuration) / interval)
	began := time.Now()
	for i := range total {
		if d := time.Until(began.Add(time.Duration(i) * interval)); d > 0 {
			time.Sleep(d)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := submit(hc, bases[i%len(bases)], "default", ""); err != nil {
				errs.add(err)
				return
			}
			sent.Add(1)
		}()
	}
	wg.Wait()
	deadline := time.Now().Add(10 * time.Second)
	for got.Load() < sent.Load() && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	werr := stop()
	mu.Lock()
	defer mu.Unlock()
	return lat, errors.Join(errs.err("submit"), werr)
}

// e2e runs Producers (one POST per job, to the nodes in turn) against
// Claimers spread over the nodes; the rate is jobs claimed and
// acknowledged per second in the window, across all nodes.
func e2e(hc *http.Client, bases []string, o options, p *point) error {
	var handled, inserted atomic.Int64
	var recording atomic.Bool
	var mu sync.Mutex
	var subLat []time.Duration
	stopWork := workers(hc, bases, o.claimers, func(_ time.Time, jobs []claimed) { handled.Add(int64(len(jobs))) })
	var stopping atomic.Bool
	var errs errCount
	var wg sync.WaitGroup
	for i := range o.producers {
		base := bases[i%len(bases)]
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stopping.Load() {
				t0 := time.Now()
				if _, err := submit(hc, base, "default", ""); err != nil {
					errs.add(err)
					time.Sleep(10 * time.Millisecond)
					continue
				}
				if recording.Load() {
					d := time.Since(t0)
					mu.Lock()
					subLat = append(subLat, d)
					mu.Unlock()
				}
				inserted.Add(1)
			}
		}()
	}
	time.Sleep(o.warmup)
	h0, i0, t0 := handled.Load(), inserted.Load(), time.Now()
	recording.Store(true)
	time.Sleep(o.duration)
	recording.Store(false)
	h1, i1, secs := handled.Load(), inserted.Load(), time.Since(t0).Seconds()
	stopping.Store(true)
	wg.Wait()
	// Let the workers drain what is left, so the next phase starts empty.
	deadline := time.Now().Add(30 * time.Second)
	for handled.Load() < inserted.Load() && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	werr := stopWork()
	p.rate, p.submitted = float64(h1-h0)/secs, float64(i1-i0)/secs
	mu.Lock()
	slices.Sort(subLat)
	if len(subLat) > 0 {
		p.submitP50, p.p99Sub = msOf(pct(subLat, 50)), msOf(pct(subLat, 99))
	}
	mu.Unlock()
	if handled.Load() < inserted.Load() {
		p.notes = append(p.notes, fmt.Sprintf("%d jobs left unclaimed after the e2e run", inserted.Load()-handled.Load()))
	}
	if e := errors.Join(errs.err("submit"), werr); e != nil {
		p.notes = append(p.notes, e.Error())
		if errs.n.Load() > inserted.Load()/100 {
			return e
		}
	}
	return nil
}

func pct(sorted []time.Duration, p float64) time.Duration {
	i := int(math.Ceil(p/100*float64(len(sorted)))) - 1
	return sorted[max(0, min(i, len(sorted)-1))]
}

func msOf(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// report prints the markdown tables of the run to stdout: per node count
// the medians over the rounds with min-max, the ratio to one node as the
// median of the per-round ratios, and every failover.
func report(o options, points []*point, took time.Duration) {
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	w("\n## Several nodes on one PostgreSQL (bench/nodes)\n\n")
	w("%s; %d round(s), medians with min-max; %d producers and %d claiming workers in all, spread over the nodes round-robin (plain net/http: one POST /api/jobs per job; claim 500, wait 1s, ack the batch); each node's pool %d connections; e2e window %s after %s warm-up; paced %.0f jobs/s for %s. Total time %s.\n\n",
		time.Now().UTC().Format("2006-01-02 15:04 MST"), o.rounds, o.producers, o.claimers, o.pool, o.duration, o.warmup, o.rate, o.latencyDuration, took.Round(time.Second))
	oneIn := map[int]float64{} // round -> the one-node rate
	for _, p := range points {
		if p.nodes == 1 {
			oneIn[p.round] = p.rate
		}
	}
	ratio := map[int][]float64{} // nodes -> per-round ratios to one node
	for _, p := range points {
		if one := oneIn[p.round]; one > 0 && p.nodes > 1 {
			ratio[p.nodes] = append(ratio[p.nodes], p.rate/one)
		}
	}
	w("| nodes | e2e jobs/s (all nodes) | min-max | x 1 node | submitted/s | submit p50 ms | submit p99 ms | paced submit->claim p50 ms | p99 ms |\n|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, n := range o.nodes {
		col := func(f func(*point) float64) []float64 {
			var v []float64
			for _, p := range points {
				if p.nodes == n {
					v = append(v, f(p))
				}
			}
			slices.Sort(v)
			return v
		}
		rate := col(func(p *point) float64 { return p.rate })
		x := "1.00"
		if n > 1 {
			x = "-"
			if rs := ratio[n]; len(rs) > 0 {
				x = fmt.Sprintf("%.2f", median(rs))
			}
		}
		w("| %d | %.0f | %.0f-%.0f | %s | %.0f | %.2f | %.2f | %.2f | %.2f |\n", n, median(rate), rate[0], rate[len(rate)-1], x,
			median(col(func(p *point) float64 { return p.submitted })), median(col(func(p *point) float64 { return p.submitP50 })),
			median(col(func(p *point) float64 { return p.p99Sub })), median(col(func(p *point) float64 { return p.latP50 })),
			median(col(func(p *point) float64 { return p.latP99 })))
	}
	w("\n")
	var fos []*point
	for _, p := range points {
		if p.fo != nil {
			fos = append(fos, p)
		}
	}
	if len(fos) > 0 {
		w("Failover: the leader is killed with SIGKILL 100 ms before a whole second, just after a job (lease %s) was claimed through it; times from the kill. The periodic entry fires every second (`@every 1s`).\n\n", o.staleTimeout)
		w("| round | nodes | leader lock moved s | periodic fired again s | orphaned job recovered s | after its lease expired s | fires checked | due while no node led | lost | doubled | latest fire late s |\n|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
		for _, p := range fos {
			f := p.fo
			w("| %d | %d | %.2f | %.2f | %.2f | %.2f | %d | %d | %d | %d | %.2f |\n", p.round, p.nodes, f.lockMoved.Seconds(), f.firstFire.Seconds(), f.recovered.Seconds(), f.afterLease.Seconds(), f.fires, f.gapFires, len(f.lost), len(f.doubled), f.maxLate.Seconds())
		}
		w("\n")
	}
	w("### Issue 29 target 6\n\n| target | measured | met |\n|---|---:|:---:|\n")
	for _, n := range o.nodes {
		if rs := ratio[n]; len(rs) > 0 {
			parts := make([]string, len(rs))
			for i, r := range rs {
				parts[i] = fmt.Sprintf("%.2f", r)
			}
			w("| %d nodes: aggregate e2e not below one node's (median of the rounds' ratios; each round) | %.2fx (%s) | %s |\n", n, median(rs), strings.Join(parts, ", "), yes(median(rs) >= 1))
		}
	}
	if len(fos) > 0 {
		var resume, afterLease time.Duration
		var lost, doubled, fires, gap int
		for _, p := range fos {
			f := p.fo
			resume = max(resume, f.lockMoved, f.firstFire)
			afterLease = max(afterLease, f.afterLease)
			lost, doubled, fires, gap = lost+len(f.lost), doubled+len(f.doubled), fires+f.fires, gap+f.gapFires
		}
		w("| a killed leader's duties resume within 5 s (slowest of %d failovers: lock and periodic fire after the kill; stale recovery after the lease expired) | %.2f s; %.2f s | %s |\n",
			len(fos), resume.Seconds(), afterLease.Seconds(), yes(resume < 5*time.Second && afterLease < 5*time.Second))
		w("| no periodic fire lost or doubled (all failovers; fires due while no node led: %d) | %d lost, %d doubled of %d | %s |\n", gap, lost, doubled, fires, yes(lost == 0 && doubled == 0))
	}
	for _, p := range points {
		for _, n := range p.notes {
			w("\nNote (round %d, %d nodes): %s\n", p.round, p.nodes, n)
		}
	}
	fmt.Print(b.String())
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	v = slices.Clone(v)
	slices.Sort(v)
	if len(v)%2 == 0 {
		return (v[len(v)/2-1] + v[len(v)/2]) / 2
	}
	return v[len(v)/2]
}

func yes(ok bool) string {
	if ok {
		return "yes"
	}
	return "no"
}
