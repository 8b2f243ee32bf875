package ui

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/queuehq/queue/app"
)

// Metrics is what /metrics shows: lifecycle counters by queue and kind
// (fed by the event bus as changes commit), queue depth and age gauges (read
// from the store at scrape time), wait and run duration histograms, and the
// size and duration of store write transactions.
type Metrics struct {
	reg       *prometheus.Registry
	counters  map[string]*prometheus.CounterVec // by event type
	failed    *prometheus.CounterVec
	wait      *prometheus.HistogramVec
	run       *prometheus.HistogramVec
	txSeconds prometheus.Histogram
	txBatch   prometheus.Histogram
}

// eventCounters names the counter of each event type: queue_jobs_<name>_total.
var eventCounters = map[string]string{
	app.EventSubmitted:      "submitted",
	app.EventStarted:        "started",
	app.EventSucceeded:      "succeeded",
	app.EventRetryScheduled: "retried",
	app.EventDeadLettered:   "dead_lettered",
	app.EventExpired:        "expired",
	app.EventCancelled:      "cancelled",
	app.EventLeaseLost:      "lease_expired",
	app.EventDLQReplayed:    "replayed",
}

// NewMetrics registers the queue's metrics (and Go and process metrics) and
// subscribes them to svc's event bus.
func NewMetrics(svc *app.Service) *Metrics {
	m := &Metrics{
		reg:      prometheus.NewRegistry(),
		counters: map[string]*prometheus.CounterVec{},
		failed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "queue_jobs_failed_total",
			Help: "Failed attempts (retried or dead-lettered) by queue and kind.",
		}, []string{"queue", "kind"}),
		wait: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "queue_job_wait_seconds",
			Help:    "Time from a job becoming claimable (run_at) to its claim.",
			Buckets: prometheus.ExponentialBuckets(0.001, 4, 12),
		}, []string{"queue"}),
		run: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "queue_job_run_seconds",
			Help:    "Time from claim to completion of successful attempts.",
			Buckets: prometheus.ExponentialBuckets(0.001, 4, 12),
		}, []string{"queue", "kind"}),
		txSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "queue_store_write_seconds",
			Help:    "Duration of store write transactions (one transaction serves many requests).",
			Buckets: prometheus.ExponentialBuckets(0.0001, 4, 10),
		}),
		txBatch: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "queue_store_write_batch_size",
			Help:    "Requests (SQLite) or rows per store write transaction.",
			Buckets: prometheus.ExponentialBuckets(1, 4, 8),
		}),
	}
	for typ, name := range eventCounters {
		c := prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "queue_jobs_" + name + "_total",
			Help: "Jobs " + strings.ReplaceAll(name, "_", " ") + " (event " + typ + ") by queue and kind.",
		}, []string{"queue", "kind"})
		m.counters[typ] = c
		m.reg.MustRegister(c)
	}
	m.reg.MustRegister(m.failed, m.wait, m.run, m.txSeconds, m.txBatch,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		&depthCollector{svc: svc})
	svc.Bus.Observe(m.observe)
	return m
}

func (m *Metrics) observe(e *app.Event) {
	c, ok := m.counters[e.Type]
	if !ok {
		return
	}
	c.WithLabelValues(e.Queue, e.Kind).Inc()
	switch e.Type {
	case app.EventRetryScheduled, app.EventDeadLettered:
		if !strings.Contains(string(e.Data), app.ReasonAdminMove) { // an operator's move is not a failure
			m.failed.WithLabelValues(e.Queue, e.Kind).Inc()
		}
	case app.EventStarted:
		var d struct {
			WaitMS int64 `json:"wait_ms"`
		}
		if json.Unmarshal(e.Data, &d) == nil {
			m.wait.WithLabelValues(e.Queue).Observe(float64(d.WaitMS) / 1000)
		}
	case app.EventSucceeded:
		var d struct {
			DurationMS int64 `json:"duration_ms"`
		}
		if json.Unmarshal(e.Data, &d) == nil {
			m.run.WithLabelValues(e.Queue, e.Kind).Observe(float64(d.DurationMS) / 1000)
		}
	}
}

// ObserveWrite records one store write transaction (app.StoreOptions.ObserveWrite).
func (m *Metrics) ObserveWrite(batch int, took time.Duration) {
	m.txSeconds.Observe(took.Seconds())
	m.txBatch.Observe(float64(batch))
}

// Handler serves the metrics in the Prometheus text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg})
}

// depthCollector reads queue depths from the store at scrape time, so the
// gauges are always the stored truth (and agree with /api/stats).
type depthCollector struct{ svc *app.Service }

var (
	depthDesc  = prometheus.NewDesc("queue_jobs", "Jobs by queue and status (queued = claimable now; dead_letter = rows in the DLQ).", []string{"queue", "status"}, nil)
	oldestDesc = prometheus.NewDesc("queue_oldest_queued_age_seconds", "Age of the oldest claimable job by queue.", []string{"queue"}, nil)
	dlqDesc    = prometheus.NewDesc("queue_dead_letter_size", "Rows in the dead-letter queue by queue.", []string{"queue"}, nil)
	upDesc     = prometheus.NewDesc("queue_store_up", "1 if the store answered the last scrape.", nil, nil)
)

func (d *depthCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- depthDesc
	ch <- oldestDesc
	ch <- dlqDesc
	ch <- upDesc
}

func (d *depthCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	st, err := d.svc.Store.Stats(ctx)
	if err != nil {
		ch <- prometheus.MustNewConstMetric(upDesc, prometheus.GaugeValue, 0)
		return
	}
	ch <- prometheus.MustNewConstMetric(upDesc, prometheus.GaugeValue, 1)
	for _, q := range st {
		for status, n := range map[string]int64{"queued": q.Queued, "scheduled": q.Scheduled, "processing": q.Processing,
			"done": q.Done, "cancelled": q.Cancelled, "dead_letter": q.DeadLetter} {
			ch <- prometheus.MustNewConstMetric(depthDesc, prometheus.GaugeValue, float64(n), q.Queue, status)
		}
		ch <- prometheus.MustNewConstMetric(oldestDesc, prometheus.GaugeValue, q.OldestQueuedAge, q.Queue)
		ch <- prometheus.MustNewConstMetric(dlqDesc, prometheus.GaugeValue, float64(q.DeadLetter), q.Queue)
	}
}
