package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/queuehq/queue/app"
	"github.com/queuehq/queue/worker"
)

// onceBackend keeps once-records: a *Client over HTTP, or Local(svc).
type onceBackend interface {
	OnceAcquire(ctx context.Context, key string, holdFor time.Duration) (*app.OnceRecord, error)
	OnceDone(ctx context.Context, key, token string, result json.RawMessage) (*app.OnceRecord, error)
}

type onceCtxKey struct{}

// defaultOnceHold is how long a once-record is held outside a deadline.
const defaultOnceHold = 5 * time.Minute

// OnceAcquire takes the once-record key for holdFor (if zero, the server's
// 5m): Acquired is true when this call took it (run the side effect, then
// OnceDone with the record's Token); Done is true when it already ran (its
// Result is stored). Another live hold is an error matching ErrOnceHeld.
func (c *Client) OnceAcquire(ctx context.Context, key string, holdFor time.Duration) (*app.OnceRecord, error) {
	var body any
	if holdFor > 0 {
		body = map[string]string{"hold_for": holdFor.String()}
	}
	var rec app.OnceRecord
	st, _, err := c.do(ctx, http.MethodPost, "/api/once/"+url.PathEscape(key), body, &rec, nil)
	if err != nil {
		return nil, err
	}
	rec.Acquired = st == http.StatusCreated
	return &rec, nil
}

// OnceDone stores result for the once-record key held with token.
func (c *Client) OnceDone(ctx context.Context, key, token string, result json.RawMessage) (*app.OnceRecord, error) {
	var rec app.OnceRecord
	_, _, err := c.do(ctx, http.MethodPost, "/api/once/"+url.PathEscape(key)+"/done",
		map[string]any{"token": token, "result": result}, &rec, nil)
	if err != nil {
		return nil, err
	}
	return &rec, nil
}

// Once runs fn only if no run before took key to the end, and returns fn's
// result, or the result the earlier run stored (SPEC section 5: a side effect
// that must not repeat when a job runs again). Inside a Worker's handler use
// the package function Once instead, which finds the backend in ctx.
func (c *Client) Once(ctx context.Context, key string, fn func(ctx context.Context) (any, error)) (json.RawMessage, error) {
	return runOnce(ctx, c, key, fn)
}

// Once runs fn at most once per key across every run of every job, for a
// handler of a Worker (ctx must be the handler's):
//
//   - no run took key yet: Once holds it, runs fn, stores its result and
//     returns it;
//   - a run finished it: Once returns the stored result without calling fn;
//   - another run holds it now (409 once_held): Once waits, asking again
//     every 250ms to 2s, until that run finishes (its result is returned),
//     its hold lapses (this call takes over), or ctx ends (an error matching
//     ErrOnceHeld).
//
// The hold lasts until ctx's deadline (the job's timeout), or 5m without
// one. If fn fails, its error is returned and nothing is stored: the key
// stays held until the hold lapses, so a retry of the job waits for it. A
// crash between the side effect and the stored result can still repeat it:
// Once narrows the window, it cannot close it.
func Once(ctx context.Context, key string, fn func(ctx context.Context) (any, error)) (json.RawMessage, error) {
	b, _ := ctx.Value(onceCtxKey{}).(onceBackend)
	if b == nil {
		return nil, errors.New("client.Once: ctx is not a Worker handler's; outside a handler use (*Client).Once")
	}
	return runOnce(ctx, b, key, fn)
}

func runOnce(ctx context.Context, b onceBackend, key string, fn func(ctx context.Context) (any, error)) (json.RawMessage, error) {
	hold := defaultOnceHold
	if dl, ok := ctx.Deadline(); ok {
		hold = min(max(time.Until(dl)+time.Second, time.Second), app.MaxTimeout).Truncate(time.Millisecond)
	}
	delay := 250 * time.Millisecond
	for {
		rec, err := b.OnceAcquire(ctx, key, hold)
		switch {
		case err == nil && rec.Done:
			return rec.Result, nil
		case err == nil && rec.Acquired:
			res, err := fn(ctx)
			if err != nil {
				return nil, err
			}
			raw, err := json.Marshal(res)
			if err != nil {
				return nil, fmt.Errorf("once %q: result cannot be JSON: %w", key, err)
			}
			if r, ok := res.(json.RawMessage); ok {
				raw = r
			}
			if _, err := b.OnceDone(context.WithoutCancel(ctx), key, rec.Token, raw); err != nil {
				return nil, fmt.Errorf("once %q: the side effect ran but its result was not stored: %w", key, err)
			}
			return raw, nil
		case err == nil:
			return nil, fmt.Errorf("once %q: the server answered neither done nor acquired", key)
		case !errors.Is(err, app.ErrOnceHeld) && !worker.Retryable(err):
			return nil, fmt.Errorf("once %q: %w", key, err)
		}
		t := time.NewTimer(delay)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return nil, fmt.Errorf("once %q: gave up waiting (%v): %w", key, ctx.Err(), err)
		}
		delay = min(2*delay, 2*time.Second)
	}
}
