// Command bigdb measures the queue at ten million jobs (issue 29): it
// builds a template database of -jobs queued jobs on SQLite (and on
// PostgreSQL with -pg), then on a copy of it measures the cold start of the
// real `queue serve` to its first 200 of /readyz, GET /api/stats and the
// dashboard (GET /), serve's resident set after idling, claims per second
// (one job per call, -claimers goroutines, in process, as bench's claim-1m)
// at that depth against a queue of 1,000, and the bytes on disk per queued
// and per finished job.
//
// The template is filled through SQL, not the store's batch submit, to
// keep the build to a minute or two: one job is submitted through the
// store, then copied with INSERT ... SELECT in chunks of a million (each
// copy is a real job as the store writes it: same columns, same indexes),
// and the counters are made right by the store's own recount (the
// repair `queue doctor --repair` runs). With -keep the templates stay in
// -dir (SQLite) or as database bigdb_tpl_<jobs> (PostgreSQL) for the next
// run. At 10,000,000 jobs a run takes about 5 minutes of two cores per
// store, most of it the build and the copy.
//
//	go run ./bigdb -jobs 10000000 -pg postgres://postgres@127.0.0.1:5432/test?sslmode=disable
package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
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
	"github.com/rs/zerolog"
	_ "modernc.org/sqlite"

	"github.com/queuehq/queue/app"
	"github.com/queuehq/queue/bench/internal/benchkit"
	"github.com/queuehq/queue/postgres"
	"github.com/queuehq/queue/sqlite"
)

const queue = "bench"

type config struct {
	jobs, claims, claimers, runs, finished int
	bin, dir, pg                           string
	keep, noSQLite                         bool
}

func main() {
	var c config
	flag.IntVar(&c.jobs, "jobs", 10_000_000, "queued jobs in the template")
	flag.StringVar(&c.pg, "pg", "", "PostgreSQL address (postgres://...): measure PostgreSQL too (databases bigdb_* are created and dropped)")
	flag.BoolVar(&c.noSQLite, "no-sqlite", false, "PostgreSQL only")
	flag.StringVar(&c.bin, "bin", "", "the queue binary (default: built from ..)")
	flag.StringVar(&c.dir, "dir", "", "where the SQLite files go (default: a temporary directory)")
	flag.BoolVar(&c.keep, "keep", false, "keep the templates for the next run (and reuse a kept one)")
	flag.IntVar(&c.claims, "claims", 4000, "claims per claim measurement")
	flag.IntVar(&c.claimers, "claimers", 8, "goroutines claiming one job per call")
	flag.IntVar(&c.runs, "runs", 3, "cold starts and claim measurements (interleaved deep, shallow)")
	flag.IntVar(&c.finished, "finished", 100_000, "jobs claimed and completed to measure the bytes per finished job")
	flag.Parse()
	if c.bin != "" { // the servers run in directories of their own
		if abs, err := filepath.Abs(c.bin); err == nil {
			c.bin = abs
		}
	}
	if err := run(context.Background(), c); err != nil {
		fmt.Fprintln(os.Stderr, "bigdb:", err)
		os.Exit(1)
	}
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, time.Now().Format("15:04:05 ")+format+"\n", args...)
}

// result is what one store measured.
type result struct {
	Store            string    `json:"store"`
	Jobs             int       `json:"jobs"`
	BuildSeconds     float64   `json:"build_seconds,omitempty"`
	ColdStartMS      []float64 `json:"cold_start_ms"`
	ColdStartCPUMS   []float64 `json:"cold_start_cpu_ms"`
	EmptyStartMS     []float64 `json:"cold_start_empty_ms"`
	EmptyStartCPUMS  []float64 `json:"cold_start_empty_cpu_ms"`
	FirstStatsMS     float64   `json:"first_stats_ms"`
	StatsMS          float64   `json:"stats_ms_median"`
	DashboardMS      float64   `json:"dashboard_ms_median"`
	RSSMB            float64   `json:"rss_mb"`
	HWMMB            float64   `json:"hwm_mb"`
	ClaimsDeep       []float64 `json:"claims_per_s_deep"`
	ClaimsShallow    []float64 `json:"claims_per_s_1k"`
	BytesPerQueued   float64   `json:"bytes_per_queued"`
	BytesPerFinished float64   `json:"bytes_per_finished"`
}

func run(ctx context.Context, c config) error {
	if c.dir == "" {
		d, err := os.MkdirTemp("", "bigdb")
		if err != nil {
			return err
		}
		if !c.keep {
			defer os.RemoveAll(d)
		}
		c.dir = d
	}
	if c.bin == "" {
		c.bin = filepath.Join(c.dir, "queue")
		cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-o", c.bin, ".")
		cmd.Dir, cmd.Stdout, cmd.Stderr = "..", os.Stderr, os.Stderr
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("build queue: %w", err)
		}
	}
	var out []result
	if !c.noSQLite {
		r, err := runSQLite(ctx, c)
		if err != nil {
			return fmt.Errorf("sqlite: %w", err)
		}
		out = append(out, r)
	}
	if c.pg != "" {
		r, err := runPostgres(ctx, c)
		if err != nil {
			return fmt.Errorf("postgres: %w", err)
		}
		out = append(out, r)
	}
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}

// store is what the measurements need of a store and its database.
type store interface {
	app.Store
	Close() error
}

var nop = app.StoreOptions{Log: zerolog.Nop()}

// ---- SQLite ----

func runSQLite(ctx context.Context, c config) (result, error) {
	r := result{Store: "sqlite", Jobs: c.jobs}
	tpl := filepath.Join(c.dir, fmt.Sprintf("tpl-%d.db", c.jobs))
	if _, err := os.Stat(tpl); err != nil || !c.keep {
		t0 := time.Now()
		if err := fillSQLite(ctx, tpl, c.jobs); err != nil {
			return r, err
		}
		r.BuildSeconds = time.Since(t0).Seconds()
		logf("sqlite: %d-job template built in %.1fs", c.jobs, r.BuildSeconds)
	}
	if !c.keep {
		defer removeSQLite(tpl)
	}
	base := filepath.Join(c.dir, "base.db")
	if err := fillSQLite(ctx, base, 1); err != nil {
		return r, err
	}
	baseUsed, err := sqliteUsed(base)
	if err != nil {
		return r, err
	}
	defer removeSQLite(base)
	used, err := sqliteUsed(tpl)
	if err != nil {
		return r, err
	}
	r.BytesPerQueued = float64(used-baseUsed) / float64(c.jobs-1)
	cp := filepath.Join(c.dir, "copy.db")
	defer removeSQLite(cp)
	t0 := time.Now()
	if err := copyFile(tpl, cp); err != nil {
		return r, err
	}
	logf("sqlite: copied in %.1fs", time.Since(t0).Seconds())
	if err := measureServe(ctx, c, &r, cp, base); err != nil {
		return r, err
	}
	small := filepath.Join(c.dir, "small.db")
	defer removeSQLite(small)
	if err := fillSQLite(ctx, small, 1000); err != nil {
		return r, err
	}
	open := func(path string) func() (store, error) {
		return func() (store, error) {
			return sqlite.Open(ctx, path, sqlite.Options{StoreOptions: nop, Sync: "normal"})
		}
	}
	if err := measureClaims(ctx, c, &r, open(cp), open(small)); err != nil {
		return r, err
	}
	fin := filepath.Join(c.dir, "finished.db")
	defer removeSQLite(fin)
	if err := fillSQLite(ctx, fin, c.finished); err != nil {
		return r, err
	}
	if err := finishAll(ctx, open(fin), c.finished); err != nil {
		return r, err
	}
	if used, err = sqliteUsed(fin); err != nil {
		return r, err
	}
	r.BytesPerFinished = float64(used-baseUsed) / float64(c.finished)
	return r, nil
}

// fillSQLite makes path a database of n queued jobs: one submitted through
// the store, the rest copies of it made by SQL, then the store's recount.
func fillSQLite(ctx context.Context, path string, n int) error {
	removeSQLite(path)
	s, err := sqlite.Open(ctx, path, sqlite.Options{StoreOptions: nop, Sync: "normal"})
	if err != nil {
		return err
	}
	if err := submitOne(ctx, s); err != nil {
		s.Close()
		return err
	}
	s.Close()
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=journal_mode(WAL)&_pragma=synchronous(OFF)&_pragma=cache_size(-262144)")
	if err != nil {
		return err
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	cols, err := sqliteColumns(ctx, db)
	if err != nil {
		return err
	}
	// The indexes go while the rows go in, and come back after: building an
	// index over the rows at once (a sort) is several times faster than
	// growing it a row at a time.
	idx, err := sqliteStrings(ctx, db, `SELECT sql FROM sqlite_master WHERE type = 'index' AND tbl_name = 'jobs' AND sql IS NOT NULL`)
	if err != nil {
		return err
	}
	names, err := sqliteStrings(ctx, db, `SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'jobs' AND sql IS NOT NULL`)
	if err != nil {
		return err
	}
	if n > 10_000 {
		for _, name := range names {
			if _, err := db.ExecContext(ctx, `DROP INDEX "`+name+`"`); err != nil {
				return err
			}
		}
	} else {
		idx = nil
	}
	for left := n - 1; left > 0; {
		k := min(left, 1_000_000)
		if _, err := db.ExecContext(ctx, `WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < ?)
			INSERT INTO jobs (`+cols+`) SELECT `+cols+` FROM c, (SELECT * FROM jobs ORDER BY id LIMIT 1)`, k); err != nil {
			return fmt.Errorf("fill %s: %w", path, err)
		}
		left -= k
	}
	for _, q := range idx {
		if _, err := db.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("rebuild index: %w", err)
		}
	}
	if _, err := db.ExecContext(ctx, `PRAGMA wal_checkpoint(TRUNCATE)`); err != nil {
		return err
	}
	db.Close()
	s, err = sqlite.Open(ctx, path, sqlite.Options{StoreOptions: nop, Sync: "normal"})
	if err != nil {
		return err
	}
	defer s.Close()
	_, err = s.RecountJobs(ctx, true)
	return err
}

func sqliteColumns(ctx context.Context, db *sql.DB) (string, error) {
	cols, err := sqliteStrings(ctx, db, `SELECT name FROM pragma_table_info('jobs') WHERE name <> 'id' ORDER BY cid`)
	return strings.Join(cols, ", "), err
}

func sqliteStrings(ctx context.Context, db *sql.DB, q string) ([]string, error) {
	rows, err := db.QueryContext(ctx, q)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var c string
		if err := rows.Scan(&c); err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, rows.Err()
}

// sqliteUsed is the bytes of the database's pages in use (its free pages
// left out), after a checkpoint.
func sqliteUsed(path string) (int64, error) {
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		return 0, err
	}
	defer db.Close()
	var pages, free, size int64
	if _, err := db.Exec(`PRAGMA wal_checkpoint(TRUNCATE)`); err != nil {
		return 0, err
	}
	err = db.QueryRow(`SELECT (SELECT page_count FROM pragma_page_count()), (SELECT freelist_count FROM pragma_freelist_count()),
		(SELECT page_size FROM pragma_page_size())`).Scan(&pages, &free, &size)
	return (pages - free) * size, err
}

func removeSQLite(path string) {
	for _, s := range []string{"", "-wal", "-shm", ".lock"} {
		os.Remove(path + s)
	}
}

func copyFile(from, to string) error {
	removeSQLite(to)
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// ---- PostgreSQL ----

func runPostgres(ctx context.Context, c config) (result, error) {
	r := result{Store: "postgres", Jobs: c.jobs}
	admin, err := pgx.Connect(ctx, c.pg)
	if err != nil {
		return r, err
	}
	defer admin.Close(context.Background())
	tpl := fmt.Sprintf("bigdb_tpl_%d", c.jobs)
	var exists bool
	if err := admin.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)`, tpl).Scan(&exists); err != nil {
		return r, err
	}
	if !exists || !c.keep {
		t0 := time.Now()
		if err := fillPostgres(ctx, admin, c.pg, tpl, c.jobs); err != nil {
			return r, err
		}
		r.BuildSeconds = time.Since(t0).Seconds()
		logf("postgres: %d-job template built in %.1fs", c.jobs, r.BuildSeconds)
	}
	if !c.keep {
		defer dropDB(admin, tpl)
	}
	if err := fillPostgres(ctx, admin, c.pg, "bigdb_base", 1); err != nil {
		return r, err
	}
	defer dropDB(admin, "bigdb_base")
	var baseSize, size int64
	admin.QueryRow(ctx, `SELECT pg_database_size('bigdb_base')`).Scan(&baseSize)
	admin.QueryRow(ctx, `SELECT pg_database_size($1)`, tpl).Scan(&size)
	r.BytesPerQueued = float64(size-baseSize) / float64(c.jobs-1)
	t0 := time.Now()
	dropDB(admin, "bigdb_copy")
	if _, err := admin.Exec(ctx, `CREATE DATABASE bigdb_copy TEMPLATE `+tpl); err != nil {
		return r, err
	}
	defer dropDB(admin, "bigdb_copy")
	logf("postgres: copied in %.1fs", time.Since(t0).Seconds())
	cp := withDB(c.pg, "bigdb_copy")
	if err := measureServe(ctx, c, &r, cp, withDB(c.pg, "bigdb_base")); err != nil {
		return r, err
	}
	if err := fillPostgres(ctx, admin, c.pg, "bigdb_small", 1000); err != nil {
		return r, err
	}
	defer dropDB(admin, "bigdb_small")
	open := func(dsn string) func() (store, error) {
		return func() (store, error) { return postgres.Open(ctx, dsn, postgres.Options{StoreOptions: nop}) }
	}
	if err := measureClaims(ctx, c, &r, open(cp), open(withDB(c.pg, "bigdb_small"))); err != nil {
		return r, err
	}
	if err := fillPostgres(ctx, admin, c.pg, "bigdb_finished", c.finished); err != nil {
		return r, err
	}
	defer dropDB(admin, "bigdb_finished")
	if err := finishAll(ctx, open(withDB(c.pg, "bigdb_finished")), c.finished); err != nil {
		return r, err
	}
	if err := vacuum(ctx, withDB(c.pg, "bigdb_finished")); err != nil {
		return r, err
	}
	admin.QueryRow(ctx, `SELECT pg_database_size('bigdb_finished')`).Scan(&size)
	r.BytesPerFinished = float64(size-baseSize) / float64(c.finished)
	return r, nil
}

// fillPostgres (re)creates database name with n queued jobs: one submitted
// through the store, the rest copies of it made by SQL (the counters'
// triggers count them), then VACUUM ANALYZE.
func fillPostgres(ctx context.Context, admin *pgx.Conn, dsn, name string, n int) error {
	dropDB(admin, name)
	if _, err := admin.Exec(ctx, `CREATE DATABASE `+name); err != nil {
		return err
	}
	s, err := postgres.Open(ctx, withDB(dsn, name), postgres.Options{StoreOptions: nop})
	if err != nil {
		return err
	}
	err = submitOne(ctx, s)
	s.Close()
	if err != nil {
		return err
	}
	conn, err := pgx.Connect(ctx, withDB(dsn, name))
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	var cols string
	if err := conn.QueryRow(ctx, `SELECT string_agg(quote_ident(column_name), ', ' ORDER BY ordinal_position)
		FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = 'jobs' AND column_name <> 'id'`).Scan(&cols); err != nil {
		return err
	}
	var idx, names []string
	if n > 10_000 { // as on SQLite: the indexes are built after the rows
		rows, err := conn.Query(ctx, `SELECT indexdef, quote_ident(indexname) FROM pg_indexes WHERE schemaname = current_schema() AND tablename = 'jobs'
			AND indexname NOT IN (SELECT conname FROM pg_constraint WHERE conrelid = 'jobs'::regclass)`)
		if err != nil {
			return err
		}
		for rows.Next() {
			var d, nm string
			if err := rows.Scan(&d, &nm); err != nil {
				rows.Close()
				return err
			}
			idx, names = append(idx, d), append(names, nm)
		}
		rows.Close()
		for _, nm := range names {
			if _, err := conn.Exec(ctx, `DROP INDEX `+nm); err != nil {
				return err
			}
		}
	}
	for left := n - 1; left > 0; {
		k := min(left, 1_000_000)
		if _, err := conn.Exec(ctx, `INSERT INTO jobs (`+cols+`) SELECT `+cols+` FROM generate_series(1, $1),
			(SELECT * FROM jobs ORDER BY id LIMIT 1) j`, k); err != nil {
			return fmt.Errorf("fill %s: %w", name, err)
		}
		left -= k
	}
	conn.Exec(ctx, `SET maintenance_work_mem = '256MB'`)
	for _, d := range idx {
		if _, err := conn.Exec(ctx, d); err != nil {
			return fmt.Errorf("rebuild index: %w", err)
		}
	}
	_, err = conn.Exec(ctx, `VACUUM ANALYZE`)
	return err
}

func vacuum(ctx context.Context, dsn string) error {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	_, err = conn.Exec(ctx, `VACUUM ANALYZE`)
	return err
}

func dropDB(admin *pgx.Conn, name string) {
	admin.Exec(context.Background(), `DROP DATABASE IF EXISTS `+name+` WITH (FORCE)`)
}

// withDB is dsn naming database name instead.
func withDB(dsn, name string) string {
	u, err := url.Parse(dsn)
	if err != nil {
		return dsn
	}
	u.Path = "/" + name
	return u.String()
}

// ---- measurements ----

func submitOne(ctx context.Context, s app.JobStore) error {
	_, err := app.Submit(ctx, s, app.SubmitRequest{Jobs: []app.NewJob{{Queue: queue, Kind: "bench",
		Payload: json.RawMessage(`{"n":1,"pad":"0123456789abcdef"}`), MaxAttempts: 3, Timeout: time.Minute}}})
	return err
}

// measureServe starts `queue serve` on db c.runs times, each after one on
// empty (a database of one job): the cold start to /readyz, and the CPU
// time serve spent until then; on the first, GET /api/stats at once, then
// two seconds later (past the start-up maintenance) GET /api/stats and
// GET / five times each, then the resident set after three idle seconds.
func measureServe(ctx context.Context, c config, r *result, db, empty string) error {
	for i := range c.runs {
		srv, err := startServe(ctx, c, empty)
		if err != nil {
			return err
		}
		r.EmptyStartMS = append(r.EmptyStartMS, ms(srv.startedIn))
		r.EmptyStartCPUMS = append(r.EmptyStartCPUMS, srv.cpuMS)
		srv.Close()
		if srv, err = startServe(ctx, c, db); err != nil {
			return err
		}
		r.ColdStartMS = append(r.ColdStartMS, ms(srv.startedIn))
		r.ColdStartCPUMS = append(r.ColdStartCPUMS, srv.cpuMS)
		if i == 0 {
			var stats, dash []float64
			for k := range 6 {
				d, err := get(srv.base + "/api/stats")
				if err != nil {
					srv.Close()
					return err
				}
				if k == 0 {
					r.FirstStatsMS = ms(d)
					time.Sleep(2 * time.Second) // past the start-up maintenance
				} else {
					stats = append(stats, ms(d))
				}
			}
			for range 5 {
				d, err := get(srv.base + "/")
				if err != nil {
					srv.Close()
					return err
				}
				dash = append(dash, ms(d))
			}
			r.StatsMS, r.DashboardMS = median(stats), median(dash)
			time.Sleep(3 * time.Second)
			r.RSSMB = float64(benchkit.ProcStatus(srv.cmd.Process.Pid, "VmRSS")) / 1e6
			r.HWMMB = float64(benchkit.ProcStatus(srv.cmd.Process.Pid, "VmHWM")) / 1e6
		}
		srv.Close()
		logf("%s: cold start %.0f ms (%.0f ms CPU); empty database %.0f ms (%.0f ms CPU)", r.Store,
			r.ColdStartMS[i], r.ColdStartCPUMS[i], r.EmptyStartMS[i], r.EmptyStartCPUMS[i])
	}
	logf("%s: stats first %.1f ms, median %.1f ms; dashboard %.1f ms; RSS %.0f MB (peak %.0f MB)", r.Store, r.FirstStatsMS, r.StatsMS, r.DashboardMS, r.RSSMB, r.HWMMB)
	return nil
}

// cpuMS is the user and system CPU time pid has used, in milliseconds
// (10 ms steps).
func cpuMS(pid int) float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:]) // fields from the third on
	if len(f) < 13 {
		return 0
	}
	u, _ := strconv.ParseFloat(f[11], 64)
	k, _ := strconv.ParseFloat(f[12], 64)
	return (u + k) * 10 // USER_HZ is 100
}

func get(u string) (time.Duration, error) {
	t0 := time.Now()
	resp, err := http.Get(u)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		return 0, err
	}
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("GET %s: %s", u, resp.Status)
	}
	return time.Since(t0), nil
}

// measureClaims claims c.claims jobs, one per call from c.claimers
// goroutines, from the deep database and from one of 1,000 queued jobs,
// interleaved, c.runs times each. Before each 500 claims both get 500 jobs
// (untimed), so the shallow queue stays about 1,000 deep.
func measureClaims(ctx context.Context, c config, r *result, deep, shallow func() (store, error)) error {
	for range c.runs {
		for _, side := range []struct {
			open func() (store, error)
			out  *[]float64
		}{{deep, &r.ClaimsDeep}, {shallow, &r.ClaimsShallow}} {
			s, err := side.open()
			if err != nil {
				return err
			}
			rate, err := claimRate(ctx, s, c.claims, c.claimers)
			s.Close()
			if err != nil {
				return err
			}
			*side.out = append(*side.out, rate)
		}
	}
	logf("%s: claims/s deep %v, 1k %v", r.Store, rounded(r.ClaimsDeep), rounded(r.ClaimsShallow))
	return nil
}

func claimRate(ctx context.Context, s store, total, claimers int) (float64, error) {
	const chunk = 500
	var timed time.Duration
	for done := 0; done < total; done += chunk {
		jobs := make([]app.NewJob, chunk)
		for i := range jobs {
			jobs[i] = app.NewJob{Queue: queue, Kind: "bench", Payload: json.RawMessage(`{"n":1,"pad":"0123456789abcdef"}`), MaxAttempts: 3, Timeout: time.Minute}
		}
		if _, err := app.Submit(ctx, s, app.SubmitRequest{Jobs: jobs}); err != nil {
			return 0, err
		}
		var left atomic.Int64
		left.Store(chunk)
		var wg sync.WaitGroup
		var firstErr atomic.Value
		t0 := time.Now()
		for range claimers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for left.Add(-1) >= 0 {
					got, err := s.Claim(ctx, app.ClaimRequest{Queue: queue, WorkerID: "bigdb", Limit: 1})
					if err == nil && len(got) != 1 {
						err = fmt.Errorf("claimed %d jobs, want 1", len(got))
					}
					if err != nil {
						firstErr.CompareAndSwap(nil, err)
						return
					}
				}
			}()
		}
		wg.Wait()
		timed += time.Since(t0)
		if err, _ := firstErr.Load().(error); err != nil {
			return 0, err
		}
	}
	return float64(total) / timed.Seconds(), nil
}

// finishAll claims and completes n jobs, 1,000 per call.
func finishAll(ctx context.Context, open func() (store, error), n int) error {
	s, err := open()
	if err != nil {
		return err
	}
	defer s.Close()
	for done := 0; done < n; {
		jobs, err := s.Claim(ctx, app.ClaimRequest{Queue: queue, WorkerID: "bigdb", Limit: 1000})
		if err != nil {
			return err
		}
		if len(jobs) == 0 {
			return fmt.Errorf("finished %d of %d: nothing left to claim", done, n)
		}
		items := make([]app.Completion, len(jobs))
		for i, j := range jobs {
			items[i] = app.Completion{ID: j.ID, Lease: j.Lease}
		}
		if _, err := s.Complete(ctx, items); err != nil {
			return err
		}
		done += len(jobs)
	}
	return nil
}

type server struct {
	cmd       *exec.Cmd
	base      string
	exited    chan struct{}
	startedIn time.Duration
	cpuMS     float64 // serve's CPU time until ready
}

// startServe runs `queue serve` on db and waits for /readyz.
func startServe(ctx context.Context, c config, db string) (*server, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	addr := ln.Addr().String()
	ln.Close()
	logFile, err := os.Create(filepath.Join(c.dir, "serve.log"))
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(c.bin, "serve", "--db", db, "--addr", addr, "--sync", "normal", "--log-format", "json", "--log-level", "warn")
	cmd.Dir = c.dir
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.Env = append(os.Environ(), "QUEUE_TOKEN=", "QUEUE_CONFIG=")
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	began := time.Now()
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return nil, err
	}
	s := &server{cmd: cmd, base: "http://" + addr, exited: make(chan struct{})}
	go func() { cmd.Wait(); logFile.Close(); close(s.exited) }()
	hc := &http.Client{Timeout: time.Second}
	for {
		if resp, err := hc.Get(s.base + "/readyz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		select {
		case <-s.exited:
			b, _ := os.ReadFile(filepath.Join(c.dir, "serve.log"))
			return nil, fmt.Errorf("queue serve exited before it was ready: %s", b)
		case <-ctx.Done():
			s.Close()
			return nil, ctx.Err()
		case <-time.After(time.Millisecond):
		}
		if time.Since(began) > 2*time.Minute {
			s.Close()
			return nil, errors.New("queue serve not ready after 2 minutes")
		}
	}
	s.startedIn = time.Since(began)
	s.cpuMS = cpuMS(cmd.Process.Pid)
	return s, nil
}

func (s *server) Close() {
	s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.exited:
	case <-time.After(20 * time.Second):
		s.cmd.Process.Kill()
		<-s.exited
	}
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	v = slices.Clone(v)
	slices.Sort(v)
	return v[len(v)/2]
}

func rounded(v []float64) []int {
	out := make([]int, len(v))
	for i, x := range v {
		out[i] = int(x + 0.5)
	}
	return out
}
