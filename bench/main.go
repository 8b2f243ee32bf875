// Command bench runs our queue beside River and goqite on this machine, in
// interleaved rounds, each (system, scenario) in a fresh process of its own,
// and prints a table of medians with min-max, our ratio to each peer, peak
// RSS and CPU per 1,000 jobs. docs/benchmarks.md explains every number.
//
// It lives in a module of its own so River and goqite never enter the
// queue's module. `make bench` runs it; `go run . -h` lists the flags.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// scenarioInfo says what a scenario reports and which systems it applies to.
type scenarioInfo struct {
	Name    string
	Title   string
	Metric  string // the headline metric
	Unit    string
	Lower   bool     // lower is better
	Extra   []string // further metrics shown as medians
	Applies func(s systemInfo) bool
}

func all(s systemInfo) bool        { return !s.Plain }
func sqliteOnly(s systemInfo) bool { return s.SQL == "sqlite" && !s.Plain }
func plain(s systemInfo) bool      { return s.Plain }
func inProcess8(s systemInfo) bool {
	return s.Name == "queue" || s.Name == "queue-pg" || s.Name == "river-sqlite" || s.Name == "river-pg"
}
func oursLocal(s systemInfo) bool { return s.Name == "queue" || s.Name == "queue-pg" }
func oursHTTP(s systemInfo) bool  { return s.Name == "queue-http" }

var scenarios = []scenarioInfo{
	{Name: "e2e", Title: "E2E, synchronous=FULL: producers submit one job per call while workers claim and complete (no-op handler)", Metric: "rate", Unit: "jobs/s", Extra: []string{"insert_rate"}, Applies: all},
	{Name: "e2e-4x", Title: "E2E, synchronous=FULL, with 4x the producers (64 by default)", Metric: "rate", Unit: "jobs/s", Extra: []string{"insert_rate"}, Applies: all},
	{Name: "e2e-normal", Title: "E2E, synchronous=NORMAL (SQLite systems only)", Metric: "rate", Unit: "jobs/s", Extra: []string{"insert_rate"}, Applies: sqliteOnly},
	{Name: "enqueue", Title: "Enqueue one job per call, concurrent producers", Metric: "rate", Unit: "jobs/s", Applies: all},
	{Name: "batch", Title: "Enqueue in batches of 100, concurrent producers", Metric: "rate", Unit: "jobs/s", Applies: all},
	{Name: "burndown", Title: "Burn-down of pre-inserted jobs (no-op handler)", Metric: "rate", Unit: "jobs/s", Applies: all},
	{Name: "latency", Title: "Paced 100 jobs/s: submit -> handler start", Metric: "p99_ms", Unit: "ms p99", Lower: true, Extra: []string{"p50_ms", "max_ms"}, Applies: all},
	{Name: "claim-1k", Title: "Claim alone at >= 1,000 queued jobs: 16 claimers x 1 job/call (batch: 4 x 100)", Metric: "rate", Unit: "claims/s", Extra: []string{"batch_rate", "kind_miss_ms"}, Applies: oursLocal},
	{Name: "claim-1m", Title: "Claim alone at >= 1,000,000 queued jobs: 16 claimers x 1 job/call (batch: 4 x 100)", Metric: "rate", Unit: "claims/s", Extra: []string{"batch_rate", "kind_miss_ms"}, Applies: oursLocal},
	// Issue 29's operating points: the load of a user with a handful of
	// producers, over HTTP from a client that is not ours, and in process.
	{Name: "e2e-8", Title: "E2E, synchronous=FULL, 8 producers, in process", Metric: "rate", Unit: "jobs/s", Extra: []string{"insert_rate"}, Applies: inProcess8},
	{Name: "http-1", Title: "Over HTTP, plain net/http client: 1 producer (one POST /api/jobs per job), 8 claiming workers (claim 500, wait 1s, ack the batch)", Metric: "rate", Unit: "jobs/s", Extra: []string{"insert_rate", "submit_p50_ms", "submit_p99_ms"}, Applies: plain},
	{Name: "http-8", Title: "Over HTTP, plain net/http client: 8 producers, 8 claiming workers", Metric: "rate", Unit: "jobs/s", Extra: []string{"insert_rate", "submit_p50_ms", "submit_p99_ms"}, Applies: plain},
	{Name: "http-64", Title: "Over HTTP, plain net/http client: 64 producers, 8 claiming workers", Metric: "rate", Unit: "jobs/s", Extra: []string{"insert_rate", "submit_p50_ms", "submit_p99_ms"}, Applies: plain},
	{Name: "claimers-1", Title: "Over HTTP, plain net/http client: 8 producers, 1 claiming worker (8 workers: http-8)", Metric: "rate", Unit: "jobs/s", Extra: []string{"insert_rate", "submit_p50_ms", "submit_p99_ms"}, Applies: plain},
	{Name: "claimers-32", Title: "Over HTTP, plain net/http client: 8 producers, 32 claiming workers", Metric: "rate", Unit: "jobs/s", Extra: []string{"insert_rate", "submit_p50_ms", "submit_p99_ms"}, Applies: plain},
	{Name: "serve", Title: "`queue serve` on an empty database: cold start to /readyz, idle RSS", Metric: "cold_start_ms", Unit: "ms", Lower: true, Extra: []string{"idle_rss_mb"}, Applies: oursHTTP},
	{Name: "serve-1m", Title: "`queue serve` with 1,000,000 queued jobs: RSS after start, stats, a claim and the dashboard", Metric: "rss_1m_mb", Unit: "MB RSS", Lower: true, Extra: []string{"cold_start_1m_ms", "stats_1m_ms", "claim_complete_100_1m_ms"}, Applies: oursHTTP},
}

func findScenario(name string) (scenarioInfo, bool) {
	for _, s := range scenarios {
		if s.Name == name {
			return s, true
		}
	}
	return scenarioInfo{}, false
}

// defaultSystems are the systems of the table; queue-http-local is for
// profiling the HTTP path and runs only when named.
var defaultSystems = "queue,queue-http,queue-pg,river-sqlite,river-pg,goqite,http-sqlite,http-pg"

func main() {
	var (
		isChild      = flag.Bool("child", false, "internal: run one (system, scenario) and print its result as JSON")
		sysFlag      = flag.String("system", "", "internal: the child's system")
		scenFlag     = flag.String("scenario", "", "internal: the child's scenario")
		roundFlag    = flag.Int("round", 0, "internal: the child's round")
		rounds       = flag.Int("rounds", 3, "interleaved rounds: every (system, scenario) runs once per round")
		systemsFlag  = flag.String("systems", defaultSystems, "systems to run, comma-separated: "+names(systems))
		scensFlag    = flag.String("scenarios", scenarioNames(), "scenarios to run, comma-separated")
		short        = flag.Bool("short", false, "a quick look: 1 round, 2s windows, 4s latency runs")
		pgDSN        = flag.String("pg", envOr("BENCH_POSTGRES_DSN", "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"), "PostgreSQL server (each run creates and drops its own database); empty skips the PostgreSQL systems [$BENCH_POSTGRES_DSN]")
		queueBin     = flag.String("queue-bin", "", "queue binary for queue-http (default: built from .. with CGO_ENABLED=0)")
		outDir       = flag.String("out", "results", "write the report (TIME.md) and every run's raw result (TIME.json) to this directory; empty: don't")
		profile      = flag.String("cpuprofile", "", "write a CPU profile of each run's measured window to DIR/SYSTEM-SCENARIO-rN.pprof")
		keepGoing    = flag.Bool("keep-going", true, "go on after a failed run (it shows as an error in the table)")
		childTimeout = flag.Duration("run-timeout", 5*time.Minute, "kill a run that takes longer")
		waitQuiet    = flag.Duration("wait-quiet", 0, "before each run, wait up to this long for other processes to use less than -quiet-cores (0: don't wait)")
		quietCores   = flag.Float64("quiet-cores", 0.3, "CPU (in cores) other processes may use for the machine to count as quiet")
		logFile      = flag.String("log", "", "append every run's stderr (River's warnings, BENCH_DEBUG_LATENCY=1 lines) to this file")
		reportFrom   = flag.String("report", "", "print the report of an earlier run from its results/TIME.json, running nothing")
	)
	rc := runConfig{}
	flag.DurationVar(&rc.Warmup, "warmup", time.Second, "load before each measured window")
	flag.DurationVar(&rc.Duration, "duration", 3*time.Second, "measured window of each throughput run (e2e, enqueue, batch; burn-down stops earlier when done; claim splits it)")
	flag.DurationVar(&rc.LatencyDuration, "latency-duration", 8*time.Second, "measured window of each paced latency run")
	flag.Float64Var(&rc.Rate, "rate", 100, "jobs per second of the paced latency run")
	flag.IntVar(&rc.Producers, "producers", 16, "concurrent producers (enqueue, batch, e2e)")
	flag.IntVar(&rc.BatchSize, "batch", 100, "jobs per call in the batch scenario")
	flag.IntVar(&rc.BurnJobs, "burn-jobs", 50000, "jobs stored before a burn-down")
	flag.DurationVar(&rc.IdleWait, "idle-wait", 3*time.Second, "how long `queue serve` idles before its RSS is read")
	e := &env{Sync: "full"}
	flag.IntVar(&e.Concurrency, "concurrency", 1000, "queue: jobs a worker runs at once (it claims up to this many per call and acknowledges in batches)")
	flag.IntVar(&e.HTTPWorkers, "http-workers", 1, "queue-http: client.Workers over HTTP (each like one `queue work --concurrency N`)")
	flag.IntVar(&e.Claimers, "claimers", 8, "http-sqlite, http-pg: claiming workers of the http-N scenarios (claimers-N set their own)")
	flag.IntVar(&e.RiverWorkers, "river-workers", 1000, "River: MaxWorkers of the queue")
	flag.StringVar(&e.RiverCooldown, "river-cooldown", "1ms", "River: FetchCooldown (minimum time between fetches)")
	flag.StringVar(&e.RiverPoll, "river-poll", "10ms", "River: FetchPollInterval (fetch at least this often)")
	flag.IntVar(&e.RiverConns, "river-conns", 1, "River on SQLite: database/sql connections (riversqlite advises 1)")
	flag.IntVar(&e.GoqiteWorkers, "goqite-workers", 32, "goqite: goroutines running the receive/handle/delete loop")
	flag.StringVar(&e.GoqitePoll, "goqite-poll", "5ms", "goqite: sleep after an empty receive")
	flag.IntVar(&e.PGConns, "pg-conns", 20, "PostgreSQL pool size, River and queue alike")
	flag.StringVar(&e.Sync, "sync", "full", "internal: SQLite synchronous setting of a run")
	flag.StringVar(&e.DBFile, "db-file", "", "internal: SQLite file to open")
	flag.StringVar(&e.PGTemplate, "pg-template", "", "internal: PostgreSQL template database")
	flag.StringVar(&e.PGPrepare, "pg-prepare", "", "internal: PostgreSQL template database to create")
	cpuprofile := flag.String("child-cpuprofile", "", "internal: CPU profile file of a run")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	if *isChild {
		e.QueueBin, e.PostgresDSN = *queueBin, *pgDSN
		rc.CPUProfile = *cpuprofile
		child(ctx, *sysFlag, *scenFlag, *roundFlag, e, rc)
		return
	}
	if *reportFrom != "" {
		p, err := loadRun(*reportFrom)
		if err != nil {
			fatal(err)
		}
		fmt.Print(p.report())
		return
	}
	if *short {
		*rounds = 1
		rc.Duration, rc.LatencyDuration, rc.Warmup = 2*time.Second, 4*time.Second, 500*time.Millisecond
	}
	p := &parent{
		rounds: *rounds, rc: rc, env: e, pg: *pgDSN, queueBin: *queueBin, outDir: *outDir,
		profileDir: *profile, keepGoing: *keepGoing, timeout: *childTimeout,
		waitQuiet: *waitQuiet, quietCores: *quietCores,
	}
	if *logFile != "" {
		f, err := os.OpenFile(*logFile, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
		if err != nil {
			fatal(err)
		}
		defer f.Close()
		p.log = f
	}
	var err error
	if p.systems, err = pickSystems(*systemsFlag, *pgDSN); err != nil {
		fatal(err)
	}
	if p.scenarios, err = pickScenarios(*scensFlag); err != nil {
		fatal(err)
	}
	if err := p.run(ctx); err != nil {
		fatal(err)
	}
}

func fatal(err error) {
	fmt.Fprintln(os.Stderr, "bench:", err)
	os.Exit(1)
}

func envOr(k, def string) string {
	if v, ok := os.LookupEnv(k); ok {
		return v
	}
	return def
}

func names(ss []systemInfo) string {
	var n []string
	for _, s := range ss {
		n = append(n, s.Name)
	}
	return strings.Join(n, ",")
}

func scenarioNames() string {
	var n []string
	for _, s := range scenarios {
		n = append(n, s.Name)
	}
	return strings.Join(n, ",")
}

func pickSystems(list, pg string) ([]systemInfo, error) {
	var out []systemInfo
	for _, n := range strings.Split(list, ",") {
		n = strings.TrimSpace(n)
		if n == "" {
			continue
		}
		s, ok := findSystem(n)
		if !ok {
			return nil, fmt.Errorf("-systems: unknown system %q (have %s)", n, names(systems))
		}
		if s.SQL == "postgres" && pg == "" {
			fmt.Fprintf(os.Stderr, "bench: no -pg address: skipping %s\n", n)
			continue
		}
		out = append(out, s)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("-systems: none to run")
	}
	return out, nil
}

func pickScenarios(list string) ([]scenarioInfo, error) {
	var out []scenarioInfo
	for _, n := range strings.Split(list, ",") {
		n = strings.TrimSpace(n)
		if n == "" {
			continue
		}
		s, ok := findScenario(n)
		if !ok {
			return nil, fmt.Errorf("-scenarios: unknown scenario %q (have %s)", n, scenarioNames())
		}
		out = append(out, s)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("-scenarios: none to run")
	}
	return out, nil
}

// parent plans the runs, starts each in a fresh child process, and reports.
type parent struct {
	rounds     int
	rc         runConfig
	env        *env
	pg         string
	queueBin   string
	outDir     string
	profileDir string
	keepGoing  bool
	timeout    time.Duration
	waitQuiet  time.Duration
	quietCores float64
	log        io.Writer
	systems    []systemInfo
	scenarios  []scenarioInfo

	self   string
	tmp    string
	commit string // the queue's commit, for the report
	args   []string
	// savedSettings is the settings line of a run loaded with -report.
	savedSettings string
	sqliteTpl     string // 1M-job SQLite template
	pgTpl         string // 1M-job PostgreSQL template database
	prepared      []result
	results       []result
	started       time.Time
	finished      time.Time
}

type plannedRun struct {
	round    int
	system   systemInfo
	scenario scenarioInfo
}

func (p *parent) plan() []plannedRun {
	var runs []plannedRun
	for r := 1; r <= p.rounds; r++ {
		for _, sc := range p.scenarios {
			// Rotate the order of systems each round so none always runs
			// first (or right after the heaviest).
			n := len(p.systems)
			for i := range n {
				s := p.systems[(i+r-1)%n]
				if sc.Applies(s) {
					runs = append(runs, plannedRun{round: r, system: s, scenario: sc})
				}
			}
		}
	}
	return runs
}

func (p *parent) run(ctx context.Context) error {
	p.started = time.Now()
	p.args = os.Args[1:]
	var err error
	if p.self, err = os.Executable(); err != nil {
		return err
	}
	if p.tmp, err = os.MkdirTemp("", "queue-bench-"); err != nil {
		return err
	}
	defer os.RemoveAll(p.tmp)
	p.commit = commitOf("..")
	runs := p.plan()
	if len(runs) == 0 {
		return fmt.Errorf("no (system, scenario) pair applies")
	}
	if p.needs(runs, func(r plannedRun) bool { return r.system.Name == "queue-http" || r.system.Plain }) && p.queueBin == "" {
		if b, err := os.ReadFile("../go.mod"); err != nil || !bytes.Contains(b, []byte("module github.com/queuehq/queue\n")) {
			return fmt.Errorf("run the benchmark from bench/ (it builds the queue from ..), or give -queue-bin")
		}
		logf("building queue from .. (CGO_ENABLED=0)")
		p.queueBin = filepath.Join(p.tmp, "queue")
		cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-o", p.queueBin, ".")
		cmd.Dir = ".."
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("build queue: %w", err)
		}
	}
	if p.needs(runs, func(r plannedRun) bool {
		return (r.scenario.Name == "claim-1m" && r.system.SQL == "sqlite") || r.scenario.Name == "serve-1m"
	}) {
		p.sqliteTpl = filepath.Join(p.tmp, "tpl-1m.db")
		res := p.child(ctx, "queue", "prepare-sqlite", 0, []string{"-db-file", p.sqliteTpl}, "")
		if res.Error != "" {
			return fmt.Errorf("fill the 1M SQLite template: %s", res.Error)
		}
		logf("1M SQLite template filled in %.1fs (%.0f jobs/s, 4 callers x 10,000 jobs per call)", res.Metrics["seconds"], res.Metrics["rate"])
		p.prepared = append(p.prepared, res)
	}
	if p.needs(runs, func(r plannedRun) bool { return r.scenario.Name == "claim-1m" && r.system.SQL == "postgres" }) {
		p.pgTpl = fmt.Sprintf("bench_tpl_%d", os.Getpid())
		defer dropDatabase(p.pg, p.pgTpl)
		res := p.child(ctx, "queue-pg", "prepare-postgres", 0, []string{"-pg-prepare", p.pgTpl}, "")
		if res.Error != "" {
			return fmt.Errorf("fill the 1M PostgreSQL template: %s", res.Error)
		}
		logf("1M PostgreSQL template filled in %.1fs (%.0f jobs/s, 4 callers x 10,000 jobs per call)", res.Metrics["seconds"], res.Metrics["rate"])
		p.prepared = append(p.prepared, res)
	}
	logf("%d runs: %d rounds of %d scenarios x %d systems; load average now %s", len(runs), p.rounds, len(p.scenarios), len(p.systems), loadAvg())
	for i, r := range runs {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		var extra []string
		if r.scenario.Name == "claim-1m" || r.scenario.Name == "serve-1m" {
			if r.system.SQL == "sqlite" {
				f := filepath.Join(p.tmp, "copy-1m.db")
				if err := copyDB(p.sqliteTpl, f); err != nil {
					return err
				}
				extra = append(extra, "-db-file", f)
			} else {
				extra = append(extra, "-pg-template", p.pgTpl)
			}
		}
		prof := ""
		if p.profileDir != "" {
			os.MkdirAll(p.profileDir, 0o755)
			prof = filepath.Join(p.profileDir, fmt.Sprintf("%s-%s-r%d.pprof", r.system.Name, r.scenario.Name, r.round))
		}
		if p.waitQuiet > 0 {
			if waited, others := quiet(ctx, p.waitQuiet, p.quietCores); others >= p.quietCores {
				logf("machine still busy after %s: other processes use %.2f cores; running anyway", waited.Round(time.Second), others)
			}
		}
		res := p.child(ctx, r.system.Name, r.scenario.Name, r.round, extra, prof)
		os.Remove(filepath.Join(p.tmp, "copy-1m.db"))
		os.Remove(filepath.Join(p.tmp, "copy-1m.db-wal"))
		os.Remove(filepath.Join(p.tmp, "copy-1m.db-shm"))
		p.results = append(p.results, res)
		logf("[%d/%d] round %d %-10s %-12s %s", i+1, len(runs), r.round, r.scenario.Name, r.system.Name, summary(r.scenario, res))
		if res.Error != "" && !p.keepGoing {
			return fmt.Errorf("%s %s: %s", r.system.Name, r.scenario.Name, res.Error)
		}
	}
	p.finished = time.Now()
	report := p.report()
	fmt.Print(report)
	if p.outDir == "" {
		return nil
	}
	if err := os.MkdirAll(p.outDir, 0o755); err != nil {
		return err
	}
	base := filepath.Join(p.outDir, p.started.UTC().Format("2006-01-02T150405Z"))
	if err := os.WriteFile(base+".md", []byte(report), 0o644); err != nil {
		return err
	}
	b, _ := json.MarshalIndent(p.saved(), "", "  ")
	if err := os.WriteFile(base+".json", b, 0o644); err != nil {
		return err
	}
	logf("report written to %s.md, raw results to %s.json", base, base)
	return nil
}

// savedRun is a run as results/TIME.json keeps it: enough to print its
// report again (-report).
type savedRun struct {
	Args      []string  `json:"args"`
	Started   time.Time `json:"started"`
	Finished  time.Time `json:"finished"`
	Rounds    int       `json:"rounds"`
	Commit    string    `json:"commit"`
	Settings  string    `json:"settings"`
	Systems   []string  `json:"systems"`
	Scenarios []string  `json:"scenarios"`
	Prepared  []result  `json:"prepared"`
	Results   []result  `json:"results"`
}

func (p *parent) saved() savedRun {
	s := savedRun{Args: p.args, Started: p.started, Finished: p.finished, Rounds: p.rounds, Commit: p.commit,
		Settings: p.settings(), Prepared: p.prepared, Results: p.results}
	for _, x := range p.systems {
		s.Systems = append(s.Systems, x.Name)
	}
	for _, x := range p.scenarios {
		s.Scenarios = append(s.Scenarios, x.Name)
	}
	return s
}

func loadRun(path string) (*parent, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var s savedRun
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	p := &parent{rounds: s.Rounds, started: s.Started, finished: s.Finished, commit: s.Commit, savedSettings: s.Settings,
		args: s.Args, prepared: s.Prepared, results: s.Results}
	if p.systems, err = pickSystems(strings.Join(s.Systems, ","), "saved"); err != nil {
		return nil, err
	}
	if p.scenarios, err = pickScenarios(strings.Join(s.Scenarios, ",")); err != nil {
		return nil, err
	}
	return p, nil
}

func (p *parent) needs(runs []plannedRun, f func(plannedRun) bool) bool {
	return slices.ContainsFunc(runs, f)
}

// child runs one (system, scenario) in a fresh process and measures what
// else the machine did meanwhile.
func (p *parent) child(ctx context.Context, sys, scenario string, round int, extra []string, prof string) result {
	args := []string{"-child", "-system", sys, "-scenario", scenario, "-round", strconv.Itoa(round),
		"-queue-bin", p.queueBin, "-pg", p.pg,
		"-warmup", p.rc.Warmup.String(), "-duration", p.rc.Duration.String(),
		"-latency-duration", p.rc.LatencyDuration.String(), "-rate", fmt.Sprint(p.rc.Rate),
		"-producers", strconv.Itoa(p.rc.Producers), "-batch", strconv.Itoa(p.rc.BatchSize),
		"-burn-jobs", strconv.Itoa(p.rc.BurnJobs), "-idle-wait", p.rc.IdleWait.String(),
		"-concurrency", strconv.Itoa(p.env.Concurrency), "-http-workers", strconv.Itoa(p.env.HTTPWorkers),
		"-claimers", strconv.Itoa(p.env.Claimers),
		"-river-workers", strconv.Itoa(p.env.RiverWorkers), "-river-cooldown", p.env.RiverCooldown,
		"-river-poll", p.env.RiverPoll, "-river-conns", strconv.Itoa(p.env.RiverConns),
		"-goqite-workers", strconv.Itoa(p.env.GoqiteWorkers), "-goqite-poll", p.env.GoqitePoll,
		"-pg-conns", strconv.Itoa(p.env.PGConns), "-child-cpuprofile", prof,
	}
	args = append(args, extra...)
	cctx, cancel := context.WithTimeout(ctx, p.timeout)
	defer cancel()
	cmd := exec.CommandContext(cctx, p.self, args...)
	cmd.Env = append(os.Environ(), "BENCH_TMP="+p.tmp)
	var stdout, stderr bytes.Buffer
	cmd.Stdout = &stdout
	cmd.Stderr = &tailWriter{buf: &stderr, max: 8 << 10}
	if p.log != nil {
		fmt.Fprintf(p.log, "== %s round %d %s %s\n", time.Now().Format(time.RFC3339), round, scenario, sys)
		cmd.Stderr = io.MultiWriter(cmd.Stderr, p.log)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	load := load1()
	busy0, steal0 := machineBusy()
	t0 := time.Now()
	err := cmd.Run()
	wall := time.Since(t0)
	busy1, steal1 := machineBusy()

	var res result
	steal := (steal1 - steal0).Seconds() / wall.Seconds()
	if jerr := json.Unmarshal(lastLine(stdout.Bytes()), &res); jerr != nil {
		res = result{System: sys, Scenario: scenario, Round: round, Metrics: map[string]float64{}}
		res.Error = fmt.Sprintf("run failed: %v; %s", err, strings.TrimSpace(stderr.String()))
	}
	if res.Error != "" && stderr.Len() > 0 {
		res.Error += " | stderr: " + lastLines(stderr.String(), 5)
	}
	res.WallSeconds = wall.Seconds()
	res.Steal = steal
	res.Load1 = load
	if cmd.ProcessState != nil {
		if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
			own := tv(ru.Utime) + tv(ru.Stime) // the child and the servers it reaped
			pg := time.Duration(res.Metrics["pg_cpu_s"] * float64(time.Second))
			foreign := busy1 - busy0 - own - pg
			res.ForeignCPU = max(0, foreign.Seconds()/wall.Seconds())
		}
	}
	return res
}

// quiet waits up to max for the rest of the machine to use less than
// cores of CPU (measured over half a second), and returns how long it
// waited and the last measurement.
func quiet(ctx context.Context, max time.Duration, cores float64) (time.Duration, float64) {
	t0 := time.Now()
	for {
		b0, _ := machineBusy()
		s0 := time.Now()
		sleepCtx(ctx, 500*time.Millisecond)
		b1, _ := machineBusy()
		others := (b1 - b0).Seconds() / time.Since(s0).Seconds()
		if others < cores || time.Since(t0) >= max || ctx.Err() != nil {
			return time.Since(t0), others
		}
	}
}

// machineBusy is the CPU time all processes of the machine have used, and
// the time the hypervisor gave this machine's CPUs to others (steal), from
// /proc/stat.
func machineBusy() (busy, steal time.Duration) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, 0
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	var ticks int64
	for i, v := range f[1:] {
		n, _ := strconv.ParseInt(v, 10, 64)
		switch {
		case i == 7:
			steal = time.Duration(n) * clockTick
		case i == 3 || i == 4 || i > 7: // idle, iowait; guest time is in user already
		default:
			ticks += n
		}
	}
	return time.Duration(ticks) * clockTick, steal
}

type tailWriter struct {
	buf *bytes.Buffer
	max int
}

func (t *tailWriter) Write(b []byte) (int, error) {
	t.buf.Write(b)
	if t.buf.Len() > 2*t.max {
		keep := slices.Clone(t.buf.Bytes()[t.buf.Len()-t.max:])
		t.buf.Reset()
		t.buf.Write(keep)
	}
	return len(b), nil
}

func lastLine(b []byte) []byte {
	b = bytes.TrimSpace(b)
	if i := bytes.LastIndexByte(b, '\n'); i >= 0 {
		return b[i+1:]
	}
	return b
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " / ")
}

func copyDB(from, to string) error {
	for _, suffix := range []string{"", "-wal"} {
		src, err := os.Open(from + suffix)
		if err != nil {
			if suffix != "" && os.IsNotExist(err) {
				continue
			}
			return err
		}
		dst, err := os.Create(to + suffix)
		if err != nil {
			src.Close()
			return err
		}
		_, err = io.Copy(dst, src)
		src.Close()
		if err == nil {
			// On disk before the run: otherwise the run's first checkpoint
			// (an fsync of the database file) writes out the whole copy,
			// hundreds of MB for the 1,000,000-job template, in its window.
			err = dst.Sync()
		}
		if cerr := dst.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "%s "+format+"\n", append([]any{time.Now().Format("15:04:05")}, args...)...)
}

func summary(sc scenarioInfo, r result) string {
	if r.Error != "" {
		return "ERROR: " + r.Error
	}
	s := fmt.Sprintf("%s %s", fmtNum(r.Metrics[sc.Metric]), sc.Unit)
	for _, x := range sc.Extra {
		s += fmt.Sprintf(", %s %s", x, fmtNum(r.Metrics[x]))
	}
	if v, ok := r.Metrics["rss_mb"]; ok {
		s += fmt.Sprintf(", rss %.0f MB", v)
	}
	if v, ok := r.Metrics["cpu_per_1k"]; ok {
		s += fmt.Sprintf(", cpu %.3f s/1k", v)
	}
	s += fmt.Sprintf(", load %.2f, others %.2f cores, steal %.2f", r.Load1, r.ForeignCPU, r.Steal)
	for _, n := range r.Notes {
		s += " [" + n + "]"
	}
	return s
}
