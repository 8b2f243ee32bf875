package main

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"time"
)

// stat is the median and range of one metric over the rounds.
type stat struct {
	med, lo, hi float64
	n           int
}

func (p *parent) stat(system, scenario, metric string) (stat, bool) {
	var v []float64
	for _, r := range p.results {
		if r.System == system && r.Scenario == scenario && r.Error == "" {
			if x, ok := r.Metrics[metric]; ok && !math.IsNaN(x) {
				v = append(v, x)
			}
		}
	}
	if len(v) == 0 {
		return stat{}, false
	}
	slices.Sort(v)
	med := v[len(v)/2]
	if len(v)%2 == 0 {
		med = (v[len(v)/2-1] + v[len(v)/2]) / 2
	}
	return stat{med: med, lo: v[0], hi: v[len(v)-1], n: len(v)}, true
}

func (p *parent) errors(system, scenario string) []string {
	var out []string
	for _, r := range p.results {
		if r.System == system && r.Scenario == scenario {
			if r.Error != "" {
				out = append(out, fmt.Sprintf("round %d: %s", r.Round, r.Error))
			}
			for _, n := range r.Notes {
				out = append(out, fmt.Sprintf("round %d: %s", r.Round, n))
			}
		}
	}
	return out
}

// peers are the systems ours are compared with, in column order.
var peers = []string{"river-sqlite", "goqite", "river-pg"}

// report renders the whole run as markdown.
func (p *parent) report() string {
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	w("\n## Results\n\n")
	w("Run %s on %s; %d round(s), medians with min-max over the rounds. %s\n\n",
		p.started.UTC().Format("2006-01-02 15:04 MST"), machine(), p.rounds, p.loadSummary())
	w("Code: %s. Command: `go run .%s` in bench/.\n\n", p.commit, argsString(p.args))
	w("Settings: %s\n\n", p.settings())
	for _, pr := range p.prepared {
		w("The 1,000,000-job template (%s) filled in %.1f s: %s jobs/s through the store's batch submit (4 callers, 10,000 jobs per call).\n\n",
			strings.TrimPrefix(pr.Scenario, "prepare-"), pr.Metrics["seconds"], fmtNum(pr.Metrics["rate"]))
	}
	var notes []string
	for _, sc := range p.scenarios {
		var rows []systemInfo
		for _, s := range p.systems {
			if sc.Applies(s) {
				rows = append(rows, s)
			}
		}
		if len(rows) == 0 {
			continue
		}
		w("### %s (`%s`)\n\n", sc.Title, sc.Name)
		hdr := []string{"system", sc.Unit + " (median)", "min-max"}
		for _, x := range sc.Extra {
			hdr = append(hdr, label(x))
		}
		hdr = append(hdr, "peak RSS MB", "CPU s / 1k jobs")
		var cols []string
		for _, peer := range peers {
			if slices.ContainsFunc(rows, func(s systemInfo) bool { return s.Name == peer }) {
				cols = append(cols, peer)
				hdr = append(hdr, "x "+peer)
			}
		}
		w("| %s |\n|---|%s\n", strings.Join(hdr, " | "), strings.Repeat("---:|", len(hdr)-1))
		for _, s := range rows {
			st, ok := p.stat(s.Name, sc.Name, sc.Metric)
			cells := []string{s.Label}
			if !ok {
				cells = append(cells, "error", "")
			} else {
				cells = append(cells, fmtNum(st.med), fmtNum(st.lo)+"-"+fmtNum(st.hi))
			}
			for _, x := range sc.Extra {
				cells = append(cells, p.cell(s.Name, sc.Name, x))
			}
			cells = append(cells, p.cell(s.Name, sc.Name, "rss_mb"), p.cellPrec(s.Name, sc.Name, "cpu_per_1k", 3))
			for _, peer := range cols {
				cells = append(cells, p.ratio(s, peer, sc))
			}
			w("| %s |\n", strings.Join(cells, " | "))
			for _, e := range p.errors(s.Name, sc.Name) {
				notes = append(notes, fmt.Sprintf("%s, %s, %s", sc.Name, s.Name, e))
			}
		}
		w("\n")
	}
	w("%s", p.claimersSweep())
	if len(notes) > 0 {
		w("Errors and notes:\n\n")
		for _, n := range notes {
			w("- %s\n", n)
		}
		w("\n")
	}
	w("%s", p.targets())
	w("%s", p.targets29())
	return b.String()
}

func (p *parent) cell(system, scenario, metric string) string {
	st, ok := p.stat(system, scenario, metric)
	if !ok {
		return "-"
	}
	return fmtNum(st.med)
}

func (p *parent) cellPrec(system, scenario, metric string, prec int) string {
	st, ok := p.stat(system, scenario, metric)
	if !ok {
		return "-"
	}
	return fmt.Sprintf("%.*f", prec, st.med)
}

// ratio is how many times better our system s did than peer: throughput
// ours/peer, latency and sizes peer/ours, as the median of the per-round
// ratios (both ran in the same round, minutes apart at most, so pairing
// them cancels the machine's slower drifts).
func (p *parent) ratio(s systemInfo, peer string, sc scenarioInfo) string {
	if !s.Ours {
		return ""
	}
	r, ok := p.paired(s.Name, sc.Name, peer, sc.Name, sc.Metric, sc.Lower)
	if !ok {
		return "-"
	}
	return fmt.Sprintf("%.1fx", r)
}

// paired is the median over rounds of a's metric divided by b's (b's by
// a's when lower is better), over the rounds in which both ran cleanly.
func (p *parent) paired(a, scA, b, scB, metric string, lower bool) (float64, bool) {
	val := func(sys, sc string, round int) (float64, bool) {
		for _, r := range p.results {
			if r.System == sys && r.Scenario == sc && r.Round == round && r.Error == "" {
				v, ok := r.Metrics[metric]
				return v, ok && v > 0
			}
		}
		return 0, false
	}
	var rs []float64
	for round := 1; round <= p.rounds; round++ {
		x, ok1 := val(a, scA, round)
		y, ok2 := val(b, scB, round)
		if !ok1 || !ok2 {
			continue
		}
		if lower {
			rs = append(rs, y/x)
		} else {
			rs = append(rs, x/y)
		}
	}
	if len(rs) == 0 {
		return 0, false
	}
	slices.Sort(rs)
	if len(rs)%2 == 0 {
		return (rs[len(rs)/2-1] + rs[len(rs)/2]) / 2, true
	}
	return rs[len(rs)/2], true
}

func label(metric string) string {
	switch metric {
	case "insert_rate":
		return "submitted/s"
	case "p50_ms":
		return "p50 ms"
	case "max_ms":
		return "max ms"
	case "batch_rate":
		return "jobs/s claiming 100 per call"
	case "kind_miss_ms":
		return "ms, claim of an absent kind"
	case "idle_rss_mb":
		return "idle RSS MB"
	case "cold_start_1m_ms":
		return "cold start ms"
	case "stats_1m_ms":
		return "/api/stats ms"
	case "claim_complete_100_1m_ms":
		return "claim+complete 100 ms"
	case "submit_p50_ms":
		return "submit p50 ms"
	case "submit_p99_ms":
		return "submit p99 ms"
	}
	return metric
}

// fmtNum prints with thousands separators and sensible precision.
func fmtNum(v float64) string {
	switch {
	case math.IsNaN(v) || math.IsInf(v, 0):
		return "-"
	case math.Abs(v) >= 100:
		return commas(int64(math.Round(v)))
	case math.Abs(v) >= 10:
		return fmt.Sprintf("%.1f", v)
	default:
		return fmt.Sprintf("%.2f", v)
	}
}

func commas(n int64) string {
	s := fmt.Sprint(n)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var out []string
	for len(s) > 3 {
		out = append([]string{s[len(s)-3:]}, out...)
		s = s[:len(s)-3]
	}
	out = append([]string{s}, out...)
	r := strings.Join(out, ",")
	if neg {
		r = "-" + r
	}
	return r
}

// argsString is the command line's flags, for the report.
func argsString(args []string) string {
	var b strings.Builder
	for _, a := range args {
		b.WriteString(" " + a)
	}
	return b.String()
}

// commitOf describes the main module's commit and whether the store,
// app, client or ui had uncommitted changes when the queue was built.
func commitOf(dir string) string {
	out, err := exec.Command("git", "-C", dir, "log", "-1", "--format=%h %cd", "--date=format:%Y-%m-%d %H:%M").Output()
	if err != nil {
		return "unknown (not a git checkout)"
	}
	c := strings.TrimSpace(string(out))
	st, err := exec.Command("git", "-C", dir, "status", "--porcelain", "--", "app", "client", "sqlite", "postgres", "ui", "commands", "embed", "triggers").Output()
	if err == nil && len(bytes.TrimSpace(st)) > 0 {
		c += fmt.Sprintf(", with uncommitted changes in %d file(s) of the queue", len(strings.Split(strings.TrimSpace(string(st)), "\n")))
	}
	return "queue at commit " + c
}

func machine() string {
	model := "?"
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(l, "model name"); ok {
				model = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(v), ":"))
				break
			}
		}
	}
	kernel := "?"
	if out, err := exec.Command("uname", "-r").Output(); err == nil {
		kernel = strings.TrimSpace(string(out))
	}
	return fmt.Sprintf("%d CPUs (%s), Linux %s, %s", runtime.NumCPU(), model, kernel, runtime.Version())
}

// loadSummary says how busy the machine was with other work.
func (p *parent) loadSummary() string {
	var loads, foreign, steal []float64
	for _, r := range p.results {
		loads = append(loads, r.Load1)
		foreign = append(foreign, r.ForeignCPU)
		steal = append(steal, r.Steal)
	}
	if len(loads) == 0 {
		return ""
	}
	slices.Sort(loads)
	slices.Sort(foreign)
	slices.Sort(steal)
	return fmt.Sprintf("Machine load while running: one-minute load average %.2f median (%.2f-%.2f) at the start of the runs; "+
		"other processes (not the benchmark, its servers or its PostgreSQL backends) used %.2f cores median, %.2f at most, of %d; "+
		"hypervisor steal %.2f cores median, %.2f at most. Total time %s.",
		loads[len(loads)/2], loads[0], loads[len(loads)-1], foreign[len(foreign)/2], foreign[len(foreign)-1], runtime.NumCPU(),
		steal[len(steal)/2], steal[len(steal)-1], p.finished.Sub(p.started).Round(time.Second))
}

func (p *parent) settings() string {
	if p.env == nil {
		return p.savedSettings
	}
	e, rc := p.env, p.rc
	return fmt.Sprintf("%d producers; windows %s after %s warm-up (latency: %s at %.0f jobs/s); burn-down of %s jobs; "+
		"queue workers: client.Worker, concurrency %d (claims up to %d per call, acknowledges in batches), %d worker(s) over HTTP; "+
		"River: MaxWorkers %d, FetchCooldown %s, FetchPollInterval %s, %d SQLite connection(s), batch completer (default); "+
		"goqite: %d receive/delete goroutines, %s sleep when empty, 1 SQLite connection; "+
		"PostgreSQL pools: %d connections (queue serve on PostgreSQL too); SQLite: WAL, synchronous=FULL (NORMAL in e2e-normal), modernc.org/sqlite; "+
		"plain HTTP client (http-sqlite, http-pg): net/http, one POST /api/jobs per job, %d claiming workers (claimers-N: N) each claiming up to 500 with a 1 s wait and acknowledging the batch in one POST /api/jobs/complete.",
		rc.Producers, rc.Duration, rc.Warmup, rc.LatencyDuration, rc.Rate, commas(int64(rc.BurnJobs)),
		e.Concurrency, e.Concurrency, e.HTTPWorkers, e.RiverWorkers, e.RiverCooldown, e.RiverPoll, e.RiverConns,
		e.GoqiteWorkers, e.GoqitePoll, e.PGConns, e.Claimers)
}

// targets checks the numbers against issue 9's "done when".
func (p *parent) targets() string {
	type check struct {
		what string
		got  func() (float64, bool)
		ok   func(float64) bool
		fmt  string
	}
	ratio := func(a, b, sc, metric string) func() (float64, bool) {
		return func() (float64, bool) { return p.paired(a, sc, b, sc, metric, false) }
	}
	val := func(sys, sc, metric string) func() (float64, bool) {
		return func() (float64, bool) {
			x, ok := p.stat(sys, sc, metric)
			return x.med, ok
		}
	}
	ge := func(t float64) func(float64) bool { return func(v float64) bool { return v >= t } }
	lt := func(t float64) func(float64) bool { return func(v float64) bool { return v < t } }
	checks := []check{
		{"1. e2e FULL, in-process >= 20x River (SQLite)", ratio("queue", "river-sqlite", "e2e", "rate"), ge(20), "%.1fx"},
		{"1. e2e FULL, in-process >= 10x goqite", ratio("queue", "goqite", "e2e", "rate"), ge(10), "%.1fx"},
		{"2. e2e FULL, over HTTP >= 5x River (SQLite)", ratio("queue-http", "river-sqlite", "e2e", "rate"), ge(5), "%.1fx"},
		{"3. paced p99 in-process < 5 ms", val("queue", "latency", "p99_ms"), lt(5), "%.2f ms"},
		{"3. paced p99 over HTTP < 10 ms", val("queue-http", "latency", "p99_ms"), lt(10), "%.2f ms"},
		{"4. claims/s at 1M within 20% of 1k (SQLite)", ratio("queue", "queue", "claim-1m", "rate"), nil, "%.2f"},
		{"5. PostgreSQL e2e >= 2x River (PostgreSQL)", ratio("queue-pg", "river-pg", "e2e", "rate"), ge(2), "%.1fx"},
		{"6. idle RSS < 30 MB", val("queue-http", "serve", "idle_rss_mb"), lt(30), "%.1f MB"},
		{"6. RSS with 1M queued < 200 MB", val("queue-http", "serve-1m", "rss_1m_mb"), lt(200), "%.1f MB"},
		{"6. cold start to /readyz < 100 ms", val("queue-http", "serve", "cold_start_ms"), lt(100), "%.1f ms"},
	}
	// Check 4 compares two scenarios of one system, round by round.
	checks[5].got = func() (float64, bool) { return p.paired("queue", "claim-1m", "queue", "claim-1k", "rate", false) }
	checks[5].ok = ge(0.8)
	var b strings.Builder
	b.WriteString("### Issue 9 targets (medians of this run; ratios are medians of the per-round ratios)\n\n| target | measured | met |\n|---|---:|:---:|\n")
	for _, c := range checks {
		v, ok := c.got()
		if !ok {
			fmt.Fprintf(&b, "| %s | not run | |\n", c.what)
			continue
		}
		mark := "no"
		if c.ok(v) {
			mark = "yes"
		}
		fmt.Fprintf(&b, "| %s | "+c.fmt+" | %s |\n", c.what, v, mark)
	}
	b.WriteString("\n")
	return b.String()
}

// roundRatios is a's metric divided by b's in each round in which both
// ran cleanly, in round order.
func (p *parent) roundRatios(a, scA, b, scB, metric string) []float64 {
	var rs []float64
	for round := 1; round <= p.rounds; round++ {
		if r, ok := p.pairedRound(a, scA, b, scB, metric, round); ok {
			rs = append(rs, r)
		}
	}
	return rs
}

func (p *parent) pairedRound(a, scA, b, scB, metric string, round int) (float64, bool) {
	val := func(sys, sc string) (float64, bool) {
		for _, r := range p.results {
			if r.System == sys && r.Scenario == sc && r.Round == round && r.Error == "" {
				v, ok := r.Metrics[metric]
				return v, ok && v > 0
			}
		}
		return 0, false
	}
	x, ok1 := val(a, scA)
	y, ok2 := val(b, scB)
	if !ok1 || !ok2 {
		return 0, false
	}
	return x / y, true
}

// targets29 checks the numbers against issue 29's "done when". Ratios are
// medians of per-round ratios, as in the issue 9 table; "every round"
// targets show each round and are met only if every round meets them.
func (p *parent) targets29() string {
	var b strings.Builder
	b.WriteString("### Issue 29 targets (medians of this run; ratios are medians of the per-round ratios)\n\n| target | measured | met |\n|---|---:|:---:|\n")
	row := func(what, measured string, met bool, ran bool) {
		switch {
		case !ran:
			fmt.Fprintf(&b, "| %s | not run | |\n", what)
		case met:
			fmt.Fprintf(&b, "| %s | %s | yes |\n", what, measured)
		default:
			fmt.Fprintf(&b, "| %s | %s | no |\n", what, measured)
		}
	}
	ratio := func(what, a, scA, bb, scB string, min float64, format string) {
		v, ok := p.paired(a, scA, bb, scB, "rate", false)
		row(what, fmt.Sprintf(format, v), v >= min, ok)
	}
	ratio("1. SQLite FULL e2e, 8 producers: in process >= 20x River (SQLite) at 8 (e2e-8)", "queue", "e2e-8", "river-sqlite", "e2e-8", 20, "%.1fx")
	ratio("1. SQLite FULL e2e, 8 producers: over HTTP (http-8) >= 8x River (SQLite) in process at 8 (e2e-8)", "http-sqlite", "http-8", "river-sqlite", "e2e-8", 8, "%.1fx")
	if st, ok := p.stat("http-sqlite", "http-1", "submit_p50_ms"); ok {
		row("1. one producer over HTTP (http-1, SQLite): submit p50 < 0.6 ms", fmt.Sprintf("%.2f ms (p99 %s ms)", st.med, p.cell("http-sqlite", "http-1", "submit_p99_ms")), st.med < 0.6, true)
	} else {
		row("1. one producer over HTTP (http-1, SQLite): submit p50 < 0.6 ms", "", false, false)
	}
	ratio("2. PostgreSQL over HTTP, 8 producers + 8 claimers (http-8) >= 1.5x River (PostgreSQL) at 8 (e2e-8)", "http-pg", "http-8", "river-pg", "e2e-8", 1.5, "%.2fx")
	{
		rs := p.roundRatios("queue-pg", "e2e", "river-pg", "e2e", "rate")
		var parts []string
		met := len(rs) == p.rounds
		for _, r := range rs {
			parts = append(parts, fmt.Sprintf("%.2fx", r))
			met = met && r >= 3
		}
		row(fmt.Sprintf("2. PostgreSQL in process, %d producers (e2e): >= 3x River (PostgreSQL) in every round", p.producers()), strings.Join(parts, ", "), met, len(rs) > 0)
	}
	ratio("2. SQLite over HTTP, 8 producers: 32 claiming workers / 1 (claimers-32 / claimers-1) >= 1.0", "http-sqlite", "claimers-32", "http-sqlite", "claimers-1", 1, "%.2f")
	ratio("2. PostgreSQL over HTTP, 8 producers: 32 claiming workers / 1 (claimers-32 / claimers-1) >= 1.0", "http-pg", "claimers-32", "http-pg", "claimers-1", 1, "%.2f")
	{
		v, ok := p.paired("http-sqlite", "http-64", "queue", "e2e-4x", "rate", false)
		row(fmt.Sprintf("3. SQLite FULL e2e over HTTP at 64 producers (http-64) >= 50%% of in process at %d (e2e-4x)", 4*p.producers()), fmt.Sprintf("%.0f%%", 100*v), v >= 0.5, ok)
	}
	if st, ok := p.stat("queue-http", "serve-1m", "cold_start_1m_ms"); ok {
		row("4. cold start to /readyz with 1,000,000 queued < 100 ms (serve-1m)", fmt.Sprintf("%.1f ms", st.med), st.med < 100, true)
	} else {
		row("4. cold start to /readyz with 1,000,000 queued < 100 ms (serve-1m)", "", false, false)
	}
	b.WriteString("| 4. cold start with 10,000,000 queued < 200 ms | see bench/bigdb | |\n")
	b.WriteString("| 5. 10,000,000 queued: claims/s within 20% of 1,000; /api/stats and dashboard < 50 ms; serve RSS < 100 MB | see bench/bigdb | |\n")
	b.WriteString("| 6. 2 and 4 nodes on one PostgreSQL: aggregate e2e not below one node's; leader's duties resume within 5 s, no periodic fire lost or doubled | see bench/nodes | |\n")
	b.WriteString("\n")
	return b.String()
}

// producers is the -producers of the run (16 unless changed), read back
// from the saved flags when the report is printed again.
func (p *parent) producers() int {
	if p.env != nil {
		return p.rc.Producers
	}
	for i, a := range p.args {
		v, ok := strings.CutPrefix(a, "-producers=")
		if !ok && (a == "-producers" || a == "--producers") && i+1 < len(p.args) {
			v, ok = p.args[i+1], true
		}
		if ok {
			var n int
			if _, err := fmt.Sscan(v, &n); err == nil {
				return n
			}
		}
	}
	return 16
}

// claimersSweep puts the runs at 8 producers over HTTP side by side by the
// number of claiming workers: claimers-1, http-8 (8 workers), claimers-32.
func (p *parent) claimersSweep() string {
	var b strings.Builder
	for _, s := range p.systems {
		if !s.Plain {
			continue
		}
		var cells []string
		ran := false
		for _, sc := range []string{"claimers-1", "http-8", "claimers-32"} {
			st, ok := p.stat(s.Name, sc, "rate")
			if !ok {
				cells = append(cells, "-")
				continue
			}
			ran = true
			cells = append(cells, fmt.Sprintf("%s (submit p50 %s ms)", fmtNum(st.med), p.cell(s.Name, sc, "submit_p50_ms")))
		}
		if !ran {
			continue
		}
		if b.Len() == 0 {
			b.WriteString("### Claiming workers at 8 producers over HTTP (claimers-1, http-8, claimers-32): jobs/s, median\n\n")
			b.WriteString("| system | 1 worker | 8 workers | 32 workers | 32 / 1 |\n|---|---:|---:|---:|---:|\n")
		}
		r := "-"
		if v, ok := p.paired(s.Name, "claimers-32", s.Name, "claimers-1", "rate", false); ok {
			r = fmt.Sprintf("%.2f", v)
		}
		fmt.Fprintf(&b, "| %s | %s | %s |\n", s.Label, strings.Join(cells, " | "), r)
	}
	if b.Len() > 0 {
		b.WriteString("\n")
	}
	return b.String()
}
