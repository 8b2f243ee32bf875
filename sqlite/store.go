// Package sqlite is the app.Store on an embedded SQLite file through
// modernc.org/sqlite (pure Go, so CGO_ENABLED=0 builds work). One goroutine
// owns the only write connection: every write is a request to it, and it
// runs all requests that are waiting in one BEGIN IMMEDIATE transaction with
// a savepoint each (group commit), so "database is locked" never reaches a
// caller and one fsync covers many jobs. Reads use a separate pool.
package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/rs/zerolog"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/queuehq/queue/app"
	assets "github.com/queuehq/queue/embed"
	"github.com/queuehq/queue/triggers"
)

var _ app.Store = (*Store)(nil)

// Options configures Open.
type Options struct {
	app.StoreOptions
	// Sync is the durability of a commit: "full" (the default: a commit
	// survives power loss) or "normal" (it survives a crash of the process,
	// but the last commits may be lost on power loss; faster).
	Sync string
	// ReadOnly opens for reading only: no lock, no writer, no migrations.
	// doctor and backup use it while a server runs.
	ReadOnly bool
	// MaxBatch caps how many write requests share one transaction. If zero, 1000.
	MaxBatch int
}

// Store is an app.Store on one SQLite file.
type Store struct {
	path   string
	opts   Options
	clock  app.Clock
	bus    *app.Bus
	notify *app.Notifier
	log    zerolog.Logger

	wdb   *sql.DB   // the write pool: one connection, owned by the writer goroutine
	wconn *sql.Conn // that connection
	rdb   *sql.DB   // readers

	reqs      chan *request
	stopped   chan struct{} // closed when the writer goroutine ends
	closing   chan struct{} // closed when Close starts
	closeOnce sync.Once
	closeErr  error
	lock      *os.File

	// failing is set when a write transaction failed for a reason of the
	// database itself (disk full, I/O error) and cleared by the next commit;
	// while set, Ping proves readiness with a real write.
	failing atomic.Bool

	// counts holds the jobs of each queue per status (and dead-letter rows),
	// loaded at Open and kept exact by the writer after every commit, so
	// Stats never counts a million rows. nil for a read-only store.
	countsMu sync.Mutex
	counts   map[statusKey]int64

	// joinFor is the package's joinFor; tests stretch it.
	joinFor time.Duration

	// Owned by the writer goroutine.
	stmts  map[string]*sql.Stmt
	queues map[string]bool // queues known to have a row in queues
	// claims remembers the jobs this store's claims committed, so that a
	// completion need not read them back (see Complete).
	claims  map[int64]claimedJob
	scratch scratch // the writer's, see scratch
	// callbacks is whether a job with a callback_url may exist (webhooks.go).
	callbacks callbackState
}

// LockedError says another process serves the database file.
type LockedError struct {
	Path  string
	Owner string // what the holder wrote in the lock file: "pid 123 ..."
}

func (e *LockedError) Error() string {
	owner := e.Owner
	if owner == "" {
		owner = "another process"
	}
	return fmt.Sprintf("database %s is in use by %s (lock file %s.lock); stop that server first, or use another --db", e.Path, owner, e.Path)
}

// Open opens (creating if needed) the database at path, applies migrations
// and the status guard, and starts the writer. Unless opts.ReadOnly, it
// takes an exclusive lock beside the file and fails with *LockedError when
// another process holds it.
func Open(ctx context.Context, path string, opts Options) (*Store, error) {
	if path == "" {
		return nil, errors.New("open sqlite: empty path")
	}
	syncMode := strings.ToLower(opts.Sync)
	switch syncMode {
	case "", "full":
		syncMode = "FULL"
	case "normal":
		syncMode = "NORMAL"
	default:
		return nil, fmt.Errorf("open sqlite: unknown sync mode %q (want full or normal)", opts.Sync)
	}
	if opts.MaxBatch <= 0 {
		opts.MaxBatch = 1000
	}
	s := &Store{
		path: path, opts: opts, clock: opts.ClockOrSystem(), bus: opts.Bus,
		notify: app.NewNotifier(), log: opts.Log,
		reqs: make(chan *request, 4096), stopped: make(chan struct{}), closing: make(chan struct{}),
		stmts: map[string]*sql.Stmt{}, queues: map[string]bool{}, claims: map[int64]claimedJob{}, joinFor: joinFor,
	}
	if opts.ReadOnly {
		if _, err := os.Stat(path); err != nil {
			return nil, fmt.Errorf("open sqlite %s: %w", path, err)
		}
		rdb, err := sql.Open("sqlite", dsn(path, syncMode, true))
		if err != nil {
			return nil, fmt.Errorf("open sqlite %s: %w", path, err)
		}
		s.rdb = rdb
		close(s.stopped)
		return s, nil
	}
	if err := s.takeLock(); err != nil {
		return nil, err
	}
	fail := func(err error) (*Store, error) { // undo what Open did so far
		if s.rdb != nil {
			s.rdb.Close()
		}
		if s.wdb != nil {
			s.wconn.Close()
			s.wdb.Close()
		}
		s.releaseLock()
		return nil, err
	}
	// Create the file ourselves so it (and the -wal and -shm files SQLite
	// derives from it) is readable by its owner only.
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return fail(fmt.Errorf("open sqlite %s: %w", path, err))
	}
	f.Close()
	if err := s.openWriter(ctx, syncMode); err != nil {
		return fail(err)
	}
	if s.rdb, err = sql.Open("sqlite", dsn(path, syncMode, true)); err != nil {
		return fail(fmt.Errorf("open sqlite %s: %w", path, err))
	}
	s.rdb.SetMaxOpenConns(max(4, 2*runtime.NumCPU()))
	s.rdb.SetMaxIdleConns(max(4, 2*runtime.NumCPU()))
	s.rdb.SetConnMaxIdleTime(time.Minute)
	if err := s.loadCounts(ctx, s.wconn); err != nil {
		return fail(err)
	}
	if err := s.loadCallbacks(ctx, s.wconn); err != nil {
		return fail(err)
	}
	go s.writer()
	return s, nil
}

func dsn(path, sync string, readOnly bool) string {
	q := url.Values{}
	q.Add("_pragma", "busy_timeout(10000)")
	q.Add("_pragma", "journal_mode(WAL)")
	q.Add("_pragma", "synchronous("+sync+")")
	q.Add("_pragma", "foreign_keys(ON)")
	if readOnly {
		q.Add("_pragma", "query_only(1)")
	}
	return "file:" + strings.ReplaceAll(path, "?", "%3F") + "?" + q.Encode()
}

func (s *Store) openWriter(ctx context.Context, sync string) error {
	wdb, err := sql.Open("sqlite", dsn(s.path, sync, false))
	if err != nil {
		return fmt.Errorf("open sqlite %s: %w", s.path, err)
	}
	wdb.SetMaxOpenConns(1)
	wdb.SetMaxIdleConns(1)
	wdb.SetConnMaxLifetime(0)
	wdb.SetConnMaxIdleTime(0)
	conn, err := wdb.Conn(ctx)
	if err != nil {
		wdb.Close()
		return fmt.Errorf("open sqlite %s: %w", s.path, mapErr(err))
	}
	s.wdb, s.wconn = wdb, conn
	return s.migrate(ctx) // on error, Open closes the connection
}

// migrate applies the embedded migrations not yet recorded in
// schema_migrations, then replaces the status guard, all in one
// transaction: an upgrade lands whole or not at all, and a new database
// pays one durable commit, not one per migration (sixteen commits were
// most of a cold start on a new file).
func (s *Store) migrate(ctx context.Context) error {
	var applied []string
	err := s.execTx(ctx, func() error {
		if _, err := s.wconn.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
			name TEXT PRIMARY KEY, applied_at INTEGER NOT NULL) STRICT`); err != nil {
			return err
		}
		for _, m := range assets.Migrations("sqlite") {
			var n int
			if err := s.wconn.QueryRowContext(ctx, `SELECT count(*) FROM schema_migrations WHERE name = ?`, m.Name).Scan(&n); err != nil {
				return err
			}
			if n > 0 {
				continue
			}
			if _, err := s.wconn.ExecContext(ctx, m.SQL); err != nil {
				return fmt.Errorf("%s: %w", m.Name, err)
			}
			if _, err := s.wconn.ExecContext(ctx, `INSERT INTO schema_migrations (name, applied_at) VALUES (?, ?)`, m.Name, ms(s.clock.Now())); err != nil {
				return fmt.Errorf("%s: %w", m.Name, err)
			}
			applied = append(applied, m.Name)
		}
		for _, t := range triggers.SQLite() { // the guard replaced whole: never a moment without it
			if _, err := s.wconn.ExecContext(ctx, t); err != nil {
				return fmt.Errorf("install status guard: %w", err)
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("migrate %s: %w", s.path, mapErr(err))
	}
	for _, name := range applied {
		s.log.Info().Str("migration", name).Msg("schema migration applied")
	}
	return nil
}

// loadCounts reads the counters of the jobs per queue and status
// (job_counts, which every write transaction keeps: see saveCounts) once,
// at Open: a few rows, however many jobs there are. From then on the
// writer keeps the counts in memory too (applyDeltas). It runs before the
// writer starts, so no write slips between the read and the first delta.
func (s *Store) loadCounts(ctx context.Context, db querier) error {
	counts, err := readCounts(ctx, db, `SELECT queue, status, n FROM job_counts`)
	if err != nil {
		return fmt.Errorf("read job counts in %s: %w", s.path, mapErr(err))
	}
	s.counts = counts
	return nil
}

// applyDeltas adds what a committed batch changed to the counts.
func (s *Store) applyDeltas(d map[statusKey]int64) {
	if len(d) == 0 {
		return
	}
	s.countsMu.Lock()
	defer s.countsMu.Unlock()
	for k, v := range d {
		s.counts[k] += v
		if s.counts[k] == 0 {
			delete(s.counts, k)
		}
	}
}

// SchemaVersion returns the name of the last migration applied.
func (s *Store) SchemaVersion(ctx context.Context) (string, error) {
	var v sql.NullString
	err := s.rdb.QueryRowContext(ctx, `SELECT max(name) FROM schema_migrations`).Scan(&v)
	return v.String, mapErr(err)
}

// Path returns the database file's path.
func (s *Store) Path() string { return s.path }

func (s *Store) execTx(ctx context.Context, fn func() error) error {
	if _, err := s.wconn.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		return err
	}
	if err := fn(); err != nil {
		s.wconn.ExecContext(context.WithoutCancel(ctx), "ROLLBACK")
		return err
	}
	_, err := s.wconn.ExecContext(ctx, "COMMIT")
	return err
}

func (s *Store) takeLock() error {
	lockPath := s.path + ".lock"
	f, err := os.OpenFile(lockPath, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("lock %s: %w", lockPath, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		b := make([]byte, 256)
		n, _ := f.ReadAt(b, 0)
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return &LockedError{Path: s.path, Owner: strings.TrimSpace(string(b[:n]))}
		}
		return fmt.Errorf("lock %s: %w", lockPath, err)
	}
	host, _ := os.Hostname()
	exe, _ := os.Executable()
	f.Truncate(0)
	f.WriteAt([]byte(fmt.Sprintf("queue serve, pid %d on %s (%s), since %s\n", os.Getpid(), host, filepath.Base(exe), time.Now().UTC().Format(time.RFC3339))), 0)
	s.lock = f
	return nil
}

func (s *Store) releaseLock() {
	if s.lock != nil {
		syscall.Flock(int(s.lock.Fd()), syscall.LOCK_UN)
		s.lock.Close()
		s.lock = nil
	}
}

// Close waits for the writes in flight, then closes the database and lock.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		close(s.closing)
		<-s.stopped
		var errs []error
		if s.wconn != nil {
			for _, st := range s.stmts {
				st.Close()
			}
			// Fold the WAL back into the main file so a copied .db is whole.
			s.wconn.ExecContext(context.Background(), "PRAGMA wal_checkpoint(TRUNCATE)")
			errs = append(errs, s.wconn.Close(), s.wdb.Close())
		}
		if s.rdb != nil {
			errs = append(errs, s.rdb.Close())
		}
		s.releaseLock()
		s.closeErr = errors.Join(errs...)
	})
	return s.closeErr
}

// Ping checks that the file can be read and that the writer is alive.
func (s *Store) Ping(ctx context.Context) error {
	select {
	case <-s.closing:
		return app.ErrUnavailable
	default:
	}
	if err := s.rdb.PingContext(ctx); err != nil {
		return fmt.Errorf("%w: %v", app.ErrUnavailable, err)
	}
	var n int
	if err := s.rdb.QueryRowContext(ctx, `SELECT count(*) FROM schema_migrations`).Scan(&n); err != nil {
		return fmt.Errorf("%w: %v", app.ErrUnavailable, err)
	}
	if s.wconn == nil {
		return nil
	}
	return s.write(ctx, func(w *wtx) error {
		if s.failing.Load() { // writes failed lately: prove the file takes one again
			_, err := w.exec(`INSERT INTO health (id, at, pad) VALUES (1, ?, zeroblob(262144)) ON CONFLICT (id) DO UPDATE SET at = excluded.at, pad = excluded.pad`, ms(w.now))
			return err
		}
		_, err := w.exec(`PRAGMA user_version`) // a no-op write request: proves the writer answers
		return err
	})
}

// Wake implements app.Store.
func (s *Store) Wake(queue string, want int) <-chan struct{} {
	return s.notify.Wait(queue, want)
}

// Unwake implements app.Store.
func (s *Store) Unwake(queue string, c <-chan struct{}) { s.notify.Leave(queue, c) }

// PassWake implements app.Store.
func (s *Store) PassWake(queue string) { s.notify.Pass(queue) }

// Drained implements app.Store.
func (s *Store) Drained(queue string, c <-chan struct{}) { s.notify.Drained(queue, c) }

// Dry implements app.Store.
func (s *Store) Dry(queue string) bool { return s.notify.Dry(queue) }

// mapErr turns driver errors into the app errors callers test for.
func mapErr(err error) error {
	var se *sqlite.Error
	switch {
	case err == nil:
		return nil
	case errors.Is(err, sql.ErrNoRows):
		return app.ErrNotFound
	case errors.As(err, &se) && se.Code() == sqlite3.SQLITE_CONSTRAINT_TRIGGER:
		return fmt.Errorf("%w (%v)", app.ErrInvalidStatus, err)
	case errors.As(err, &se) && fatalCode(se.Code()):
		return fmt.Errorf("%w: %v", app.ErrUnavailable, err)
	}
	return err
}

// fatalCode reports whether a SQLite result code means the database (not
// the request) is in trouble: the whole transaction is abandoned.
func fatalCode(code int) bool {
	switch code & 0xff {
	case sqlite3.SQLITE_IOERR, sqlite3.SQLITE_FULL, sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOMEM,
		sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED, sqlite3.SQLITE_READONLY, sqlite3.SQLITE_CANTOPEN,
		sqlite3.SQLITE_NOTADB, sqlite3.SQLITE_INTERRUPT, sqlite3.SQLITE_PROTOCOL, sqlite3.SQLITE_ABORT:
		return true
	}
	return false
}

// ms is t as UTC unix milliseconds, the way the schema keeps times.
func ms(t time.Time) int64 { return t.UnixMilli() }

func fromMS(v int64) time.Time { return time.UnixMilli(v).UTC() }

func fromNullMS(v sql.NullInt64) *time.Time {
	if !v.Valid {
		return nil
	}
	t := fromMS(v.Int64)
	return &t
}

func nullMS(t *time.Time) any {
	if t == nil {
		return nil
	}
	return ms(*t)
}
