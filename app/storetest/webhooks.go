package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/queuehq/queue/app"
)

// Webhooks (issue 27): the deliveries app.Settle inserts, in the write of
// their event, on every way a store writes (the SQL stores' batched
// completions too), and the subscriptions made through the Service.

func init() {
	extraCases["WebhookDeadLetterMakesOneDelivery"] = testWebhookDeadLetterMakesOneDelivery
	extraCases["WebhookCallbackOnEveryEnd"] = testWebhookCallbackOnEveryEnd
	extraCases["WebhookNoDeliveryForDeliveries"] = testWebhookNoDeliveryForDeliveries
	extraCases["WebhookQueueFilterAndDisabled"] = testWebhookQueueFilterAndDisabled
	extraCases["WebhookBatchCompletion"] = testWebhookBatchCompletion
	extraCases["FaultWebhookDeadLetterRollsBack"] = testFaultWebhookDeadLetterRollsBack
	extraCases["WebhookSubscriptionsThroughTheService"] = testWebhookSubscriptionsThroughTheService
	extraCases["WebhookDeliveriesAndTest"] = testWebhookDeliveriesAndTest
	extraCases["WebhookCallbackSecretOnce"] = testWebhookCallbackSecretOnce
	faultCases = append(faultCases,
		faultCase{"dead-letter move with a webhook subscription", app.FaultDeadLetterInsert, 0, func(e *env) func() error {
			e.subscribe(hook("dlq", app.EventDeadLettered))
			c := e.claimOne(e.submitOne("q", "k").Queue)
			return func() error {
				_, err := app.Fail(e.ctx, e.s, app.FailRequest{ID: c.ID, Lease: c.Lease, Error: "boom", Backoff: fixedBackoff})
				return err
			}
		}},
		faultCase{"completion of a job with a callback_url", app.FaultComplete, 0, func(e *env) func() error {
			c := e.claimOne(e.submitOne("q", "k", withCallback("https://hooks.example/cb")).Queue)
			return func() error {
				errs, err := e.s.Complete(e.ctx, []app.Completion{{ID: c.ID, Lease: c.Lease}})
				if err == nil {
					err = errs[0]
				}
				return err
			}
		}},
	)
}

// hook is an enabled subscription name to events of every queue.
func hook(name string, events ...string) app.WebhookSubscription {
	return app.WebhookSubscription{Name: name, URL: "https://hooks.example/" + name, Secret: "0123456789abcdef", Events: events}
}

func withCallback(u string) func(*app.NewJob) { return func(n *app.NewJob) { n.CallbackURL = u } }

// subscribe makes subs the store's subscriptions (as the config file's).
func (e *env) subscribe(subs ...app.WebhookSubscription) *app.Config {
	cfg := app.DefaultConfig()
	cfg.Webhooks.Subscriptions = subs
	e.useWebhooks(cfg)
	return cfg
}

// useWebhooks makes the store see cfg's webhook rules (as serve wires them).
func (e *env) useWebhooks(cfg *app.Config) {
	f := cfg.WebhookRules
	e.webhooks.Store(&f)
}

// deliveries reads the delivery jobs (and their dead-letter rows), oldest first.
func (e *env) deliveries() []delivery {
	e.t.Helper()
	jobs, err := e.s.List(e.ctx, app.JobFilter{Queue: app.WebhookQueue, Asc: true, Limit: 1000})
	if err != nil {
		e.t.Fatalf("List(%s): %v", app.WebhookQueue, err)
	}
	dead, err := e.s.ListDead(e.ctx, app.DeadFilter{Queue: app.WebhookQueue, Asc: true, Limit: 1000})
	if err != nil {
		e.t.Fatalf("ListDead(%s): %v", app.WebhookQueue, err)
	}
	var out []delivery
	add := func(id int64, kind string, tags []string, maxAttempts int, payload json.RawMessage) {
		d := delivery{ID: id, Kind: kind, Tags: tags, MaxAttempts: maxAttempts}
		if err := json.Unmarshal(payload, &d.WebhookDelivery); err != nil {
			e.t.Fatalf("delivery %d: payload %s: %v", id, payload, err)
		}
		d.raw = string(payload)
		out = append(out, d)
	}
	for _, j := range jobs {
		add(j.ID, j.Kind, j.Tags, j.MaxAttempts, j.Payload)
	}
	for _, d := range dead {
		add(d.ID, d.Kind, d.Tags, d.MaxAttempts, d.Payload)
	}
	slices.SortFunc(out, func(a, b delivery) int { return int(a.ID - b.ID) })
	return out
}

type delivery struct {
	app.WebhookDelivery
	ID          int64
	Kind        string
	Tags        []string
	MaxAttempts int
	raw         string
}

func (d delivery) String() string {
	return fmt.Sprintf("#%d %s %v %s", d.ID, d.Kind, d.Tags, d.raw)
}

// wantDeliveries checks the deliveries made so far: each of want as
// "tag event-type job-id" and, for a callback, " url" (a subscription's
// delivery carries no URL: it is looked up when sent), in any order.
func (e *env) wantDeliveries(want ...string) []delivery {
	e.t.Helper()
	got := e.deliveries()
	var lines []string
	for _, d := range got {
		line := fmt.Sprintf("%s %s %d", strings.Join(d.Tags, ","), d.Event.Type, d.Event.JobID)
		if d.URL != "" || d.Subscription == "" {
			line += " " + d.URL
		}
		lines = append(lines, line)
	}
	slices.Sort(lines) // one write's deliveries come in the order of its events
	want = slices.Sorted(slices.Values(want))
	if !slices.Equal(lines, want) {
		e.t.Fatalf("deliveries:\n  %s\nwant\n  %s\n(jobs: %v)", strings.Join(lines, "\n  "), strings.Join(want, "\n  "), got)
	}
	return got
}

// A subscription to job.dead_lettered makes exactly one delivery job when
// a job dead-letters, in the same write: in _webhooks, of kind webhook,
// tagged with the subscription, its payload the event as published, under
// the delivery policy (10 attempts). Another subscription's events and a
// retry make none; neither the secret nor the URL is in the job.
func testWebhookDeadLetterMakesOneDelivery(e *env) {
	e.subscribe(hook("dlq", app.EventDeadLettered), hook("done", app.EventSucceeded))
	j := e.submitOne("q", "k", withMax(2))
	c := e.claimOne("q")
	if r := e.fail(c, true); r.Outcome != app.OutcomeRetryScheduled {
		e.t.Fatalf("first failure: %s", r.Outcome)
	}
	e.wantDeliveries()
	e.clock.Advance(time.Minute)
	c = e.claimOne("q")
	if r := e.fail(c, true); r.Outcome != app.OutcomeDeadLettered {
		e.t.Fatalf("second failure: %s", r.Outcome)
	}
	ds := e.wantDeliveries(fmt.Sprintf("webhook:dlq job.dead_lettered %d", j.ID))
	d := ds[0]
	if d.Kind != app.WebhookKind || d.Subscription != "dlq" || d.MaxAttempts != app.DefaultWebhookMaxAttempts {
		e.t.Fatalf("delivery %v: want kind %s, subscription dlq, max_attempts %d", d, app.WebhookKind, app.DefaultWebhookMaxAttempts)
	}
	ev := d.Event
	if ev.Queue != "q" || ev.Kind != "k" || !ev.At.Equal(e.clock.Now()) || !strings.Contains(string(ev.Data), `"reason"`) {
		e.t.Fatalf("delivered event %+v: want job %d of q/k at %s with its data", ev, j.ID, e.clock.Now())
	}
	if strings.Contains(d.raw, "0123456789abcdef") || strings.Contains(d.raw, "secret") {
		e.t.Fatalf("a delivery job carries the secret: %s", d.raw)
	}
	// The URL may hold a token, and any read token sees the jobs of
	// _webhooks: the deliverer looks it up when it sends.
	if d.URL != "" || strings.Contains(d.raw, `"url"`) || strings.Contains(d.raw, "hooks.example") {
		e.t.Fatalf("a subscription's delivery job carries its URL: %s", d.raw)
	}
	dj := e.get(d.ID)
	if dj.Status != app.StatusQueued || dj.Queue != app.WebhookQueue || dj.RunAt.After(e.clock.Now()) {
		e.t.Fatalf("delivery job %+v: want queued in %s, due now", dj, app.WebhookQueue)
	}
}

// A job with a callback_url is called back when it ends, each way it can:
// job.succeeded, job.dead_lettered, job.cancelled, job.expired; a retry
// and a job without a callback_url make none.
func testWebhookCallbackOnEveryEnd(e *env) {
	cb := func(what string) func(*app.NewJob) { return withCallback("https://cb.example/" + what) }
	// A job without a callback_url ends first (a store may then know that
	// none has one), then one with.
	e.submitOne("q", "k")
	e.complete(e.claimOne("q"), `{"ok":1}`)
	done := e.submitOne("q", "k", cb("done"))
	e.complete(e.claimOne("q"), `{"ok":2}`)

	dead := e.submitOne("q", "k", cb("dead"), withMax(2))
	c := e.claimOne("q")
	e.fail(c, true) // a retry: no callback
	e.clock.Advance(time.Minute)
	e.deadLetter(dead)

	cancelled := e.submitOne("q", "k", cb("cancelled"))
	if _, err := app.Cancel(e.ctx, e.s, app.CancelRequest{ID: cancelled.ID}); err != nil {
		e.t.Fatalf("Cancel: %v", err)
	}
	exp := e.clock.Now().Add(time.Second)
	expired := e.submitOne("q", "k", cb("expired"), func(n *app.NewJob) { n.ExpiresAt = &exp })
	e.clock.Advance(2 * time.Second)
	if n, err := app.ExpireTTL(e.ctx, e.s, 100); err != nil || n != 1 {
		e.t.Fatalf("ExpireTTL: %d %v, want 1", n, err)
	}
	ds := e.wantDeliveries(
		fmt.Sprintf("callback job.succeeded %d https://cb.example/done", done.ID),
		fmt.Sprintf("callback job.dead_lettered %d https://cb.example/dead", dead.ID),
		fmt.Sprintf("callback job.cancelled %d https://cb.example/cancelled", cancelled.ID),
		fmt.Sprintf("callback job.expired %d https://cb.example/expired", expired.ID),
	)
	for _, d := range ds {
		if d.Subscription != "" || strings.Contains(d.raw, `"subscription"`) {
			e.t.Fatalf("callback delivery %v names a subscription", d)
		}
	}
}

// Events of delivery jobs never make deliveries, for a subscription to
// every event nor for a callback_url: no loops.
func testWebhookNoDeliveryForDeliveries(e *env) {
	e.subscribe(hook("all", app.WebhookAllEvents))
	j := e.submitOne("q", "k")
	e.deadLetter(j)
	first := e.wantDeliveries(fmt.Sprintf("webhook:all job.dead_lettered %d", j.ID))
	// The delivery fails, retries, dead-letters, is replayed and purged;
	// its queue is paused and resumed; a job of _webhooks with a
	// callback_url (only app inserts there) ends.
	c := e.claimOne(app.WebhookQueue)
	if c.ID != first[0].ID {
		e.t.Fatalf("claimed %d from %s, want the delivery %d", c.ID, app.WebhookQueue, first[0].ID)
	}
	e.fail(c, true)
	e.clock.Advance(time.Hour)
	c = e.claimOne(app.WebhookQueue)
	if r := e.fail(c, false); r.Outcome != app.OutcomeDeadLettered {
		e.t.Fatalf("delivery failure: %s", r.Outcome)
	}
	// A delivery's payload names the subscription whose URL and secret it
	// is sent with (a callback's, its URL): a replay cannot change it, nor
	// move a job into an internal queue.
	var ie *app.InvalidError
	for _, o := range []*app.ReplayOverride{
		{Payload: json.RawMessage(`{"subscription":"all","url":"https://elsewhere.example/"}`)},
		{PayloadPatch: json.RawMessage(`{"url":"https://elsewhere.example/"}`)},
	} {
		_, err := app.Replay(e.ctx, e.s, app.ReplayRequest{Filter: app.DeadFilter{IDs: []int64{c.ID}, Limit: 1}, Override: o})
		if !errors.As(err, &ie) || ie.Field != "payload" {
			e.t.Fatalf("replay of a delivery with a new payload: %v, want an invalid payload", err)
		}
	}
	replayed, err := app.Replay(e.ctx, e.s, app.ReplayRequest{Filter: app.DeadFilter{IDs: []int64{c.ID}, Limit: 1}})
	if err != nil {
		e.t.Fatalf("Replay: %v", err)
	}
	if err := app.SetPaused(e.ctx, e.s, app.WebhookQueue, true, nil); err != nil {
		e.t.Fatal(err)
	}
	if err := app.SetPaused(e.ctx, e.s, app.WebhookQueue, false, nil); err != nil {
		e.t.Fatal(err)
	}
	inner := e.submitOne(app.WebhookQueue, app.WebhookKind, withCallback("https://cb.example/inner"))
	if _, err := app.Cancel(e.ctx, e.s, app.CancelRequest{ID: inner.ID}); err != nil {
		e.t.Fatal(err)
	}
	if _, err := app.Cancel(e.ctx, e.s, app.CancelRequest{ID: replayed[0].ID}); err != nil {
		e.t.Fatal(err)
	}
	if _, err := app.Purge(e.ctx, e.s, app.DeadFilter{IDs: []int64{c.ID}}, nil); err != nil {
		e.t.Fatal(err)
	}
	var left []int64
	for _, d := range e.deliveries() {
		left = append(left, d.ID)
	}
	if want := []int64{replayed[0].ID, inner.ID}; !slices.Equal(left, want) {
		e.t.Fatalf("jobs of %s after their events: %v, want only the replayed delivery and the inner job %v", app.WebhookQueue, left, want)
	}
	other := e.submitOne("q", "k")
	e.deadLetter(other)
	if _, err := e.service(nil).Replay(e.ctx, other.ID, app.ReplayInput{ReplayOverride: app.ReplayOverride{Queue: app.WebhookQueue}}, "t"); !errors.As(err, &ie) || ie.Field != "queue" {
		e.t.Fatalf("replay into %s: %v, want an invalid queue", app.WebhookQueue, err)
	}
}

// A subscription's queues filter its events (events without a queue match
// only a subscription of every queue); a disabled subscription delivers
// nothing.
func testWebhookQueueFilterAndDisabled(e *env) {
	onlyA := hook("a", app.EventDeadLettered, app.EventQueuePaused)
	onlyA.Queues = []string{"a"}
	off := hook("off", app.WebhookAllEvents)
	off.Disabled = true
	e.subscribe(onlyA, off)
	ja, jb := e.submitOne("a", "k"), e.submitOne("b", "k")
	e.deadLetter(ja)
	e.deadLetter(jb)
	for _, q := range []string{"a", "b"} {
		if err := app.SetPaused(e.ctx, e.s, q, true, nil); err != nil {
			e.t.Fatal(err)
		}
	}
	e.wantDeliveries(
		fmt.Sprintf("webhook:a job.dead_lettered %d", ja.ID),
		"webhook:a queue.paused 0",
	)
}

// Completions in a batch (the SQL stores' one-statement completion) make a
// delivery for each job a job.succeeded subscription wants, and a callback
// for each job with a callback_url, also when no subscription wants
// job.succeeded (PostgreSQL then completes the plain ones by its piped
// statement and the rest apart).
func testWebhookBatchCompletion(e *env) {
	batch := func(n int) []*app.Job { // submits n, completes every queued job of q at once
		e.submitN(n, "q", "k")
		claimed := e.claim("q", 100)
		items := make([]app.Completion, len(claimed))
		for i, c := range claimed {
			items[i] = app.Completion{ID: c.ID, Lease: c.Lease, Result: json.RawMessage(`1`)}
		}
		errs, err := e.s.Complete(e.ctx, items)
		if err != nil {
			e.t.Fatalf("Complete(%d): %v", n, err)
		}
		for i, err := range errs {
			if err != nil {
				e.t.Fatalf("Complete item %d: %v", i, err)
			}
		}
		slices.SortFunc(claimed, func(a, b *app.Job) int { return int(a.ID - b.ID) })
		return claimed
	}
	// A callback among plain jobs, nothing subscribed.
	e.subscribe(hook("dlq", app.EventDeadLettered))
	e.submitOne("q", "k", withCallback("https://cb.example/one"))
	mixed := batch(3)
	var want []string
	for _, j := range mixed {
		if j.CallbackURL != "" {
			want = append(want, fmt.Sprintf("callback job.succeeded %d https://cb.example/one", j.ID))
		}
	}
	if len(want) != 1 {
		e.t.Fatalf("completed %d jobs with a callback_url, want 1", len(want))
	}
	e.wantDeliveries(want...)
	// A subscription to job.succeeded: every job of the batch.
	e.subscribe(hook("done", app.EventSucceeded))
	for _, j := range batch(5) {
		want = append(want, fmt.Sprintf("webhook:done job.succeeded %d", j.ID))
	}
	e.wantDeliveries(want...)
	if n, _ := e.s.CountJobs(e.ctx, app.JobFilter{Queue: "q", Status: string(app.StatusDone)}); n != 9 {
		e.t.Fatalf("%d jobs done, want 9", n)
	}
}

// A fault inside the dead-letter move of a job a subscription wants leaves
// no dead-letter row and no delivery job; without it, one of each.
func testFaultWebhookDeadLetterRollsBack(e *env) {
	e.subscribe(hook("dlq", app.EventDeadLettered))
	j := e.submitOne("q", "k", withCallback("https://cb.example/x"))
	c := e.claimOne("q")
	e.setFault(func(_ context.Context, p app.FaultPoint, _ int64) error {
		if p == app.FaultDeadLetterInsert {
			return errInjected
		}
		return nil
	})
	if _, err := app.Fail(e.ctx, e.s, app.FailRequest{ID: c.ID, Lease: c.Lease, Error: "boom", Backoff: fixedBackoff}); !errors.Is(err, errInjected) {
		e.t.Fatalf("Fail with a fault: %v, want the fault", err)
	}
	e.setFault(nil)
	if got := e.get(j.ID); got.Status != app.StatusProcessing {
		e.t.Fatalf("after the fault the job is %s, want processing", got.Status)
	}
	if n, _ := e.s.CountDead(e.ctx, app.DeadFilter{}); n != 0 {
		e.t.Fatalf("after the fault %d dead-letter rows", n)
	}
	e.wantDeliveries()
	if _, err := app.Fail(e.ctx, e.s, app.FailRequest{ID: c.ID, Lease: c.Lease, Error: "boom", Backoff: fixedBackoff}); err != nil {
		e.t.Fatalf("Fail: %v", err)
	}
	e.dead(j.ID)
	e.wantDeliveries(
		fmt.Sprintf("webhook:dlq job.dead_lettered %d", j.ID),
		fmt.Sprintf("callback job.dead_lettered %d https://cb.example/x", j.ID),
	)
}

// webhookService is a Service over e's store whose webhook rules the store
// sees, with cfg's subscriptions (nil: none) and targets allowing
// hooks.example's test addresses.
func (e *env) webhookService(cfg *app.Config) *app.Service {
	if cfg == nil {
		cfg = app.DefaultConfig()
	}
	svc := e.settingsService(cfg)
	e.useWebhooks(cfg)
	return svc
}

// Subscriptions made through the Service are stored, audited without
// their secret, answered with secret_set, reloaded, and used by the very
// next write; the config file's are read-only; names are unique; a PUT
// without a secret keeps it; bad input changes nothing.
func testWebhookSubscriptionsThroughTheService(e *env) {
	cfg := app.DefaultConfig()
	cfg.Webhooks.Subscriptions = []app.WebhookSubscription{hook("file", app.EventExpired)}
	svc := e.webhookService(cfg)
	const secret = "s3cret-s3cret-s3cret"
	in := app.WebhookInput{Name: "ops", URL: "https://hooks.example/ops", Secret: secret, Events: []string{app.EventDeadLettered}}
	w, err := svc.CreateWebhook(e.ctx, in, "alice")
	if err != nil {
		e.t.Fatalf("CreateWebhook: %v", err)
	}
	b, _ := json.Marshal(w)
	if strings.Contains(string(b), secret) || !strings.Contains(string(b), `"secret_set":true`) || w.Source != app.WebhookFromAPI {
		e.t.Fatalf("answer %s: want secret_set, source api, no secret", b)
	}
	if _, err := svc.CreateWebhook(e.ctx, in, "alice"); !errors.Is(err, app.ErrWebhookExists) {
		e.t.Fatalf("second create: %v, want ErrWebhookExists", err)
	}
	for _, bad := range []app.WebhookInput{
		{Name: "x", URL: "https://hooks.example/x", Secret: "short", Events: []string{app.EventSucceeded}},
		{Name: "x", URL: "http://127.0.0.1/x", Secret: secret, Events: []string{app.EventSucceeded}},
		{Name: "x", URL: "https://hooks.example/x", Secret: secret, Events: []string{"job.submitted"}},
		{Name: "x", URL: "https://hooks.example/x", Secret: secret},
		{Name: "bad name", URL: "https://hooks.example/x", Secret: secret, Events: []string{app.EventSucceeded}},
		{Name: ".", URL: "https://hooks.example/x", Secret: secret, Events: []string{app.EventSucceeded}},
		{Name: "..", URL: "https://hooks.example/x", Secret: secret, Events: []string{app.EventSucceeded}},
		{Name: "-x", URL: "https://hooks.example/x", Secret: secret, Events: []string{app.EventSucceeded}},
	} {
		var ie *app.InvalidError
		if _, err := svc.CreateWebhook(e.ctx, bad, "alice"); !errors.As(err, &ie) {
			e.t.Fatalf("CreateWebhook(%+v): %v, want an invalid field", bad, err)
		}
	}
	if _, err := svc.CreateWebhook(e.ctx, app.WebhookInput{Name: "file", URL: "https://hooks.example/f", Secret: secret, Events: []string{"*"}}, "alice"); !errors.Is(err, app.ErrWebhookInConfig) {
		e.t.Fatalf("create over the config's: %v, want ErrWebhookInConfig", err)
	}
	if err := svc.DeleteWebhook(e.ctx, "file", "alice"); !errors.Is(err, app.ErrWebhookInConfig) {
		e.t.Fatalf("delete the config's: %v, want ErrWebhookInConfig", err)
	}
	subs, _ := svc.Webhooks(e.ctx)
	if len(subs) != 2 || subs[0].Name != "file" || subs[0].Source != app.WebhookFromConfig || subs[1].Name != "ops" {
		e.t.Fatalf("Webhooks: %+v, want file (config) then ops", subs)
	}
	// The store uses it at once.
	j := e.submitOne("q", "k")
	e.deadLetter(j)
	e.wantDeliveries(fmt.Sprintf("webhook:ops job.dead_lettered %d", j.ID))
	// A PUT without a secret keeps it; disabling stops deliveries.
	upd := app.WebhookInput{URL: "https://hooks.example/ops2", Events: []string{app.EventDeadLettered}, Disabled: true}
	if w, err = svc.PutWebhook(e.ctx, "ops", upd, "bob"); err != nil || !w.Disabled || w.URL != "https://hooks.example/ops2" {
		e.t.Fatalf("PutWebhook: %+v %v", w, err)
	}
	if u, sec, err := svc.WebhookTarget(e.ctx, "ops"); err != nil || sec != secret || u != "https://hooks.example/ops2" {
		e.t.Fatalf("WebhookTarget after a PUT without a secret: %q %q %v, want the new URL and the old secret", u, sec, err)
	}
	e.deadLetter(e.submitOne("q", "k"))
	if n := len(e.deliveries()); n != 1 {
		e.t.Fatalf("a disabled subscription delivered: %d deliveries", n)
	}
	if _, err := svc.PutWebhook(e.ctx, "nope", upd, "bob"); !errors.Is(err, app.ErrNotFound) {
		e.t.Fatalf("PutWebhook of none: %v, want ErrNotFound", err)
	}
	if err := svc.DeleteWebhook(e.ctx, "ops", "carol"); err != nil {
		e.t.Fatalf("DeleteWebhook: %v", err)
	}
	if _, err := svc.Webhook(e.ctx, "ops"); !errors.Is(err, app.ErrNotFound) {
		e.t.Fatalf("Webhook after delete: %v", err)
	}
	if err := svc.DeleteWebhook(e.ctx, "ops", "carol"); !errors.Is(err, app.ErrNotFound) {
		e.t.Fatalf("second delete: %v, want ErrNotFound", err)
	}
	var actions []string
	for _, a := range e.audit() {
		if strings.Contains(string(a.Filter), secret) {
			e.t.Fatalf("audit entry %+v carries the secret", a)
		}
		actions = append(actions, a.Actor+" "+a.Action+" "+a.Target)
	}
	want := []string{"carol webhook.delete webhook ops", "bob webhook.update webhook ops", "alice webhook.create webhook ops"}
	if !slices.Equal(actions, want) {
		e.t.Fatalf("audit: %q, want %q", actions, want)
	}
	// Another node sees the change after its reload.
	other := app.DefaultConfig()
	svc2 := e.settingsService(other)
	if _, err := svc.CreateWebhook(e.ctx, in, "alice"); err != nil {
		e.t.Fatal(err)
	}
	if err := svc2.ReloadSettings(e.ctx); err != nil {
		e.t.Fatal(err)
	}
	if _, err := svc2.Webhook(e.ctx, "ops"); err != nil {
		e.t.Fatalf("the other node after a reload: %v", err)
	}
}

// A subscription's deliveries are listed newest first, paged, dead-letter
// rows included, with the receiver's status of one that succeeded; a test
// delivery is a job like any, audited.
func testWebhookDeliveriesAndTest(e *env) {
	cfg := app.DefaultConfig()
	cfg.Webhooks.Subscriptions = []app.WebhookSubscription{hook("ops", app.EventDeadLettered)}
	svc := e.webhookService(cfg)
	var jobs []*app.Job
	for range 3 {
		j := e.submitOne("q", "k")
		e.deadLetter(j)
		jobs = append(jobs, j)
	}
	ds := e.deliveries()
	// The first delivery succeeds, the second dead-letters.
	c := e.claimOne(app.WebhookQueue)
	e.complete(c, `{"status": 204, "duration_ms": 3}`)
	c = e.claimOne(app.WebhookQueue)
	e.fail(c, false)
	id, err := svc.TestWebhook(e.ctx, "ops", "alice")
	if err != nil {
		e.t.Fatalf("TestWebhook: %v", err)
	}
	page, err := svc.WebhookDeliveries(e.ctx, "ops", 2, "")
	if err != nil || len(page.Deliveries) != 2 || page.NextCursor == "" {
		e.t.Fatalf("first page: %+v %v", page, err)
	}
	rest, err := svc.WebhookDeliveries(e.ctx, "ops", 2, page.NextCursor)
	if err != nil {
		e.t.Fatalf("second page: %v", err)
	}
	all := append(page.Deliveries, rest.Deliveries...)
	var got []string
	for _, d := range all {
		rs := 0
		if d.ResponseStatus != nil {
			rs = *d.ResponseStatus
		}
		ej := int64(0)
		if d.EventJobID != nil {
			ej = *d.EventJobID
		}
		got = append(got, fmt.Sprintf("%d %s %s %d %d", d.JobID, d.Status, d.Event, ej, rs))
	}
	want := []string{
		fmt.Sprintf("%d queued webhook.test 0 0", id),
		fmt.Sprintf("%d queued job.dead_lettered %d 0", ds[2].ID, jobs[2].ID),
		fmt.Sprintf("%d dead_letter job.dead_lettered %d 0", ds[1].ID, jobs[1].ID),
		fmt.Sprintf("%d done job.dead_lettered %d 204", ds[0].ID, jobs[0].ID),
	}
	if !slices.Equal(got, want) {
		e.t.Fatalf("deliveries:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if d := e.deliveries(); d[len(d)-1].Event.Type != app.EventWebhookTest || d[len(d)-1].Subscription != "ops" || d[len(d)-1].URL != "" {
		e.t.Fatalf("test delivery: %v", d[len(d)-1])
	}
	if a := e.audit(); len(a) != 1 || a[0].Action != "webhook.test" || a[0].Actor != "alice" {
		e.t.Fatalf("audit of a test: %+v", a)
	}
	if _, err := svc.TestWebhook(e.ctx, "nope", "alice"); !errors.Is(err, app.ErrNotFound) {
		e.t.Fatalf("TestWebhook of none: %v", err)
	}
	if _, err := svc.WebhookDeliveries(e.ctx, "ops", 2, "garbage"); err == nil {
		e.t.Fatalf("a forged cursor was taken")
	}
}

// The callback secret is the config's if set, else generated once and
// kept: services racing for it on one store get the same one.
func testWebhookCallbackSecretOnce(e *env) {
	var wg sync.WaitGroup
	secrets := make([]string, 4)
	for i := range secrets {
		svc := e.settingsService(nil)
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, err := svc.CallbackSecret(e.ctx)
			if err != nil {
				e.t.Errorf("CallbackSecret: %v", err)
			}
			secrets[i] = s
		}()
	}
	wg.Wait()
	if len(secrets[0]) != 64 {
		e.t.Fatalf("generated secret %q, want 64 hex characters", secrets[0])
	}
	for _, s := range secrets {
		if s != secrets[0] {
			e.t.Fatalf("racing services got different secrets: %q", secrets)
		}
	}
	if s, _ := e.settingsService(nil).CallbackSecret(e.ctx); s != secrets[0] {
		e.t.Fatalf("a later service got %q, want the stored one", s)
	}
	cfg := app.DefaultConfig()
	cfg.Webhooks.CallbackSecret = "from-the-config-file"
	if s, _ := e.settingsService(cfg).CallbackSecret(e.ctx); s != "from-the-config-file" {
		e.t.Fatalf("with a config secret: %q", s)
	}
}
