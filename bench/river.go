package main

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/riverdriver/riversqlite"
	"github.com/riverqueue/river/rivermigrate"
	_ "modernc.org/sqlite" // registers "sqlite" for River and goqite
)

// benchArgs is River's job: the submission time, as for every system.
type benchArgs struct {
	T int64 `json:"t"`
}

func (benchArgs) Kind() string { return benchKind }

type benchWorker struct {
	river.WorkerDefaults[benchArgs]
	handle *atomic.Pointer[func(int64)]
}

func (w *benchWorker) Work(ctx context.Context, job *river.Job[benchArgs]) error {
	if h := w.handle.Load(); h != nil {
		(*h)(job.Args.T)
	}
	return nil
}

// riverSys is River with either driver.
type riverSys[TTx any] struct {
	client *river.Client[TTx]
	handle *atomic.Pointer[func(int64)]
	count  func(ctx context.Context) (int64, error)
	close  func()
}

// riverConfig is River's configuration in every run: one queue with
// MaxWorkers workers, fetches at most every FetchCooldown and at least every
// FetchPollInterval, completions through River's batch completer (its
// default), warnings logged to stderr.
func riverConfig(e *env, handle *atomic.Pointer[func(int64)]) (*river.Config, error) {
	cooldown, err := time.ParseDuration(e.RiverCooldown)
	if err != nil {
		return nil, fmt.Errorf("-river-cooldown: %w", err)
	}
	poll, err := time.ParseDuration(e.RiverPoll)
	if err != nil {
		return nil, fmt.Errorf("-river-poll: %w", err)
	}
	workers := river.NewWorkers()
	river.AddWorker(workers, &benchWorker{handle: handle})
	return &river.Config{
		Logger:            slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
		Queues:            map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: e.RiverWorkers}},
		Workers:           workers,
		FetchCooldown:     cooldown,
		FetchPollInterval: poll,
	}, nil
}

// sqliteDSN is the modernc.org/sqlite address every SQLite peer uses: WAL,
// the run's synchronous setting, a busy timeout.
func sqliteDSN(path, sync string) string {
	return "file:" + path + "?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_pragma=synchronous(" + sqliteSync(sync) + ")&_txlock=immediate"
}

func openRiverSQLite(ctx context.Context, e *env) (system, error) {
	path := filepath.Join(e.Dir, "river.db")
	db, err := sql.Open("sqlite", sqliteDSN(path, e.Sync))
	if err != nil {
		return nil, err
	}
	// riversqlite's advice: one connection, since SQLite runs one writer at
	// a time and River runs many operations at once.
	db.SetMaxOpenConns(e.RiverConns)
	db.SetMaxIdleConns(e.RiverConns)
	driver := riversqlite.New(db)
	mig, err := rivermigrate.New(driver, nil)
	if err != nil {
		db.Close()
		return nil, err
	}
	if _, err := mig.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
		db.Close()
		return nil, fmt.Errorf("river migrate: %w", err)
	}
	handle := new(atomic.Pointer[func(int64)])
	cfg, err := riverConfig(e, handle)
	if err != nil {
		db.Close()
		return nil, err
	}
	c, err := river.NewClient(driver, cfg)
	if err != nil {
		db.Close()
		return nil, err
	}
	return &riverSys[*sql.Tx]{
		client: c, handle: handle,
		count: func(ctx context.Context) (int64, error) {
			var n int64
			err := db.QueryRowContext(ctx, `SELECT count(*) FROM river_job WHERE state = 'completed'`).Scan(&n)
			return n, err
		},
		close: func() { db.Close() },
	}, nil
}

func openRiverPG(ctx context.Context, e *env) (system, error) {
	dsn, err := createDatabase(ctx, e, "river")
	if err != nil {
		return nil, err
	}
	pcfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, err
	}
	pcfg.MaxConns = int32(e.PGConns)
	pool, err := pgxpool.NewWithConfig(ctx, pcfg)
	if err != nil {
		return nil, err
	}
	driver := riverpgxv5.New(pool)
	mig, err := rivermigrate.New(driver, nil)
	if err != nil {
		pool.Close()
		return nil, err
	}
	if _, err := mig.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
		pool.Close()
		return nil, fmt.Errorf("river migrate: %w", err)
	}
	handle := new(atomic.Pointer[func(int64)])
	cfg, err := riverConfig(e, handle)
	if err != nil {
		pool.Close()
		return nil, err
	}
	c, err := river.NewClient(driver, cfg)
	if err != nil {
		pool.Close()
		return nil, err
	}
	return &riverSys[pgx.Tx]{
		client: c, handle: handle,
		count: func(ctx context.Context) (int64, error) {
			var n int64
			err := pool.QueryRow(ctx, `SELECT count(*) FROM river_job WHERE state = 'completed'`).Scan(&n)
			return n, err
		},
		close: pool.Close,
	}, nil
}

func (r *riverSys[TTx]) Submit(ctx context.Context, t int64) error {
	_, err := r.client.Insert(ctx, benchArgs{T: t}, nil)
	return err
}

// SubmitBatch uses InsertManyFast, River's fastest batch insert (COPY on
// PostgreSQL).
func (r *riverSys[TTx]) SubmitBatch(ctx context.Context, n int, t int64) error {
	params := make([]river.InsertManyParams, n)
	for i := range params {
		params[i] = river.InsertManyParams{Args: benchArgs{T: t}}
	}
	_, err := r.client.InsertManyFast(ctx, params)
	return err
}

func (r *riverSys[TTx]) Work(ctx context.Context, handle func(t int64)) (func(), error) {
	r.handle.Store(&handle)
	if err := r.client.Start(context.WithoutCancel(ctx)); err != nil {
		return nil, err
	}
	return func() {
		sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := r.client.Stop(sctx); err != nil {
			fmt.Fprintln(os.Stderr, "river stop:", err)
		}
	}, nil
}

func (r *riverSys[TTx]) Completed(ctx context.Context) (int64, error) { return r.count(ctx) }

func (r *riverSys[TTx]) Close() error {
	r.close()
	return nil
}
