package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"syscall"

	"github.com/queuehq/queue/app"
	assets "github.com/queuehq/queue/embed"
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
	old := syscall.Umask(0o077) // the copy holds every payload: owner only
	_, err = conn.ExecContext(ctx, `VACUUM INTO ?`, out)
	syscall.Umask(old)
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

// Doctor checks the database without writing to it: app.Diagnose, and
// the file's own health (schema version, integrity, size, WAL).
func (s *Store) Doctor(ctx context.Context) (*app.Report, error) {
	r, err := app.Diagnose(ctx, s, s.clock.Now())
	if err != nil {
		return nil, err
	}
	r.Path = s.path
	if r.SchemaVersion, err = s.SchemaVersion(ctx); err != nil {
		return nil, fmt.Errorf("doctor: schema version: %w", err)
	}
	if want := latestMigration(); r.SchemaVersion != want {
		r.Problem("schema is at %s, this binary expects %s: run `queue migrate`", r.SchemaVersion, want)
	}
	if err := s.rdb.QueryRowContext(ctx, `PRAGMA integrity_check(1)`).Scan(&r.Integrity); err != nil {
		return nil, fmt.Errorf("doctor: integrity check: %w", err)
	}
	if r.Integrity != "ok" {
		r.Problem("integrity check failed: %s; restore from a backup", r.Integrity)
	}
	if st, err := os.Stat(s.path); err == nil {
		r.SizeBytes = st.Size()
	}
	if st, err := os.Stat(s.path + "-wal"); err == nil {
		r.WALBytes = st.Size()
		r.WALFrames = max(0, (st.Size()-32)/(4096+24))
	}
	if r.WALBytes > 256<<20 {
		r.Problem("the WAL is %d MiB: checkpoints lag (a long-running reader?)", r.WALBytes>>20)
	}
	return r, nil
}

func latestMigration() string {
	ms := assets.Migrations("sqlite")
	if len(ms) == 0 {
		return ""
	}
	return ms[len(ms)-1].Name
}
