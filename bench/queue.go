package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/rs/zerolog"

	"github.com/queuehq/queue/app"
	"github.com/queuehq/queue/bench/internal/benchkit"
	"github.com/queuehq/queue/client"
	"github.com/queuehq/queue/postgres"
	"github.com/queuehq/queue/sqlite"
	"github.com/queuehq/queue/ui"
)

const (
	benchQueue = "default"
	benchKind  = "bench"
)

// queueLocal is our queue in this process: submissions through
// app.Service, workers are client.Worker over client.Local (worker.Pool over
// worker.LocalBackend), maintenance ticks every second as in `queue serve`.
type queueLocal struct {
	store       app.Store
	svc         *app.Service
	concurrency int
	stopMaint   context.CancelFunc
	maintDone   chan struct{}
}

func openQueueLocal(ctx context.Context, e *env) (system, error) {
	path := e.DBFile
	if path == "" {
		path = filepath.Join(e.Dir, "queue.db")
	}
	bus := app.NewBus()
	st, err := sqlite.Open(ctx, path, sqlite.Options{StoreOptions: app.StoreOptions{Bus: bus, Log: zerolog.Nop()}, Sync: e.Sync})
	if err != nil {
		return nil, err
	}
	return newQueueLocal(st, bus, e.Concurrency), nil
}

func openQueuePG(ctx context.Context, e *env) (system, error) {
	dsn, err := createDatabase(ctx, e, "queue")
	if err != nil {
		return nil, err
	}
	bus := app.NewBus()
	st, err := postgres.Open(ctx, dsn, postgres.Options{StoreOptions: app.StoreOptions{Bus: bus, Log: zerolog.Nop()}, MaxConns: int32(e.PGConns)})
	if err != nil {
		return nil, err
	}
	return newQueueLocal(st, bus, e.Concurrency), nil
}

func newQueueLocal(st app.Store, bus *app.Bus, concurrency int) *queueLocal {
	svc := app.NewService(st, nil, app.SystemClock{}, bus, zerolog.Nop())
	mctx, cancel := context.WithCancel(context.Background())
	q := &queueLocal{store: st, svc: svc, concurrency: concurrency, stopMaint: cancel, maintDone: make(chan struct{})}
	go func() {
		defer close(q.maintDone)
		(&app.Maintainer{Service: svc}).Run(mctx, time.Second)
	}()
	return q
}

func (q *queueLocal) Submit(ctx context.Context, t int64) error {
	_, err := q.svc.Submit(ctx, []app.SubmitInput{{Kind: benchKind, Payload: payload(t)}})
	return err
}

func (q *queueLocal) SubmitBatch(ctx context.Context, n int, t int64) error {
	_, err := q.svc.Submit(ctx, batchInputs(n, t))
	return err
}

func batchInputs(n int, t int64) []app.SubmitInput {
	ins := make([]app.SubmitInput, n)
	p := payload(t)
	for i := range ins {
		ins[i] = app.SubmitInput{Kind: benchKind, Payload: p}
	}
	return ins
}

func (q *queueLocal) Work(ctx context.Context, handle func(t int64)) (func(), error) {
	return startWorker(ctx, client.Local(q.svc), q.concurrency, 1, handle)
}

// startWorker runs n client.Workers of one handler each, with concurrency
// c: each claims up to c jobs per call and acknowledges in batches.
func startWorker(ctx context.Context, b client.Backend, c, n int, handle func(t int64)) (func(), error) {
	var ws []*client.Worker
	for i := range n {
		w := client.NewWorker(b, benchQueue, client.WithWorkerID("bench-"+strconv.Itoa(i)), client.WithGrace(30*time.Second))
		w.Handle(benchKind, func(ctx context.Context, job *client.Job) (any, error) {
			handle(payloadT(job.Payload))
			return nil, nil
		}, client.Concurrency(c))
		if err := w.Start(ctx); err != nil {
			return nil, err
		}
		ws = append(ws, w)
	}
	return func() {
		var wg sync.WaitGroup
		for _, w := range ws {
			wg.Add(1)
			go func() { defer wg.Done(); w.Stop(30 * time.Second) }()
		}
		wg.Wait()
	}, nil
}

func (q *queueLocal) Completed(ctx context.Context) (int64, error) {
	st, err := q.svc.Stats(ctx)
	if err != nil {
		return 0, err
	}
	return st.Total.Done, nil
}

func (q *queueLocal) Close() error {
	q.svc.Stop()
	q.stopMaint()
	<-q.maintDone
	return q.store.Close()
}

// httpSide is the client half of our queue over HTTP: each submission is
// one POST /api/jobs from a client.Client, workers are client.Workers over
// HTTP (claim many, acknowledge many, as `queue work`).
type httpSide struct {
	cl          *client.Client
	base        string
	concurrency int
	workers     int
}

func newHTTPSide(base string, e *env) httpSide {
	return httpSide{cl: client.New(base, client.WithHTTPClient(benchkit.HTTPClient())), base: base,
		concurrency: e.Concurrency, workers: e.HTTPWorkers}
}

func (q *httpSide) Submit(ctx context.Context, t int64) error {
	_, err := q.cl.Submit(ctx, app.SubmitInput{Kind: benchKind, Payload: payload(t)})
	return err
}

func (q *httpSide) SubmitBatch(ctx context.Context, n int, t int64) error {
	_, err := q.cl.SubmitBatch(ctx, batchInputs(n, t))
	return err
}

func (q *httpSide) Work(ctx context.Context, handle func(t int64)) (func(), error) {
	return startWorker(ctx, q.cl, q.concurrency, max(q.workers, 1), handle)
}

func (q *httpSide) Completed(ctx context.Context) (int64, error) {
	st, err := q.cl.Stats(ctx)
	if err != nil {
		return 0, err
	}
	return st.Total.Done, nil
}

func (q *httpSide) Claim(ctx context.Context, limit int) (int, error) {
	jobs, err := q.cl.Claim(ctx, benchQueue, app.ClaimInput{WorkerID: "bench", Limit: limit})
	return len(jobs), err
}

func (q *httpSide) ClaimKind(ctx context.Context, kind string, limit int) (int, error) {
	jobs, err := q.cl.Claim(ctx, benchQueue, app.ClaimInput{WorkerID: "bench", Limit: limit, Kinds: []string{kind}})
	return len(jobs), err
}

// queueHTTP is our queue as `queue serve` in a process of its own, driven
// over HTTP.
type queueHTTP struct {
	httpSide
	cmd       *exec.Cmd
	exited    chan struct{}
	startedIn time.Duration
}

func openQueueHTTP(ctx context.Context, e *env) (system, error) {
	path := e.DBFile
	if path == "" {
		path = filepath.Join(e.Dir, "queue.db")
	}
	return startServe(ctx, e, path)
}

// queueHTTPLocal is the HTTP API (ui.New over app.Service, as `queue
// serve` wires it) served on loopback inside this process, driven by the
// same clients as queue-http: one CPU profile shows server and client.
// It is for profiling, not in the default table.
type queueHTTPLocal struct {
	httpSide
	local *queueLocal
	srv   *http.Server
}

func openQueueHTTPLocal(ctx context.Context, e *env) (system, error) {
	s, err := openQueueLocal(ctx, e)
	if err != nil {
		return nil, err
	}
	local := s.(*queueLocal)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		local.Close()
		return nil, err
	}
	srv := &http.Server{Handler: ui.New(ui.Options{Service: local.svc, Log: zerolog.Nop()}), ReadHeaderTimeout: 5 * time.Second}
	go srv.Serve(ln)
	return &queueHTTPLocal{httpSide: newHTTPSide("http://"+ln.Addr().String(), e), local: local, srv: srv}, nil
}

func (q *queueHTTPLocal) Close() error {
	q.local.svc.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	q.srv.Shutdown(ctx)
	return q.local.Close()
}

// startServe runs `queue serve` on path and waits for /readyz.
func startServe(ctx context.Context, e *env, path string) (*queueHTTP, error) {
	bin, sync, dir := e.QueueBin, e.Sync, e.Dir
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	logf, err := os.Create(filepath.Join(dir, "serve.log"))
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, "serve", "--db", path, "--addr", addr, "--sync", sync, "--log-format", "json", "--log-level", "warn")
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.Env = append(os.Environ(), "QUEUE_TOKEN=", "QUEUE_CONFIG=")
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	began := time.Now()
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("start queue serve: %w", err)
	}
	q := &queueHTTP{httpSide: newHTTPSide("http://"+addr, e), cmd: cmd, exited: make(chan struct{})}
	go func() { cmd.Wait(); logf.Close(); close(q.exited) }()
	hc := &http.Client{Timeout: time.Second}
	for {
		resp, err := hc.Get("http://" + addr + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		select {
		case <-q.exited:
			b, _ := os.ReadFile(filepath.Join(dir, "serve.log"))
			return nil, fmt.Errorf("queue serve exited before it was ready: %s", b)
		case <-ctx.Done():
			q.Close()
			return nil, ctx.Err()
		case <-time.After(time.Millisecond):
		}
		if time.Since(began) > 2*time.Minute {
			q.Close()
			return nil, errors.New("queue serve not ready after 2 minutes")
		}
	}
	q.startedIn = time.Since(began)
	return q, nil
}

func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

func (q *queueHTTP) ServerPID() int { return q.cmd.Process.Pid }

// Close stops the server with SIGTERM (a clean shutdown) and waits.
func (q *queueHTTP) Close() error {
	q.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-q.exited:
	case <-time.After(20 * time.Second):
		q.cmd.Process.Kill()
		<-q.exited
	}
	return nil
}
