package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"os"
	"sort"
	"text/tabwriter"
	"time"

	"github.com/queuehq/queue/app"
)

// Counts is what a backup holds.
type Counts struct {
	Jobs int64 `json:"jobs"`
	Dead int64 `json:"dead_letter"`
}

// Backup writes a consistent copy of the database to out (VACUUM INTO: one
// read transaction, so every job committed before it began is in the copy),
// makes it readable by its owner only, and checks it by opening it.
func (s *Store) Backup(ctx context.Context, out string) (Counts, error) {
	var n Counts
	conn, err := sql.Open("sqlite", "file:"+s.path+"?_pragma=busy_timeout(10000)")
	if err != nil {
		return n, fmt.Errorf("backup: %w", err)
	}
	defer conn.Close()
	old := umask(0o077) // the copy holds every payload: owner only
	_, err = conn.ExecContext(ctx, `VACUUM INTO ?`, out)
	umask(old)
	if err != nil {
		return n, fmt.Errorf("backup to %s: %w", out, mapErr(err))
	}
	if err := os.Chmod(out, 0o600); err != nil {
		return n, fmt.Errorf("backup: %w", err)
	}
	chk, err := sql.Open("sqlite", "file:"+out+"?mode=ro")
	if err != nil {
		return n, fmt.Errorf("check backup: %w", err)
	}
	defer chk.Close()
	var res string
	if err := chk.QueryRowContext(ctx, `PRAGMA quick_check`).Scan(&res); err != nil || res != "ok" {
		return n, fmt.Errorf("check backup %s: %v %s", out, err, res)
	}
	if err := chk.QueryRowContext(ctx, `SELECT (SELECT count(*) FROM jobs), (SELECT count(*) FROM dead_letter_jobs)`).Scan(&n.Jobs, &n.Dead); err != nil {
		return n, fmt.Errorf("check backup %s: %w", out, err)
	}
	return n, nil
}

// Report is what doctor found.
type Report struct {
	Path            string           `json:"path"`
	SchemaVersion   string           `json:"schema_version"`
	Integrity       string           `json:"integrity"`
	SizeBytes       int64            `json:"size_bytes"`
	WALBytes        int64            `json:"wal_bytes"`
	WALFrames       int64            `json:"wal_frames_not_checkpointed"`
	Queues          []app.QueueStats `json:"queues"`
	OldestClaimable float64          `json:"oldest_claimable_age_seconds"`
	DLQLastDay      int64            `json:"dead_lettered_last_24h"`
	DLQDayBefore    int64            `json:"dead_lettered_24h_before"`
	StuckLeases     int64            `json:"stuck_leases"`
	Problems        []string         `json:"problems"`
}

// Doctor checks the database without writing to it.
func (s *Store) Doctor(ctx context.Context) (*Report, error) {
	r := &Report{Path: s.path, Problems: []string{}}
	var err error
	if r.SchemaVersion, err = s.SchemaVersion(ctx); err != nil {
		return nil, fmt.Errorf("doctor: schema version: %w", err)
	}
	if want := latestMigration(); r.SchemaVersion != want {
		r.Problems = append(r.Problems, fmt.Sprintf("schema is at %s, this binary expects %s: run `queue migrate`", r.SchemaVersion, want))
	}
	if err := s.rdb.QueryRowContext(ctx, `PRAGMA integrity_check(1)`).Scan(&r.Integrity); err != nil {
		return nil, fmt.Errorf("doctor: integrity check: %w", err)
	}
	if r.Integrity != "ok" {
		r.Problems = append(r.Problems, "integrity check failed: "+r.Integrity+"; restore from a backup")
	}
	if st, err := os.Stat(s.path); err == nil {
		r.SizeBytes = st.Size()
	}
	if st, err := os.Stat(s.path + "-wal"); err == nil {
		r.WALBytes = st.Size()
		r.WALFrames = max(0, (st.Size()-32)/(4096+24))
	}
	if r.WALBytes > 256<<20 {
		r.Problems = append(r.Problems, fmt.Sprintf("the WAL is %d MiB: checkpoints lag (a long-running reader?)", r.WALBytes>>20))
	}
	if r.Queues, err = s.Stats(ctx); err != nil {
		return nil, fmt.Errorf("doctor: %w", err)
	}
	for _, q := range r.Queues {
		r.OldestClaimable = max(r.OldestClaimable, q.OldestQueuedAge)
	}
	now := s.clock.Now()
	day := 24 * time.Hour
	if err := s.rdb.QueryRowContext(ctx, `SELECT
			(SELECT count(*) FROM dead_letter_jobs WHERE moved_to_dead_letter_at >= ?),
			(SELECT count(*) FROM dead_letter_jobs WHERE moved_to_dead_letter_at >= ? AND moved_to_dead_letter_at < ?),
			(SELECT count(*) FROM jobs WHERE status = 'processing' AND lease_expires_at < ?)`,
		ms(now.Add(-day)), ms(now.Add(-2*day)), ms(now.Add(-day)), ms(now.Add(-time.Minute))).Scan(&r.DLQLastDay, &r.DLQDayBefore, &r.StuckLeases); err != nil {
		return nil, fmt.Errorf("doctor: %w", err)
	}
	if r.StuckLeases > 0 {
		r.Problems = append(r.Problems, fmt.Sprintf("%d jobs hold leases that expired over a minute ago: is `queue serve` running its maintenance?", r.StuckLeases))
	}
	if r.DLQLastDay > 100 && r.DLQLastDay > 2*r.DLQDayBefore {
		r.Problems = append(r.Problems, fmt.Sprintf("the dead-letter queue grew by %d in the last day (%d the day before)", r.DLQLastDay, r.DLQDayBefore))
	}
	sort.Strings(r.Problems)
	return r, nil
}

func latestMigration() string {
	ms := migrationNames()
	if len(ms) == 0 {
		return ""
	}
	return ms[len(ms)-1]
}

// Print writes the report for a person.
func (r *Report) Print(w io.Writer) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "database\t%s (%d KiB, WAL %d KiB)\n", r.Path, r.SizeBytes>>10, r.WALBytes>>10)
	fmt.Fprintf(tw, "schema\t%s\n", r.SchemaVersion)
	fmt.Fprintf(tw, "integrity\t%s\n", r.Integrity)
	fmt.Fprintf(tw, "oldest claimable job\t%s\n", (time.Duration(r.OldestClaimable) * time.Second).String())
	fmt.Fprintf(tw, "dead-lettered\t%d in the last 24h, %d the day before\n", r.DLQLastDay, r.DLQDayBefore)
	fmt.Fprintf(tw, "stuck leases\t%d\n", r.StuckLeases)
	tw.Flush()
	tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "QUEUE\tQUEUED\tSCHEDULED\tPROCESSING\tDONE\tCANCELLED\tDEAD LETTER")
	for _, q := range r.Queues {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%d\n", q.Queue, q.Queued, q.Scheduled, q.Processing, q.Done, q.Cancelled, q.DeadLetter)
	}
	tw.Flush()
	if len(r.Problems) == 0 {
		fmt.Fprintln(w, "no problems found")
	}
	for _, p := range r.Problems {
		fmt.Fprintln(w, "PROBLEM:", p)
	}
}
