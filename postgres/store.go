// Package postgres is the app.Store on PostgreSQL through pgx (a pgxpool),
// for running several `queue serve` nodes against one database. Every write
// is one transaction of its own: claims take rows with FOR UPDATE SKIP
// LOCKED in claim order, so nodes never wait on each other's jobs; the
// per-queue concurrency and rate limits are checked under a transaction
// advisory lock of the queue, so they hold across nodes. After a commit that
// makes work claimable the store NOTIFYs, and every node LISTENs on a
// dedicated connection, so a claimer waiting on any node wakes at once.
// Maintenance, retention and periodic jobs run on one node at a time: the
// one holding a session advisory lock (see Store.Lead).
//
// It keeps out what is not PostgreSQL: the lifecycle rules come from app
// (Transition, DecideFail, ...), and its semantics follow the sqlite store
// exactly; both pass the same conformance suite (app/storetest).
package postgres

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/rs/zerolog"

	"github.com/queuehq/queue/app"
	assets "github.com/queuehq/queue/embed"
	"github.com/queuehq/queue/triggers"
)

var _ app.Store = (*Store)(nil)
var _ app.Leader = (*Store)(nil) // several nodes share one database

// Options configures Open.
type Options struct {
	app.StoreOptions
	// Schema, if set, is the schema the store's tables live in: every
	// connection gets it as its search_path, and Open creates it if missing.
	// If empty, the DSN decides (search_path=... or options=-csearch_path=...
	// in the address), else the server's default (usually public).
	Schema string
	// MaxConns caps the connection pool. If zero, the DSN's pool_max_conns,
	// or else 10, is used. The store holds two more connections of its own:
	// the LISTEN connection and, while Lead runs, the leader lock's.
	MaxConns int32
}

// Store is an app.Store on one PostgreSQL database (one schema of it).
type Store struct {
	opts    Options
	clock   app.Clock
	bus     *app.Bus
	notify  *app.Notifier
	log     zerolog.Logger
	pool    *pgxpool.Pool
	connCfg *pgx.ConnConfig // for the store's own connections (LISTEN, leader lock)
	schema  string          // the schema the tables live in
	channel string          // the NOTIFY channel of this schema

	known sync.Map // queue name -> true once it has a row in queues

	pendingMu sync.Mutex
	pending   map[string]struct{} // queues to NOTIFY about (see notifier)
	kick      chan struct{}       // wakes the notifier
	notifyPID atomic.Uint32       // backend of the notifier's connection: its NOTIFYs are this node's own
	listenPID atomic.Uint32       // backend of the LISTEN connection: not another node's (see peers)

	comb combiner // gathered submissions (group commit)

	mu        sync.Mutex
	closed    bool
	ops       sync.WaitGroup // calls in flight
	bgWG      sync.WaitGroup // the listener, the notifier and Lead
	stop      chan struct{}  // closed when the calls in flight are done: background work ends
	closeOnce sync.Once
}

// Open connects to the database at dsn (postgres://...), applies the
// embedded migrations and the status guard (one node at a time, under an
// advisory lock), and starts listening for wake-ups. The caller must Close
// the store.
func Open(ctx context.Context, dsn string, opts Options) (*Store, error) {
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("open postgres: %w", redactErr(err, dsn))
	}
	if opts.MaxConns > 0 {
		cfg.MaxConns = opts.MaxConns
	} else if !strings.Contains(dsn, "pool_max_conns") {
		cfg.MaxConns = 10
	}
	if cfg.ConnConfig.ConnectTimeout == 0 { // connect_timeout in the address wins
		cfg.ConnConfig.ConnectTimeout = 5 * time.Second
	}
	if !strings.Contains(dsn, "pool_min_conns") {
		cfg.MinConns = min(2, cfg.MaxConns) // warm connections for the first requests
	}
	cfg.MaxConnIdleTime = 5 * time.Minute
	params := cfg.ConnConfig.RuntimeParams
	if opts.Schema != "" {
		params["search_path"] = pgx.Identifier{opts.Schema}.Sanitize()
	}
	params["timezone"] = "UTC"
	if params["application_name"] == "" {
		params["application_name"] = "queue"
	}
	s := &Store{
		opts: opts, clock: opts.ClockOrSystem(), bus: opts.Bus, notify: app.NewNotifier(),
		log: opts.Log, connCfg: cfg.ConnConfig.Copy(),
		pending: map[string]struct{}{}, kick: make(chan struct{}, 1), stop: make(chan struct{}),
	}
	if s.pool, err = pgxpool.NewWithConfig(ctx, cfg); err != nil {
		return nil, fmt.Errorf("open postgres: %w", mapErr(err))
	}
	fail := func(err error) (*Store, error) {
		s.pool.Close()
		return nil, err
	}
	create, err := s.findSchema(ctx)
	if err != nil {
		return fail(err)
	}
	s.channel = channelName(s.schema)
	if err := s.migrate(ctx, create); err != nil {
		return fail(err)
	}
	conn, err := s.listenConn(ctx)
	if err != nil {
		return fail(fmt.Errorf("open postgres: listen for wake-ups: %w", mapErr(err)))
	}
	s.bgWG.Add(2)
	go s.listen(conn)
	go s.notifier()
	return s, nil
}

// findSchema learns the schema the tables go to, and whether it must be
// created: the one asked for (Options.Schema, or the first of the DSN's
// search_path) when it does not exist yet.
func (s *Store) findSchema(ctx context.Context) (create bool, err error) {
	var cur *string
	if err := s.pool.QueryRow(ctx, `SELECT current_schema()`).Scan(&cur); err != nil {
		return false, fmt.Errorf("open postgres: %w", mapErr(err))
	}
	if cur != nil {
		s.schema = *cur
		return false, nil
	}
	want := s.opts.Schema
	if want == "" {
		first, _, _ := strings.Cut(s.connCfg.RuntimeParams["search_path"], ",")
		want = strings.Trim(strings.TrimSpace(first), `"`)
	}
	if want == "" || strings.HasPrefix(want, "$") {
		return false, errors.New("open postgres: the search_path names no existing schema; create it (CREATE SCHEMA ...) or fix search_path in the address")
	}
	s.schema = want
	return true, nil
}

// channelName is the NOTIFY channel of schema: one per schema, so stores in
// other schemas of the same database (parallel tests) never wake each other.
func channelName(schema string) string {
	c := "queue_wake:" + schema
	if len(c) > 63 { // the longest identifier PostgreSQL keeps
		c = fmt.Sprintf("queue_wake:%016x", lockKey("channel", schema))
	}
	return c
}

// lockKey is the advisory-lock key for what, scoped to parts (the schema
// first, so stores in other schemas of the database never contend).
func lockKey(what string, parts ...string) int64 {
	h := fnv.New64a()
	io.WriteString(h, "queue\x00"+what)
	for _, p := range parts {
		io.WriteString(h, "\x00"+p)
	}
	return int64(h.Sum64())
}

// migrate creates the schema if asked to, applies the embedded migrations
// not yet recorded in schema_migrations, one transaction each, then the
// status guard. A session advisory lock keeps two nodes starting at once
// from doing it together.
func (s *Store) migrate(ctx context.Context, create bool) error {
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("migrate: %w", mapErr(err))
	}
	defer conn.Release()
	key := lockKey("migrate", s.schema)
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock($1)`, key); err != nil {
		return fmt.Errorf("migrate: take the migration lock: %w", mapErr(err))
	}
	defer conn.Exec(context.WithoutCancel(ctx), `SELECT pg_advisory_unlock($1)`, key)
	if create {
		if _, err := conn.Exec(ctx, `CREATE SCHEMA IF NOT EXISTS `+pgx.Identifier{s.schema}.Sanitize()); err != nil {
			return fmt.Errorf("open postgres: create schema %s: %w", s.schema, mapErr(err))
		}
		s.log.Info().Str("schema", s.schema).Msg("schema created")
	}
	if _, err := conn.Exec(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
			name text PRIMARY KEY, applied_at timestamptz NOT NULL);
		CREATE TABLE IF NOT EXISTS schema_guards (
			name text PRIMARY KEY, sha256 text NOT NULL, applied_at timestamptz NOT NULL)`); err != nil {
		return fmt.Errorf("migrate: %w", mapErr(err))
	}
	for _, m := range assets.Migrations("postgres") {
		var n int
		if err := conn.QueryRow(ctx, `SELECT count(*) FROM schema_migrations WHERE name = $1`, m.Name).Scan(&n); err != nil {
			return fmt.Errorf("migrate: %w", mapErr(err))
		}
		if n > 0 {
			continue
		}
		err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, m.SQL); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, `INSERT INTO schema_migrations (name, applied_at) VALUES ($1, $2)`, m.Name, s.now())
			return err
		})
		if err != nil {
			return fmt.Errorf("migrate: %s: %w", m.Name, mapErr(err))
		}
		s.log.Info().Str("migration", m.Name).Str("schema", s.schema).Msg("schema migration applied")
	}
	// The guard is installed again only when its text changed: replacing a
	// trigger locks the jobs table, which running nodes would feel.
	for i, sql := range triggers.Postgres() {
		name := fmt.Sprintf("triggers/postgres/%03d", i+1)
		sum := sha256.Sum256([]byte(sql))
		hash := hex.EncodeToString(sum[:])
		var have string
		err := conn.QueryRow(ctx, `SELECT sha256 FROM schema_guards WHERE name = $1`, name).Scan(&have)
		if err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("install status guard: %w", mapErr(err))
		}
		if have == hash {
			continue
		}
		err = pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, sql); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, `INSERT INTO schema_guards (name, sha256, applied_at) VALUES ($1, $2, $3)
				ON CONFLICT (name) DO UPDATE SET sha256 = excluded.sha256, applied_at = excluded.applied_at`, name, hash, s.now())
			return err
		})
		if err != nil {
			return fmt.Errorf("install status guard: %w", mapErr(err))
		}
	}
	return nil
}

// SchemaVersion returns the name of the last migration applied.
func (s *Store) SchemaVersion(ctx context.Context) (string, error) {
	var v *string
	if err := s.pool.QueryRow(ctx, `SELECT max(name) FROM schema_migrations`).Scan(&v); err != nil {
		return "", fmt.Errorf("schema version: %w", mapErr(err))
	}
	if v == nil {
		return "", nil
	}
	return *v, nil
}

// Schema returns the schema the store's tables live in.
func (s *Store) Schema() string { return s.schema }

// enter registers a call in flight, or refuses it once Close began.
func (s *Store) enter() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return fmt.Errorf("%w: store closed", app.ErrUnavailable)
	}
	s.ops.Add(1)
	return nil
}

func (s *Store) leave() { s.ops.Done() }

// Close refuses new calls, waits for the calls in flight, stops the
// listener and the leader lock, and closes the pool.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		s.mu.Lock()
		s.closed = true
		s.mu.Unlock()
		s.ops.Wait()
		close(s.stop)
		s.bgWG.Wait()
		s.pool.Close()
	})
	return nil
}

// Ping checks that the database answers and holds the schema.
func (s *Store) Ping(ctx context.Context) error {
	if err := s.enter(); err != nil {
		return err
	}
	defer s.leave()
	var n int
	if err := s.pool.QueryRow(ctx, `SELECT count(*) FROM schema_migrations`).Scan(&n); err != nil {
		err = mapErr(err)
		if !errors.Is(err, app.ErrUnavailable) {
			err = fmt.Errorf("%w: %v", app.ErrUnavailable, err)
		}
		return fmt.Errorf("ping postgres: %w", err)
	}
	return nil
}

// Wake implements app.Store: the channel closes at the next commit, on any
// node, that may make work of queue claimable.
func (s *Store) Wake(queue string, want int) <-chan struct{} {
	return s.notify.Wait(queue, want)
}

// Unwake implements app.Store.
func (s *Store) Unwake(queue string, c <-chan struct{}) { s.notify.Leave(queue, c) }

// PassWake implements app.Store: this node's next waiter (a job left
// for another node's claimers reaches them by their NOTIFY or recheck).
func (s *Store) PassWake(queue string) { s.notify.Pass(queue) }

// Drained implements app.Store.
func (s *Store) Drained(queue string, c <-chan struct{}) { s.notify.Drained(queue, c) }

// Dry implements app.Store.
func (s *Store) Dry(queue string) bool { return s.notify.Dry(queue) }

// ownConnConfig is the configuration of a connection of the store's own
// (outside the pool), named in pg_stat_activity as role and schema, e.g.
// "queue listen public".
func (s *Store) ownConnConfig(role string) *pgx.ConnConfig {
	cfg := s.connCfg.Copy()
	name := role + " " + s.schema
	if len(name) > 63 {
		name = name[:63]
	}
	cfg.RuntimeParams["application_name"] = name
	return cfg
}

// stopping returns a context cancelled when the store closes, for its
// background work.
func (s *Store) stopping() (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		select {
		case <-s.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx, cancel
}

// Pool returns the connection pool, for tools and tests.
func (s *Store) Pool() *pgxpool.Pool { return s.pool }

// now is the store's clock, to the millisecond the schema keeps (so what a
// write answers is what a read gives, and copies from SQLite are exact).
func (s *Store) now() time.Time { return ms(s.clock.Now()) }

// ms cuts t to UTC milliseconds.
func ms(t time.Time) time.Time { return t.UTC().Truncate(time.Millisecond) }

// msPtr is ms of *t (nil stays nil), for the nullable times it writes and reads.
func msPtr(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	v := ms(*t)
	return &v
}

// mapErr turns driver errors into the app errors callers test for: the
// status guard's refusals into ErrInvalidStatus, a lost or unreachable
// server into ErrUnavailable (the API answers 503).
func mapErr(err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, pgx.ErrNoRows) {
		return app.ErrNotFound
	}
	if errors.Is(err, app.ErrUnavailable) {
		return err
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch {
		case pe.Code == "23514" && strings.HasPrefix(pe.ConstraintName, "jobs_status"), // check_violation
			pe.Code == "P0001" && strings.HasPrefix(pe.Message, "jobs.status:"): // raise_exception from the guard
			return fmt.Errorf("%w (%s)", app.ErrInvalidStatus, pe.Message)
		case pe.Code == "22021" || pe.Code == "22P05": // text PostgreSQL cannot store (a NUL byte, bad UTF-8)
			return &app.InvalidError{Message: "text with a NUL byte or invalid UTF-8 cannot be stored: " + pe.Message}
		case strings.HasPrefix(pe.Code, "08"), // connection exception
			pe.Code == "57P01", pe.Code == "57P02", pe.Code == "57P03", // shutdown, crash, cannot connect now
			pe.Code == "53300", pe.Code == "25006": // too many connections; read-only (a standby)
			return fmt.Errorf("%w: %v", app.ErrUnavailable, err)
		}
		return err
	}
	var ce *pgconn.ConnectError
	var ne net.Error
	switch {
	case errors.As(err, &ce), errors.As(err, &ne), errors.Is(err, pgconn.ErrConnClosed),
		errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), pgconn.SafeToRetry(err),
		strings.Contains(err.Error(), "closed pool"):
		return fmt.Errorf("%w: %v", app.ErrUnavailable, err)
	}
	return err
}

// retryable reports whether a transaction failed only because another one
// won a race (a deadlock, a serialization failure, or two submissions of
// one idempotency key at once): running it again gives the right answer.
func retryable(err error) bool {
	var pe *pgconn.PgError
	if !errors.As(err, &pe) {
		return false
	}
	switch pe.Code {
	case "40001", "40P01":
		return true
	case "23505":
		return pe.ConstraintName == "jobs_idempotency" || pe.ConstraintName == "dead_letter_idempotency"
	}
	return false
}

// redactErr hides the password of dsn in err's text.
func redactErr(err error, dsn string) error {
	u, perr := pgconn.ParseConfig(dsn)
	if perr != nil || u.Password == "" {
		return err
	}
	return errors.New(strings.ReplaceAll(err.Error(), u.Password, "***"))
}

// clean makes s storable in a text column: PostgreSQL refuses NUL bytes and
// invalid UTF-8, which worker ids and error messages may carry.
func clean(s string) string {
	if strings.IndexByte(s, 0) < 0 && utf8.ValidString(s) {
		return s
	}
	return strings.ReplaceAll(strings.ToValidUTF8(s, "\uFFFD"), "\x00", "\uFFFD")
}
