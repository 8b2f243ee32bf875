package ui_test

import (
	"bufio"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/rs/zerolog"

	"github.com/queuehq/queue/app"
	"github.com/queuehq/queue/memory"
	"github.com/queuehq/queue/ui"
)

func newMetricsServer(t *testing.T) *server {
	t.Helper()
	s := newServer(t, ui.Options{}, true)
	m := ui.NewMetrics(s.svc)
	s2 := newServer(t, ui.Options{Service: s.svc, Metrics: m.Handler()}, false)
	s2.clock = s.clock
	return s2
}

// /metrics parses with the Prometheus text parser and its counters match the run.
func TestMetricsMatchTheRun(t *testing.T) {
	s := newMetricsServer(t)
	for i := 0; i < 3; i++ {
		s.submit(`{"queue":"m","kind":"ok"}`)
	}
	s.submit(`{"queue":"m","kind":"bad","max_attempts":1}`)
	for i := 0; i < 3; i++ {
		c := s.claim("m")
		if c["kind"] == "bad" {
			t.Fatalf("claim order")
		}
		s.post(fmt.Sprintf("/api/jobs/%d/complete", num(c, "id")), fmt.Sprintf(`{"lease":%d}`, num(c, "lease")))
	}
	c := s.claim("m")
	s.post(fmt.Sprintf("/api/jobs/%d/fail", num(c, "id")), fmt.Sprintf(`{"lease":%d,"error":"x"}`, num(c, "lease")))
	s.submit(`{"queue":"m","kind":"ok","delay":"1h"}`)
	s.submit(`{"queue":"m","kind":"flaky","max_attempts":2}`)
	c = s.claim("m")
	s.post(fmt.Sprintf("/api/jobs/%d/fail", num(c, "id")), fmt.Sprintf(`{"lease":%d,"error":"x"}`, num(c, "lease")))

	a := s.get("/metrics")
	if a.status != 200 {
		t.Fatalf("/metrics: %d", a.status)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(string(a.body)))
	if err != nil {
		t.Fatalf("/metrics does not parse: %v", err)
	}
	value := func(name string, labels map[string]string) float64 {
		t.Helper()
		f, ok := fams[name]
		if !ok {
			t.Fatalf("no metric %s", name)
		}
	next:
		for _, m := range f.Metric {
			for _, lp := range m.Label {
				if want, ok := labels[lp.GetName()]; ok && want != lp.GetValue() {
					continue next
				}
			}
			switch {
			case m.Counter != nil:
				return m.Counter.GetValue()
			case m.Gauge != nil:
				return m.Gauge.GetValue()
			case m.Histogram != nil:
				return float64(m.Histogram.GetSampleCount())
			}
		}
		t.Fatalf("no %s%v", name, labels)
		return 0
	}
	for _, tc := range []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"queue_jobs_submitted_total", map[string]string{"queue": "m", "kind": "ok"}, 4},
		{"queue_jobs_submitted_total", map[string]string{"queue": "m", "kind": "bad"}, 1},
		{"queue_jobs_started_total", map[string]string{"queue": "m", "kind": "ok"}, 3},
		{"queue_jobs_succeeded_total", map[string]string{"queue": "m", "kind": "ok"}, 3},
		{"queue_jobs_failed_total", map[string]string{"queue": "m", "kind": "bad"}, 1},
		{"queue_jobs_dead_lettered_total", map[string]string{"queue": "m", "kind": "bad"}, 1},
		{"queue_jobs", map[string]string{"queue": "m", "status": "done"}, 3},
		{"queue_jobs", map[string]string{"queue": "m", "status": "scheduled"}, 2},
		{"queue_jobs", map[string]string{"queue": "m", "status": "dead_letter"}, 1},
		{"queue_dead_letter_size", map[string]string{"queue": "m"}, 1},
		{"queue_dlq_depth", map[string]string{"queue": "m"}, 1},
		{"queue_job_run_seconds", map[string]string{"queue": "m", "kind": "ok"}, 3},
		{"queue_jobs_retried_total", map[string]string{"queue": "m", "kind": "flaky"}, 1},
		{"queue_jobs_failed_total", map[string]string{"queue": "m", "kind": "flaky"}, 1},
		{"queue_store_up", nil, 1},
	} {
		if got := value(tc.name, tc.labels); got != tc.want {
			t.Errorf("%s%v = %v, want %v", tc.name, tc.labels, got, tc.want)
		}
	}
}

// GET /api/events streams submitted, started and succeeded, in order, for a job.
func TestEventStreamShowsTheLifecycleInOrder(t *testing.T) {
	s := newServer(t, ui.Options{}, true)
	req, _ := http.NewRequest(http.MethodGet, s.url+"/api/events?queue=ev", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("content type %q", ct)
	}
	lines := make(chan string, 100)
	go func() {
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	s.submit(`{"queue":"other","kind":"k"}`) // filtered out
	id := num(s.submit(`{"queue":"ev","kind":"k"}`), "id")
	c := s.claim("ev")
	s.post(fmt.Sprintf("/api/jobs/%d/complete", id), fmt.Sprintf(`{"lease":%d}`, num(c, "lease")))
	var got []string
	timeout := time.After(10 * time.Second)
	for len(got) < 3 {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("stream closed after %v", got)
			}
			if strings.HasPrefix(l, "event: ") {
				got = append(got, strings.TrimPrefix(l, "event: "))
			}
			if strings.HasPrefix(l, "data: ") && !strings.Contains(l, `"queue":"ev"`) {
				t.Fatalf("event of another queue: %s", l)
			}
		case <-timeout:
			t.Fatalf("events so far %v", got)
		}
	}
	want := []string{app.EventSubmitted, app.EventStarted, app.EventSucceeded}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("events %v, want %v", got, want)
		}
	}
}

// A reader that falls behind is dropped with a final overflow event; writers never wait.
func TestSlowEventReaderIsDroppedWithOverflow(t *testing.T) {
	bus := app.NewBus()
	sub := bus.Subscribe(2, nil)
	for i := 0; i < 5; i++ {
		bus.Publish(app.Event{Type: app.EventSubmitted})
	}
	n := 0
	for range sub.C {
		n++
	}
	if n != 2 || !sub.Overflowed() {
		t.Fatalf("got %d events, overflowed=%v; want 2 and true", n, sub.Overflowed())
	}
}

// series is one sample of /metrics: its labels and value (a histogram's: its count).
type series struct {
	labels map[string]string
	value  float64
}

// scrape parses what m's handler serves: the series of each family.
func scrape(t *testing.T, m *ui.Metrics) map[string][]series {
	t.Helper()
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("/metrics: %d %s", rec.Code, rec.Body)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(rec.Body)
	if err != nil {
		t.Fatalf("/metrics does not parse: %v", err)
	}
	out := map[string][]series{}
	for name, f := range fams {
		for _, m := range f.Metric {
			s := series{labels: map[string]string{}}
			for _, lp := range m.Label {
				s.labels[lp.GetName()] = lp.GetValue()
			}
			switch {
			case m.Counter != nil:
				s.value = m.Counter.GetValue()
			case m.Gauge != nil:
				s.value = m.Gauge.GetValue()
			case m.Histogram != nil:
				s.value = float64(m.Histogram.GetSampleCount())
			}
			out[name] = append(out[name], s)
		}
	}
	return out
}

// sample is the value of the series of family name with exactly labels, and whether there is one.
func sample(fams map[string][]series, name string, labels map[string]string) (float64, bool) {
next:
	for _, s := range fams[name] {
		if len(s.labels) != len(labels) {
			continue
		}
		for k, v := range labels {
			if s.labels[k] != v {
				continue next
			}
		}
		return s.value, true
	}
	return 0, false
}

// Unique queue and kind names from clients do not grow /metrics without
// bound: past the first MaxQueueLabels queues and MaxKindLabels pairs they
// are counted as "other", while the queues and kinds of the config keep
// their own labels whenever they come.
func TestMetricLabelsAreBounded(t *testing.T) {
	cfg := app.DefaultConfig()
	cfg.Queues["configured"] = app.QueueConfig{}
	cfg.Periodic = []app.PeriodicConfig{{Queue: "periodic", Kind: "pk", Cron: "@every 1m"}}
	bus := app.NewBus()
	store := memory.New(app.StoreOptions{Bus: bus})
	t.Cleanup(func() { store.Close() })
	svc := app.NewService(store, cfg, nil, bus, zerolog.Nop())
	m := ui.NewMetrics(svc, ui.QueueKind{Queue: "workers", Kind: "wk"}) // a built-in worker's

	// 100 queues with a job each: the first MaxQueueLabels keep their names.
	const queues = 100
	var in []app.SubmitInput
	for i := range queues {
		in = append(in, app.SubmitInput{Queue: fmt.Sprintf("u-%d", i), Kind: "k"})
	}
	if _, err := svc.Submit(t.Context(), in); err != nil {
		t.Fatal(err)
	}
	// 5000 kinds in a queue with a label: the pairs left under the cap keep theirs.
	const kinds = 5000
	for i := range kinds {
		bus.Publish(app.Event{Type: app.EventSubmitted, Queue: "u-0", Kind: fmt.Sprintf("x-%d", i)})
	}
	// Every metric with a queue label, for a queue beyond the cap.
	late := fmt.Sprintf("u-%d", queues-1)
	bus.Publish(
		app.Event{Type: app.EventStarted, Queue: late, Kind: "k", Data: []byte(`{"attempt":1,"lease":1,"wait_ms":5}`)},
		app.Event{Type: app.EventSucceeded, Queue: late, Kind: "k", Data: []byte(`{"duration_ms":5}`)},
		app.Event{Type: app.EventRetryScheduled, Queue: late, Kind: "k", Data: []byte(`{}`)},
	)
	// The config's queues and kinds, after the caps are full.
	bus.Publish(
		app.Event{Type: app.EventSubmitted, Queue: "workers", Kind: "wk"},
		app.Event{Type: app.EventSubmitted, Queue: "periodic", Kind: "pk"},
		app.Event{Type: app.EventSubmitted, Queue: "configured", Kind: "new"},
		app.Event{Type: app.EventSubmitted, Queue: "default", Kind: "new"},
	)

	fams := scrape(t, m)
	const configuredQueues = 4 // default, configured, workers, periodic
	labelled := map[string]bool{}
	for name, ss := range fams {
		n := 0
		for _, s := range ss {
			if q, ok := s.labels["queue"]; ok {
				labelled[q] = true
				n++
			}
		}
		// At most one series per pair with a label of its own, plus one
		// "other" kind per queue, plus ("other", "other"); queue_jobs has 6 per queue.
		if limit := 6 * (ui.MaxKindLabels + 2 + ui.MaxQueueLabels + configuredQueues + 1); n > limit {
			t.Errorf("%s: %d series, want at most %d", name, n, limit)
		}
	}
	if len(labelled) > ui.MaxQueueLabels+configuredQueues+1 {
		t.Errorf("%d queue label values, want at most %d+%d+1", len(labelled), ui.MaxQueueLabels, configuredQueues)
	}
	if n := len(fams["queue_jobs_submitted_total"]); n > ui.MaxKindLabels+2+ui.MaxQueueLabels+configuredQueues+1 {
		t.Errorf("queue_jobs_submitted_total: %d series after %d kinds and %d queues", n, kinds, queues)
	}
	var total float64
	for _, s := range fams["queue_jobs_submitted_total"] {
		total += s.value
	}
	if want := float64(queues + kinds + 4); total != want {
		t.Errorf("submissions counted in all series: %v, want %v (none lost by folding)", total, want)
	}
	beyond := float64(queues - ui.MaxQueueLabels)
	pairsLeft := ui.MaxKindLabels - ui.MaxQueueLabels // the first queues took one pair each
	for _, tc := range []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"queue_jobs_submitted_total", map[string]string{"queue": "u-0", "kind": "k"}, 1},
		{"queue_jobs_submitted_total", map[string]string{"queue": "u-0", "kind": "x-0"}, 1},
		{"queue_jobs_submitted_total", map[string]string{"queue": "u-0", "kind": "other"}, float64(kinds - pairsLeft)},
		{"queue_jobs_submitted_total", map[string]string{"queue": "other", "kind": "other"}, beyond},
		{"queue_jobs_submitted_total", map[string]string{"queue": "workers", "kind": "wk"}, 1},
		{"queue_jobs_submitted_total", map[string]string{"queue": "periodic", "kind": "pk"}, 1},
		{"queue_jobs_submitted_total", map[string]string{"queue": "configured", "kind": "other"}, 1},
		{"queue_jobs_submitted_total", map[string]string{"queue": "default", "kind": "other"}, 1},
		{"queue_jobs_started_total", map[string]string{"queue": "other", "kind": "other"}, 1},
		{"queue_job_wait_seconds", map[string]string{"queue": "other"}, 1},
		{"queue_job_run_seconds", map[string]string{"queue": "other", "kind": "other"}, 1},
		{"queue_jobs_failed_total", map[string]string{"queue": "other", "kind": "other"}, 1},
		{"queue_jobs", map[string]string{"queue": "u-0", "status": "queued"}, 1},
		{"queue_jobs", map[string]string{"queue": "other", "status": "queued"}, beyond},
		{"queue_dead_letter_size", map[string]string{"queue": "other"}, 0},
	} {
		if got, ok := sample(fams, tc.name, tc.labels); !ok || got != tc.want {
			t.Errorf("%s %v = %v (found %v), want %v", tc.name, tc.labels, got, ok, tc.want)
		}
	}
	for _, name := range []string{"queue_jobs", "queue_oldest_queued_age_seconds", "queue_dead_letter_size"} {
		if _, ok := sample(fams, name, map[string]string{"queue": late}); ok {
			t.Errorf("%s: queue %s, beyond the cap, has a series of its own", name, late)
		}
	}
	if _, ok := sample(fams, "queue_oldest_queued_age_seconds", map[string]string{"queue": "other"}); !ok {
		t.Errorf("queue_oldest_queued_age_seconds has no series for other")
	}
}

// Refused credentials are counted by reason, login or token; anything else
// is a token, so the label has two values.
func TestAuthFailuresAreCounted(t *testing.T) {
	bus := app.NewBus()
	svc := app.NewService(memory.New(app.StoreOptions{Bus: bus}), nil, nil, bus, zerolog.Nop())
	m := ui.NewMetrics(svc)
	fams := scrape(t, m)
	for _, r := range []string{"login", "token"} {
		if v, ok := sample(fams, "queue_http_auth_failures_total", map[string]string{"reason": r}); !ok || v != 0 {
			t.Fatalf("before any failure: queue_http_auth_failures_total{reason=%q} = %v (found %v), want 0", r, v, ok)
		}
	}
	m.AuthFailed("login")
	for _, r := range []string{"token", "", "made-up", "login "} {
		m.AuthFailed(r)
	}
	fams = scrape(t, m)
	if got := len(fams["queue_http_auth_failures_total"]); got != 2 {
		t.Errorf("queue_http_auth_failures_total: %d series, want 2", got)
	}
	for r, want := range map[string]float64{"login": 1, "token": 4} {
		if got, _ := sample(fams, "queue_http_auth_failures_total", map[string]string{"reason": r}); got != want {
			t.Errorf("queue_http_auth_failures_total{reason=%q} = %v, want %v", r, got, want)
		}
	}
	var none *ui.Metrics
	none.AuthFailed("token") // counts nothing, does not panic
}

// What the metrics add to every published event: a name seen before, and
// ever new names beyond the caps.
func BenchmarkMetricsObserve(b *testing.B) {
	bus := app.NewBus()
	svc := app.NewService(memory.New(app.StoreOptions{Bus: bus}), nil, nil, bus, zerolog.Nop())
	ui.NewMetrics(svc)
	for i := range ui.MaxKindLabels {
		bus.Publish(app.Event{Type: app.EventSubmitted, Queue: "default", Kind: fmt.Sprintf("fill-%d", i)})
	}
	b.Run("seen", func(b *testing.B) {
		e := app.Event{Type: app.EventSubmitted, Queue: "default", Kind: "fill-1"}
		for b.Loop() {
			bus.Publish(e)
		}
	})
	b.Run("new", func(b *testing.B) {
		names := make([]string, 4096)
		for i := range names {
			names[i] = fmt.Sprintf("new-%d", i)
		}
		i := 0
		for b.Loop() {
			bus.Publish(app.Event{Type: app.EventSubmitted, Queue: names[i%len(names)], Kind: names[i%len(names)]})
			i++
		}
	})
}
