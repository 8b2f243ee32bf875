package ui_test

import (
	"bufio"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/queuehq/queue/app"
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
