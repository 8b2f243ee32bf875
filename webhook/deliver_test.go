package webhook_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/queuehq/queue/app"
	"github.com/queuehq/queue/memory"
	"github.com/queuehq/queue/webhook"
	"github.com/queuehq/queue/worker"
)

const callbackSecret = "the-callback-secret-0123"

// newService is a Service over the memory store whose stores insert the
// deliveries of cfg's subscriptions, as serve wires it; the deliveries
// retry after 10-40 ms.
func newService(t *testing.T, cfg *app.Config) *app.Service {
	t.Helper()
	if cfg.Queues == nil {
		cfg.Queues = map[string]app.QueueConfig{}
	}
	cfg.Queues[app.WebhookQueue] = app.QueueConfig{BackoffBase: app.Duration(10 * time.Millisecond), BackoffMax: app.Duration(40 * time.Millisecond)}
	if cfg.Webhooks.CallbackSecret == "" {
		cfg.Webhooks.CallbackSecret = callbackSecret
	}
	bus := app.NewBus()
	store := memory.New(app.StoreOptions{Bus: bus, Webhooks: cfg.WebhookRules})
	svc := app.NewService(store, cfg, app.SystemClock{}, bus, zerolog.New(zerolog.NewTestWriter(t)))
	t.Cleanup(svc.Stop)
	return svc
}

// request is what a receiver got.
type request struct {
	header http.Header
	body   []byte
}

// receiver records requests and answers each with the next status of
// statuses (the last one repeats) and the body "answer <n>".
type receiver struct {
	mu       sync.Mutex
	reqs     []request
	statuses []int
}

func (rc *receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	rc.mu.Lock()
	rc.reqs = append(rc.reqs, request{r.Header.Clone(), b})
	n := len(rc.reqs)
	st := rc.statuses[min(n, len(rc.statuses))-1]
	rc.mu.Unlock()
	w.WriteHeader(st)
	io.WriteString(w, "answer "+strconv.Itoa(n))
}

func (rc *receiver) got() []request {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]request(nil), rc.reqs...)
}

// submit makes a job of queue emails with payload.
func submit(t *testing.T, svc *app.Service, payload string, maxAttempts int) *app.Job {
	t.Helper()
	subs, err := svc.Submit(t.Context(), []app.SubmitInput{{Queue: "emails", Kind: "email.send", Payload: json.RawMessage(payload), MaxAttempts: &maxAttempts}})
	if err != nil {
		t.Fatal(err)
	}
	return subs[0].Job
}

// deliveryJob is a delivery job as app makes it (not stored: Deliver
// reads only its id and payload).
func deliveryJob(t *testing.T, id int64, d app.WebhookDelivery) *app.Job {
	t.Helper()
	b, err := json.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	return &app.Job{ID: id, Queue: app.WebhookQueue, Kind: app.WebhookKind, Payload: b}
}

// A subscription to job.dead_lettered: a job dead-letters, the delivery
// pool sends it; the receiver fails twice, then takes it. Every request
// carries the same Queue-Webhook-Id (the delivery job's), a signature
// Verify accepts with the subscription's secret, and the body of the
// contract; the delivery job ends done after 3 attempts with the
// receiver's status as its result, its failed attempts saying "HTTP 500:
// answer n".
func TestDeliveryPoolSignsAndRetries(t *testing.T) {
	rc := &receiver{statuses: []int{500, 500, 200}}
	srv, _ := counting(t, rc.ServeHTTP)
	const secret = "subscription-secret-0123"
	cfg := &app.Config{Webhooks: app.WebhookConfig{Targets: app.WebhookTargets{Allow: []string{"127.0.0.1"}},
		Subscriptions: []app.WebhookSubscription{{Name: "dead", URL: srv.URL + "/hook", Secret: secret, Events: []string{app.EventDeadLettered}}}}}
	svc := newService(t, cfg)
	ctx := t.Context()

	job := submit(t, svc, `{"to":"ada@example.com"}`, 1)
	claimed, err := svc.Claim(ctx, "emails", app.ClaimInput{Limit: 1})
	if err != nil || len(claimed) != 1 {
		t.Fatalf("claim: %v %v", claimed, err)
	}
	no := false
	if _, err := svc.Fail(ctx, job.ID, app.FailInput{Lease: claimed[0].Lease, Error: "smtp down", Retry: &no}); err != nil {
		t.Fatal(err)
	}

	d := &webhook.Deliverer{Service: svc, Targets: cfg.Webhooks.Targets, Version: "test", Log: zerolog.New(zerolog.NewTestWriter(t))}
	pool := &worker.Pool{Backend: worker.LocalBackend(svc), Queue: app.WebhookQueue, Kinds: []string{app.WebhookKind},
		Handler: d.Handler(), Concurrency: 2, PollWait: 50 * time.Millisecond, Log: zerolog.Nop()}
	if err := pool.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer pool.Stop(time.Second)

	var dj *app.Job
	deadline := time.Now().Add(10 * time.Second)
	for {
		page, err := svc.List(ctx, app.ListInput{Queue: app.WebhookQueue})
		if err != nil {
			t.Fatal(err)
		}
		if len(page.Jobs) == 1 && page.Jobs[0].Status == app.StatusDone {
			dj = page.Jobs[0]
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the delivery is not done in 10s: %+v; the receiver got %d requests", page.Jobs, len(rc.got()))
		}
		time.Sleep(20 * time.Millisecond)
	}
	reqs := rc.got()
	if len(reqs) != 3 || dj.Attempts != 3 {
		t.Fatalf("%d requests, %d attempts; want 3 and 3", len(reqs), dj.Attempts)
	}
	if len(dj.Errors) != 2 || dj.Errors[0].Error != "HTTP 500: answer 1" || dj.Errors[1].Error != "HTTP 500: answer 2" {
		t.Fatalf("the failed attempts' errors: %+v", dj.Errors)
	}
	var res struct {
		Status     *int   `json:"status"`
		DurationMS *int64 `json:"duration_ms"`
	}
	if err := json.Unmarshal(dj.Result, &res); err != nil || res.Status == nil || *res.Status != 200 || res.DurationMS == nil {
		t.Fatalf("result %s, want {status: 200, duration_ms}", dj.Result)
	}
	want := strconv.FormatInt(dj.ID, 10)
	for i, r := range reqs {
		if err := webhook.Verify(secret, r.header, r.body, time.Now(), time.Minute); err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		if webhook.Verify("another-secret-0123456", r.header, r.body, time.Now(), time.Minute) == nil {
			t.Fatalf("request %d verifies with another secret", i)
		}
		for k, v := range map[string]string{webhook.HeaderID: want, webhook.HeaderEvent: app.EventDeadLettered,
			"Content-Type": "application/json", "User-Agent": "queue/test"} {
			if got := r.header.Get(k); got != v {
				t.Fatalf("request %d: %s = %q, want %q", i, k, got, v)
			}
		}
	}
	var body struct {
		ID    string          `json:"id"`
		Type  string          `json:"type"`
		At    string          `json:"at"`
		Queue string          `json:"queue"`
		Kind  string          `json:"kind"`
		JobID int64           `json:"job_id"`
		Data  json.RawMessage `json:"data"`
		Job   *app.Job        `json:"job"`
	}
	if err := json.Unmarshal(reqs[2].body, &body); err != nil {
		t.Fatal(err)
	}
	if body.ID != want || body.Type != app.EventDeadLettered || body.Queue != "emails" || body.Kind != "email.send" || body.JobID != job.ID ||
		body.At == "" || body.Job == nil || body.Job.Status != app.StatusDeadLetter || body.Job.DeadLetter == nil ||
		string(body.Job.Payload) != `{"to":"ada@example.com"}` || strings.Contains(string(reqs[2].body), secret) {
		t.Fatalf("body %s", reqs[2].body)
	}
}

// A subscription's delivery job names the subscription, not its URL: the
// deliverer sends to the URL the subscription has when it sends, signed
// with the secret it has then, so a delivery queued before a PUT goes to
// the new URL signed with the new secret. The URL looked up is checked
// against the policy (refused: permanent), and a subscription deleted
// since dead-letters the delivery (permanent), nothing sent.
func TestDeliverLooksUpTheSubscriptionsTarget(t *testing.T) {
	old, oldHits := counting(t, ok)
	rc := &receiver{statuses: []int{204}}
	cur, _ := counting(t, rc.ServeHTTP)
	cfg := &app.Config{Webhooks: app.WebhookConfig{Targets: app.WebhookTargets{Allow: []string{"127.0.0.1"}}}}
	svc := newService(t, cfg)
	ctx := t.Context()
	const oldSecret, newSecret = "the-old-secret-0123456", "the-new-secret-0123456"
	events := []string{app.EventDeadLettered}
	if _, err := svc.CreateWebhook(ctx, app.WebhookInput{Name: "ops", URL: old.URL + "/hook?token=t0ps3cret", Secret: oldSecret, Events: events}, "t"); err != nil {
		t.Fatal(err)
	}
	job := submit(t, svc, `{}`, 1)
	claimed, err := svc.Claim(ctx, "emails", app.ClaimInput{Limit: 1})
	if err != nil || len(claimed) != 1 {
		t.Fatalf("claim: %v %v", claimed, err)
	}
	no := false
	if _, err := svc.Fail(ctx, job.ID, app.FailInput{Lease: claimed[0].Lease, Error: "boom", Retry: &no}); err != nil {
		t.Fatal(err)
	}
	page, err := svc.List(ctx, app.ListInput{Queue: app.WebhookQueue})
	if err != nil || len(page.Jobs) != 1 {
		t.Fatalf("deliveries: %+v %v", page, err)
	}
	dj := page.Jobs[0]
	if p := string(dj.Payload); strings.Contains(p, "t0ps3cret") || strings.Contains(p, old.URL) || strings.Contains(p, `"url"`) {
		t.Fatalf("the delivery job carries the subscription's URL: %s", p)
	}
	if _, err := svc.PutWebhook(ctx, "ops", app.WebhookInput{URL: cur.URL + "/v2", Secret: newSecret, Events: events}, "t"); err != nil {
		t.Fatal(err)
	}

	// A deliverer whose policy refuses the URL looked up: permanent.
	_, err = (&webhook.Deliverer{Service: svc}).Handler()(ctx, dj)
	var pe *worker.PermanentError
	if !errors.As(err, &pe) || !strings.Contains(err.Error(), "refused") || !strings.Contains(err.Error(), "127.0.0.1") {
		t.Fatalf("Deliver to a refused current URL: %v, want a permanent refusal", err)
	}

	d := &webhook.Deliverer{Service: svc, Targets: cfg.Webhooks.Targets}
	res, err := d.Handler()(ctx, dj)
	if err != nil {
		t.Fatalf("Deliver: %v", err)
	}
	if r, _ := res.(webhook.Result); r.Status != 204 {
		t.Fatalf("result %#v, want status 204", res)
	}
	reqs := rc.got()
	if len(reqs) != 1 || oldHits.Load() != 0 {
		t.Fatalf("the new URL got %d requests, the old one %d; want 1 and 0", len(reqs), oldHits.Load())
	}
	if err := webhook.Verify(newSecret, reqs[0].header, reqs[0].body, time.Now(), time.Minute); err != nil {
		t.Fatalf("the delivery is not signed with the new secret: %v", err)
	}

	if err := svc.DeleteWebhook(ctx, "ops", "t"); err != nil {
		t.Fatal(err)
	}
	_, err = d.Handler()(ctx, dj)
	if !errors.As(err, &pe) || !strings.Contains(err.Error(), `subscription "ops" no longer exists`) {
		t.Fatalf("Deliver for a deleted subscription: %v, want a permanent failure", err)
	}
	if len(rc.got()) != 1 || oldHits.Load() != 0 {
		t.Fatal("a deleted subscription's delivery was sent")
	}
}

// A target the policy refuses fails for good: Deliver's error is a
// worker.Permanent naming the keys that would allow it, nothing is sent;
// run by a pool, the delivery dead-letters after one attempt with it.
func TestDeliverRefusedTargetIsPermanent(t *testing.T) {
	srv, n := counting(t, ok)
	port := srv.URL[strings.LastIndex(srv.URL, ":"):]
	svc := newService(t, &app.Config{})
	d := &webhook.Deliverer{Service: svc} // no allow: loopback refused
	h := d.Handler()
	for _, u := range []string{srv.URL, "http://localhost" + port + "/x", "http://[::1]" + port, "http://10.1.2.3/x", "ftp://example.com/x"} {
		dl := app.WebhookDelivery{URL: u, Event: app.Event{Type: app.EventSucceeded, At: time.Now()}}
		_, err := h(t.Context(), deliveryJob(t, 9, dl))
		var pe *worker.PermanentError
		if !errors.As(err, &pe) || !strings.Contains(err.Error(), "refused") {
			t.Fatalf("Deliver to %s: %v, want a permanent refusal", u, err)
		}
	}
	// A URL the policy lets through whose address the dialer refuses (as
	// when a name resolves to a refused address): permanent too.
	d = &webhook.Deliverer{Service: svc, Targets: app.WebhookTargets{Allow: []string{"127.0.0.1"}},
		Client: webhook.NewHTTPClient(app.WebhookTargets{Allow: []string{"10.0.0.0/8"}}, time.Second)}
	_, err := d.Handler()(t.Context(), deliveryJob(t, 9, app.WebhookDelivery{URL: srv.URL, Event: app.Event{Type: app.EventSucceeded, At: time.Now()}}))
	var pe *worker.PermanentError
	if !errors.As(err, &pe) || !strings.Contains(err.Error(), "refused") {
		t.Fatalf("Deliver to an address the dialer refuses: %v, want a permanent refusal", err)
	}
	if n.Load() != 0 {
		t.Fatalf("a refused target got %d requests", n.Load())
	}

	// Through a pool: one attempt, then the DLQ with the reason.
	job := submit(t, svc, `{}`, 1)
	dl := app.WebhookDelivery{URL: srv.URL + "/cb", Event: app.Event{Type: app.EventSucceeded, JobID: job.ID, Queue: "emails", At: time.Now()}}
	b, _ := json.Marshal(dl)
	subs, err := app.Submit(t.Context(), svc.Store, app.SubmitRequest{Jobs: []app.NewJob{{Queue: app.WebhookQueue, Kind: app.WebhookKind, Payload: b,
		RunAt: time.Now(), MaxAttempts: 10, Timeout: app.DefaultTimeout, Tags: []string{app.CallbackTag}}}})
	if err != nil {
		t.Fatal(err)
	}
	pool := &worker.Pool{Backend: worker.LocalBackend(svc), Queue: app.WebhookQueue, Handler: h, PollWait: 50 * time.Millisecond, Log: zerolog.Nop()}
	if err := pool.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	defer pool.Stop(time.Second)
	id := subs[0].Job.ID
	deadline := time.Now().Add(10 * time.Second)
	for {
		dead, err := svc.GetDead(t.Context(), id)
		if err == nil {
			if dead.Attempts != 1 || dead.Reason != "permanent_failure" || !strings.Contains(dead.LastError, "allow_private") {
				t.Fatalf("dead-letter row: attempts %d, reason %s, last error %q", dead.Attempts, dead.Reason, dead.LastError)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the refused delivery is not dead-lettered in 10s: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if n.Load() != 0 {
		t.Fatal("the refused target got the request")
	}
}

// The body's size cap leaves the job's payload and result out and says
// "truncated"; under the cap the job is whole; a job gone is null. A
// callback is signed with the callback secret.
func TestDeliverBody(t *testing.T) {
	rc := &receiver{statuses: []int{204}}
	srv, _ := counting(t, rc.ServeHTTP)
	svc := newService(t, &app.Config{})
	small := submit(t, svc, `{"n":1}`, 3)
	large := submit(t, svc, `{"blob":"`+strings.Repeat("x", 8<<10)+`"}`, 3)
	d := &webhook.Deliverer{Service: svc, Targets: app.WebhookTargets{AllowPrivate: true}, MaxBody: 4 << 10}
	h := d.Handler()
	send := func(jobID int64) map[string]any {
		t.Helper()
		dl := app.WebhookDelivery{URL: srv.URL, Event: app.Event{Type: app.EventSucceeded, JobID: jobID, Queue: "emails", Kind: "email.send", At: time.Now()}}
		res, err := h(t.Context(), deliveryJob(t, 77, dl))
		if err != nil {
			t.Fatal(err)
		}
		if r, ok := res.(webhook.Result); !ok || r.Status != 204 {
			t.Fatalf("result %#v, want status 204", res)
		}
		reqs := rc.got()
		last := reqs[len(reqs)-1]
		if err := webhook.Verify(callbackSecret, last.header, last.body, time.Now(), time.Minute); err != nil {
			t.Fatalf("a callback is not signed with the callback secret: %v", err)
		}
		if len(last.body) > 4<<10 {
			t.Fatalf("body of %d bytes over the cap of 4 KiB", len(last.body))
		}
		var m map[string]any
		if err := json.Unmarshal(last.body, &m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	m := send(small.ID)
	if j, _ := m["job"].(map[string]any); j == nil || j["payload"] == nil || m["truncated"] != nil || m["id"] != "77" {
		t.Fatalf("a small job's body: %v", m)
	}
	m = send(large.ID)
	if j, _ := m["job"].(map[string]any); j == nil || j["payload"] != nil || j["result"] != nil || m["truncated"] != true || j["id"] != float64(large.ID) {
		t.Fatalf("a large job's body: %v", m)
	}
	m = send(large.ID + 1000)
	if v, ok := m["job"]; !ok || v != nil || m["job_id"] != float64(large.ID+1000) {
		t.Fatalf("a gone job's body: %v", m)
	}
}

// What a receiver answers: a failure's error is "HTTP <status>: " and the
// first 200 bytes of its answer; a receiver that never stops sending is
// read no further than 64 KiB (the delivery ends); one slower than the
// timeout fails, to be retried (not permanent).
func TestDeliverAnswers(t *testing.T) {
	svc := newService(t, &app.Config{})
	dl := func(u string) *app.Job {
		return deliveryJob(t, 5, app.WebhookDelivery{URL: u, Event: app.Event{Type: app.EventSucceeded, At: time.Now()}})
	}
	loud, _ := counting(t, func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusServiceUnavailable)
		w.Write(big)
	})
	endless, _ := counting(t, func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusOK)
		for r.Context().Err() == nil {
			if _, err := w.Write(big); err != nil {
				return
			}
		}
	})
	slow, _ := counting(t, func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body) // then the server notices the client leave
		select {
		case <-r.Context().Done():
		case <-time.After(5 * time.Second):
		}
	})
	h := (&webhook.Deliverer{Service: svc, Targets: app.WebhookTargets{AllowPrivate: true}, Timeout: 500 * time.Millisecond}).Handler()

	_, err := h(t.Context(), dl(loud.URL))
	if err == nil || err.Error() != "HTTP 503: "+strings.Repeat("x", 200) {
		t.Fatalf("a 503 with a 1 MiB answer: %v", err)
	}
	patient := (&webhook.Deliverer{Service: svc, Targets: app.WebhookTargets{AllowPrivate: true}, Timeout: 10 * time.Second}).Handler()
	began := time.Now()
	if _, err := patient(t.Context(), dl(endless.URL)); err != nil || time.Since(began) > 3*time.Second {
		t.Fatalf("an endless 200: %v after %v, want delivered at once", err, time.Since(began))
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	_, err = h(ctx, dl(slow.URL))
	var pe *worker.PermanentError
	if err == nil || errors.As(err, &pe) || !strings.Contains(err.Error(), "Timeout") {
		t.Fatalf("a receiver slower than the timeout: %v, want a retried timeout", err)
	}
}
