package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/queuehq/queue/app"
	"github.com/queuehq/queue/bench/internal/benchkit"
)

// result is what one child run reports on its stdout, as one JSON object.
type result struct {
	System   string             `json:"system"`
	Scenario string             `json:"scenario"`
	Round    int                `json:"round"`
	Metrics  map[string]float64 `json:"metrics"`
	Notes    []string           `json:"notes,omitempty"`
	Error    string             `json:"error,omitempty"`
	// Filled by the parent.
	WallSeconds float64 `json:"wall_seconds"`
	ForeignCPU  float64 `json:"foreign_cores"` // other processes' CPU during the run, in cores
	Load1       float64 `json:"load1"`         // one-minute load average when the run started
	Steal       float64 `json:"steal_cores"`   // CPU the hypervisor gave to other machines during the run, in cores
}

// runConfig is the load of a scenario.
type runConfig struct {
	Warmup          time.Duration
	Duration        time.Duration
	LatencyDuration time.Duration
	Rate            float64
	Producers       int
	BatchSize       int
	BurnJobs        int
	IdleWait        time.Duration
	CPUProfile      string
}

// child runs one (system, scenario) in this fresh process and prints its result.
func child(ctx context.Context, sysName, scenario string, round int, e *env, rc runConfig) {
	res := result{System: sysName, Scenario: scenario, Round: round, Metrics: map[string]float64{}}
	defer func() {
		if r := recover(); r != nil {
			res.Error = fmt.Sprint("panic: ", r)
		}
		json.NewEncoder(os.Stdout).Encode(res)
	}()
	dir, err := os.MkdirTemp(os.Getenv("BENCH_TMP"), "run-")
	if err != nil {
		res.Error = err.Error()
		return
	}
	defer os.RemoveAll(dir)
	e.Dir = dir
	defer e.close()
	if err := runScenario(ctx, sysName, scenario, e, rc, &res); err != nil {
		res.Error = err.Error()
	}
}

func runScenario(ctx context.Context, sysName, scenario string, e *env, rc runConfig, res *result) error {
	switch scenario {
	case "serve":
		return serveIdle(ctx, e, rc, res)
	case "serve-1m":
		return serve1M(ctx, e, rc, res)
	case "prepare-sqlite", "prepare-postgres":
		return prepare(ctx, e, res)
	}
	info, ok := findSystem(sysName)
	if !ok {
		return fmt.Errorf("unknown system %q", sysName)
	}
	if scenario == "e2e-normal" {
		e.Sync = "normal"
	}
	switch scenario {
	case "claimers-1":
		e.Claimers = 1
	case "claimers-32":
		e.Claimers = 32
	}
	sys, err := info.open(ctx, e)
	if err != nil {
		return fmt.Errorf("open %s: %w", sysName, err)
	}
	closed := false
	defer func() {
		if !closed {
			sys.Close()
		}
	}()
	m := &meter{sys: sys, res: res, pgDB: e.pgDB}
	pgAtOpen := postgresCPU(e.pgDB)
	if rc.CPUProfile != "" {
		m.profile = rc.CPUProfile
	}
	switch scenario {
	case "enqueue":
		err = runEnqueue(ctx, sys, m, rc, 1)
	case "batch":
		err = runEnqueue(ctx, sys, m, rc, rc.BatchSize)
	case "burndown":
		err = runBurndown(ctx, sys, m, rc)
	case "e2e", "e2e-normal":
		err = runE2E(ctx, sys, m, rc)
	case "e2e-4x":
		rc.Producers *= 4
		err = runE2E(ctx, sys, m, rc)
	case "e2e-8", "http-8", "claimers-1", "claimers-32":
		rc.Producers = 8
		err = runE2E(ctx, sys, m, rc)
	case "http-1":
		rc.Producers = 1
		err = runE2E(ctx, sys, m, rc)
	case "http-64":
		rc.Producers = 64
		err = runE2E(ctx, sys, m, rc)
	case "latency":
		err = runLatency(ctx, sys, m, rc)
	case "claim-1k", "claim-1m":
		err = runClaim(ctx, sys, m, rc, scenario == "claim-1m")
	default:
		err = fmt.Errorf("unknown scenario %q", scenario)
	}
	// Peak RSS of the system under test: the server process for HTTP, else this process.
	if sp, ok := sys.(serverProc); ok {
		res.Metrics["rss_mb"] = mb(benchkit.ProcStatus(sp.ServerPID(), "VmHWM"))
		res.Metrics["client_rss_mb"] = mb(selfMaxRSS())
	} else {
		res.Metrics["rss_mb"] = mb(selfMaxRSS())
	}
	if e.pgDB != "" {
		res.Metrics["pg_cpu_s"] = (postgresCPU(e.pgDB) - pgAtOpen).Seconds()
	}
	closed = true
	if cerr := sys.Close(); cerr != nil && err == nil {
		err = cerr
	}
	return err
}

func mb(b int64) float64 { return float64(b) / (1 << 20) }

// meter measures one window: wall time, jobs, and the CPU of every
// process of the system under test (this one, a queue server, PostgreSQL).
type meter struct {
	sys     system
	res     *result
	profile string
	pgDB    string

	t0   time.Time
	cpu0 time.Duration
	n0   int64
}

func (m *meter) cpu() time.Duration {
	d := selfCPU()
	if sp, ok := m.sys.(serverProc); ok {
		if c, err := procStat(sp.ServerPID(), false); err == nil {
			d += c
		}
	}
	d += postgresCPU(m.pgDB)
	return d
}

func (m *meter) start(n int64) {
	if m.profile != "" {
		if f, err := os.Create(m.profile); err == nil {
			pprof.StartCPUProfile(f)
		}
	}
	m.t0, m.cpu0, m.n0 = time.Now(), m.cpu(), n
}

// stop ends the window and records rate (jobs/s) and CPU per 1k jobs
// under prefix (the empty prefix for the scenario's headline).
func (m *meter) stop(n int64, prefix string) (jobs int64, secs float64) {
	secs = time.Since(m.t0).Seconds()
	cpu := m.cpu() - m.cpu0
	if m.profile != "" {
		pprof.StopCPUProfile()
		m.profile = ""
	}
	jobs = n - m.n0
	m.res.Metrics[prefix+"jobs"] = float64(jobs)
	m.res.Metrics[prefix+"seconds"] = secs
	m.res.Metrics[prefix+"rate"] = float64(jobs) / secs
	if jobs > 0 {
		m.res.Metrics[prefix+"cpu_per_1k"] = cpu.Seconds() / float64(jobs) * 1000
	}
	m.res.Metrics[prefix+"cpu_cores"] = cpu.Seconds() / secs
	return jobs, secs
}

// errCount counts failed calls; a run with more than a few fails.
type errCount struct {
	n     atomic.Int64
	first atomic.Value
}

func (c *errCount) add(err error) {
	if c.n.Add(1) == 1 {
		c.first.Store(err.Error())
	}
}

func (c *errCount) note(res *result, what string) {
	if n := c.n.Load(); n > 0 {
		res.Notes = append(res.Notes, fmt.Sprintf("%d %s errors, first: %v", n, what, c.first.Load()))
		res.Metrics[what+"_errors"] = float64(n)
	}
}

// produce runs producers goroutines, each submitting batch jobs per call
// (one call per job when batch is 1) until ctx ends. It counts acknowledged jobs.
func produce(ctx context.Context, sys system, producers, batch int, n *atomic.Int64, errs *errCount) *sync.WaitGroup {
	var wg sync.WaitGroup
	for range producers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				var err error
				if batch == 1 {
					err = sys.Submit(ctx, 0)
				} else {
					err = sys.SubmitBatch(ctx, batch, 0)
				}
				if err != nil {
					if ctx.Err() == nil {
						errs.add(err)
						time.Sleep(10 * time.Millisecond)
					}
					continue
				}
				n.Add(int64(batch))
			}
		}()
	}
	return &wg
}

func sleepCtx(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// runEnqueue: Producers submit as fast as they can, batch jobs per call.
func runEnqueue(ctx context.Context, sys system, m *meter, rc runConfig, batch int) error {
	var n atomic.Int64
	var errs errCount
	pctx, stop := context.WithCancel(ctx)
	wg := produce(pctx, sys, rc.Producers, batch, &n, &errs)
	sleepCtx(ctx, rc.Warmup)
	m.start(n.Load())
	sleepCtx(ctx, rc.Duration)
	m.stop(n.Load(), "")
	stop()
	wg.Wait()
	errs.note(m.res, "submit")
	return tooManyErrors(&errs, n.Load())
}

func tooManyErrors(errs *errCount, ok int64) error {
	if n := errs.n.Load(); n > 0 && n > ok/100 {
		return fmt.Errorf("%d errors (first: %v) against %d successes", n, errs.first.Load(), ok)
	}
	return nil
}

// prefill stores n jobs in batches of 1,000 (10,000 for large fills).
func prefill(ctx context.Context, sys system, n int) error {
	size := 1000
	for n > 0 {
		b := min(size, n)
		if err := sys.SubmitBatch(ctx, b, 0); err != nil {
			return fmt.Errorf("prefill: %w", err)
		}
		n -= b
	}
	return nil
}

// runBurndown: BurnJobs are stored first; the rate is how fast the workers
// finish them (until all are done, or Duration passes).
func runBurndown(ctx context.Context, sys system, m *meter, rc runConfig) error {
	began := time.Now()
	if err := prefill(ctx, sys, rc.BurnJobs); err != nil {
		return err
	}
	m.res.Metrics["prefill_seconds"] = time.Since(began).Seconds()
	var n atomic.Int64
	m.start(0)
	stopWork, err := sys.Work(ctx, func(int64) { n.Add(1) })
	if err != nil {
		return err
	}
	deadline := time.Now().Add(rc.Duration)
	for n.Load() < int64(rc.BurnJobs) && time.Now().Before(deadline) && ctx.Err() == nil {
		time.Sleep(2 * time.Millisecond)
	}
	m.stop(n.Load(), "")
	stopWork()
	return verify(ctx, sys, m.res, n.Load())
}

// verify checks that every job a handler saw is stored as completed once
// the workers stopped (a no-op handler never fails, so nothing may be missing).
func verify(ctx context.Context, sys system, res *result, handled int64) error {
	done, err := sys.Completed(ctx)
	if err != nil {
		return fmt.Errorf("count completed: %w", err)
	}
	res.Metrics["completed_in_store"] = float64(done)
	res.Metrics["handled"] = float64(handled)
	if done < handled {
		res.Notes = append(res.Notes, fmt.Sprintf("only %d of %d handled jobs are completed in the store", done, handled))
	}
	if done > handled {
		res.Notes = append(res.Notes, fmt.Sprintf("%d jobs completed in the store, %d handled", done, handled))
	}
	return nil
}

// runE2E: Producers submit one job per call while the workers claim and
// complete; the rate is completions per second.
func runE2E(ctx context.Context, sys system, m *meter, rc runConfig) error {
	var handled, inserted atomic.Int64
	stopWork, err := sys.Work(ctx, func(int64) { handled.Add(1) })
	if err != nil {
		return err
	}
	var errs errCount
	pctx, stop := context.WithCancel(ctx)
	wg := produce(pctx, sys, rc.Producers, 1, &inserted, &errs)
	sleepCtx(ctx, rc.Warmup)
	rec, recording := sys.(submitRecorder)
	if recording {
		rec.recordSubmits(true)
	}
	ins0 := inserted.Load()
	m.start(handled.Load())
	sleepCtx(ctx, rc.Duration)
	ins1 := inserted.Load()
	m.stop(handled.Load(), "")
	if recording {
		rec.recordSubmits(false)
		if lat := rec.submitLatencies(); len(lat) > 0 {
			slices.Sort(lat)
			m.res.Metrics["submit_samples"] = float64(len(lat))
			m.res.Metrics["submit_p50_ms"] = ms(pct(lat, 50))
			m.res.Metrics["submit_p99_ms"] = ms(pct(lat, 99))
			m.res.Metrics["submit_max_ms"] = ms(lat[len(lat)-1])
		}
	}
	m.res.Metrics["insert_rate"] = float64(ins1-ins0) / m.res.Metrics["seconds"]
	stop()
	wg.Wait()
	m.res.Metrics["backlog"] = float64(inserted.Load() - handled.Load())
	stopWork()
	errs.note(m.res, "submit")
	if we, ok := sys.(interface{ workErrors() *errCount }); ok {
		we.workErrors().note(m.res, "worker")
		if err := tooManyErrors(we.workErrors(), handled.Load()); err != nil {
			return err
		}
	}
	if err := tooManyErrors(&errs, inserted.Load()); err != nil {
		return err
	}
	return verify(ctx, sys, m.res, handled.Load())
}

// submitRecorder is a system that times each of its submits while
// recording is on: runE2E reports their p50 and p99 beside the rate.
type submitRecorder interface {
	recordSubmits(on bool)
	submitLatencies() []time.Duration
}

// debugLatency (BENCH_DEBUG_LATENCY=1) logs every job of a paced run that
// started more than 10ms after its submit, to the run's stderr.
var debugLatency = os.Getenv("BENCH_DEBUG_LATENCY") != ""

// runLatency: one job every 1/Rate seconds (each submitted from its own
// goroutine, so a slow submit does not delay the next: open loop); the
// latency of a job is from just before its submit call to the start of its
// handler. The first Warmup of jobs is left out.
func runLatency(ctx context.Context, sys system, m *meter, rc runConfig) error {
	var mu sync.Mutex
	var lat []time.Duration
	var handled atomic.Int64
	measureFrom := time.Now().Add(rc.Warmup).UnixNano()
	stopWork, err := sys.Work(ctx, func(t int64) {
		now := time.Now().UnixNano()
		handled.Add(1)
		if t >= measureFrom {
			mu.Lock()
			lat = append(lat, time.Duration(now-t))
			if debugLatency && now-t > int64(10*time.Millisecond) {
				fmt.Fprintf(os.Stderr, "slow job: submitted at +%.3fs, started %.1f ms later\n", float64(t-measureFrom)/1e9, float64(now-t)/1e6)
			}
			mu.Unlock()
		}
	})
	if err != nil {
		return err
	}
	var errs errCount
	var sent atomic.Int64
	var wg sync.WaitGroup
	interval := time.Duration(float64(time.Second) / rc.Rate)
	total := int((rc.Warmup + rc.LatencyDuration) / interval)
	began := time.Now()
	measuring := false
	for i := range total {
		next := began.Add(time.Duration(i) * interval)
		if d := time.Until(next); d > 0 {
			time.Sleep(d)
		}
		if !measuring && time.Now().UnixNano() >= measureFrom {
			measuring = true
			m.start(handled.Load())
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := sys.Submit(ctx, time.Now().UnixNano()); err != nil {
				errs.add(err)
				return
			}
			sent.Add(1)
		}()
	}
	wg.Wait()
	deadline := time.Now().Add(10 * time.Second)
	for handled.Load() < sent.Load() && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	m.stop(handled.Load(), "")
	stopWork()
	errs.note(m.res, "submit")
	mu.Lock()
	defer mu.Unlock()
	if len(lat) == 0 {
		return errors.New("no latency measured")
	}
	slices.Sort(lat)
	m.res.Metrics["samples"] = float64(len(lat))
	m.res.Metrics["p50_ms"] = ms(pct(lat, 50))
	m.res.Metrics["p90_ms"] = ms(pct(lat, 90))
	m.res.Metrics["p99_ms"] = ms(pct(lat, 99))
	m.res.Metrics["max_ms"] = ms(lat[len(lat)-1])
	if h := handled.Load(); h < sent.Load() {
		m.res.Notes = append(m.res.Notes, fmt.Sprintf("%d of %d jobs not started within 10s", sent.Load()-h, sent.Load()))
	}
	return tooManyErrors(&errs, sent.Load())
}

func pct(sorted []time.Duration, p float64) time.Duration {
	i := int(math.Ceil(p/100*float64(len(sorted)))) - 1
	return sorted[max(0, min(i, len(sorted)-1))]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// claimer is a system whose claims can be measured on their own.
type claimer interface {
	// Claim claims up to limit jobs of any kind, without waiting.
	Claim(ctx context.Context, limit int) (int, error)
	// ClaimKind claims up to limit jobs of kind only (as client.Worker
	// does: it always names its kind), without waiting.
	ClaimKind(ctx context.Context, kind string, limit int) (int, error)
}

func (q *queueLocal) Claim(ctx context.Context, limit int) (int, error) {
	jobs, err := q.svc.Claim(ctx, benchQueue, app.ClaimInput{WorkerID: "bench", Limit: limit})
	return len(jobs), err
}

func (q *queueLocal) ClaimKind(ctx context.Context, kind string, limit int) (int, error) {
	jobs, err := q.svc.Claim(ctx, benchQueue, app.ClaimInput{WorkerID: "bench", Limit: limit, Kinds: []string{kind}})
	return len(jobs), err
}

// runClaim measures claims alone (no completion) at a queue depth of at
// least 1,000 or at least 1,000,000 jobs. The 1M queue is a copy of a
// template filled before the rounds; the 1k queue is filled here. Each
// step tops the queue up by chunk jobs (not timed), then claimers take
// exactly chunk jobs (timed), so the depth stays within [base, base+chunk].
// Two passes: 16 claimers taking one job per call, then 4 taking 100.
// Last, five claims filtered by a kind no queued job has: the time a
// worker of a rare kind pays to find nothing behind the queue's backlog.
func runClaim(ctx context.Context, sys system, m *meter, rc runConfig, big bool) error {
	cl, ok := sys.(claimer)
	if !ok {
		return errors.New("this system cannot be measured claiming alone")
	}
	if !big {
		if err := prefill(ctx, sys, 1000); err != nil {
			return err
		}
	}
	defer func() {
		var took []time.Duration
		for range 5 {
			t0 := time.Now()
			if _, err := cl.ClaimKind(ctx, "absent", 1); err != nil {
				m.res.Notes = append(m.res.Notes, "kind-filtered claim: "+err.Error())
				return
			}
			took = append(took, time.Since(t0))
		}
		slices.Sort(took)
		m.res.Metrics["kind_miss_ms"] = ms(took[len(took)/2])
	}()
	if m.profile != "" {
		if f, err := os.Create(m.profile); err == nil {
			pprof.StartCPUProfile(f)
			defer pprof.StopCPUProfile()
		}
		m.profile = ""
	}
	for _, pass := range []struct {
		prefix       string
		claimers     int
		limit, chunk int
		share        float64
	}{
		{"", 16, 1, 500, 0.5},
		{"batch_", 4, 100, 2000, 0.5},
	} {
		var timed time.Duration
		var claimed int64
		var cpu time.Duration
		budget := time.Duration(float64(rc.Duration) * pass.share)
		for timed < budget && ctx.Err() == nil {
			if err := prefill(ctx, sys, pass.chunk); err != nil {
				return err
			}
			var left atomic.Int64
			left.Store(int64(pass.chunk))
			var errs errCount
			var wg sync.WaitGroup
			cpu0 := m.cpu()
			t0 := time.Now()
			for range pass.claimers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for {
						want := min(int64(pass.limit), left.Add(-int64(pass.limit))+int64(pass.limit))
						if want <= 0 {
							return
						}
						n, err := cl.Claim(ctx, int(want))
						if err != nil {
							errs.add(err)
							return
						}
						if n < int(want) {
							errs.add(fmt.Errorf("claimed %d of %d", n, want))
							return
						}
					}
				}()
			}
			wg.Wait()
			timed += time.Since(t0)
			cpu += m.cpu() - cpu0
			claimed += int64(pass.chunk)
			if errs.n.Load() > 0 {
				return fmt.Errorf("claim: %v", errs.first.Load())
			}
		}
		m.res.Metrics[pass.prefix+"rate"] = float64(claimed) / timed.Seconds()
		m.res.Metrics[pass.prefix+"jobs"] = float64(claimed)
		m.res.Metrics[pass.prefix+"seconds"] = timed.Seconds()
		m.res.Metrics[pass.prefix+"cpu_per_1k"] = cpu.Seconds() / float64(claimed) * 1000
	}
	return nil
}

// serveIdle starts `queue serve` on an empty database: the time from exec
// to the first 200 of /readyz (migrations included), then the resident
// set after IdleWait of doing nothing.
func serveIdle(ctx context.Context, e *env, rc runConfig, res *result) error {
	srv, err := startServe(ctx, e, filepath.Join(e.Dir, "queue.db"))
	if err != nil {
		return err
	}
	defer srv.Close()
	res.Metrics["cold_start_ms"] = ms(srv.startedIn)
	sleepCtx(ctx, rc.IdleWait)
	pid := srv.ServerPID()
	res.Metrics["idle_rss_mb"] = mb(benchkit.ProcStatus(pid, "VmRSS"))
	res.Metrics["rss_mb"] = mb(benchkit.ProcStatus(pid, "VmHWM"))
	return nil
}

// serve1M starts `queue serve` on a copy of the database holding 1,000,000
// queued jobs, asks for /api/stats, claims and completes 100 jobs over
// HTTP, waits IdleWait (maintenance ticks), and reads its resident set.
func serve1M(ctx context.Context, e *env, rc runConfig, res *result) error {
	if e.DBFile == "" {
		return errors.New("no 1M template")
	}
	srv, err := startServe(ctx, e, e.DBFile)
	if err != nil {
		return err
	}
	defer srv.Close()
	res.Metrics["cold_start_1m_ms"] = ms(srv.startedIn)
	pid := srv.ServerPID()
	res.Metrics["ready_rss_1m_mb"] = mb(benchkit.ProcStatus(pid, "VmRSS"))
	t0 := time.Now()
	st, err := srv.cl.Stats(ctx)
	if err != nil {
		return fmt.Errorf("stats: %w", err)
	}
	res.Metrics["stats_1m_ms"] = ms(time.Since(t0))
	res.Metrics["queued"] = float64(st.Total.Queued)
	t0 = time.Now()
	jobs, err := srv.cl.Claim(ctx, benchQueue, app.ClaimInput{WorkerID: "bench", Limit: 100})
	if err != nil {
		return fmt.Errorf("claim: %w", err)
	}
	items := make([]app.Completion, len(jobs))
	for i, j := range jobs {
		items[i] = app.Completion{ID: j.ID, Lease: j.Lease}
	}
	if _, err := srv.cl.CompleteBatch(ctx, items); err != nil {
		return fmt.Errorf("complete: %w", err)
	}
	res.Metrics["claim_complete_100_1m_ms"] = ms(time.Since(t0))
	// The dashboard, as an operator would open it.
	if resp, err := http.Get(srv.base + "/"); err == nil {
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	sleepCtx(ctx, rc.IdleWait)
	res.Metrics["rss_1m_mb"] = mb(benchkit.ProcStatus(pid, "VmRSS"))
	res.Metrics["rss_mb"] = mb(benchkit.ProcStatus(pid, "VmHWM"))
	return nil
}

// prepare fills the 1,000,000-job template: a SQLite file (e.DBFile) or a
// PostgreSQL database (e.PGPrepare), through our store's batch submit:
// four goroutines submitting 10,000 jobs per call.
func prepare(ctx context.Context, e *env, res *result) error {
	const total, batch, fillers = 1_000_000, 10_000, 4
	var sys system
	var err error
	if e.PGPrepare != "" {
		sys, err = openQueuePG(ctx, e)
	} else {
		sys, err = openQueueLocal(ctx, e)
	}
	if err != nil {
		return err
	}
	defer sys.Close()
	t0 := time.Now()
	var next atomic.Int64
	var errs errCount
	var wg sync.WaitGroup
	for range fillers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for next.Add(batch) <= total && errs.n.Load() == 0 {
				if err := sys.SubmitBatch(ctx, batch, 0); err != nil {
					errs.add(err)
				}
			}
		}()
	}
	wg.Wait()
	if errs.n.Load() > 0 {
		return fmt.Errorf("fill: %v", errs.first.Load())
	}
	secs := time.Since(t0).Seconds()
	res.Metrics["seconds"] = secs
	res.Metrics["rate"] = total / secs
	res.Metrics["rss_mb"] = mb(selfMaxRSS())
	return nil
}
