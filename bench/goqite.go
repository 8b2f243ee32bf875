package main

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/maragudk/goqite"
)

// goqiteSys is goqite on one SQLite connection (its README's setup), worked
// by a raw receive/delete loop: Workers goroutines each Receive a message,
// run the handler, Delete it, and sleep Poll when the queue is empty.
// goqite's own jobs.Runner is not used: it receives one message per poll
// tick (100ms by default), which caps it far below what the queue does.
type goqiteSys struct {
	db       *sql.DB
	q        *goqite.Queue
	workers  int
	poll     time.Duration
	inserted atomic.Int64
}

func openGoqite(ctx context.Context, e *env) (system, error) {
	poll, err := time.ParseDuration(e.GoqitePoll)
	if err != nil {
		return nil, fmt.Errorf("-goqite-poll: %w", err)
	}
	db, err := sql.Open("sqlite", sqliteDSN(filepath.Join(e.Dir, "goqite.db"), e.Sync))
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(1)
	db.SetMaxIdleConns(1)
	if err := goqite.Setup(ctx, db); err != nil {
		db.Close()
		return nil, err
	}
	q := goqite.New(goqite.NewOpts{DB: db, Name: benchQueue, Timeout: 30 * time.Second, MaxReceive: 5})
	return &goqiteSys{db: db, q: q, workers: e.GoqiteWorkers, poll: poll}, nil
}

func (g *goqiteSys) Submit(ctx context.Context, t int64) error {
	if err := g.q.Send(ctx, goqite.Message{Body: payload(t)}); err != nil {
		return err
	}
	g.inserted.Add(1)
	return nil
}

// SubmitBatch sends n messages in one transaction (goqite has no batch
// call; SendTx in one transaction is its equivalent).
func (g *goqiteSys) SubmitBatch(ctx context.Context, n int, t int64) error {
	tx, err := g.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	body := payload(t)
	for range n {
		if err := g.q.SendTx(ctx, tx, goqite.Message{Body: body}); err != nil {
			return err
		}
	}
	if err := tx.Commit(); err != nil {
		return err
	}
	g.inserted.Add(int64(n))
	return nil
}

func (g *goqiteSys) Work(ctx context.Context, handle func(t int64)) (func(), error) {
	wctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	var wg sync.WaitGroup
	for range g.workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for wctx.Err() == nil {
				m, err := g.q.Receive(wctx)
				if err != nil {
					if wctx.Err() == nil {
						fmt.Fprintln(os.Stderr, "goqite receive:", err)
						time.Sleep(g.poll)
					}
					continue
				}
				if m == nil {
					select {
					case <-wctx.Done():
					case <-time.After(g.poll):
					}
					continue
				}
				handle(payloadT(m.Body))
				// Delete even when stopping: the handler ran (ack last).
				if err := g.q.Delete(context.Background(), m.ID); err != nil {
					fmt.Fprintln(os.Stderr, "goqite delete:", err)
				}
			}
		}()
	}
	return func() { cancel(); wg.Wait() }, nil
}

// Completed is what was sent minus what is left: goqite deletes a message
// once it is handled.
func (g *goqiteSys) Completed(ctx context.Context) (int64, error) {
	var left int64
	if err := g.db.QueryRowContext(ctx, `SELECT count(*) FROM goqite`).Scan(&left); err != nil {
		return 0, err
	}
	return g.inserted.Load() - left, nil
}

func (g *goqiteSys) Close() error { return g.db.Close() }

// createDatabase makes a database of its own for this run on the
// PostgreSQL server and drops it when the run ends. It returns its address.
func createDatabase(ctx context.Context, e *env, prefix string) (string, error) {
	if e.PostgresDSN == "" {
		return "", fmt.Errorf("no PostgreSQL address (-pg)")
	}
	conn, err := pgx.Connect(ctx, e.PostgresDSN)
	if err != nil {
		return "", fmt.Errorf("connect to PostgreSQL: %w", err)
	}
	defer conn.Close(ctx)
	name := "bench_" + prefix + "_" + strconv.Itoa(os.Getpid()) + "_" + strconv.FormatInt(time.Now().UnixNano()%1e6, 10)
	stmt := "CREATE DATABASE " + pgx.Identifier{name}.Sanitize()
	switch {
	case e.PGPrepare != "":
		name = e.PGPrepare // kept: the parent drops it after the last round
		stmt = "CREATE DATABASE " + pgx.Identifier{name}.Sanitize()
	case e.PGTemplate != "" && prefix == "queue":
		stmt += " TEMPLATE " + pgx.Identifier{e.PGTemplate}.Sanitize()
		fallthrough
	default:
		e.atExit(func() { dropDatabase(e.PostgresDSN, name) })
	}
	if _, err := conn.Exec(ctx, stmt); err != nil {
		return "", fmt.Errorf("create database %s: %w", name, err)
	}
	e.pgDB = name
	u, err := url.Parse(e.PostgresDSN)
	if err != nil {
		return "", err
	}
	u.Path = "/" + name
	return u.String(), nil
}

func dropDatabase(dsn, name string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		fmt.Fprintln(os.Stderr, "drop database:", err)
		return
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)"); err != nil {
		fmt.Fprintln(os.Stderr, "drop database:", err)
	}
}
