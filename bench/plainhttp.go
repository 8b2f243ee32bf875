package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/queuehq/queue/bench/internal/benchkit"
)

// plainHTTP drives `queue serve` the way a client that is not ours does
// (a shell script, a small app in another language): plain net/http, one
// POST /api/jobs per job, and claiming workers that each loop POST
// /api/queues/default/claim {"limit":500,"wait":"1s"} and acknowledge the
// whole batch with one POST /api/jobs/complete. It records the latency of
// every submit while recording is on.
type plainHTTP struct {
	*queueHTTP
	hc       *http.Client
	claimers int

	recording atomic.Bool
	mu        sync.Mutex
	lat       []time.Duration
	workErrs  errCount
}

func openPlainSQLite(ctx context.Context, e *env) (system, error) {
	srv, err := startServe(ctx, e, filepath.Join(e.Dir, "queue.db"))
	if err != nil {
		return nil, err
	}
	return newPlainHTTP(srv, e), nil
}

// openPlainPG starts `queue serve` on a fresh PostgreSQL database with a
// pool of -pg-conns connections, as River-PG and queue-pg get.
func openPlainPG(ctx context.Context, e *env) (system, error) {
	dsn, err := createDatabase(ctx, e, "queue")
	if err != nil {
		return nil, err
	}
	u, err := url.Parse(dsn)
	if err != nil {
		return nil, err
	}
	q := u.Query()
	q.Set("pool_max_conns", strconv.Itoa(e.PGConns))
	u.RawQuery = q.Encode()
	srv, err := startServe(ctx, e, u.String())
	if err != nil {
		return nil, err
	}
	return newPlainHTTP(srv, e), nil
}

func newPlainHTTP(srv *queueHTTP, e *env) *plainHTTP {
	return &plainHTTP{queueHTTP: srv, hc: benchkit.HTTPClient(), claimers: max(e.Claimers, 1)}
}

// post sends body as JSON to the server's path (benchkit.Post).
func (q *plainHTTP) post(ctx context.Context, path string, body []byte, out any) error {
	return benchkit.Post(ctx, q.hc, q.base+path, body, out)
}

func (q *plainHTTP) Submit(ctx context.Context, t int64) error {
	body := []byte(`{"kind":"` + benchKind + `","payload":` + string(payload(t)) + `}`)
	t0 := time.Now()
	err := q.post(ctx, "/api/jobs", body, nil)
	if err == nil && q.recording.Load() {
		d := time.Since(t0)
		q.mu.Lock()
		q.lat = append(q.lat, d)
		q.mu.Unlock()
	}
	return err
}

// recordSubmits turns the recording of submit latencies on or off.
func (q *plainHTTP) recordSubmits(on bool) { q.recording.Store(on) }

// submitLatencies returns the latencies recorded so far.
func (q *plainHTTP) submitLatencies() []time.Duration {
	q.mu.Lock()
	defer q.mu.Unlock()
	return append([]time.Duration(nil), q.lat...)
}

func (q *plainHTTP) SubmitBatch(ctx context.Context, n int, t int64) error {
	var b bytes.Buffer
	b.WriteString(`{"jobs":[`)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`{"kind":"` + benchKind + `","payload":` + string(payload(t)) + `}`)
	}
	b.WriteString(`]}`)
	return q.post(ctx, "/api/jobs/batch", b.Bytes(), nil)
}

type plainJob struct {
	ID      int64           `json:"id"`
	Lease   int64           `json:"lease"`
	Payload json.RawMessage `json:"payload"`
}

// Work runs q.claimers claiming workers. stop lets each finish its
// current claim (at most the 1 s wait) and acknowledge it.
func (q *plainHTTP) Work(ctx context.Context, handle func(t int64)) (func(), error) {
	var stopping atomic.Bool
	var wg sync.WaitGroup
	errs := &q.workErrs
	for i := range q.claimers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			claim := []byte(`{"worker_id":"bench-` + strconv.Itoa(i) + `","limit":500,"wait":"1s"}`)
			for !stopping.Load() && ctx.Err() == nil {
				var got struct {
					Jobs []plainJob `json:"jobs"`
				}
				if err := q.post(context.WithoutCancel(ctx), "/api/queues/"+benchQueue+"/claim", claim, &got); err != nil {
					errs.add(err)
					time.Sleep(10 * time.Millisecond)
					continue
				}
				if len(got.Jobs) == 0 {
					continue
				}
				type ack struct {
					ID    int64 `json:"id"`
					Lease int64 `json:"lease"`
				}
				acks := make([]ack, len(got.Jobs))
				for k, j := range got.Jobs {
					handle(payloadT(j.Payload))
					acks[k] = ack{j.ID, j.Lease}
				}
				body, _ := json.Marshal(map[string]any{"jobs": acks})
				var res struct {
					Results []struct {
						OK bool `json:"ok"`
					} `json:"results"`
				}
				if err := q.post(context.WithoutCancel(ctx), "/api/jobs/complete", body, &res); err != nil {
					errs.add(err)
					continue
				}
				for _, r := range res.Results {
					if !r.OK {
						errs.add(fmt.Errorf("a completion was refused"))
					}
				}
			}
		}()
	}
	return func() {
		stopping.Store(true)
		wg.Wait()
	}, nil
}

// workErrors counts the failed claims and acknowledgements of Work.
func (q *plainHTTP) workErrors() *errCount { return &q.workErrs }
