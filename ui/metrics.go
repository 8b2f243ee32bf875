package ui

import (
	"context"
	"maps"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/queuehq/queue/app"
)

// Metrics is what /metrics shows: lifecycle counters by queue and kind
// (fed by the event bus as changes commit), queue depth and age gauges and
// the jobs waiting on a key limit (read from the store at scrape time), wait and run duration histograms, the
// size and duration of store write transactions, and refused credentials.
// Queue and kind labels are bounded (see MaxQueueLabels).
type Metrics struct {
	reg       *prometheus.Registry
	labels    *labels
	counters  map[string]*prometheus.CounterVec // by event type
	failed    *prometheus.CounterVec
	wait      *prometheus.HistogramVec
	run       *prometheus.HistogramVec
	txSeconds prometheus.Histogram
	txBatch   prometheus.Histogram
	authLogin prometheus.Counter
	authToken prometheus.Counter

	// series caches each (event type, queue label, kind label) counter:
	// observe runs on the store's writer goroutine, three times a job,
	// and a vector's WithLabelValues hashes and checks the labels each time.
	seriesMu sync.Mutex
	series   map[seriesKey]prometheus.Counter
	observed map[seriesKey]prometheus.Observer // wait and run histograms, typ "wait" or "run"
}

// seriesKey names one counter series of Metrics.series.
type seriesKey struct{ typ, queue, kind string }

// Label caps. Every queue and (queue, kind) that the config names
// ([queues.X], [[workers]], [[periodic]], the queues of [[tokens]], and
// the default queue) has series of its own, and so do the first others
// seen, up to these numbers; the rest share the label value OtherLabel.
// Queue and kind names come from clients, so without the caps anyone who
// may submit could grow /metrics, and the server's memory, without bound.
const (
	MaxQueueLabels = 64  // queues with a label of their own beyond the configured ones
	MaxKindLabels  = 512 // (queue, kind) pairs with a kind label of their own beyond the configured ones
)

// OtherLabel is the label value of what is beyond the caps: the jobs of a
// queue without a label of its own count as queue "other", kind "other";
// a kind without one, in a queue with one, as that queue and kind "other".
// A queue really named "other" shares its series with them.
const OtherLabel = "other"

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

// QueueKind names a queue, or a kind of a queue when Kind is set, that the
// configuration names outside app.Config (the queues of tokens, the kinds of
// built-in workers), so that its metrics have labels of their own from the
// start, however many names clients bring first.
type QueueKind struct{ Queue, Kind string }

// NewMetrics registers the queue's metrics (and Go and process metrics) and
// subscribes them to svc's event bus. The queues and kinds of svc.Config and
// of named keep labels of their own (see MaxQueueLabels).
func NewMetrics(svc *app.Service, named ...QueueKind) *Metrics {
	auth := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "queue_http_auth_failures_total",
		Help: "Refused credentials: reason login (the UI's login form) or token (a 401 for a missing or wrong token).",
	}, []string{"reason"})
	m := &Metrics{
		reg:       prometheus.NewRegistry(),
		labels:    newLabels(svc.Config, named),
		counters:  map[string]*prometheus.CounterVec{},
		series:    map[seriesKey]prometheus.Counter{},
		observed:  map[seriesKey]prometheus.Observer{},
		authLogin: auth.WithLabelValues("login"),
		authToken: auth.WithLabelValues("token"),
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
	m.reg.MustRegister(m.failed, m.wait, m.run, m.txSeconds, m.txBatch, auth,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		&depthCollector{svc: svc, labels: m.labels})
	svc.Bus.Observe(m.observe)
	return m
}

func (m *Metrics) observe(e *app.Event) {
	c, ok := m.counters[e.Type]
	if !ok {
		return
	}
	queue, kind := m.labels.pair(e.Queue, e.Kind)
	m.counter(e.Type, c, queue, kind).Inc()
	switch e.Type {
	case app.EventRetryScheduled, app.EventDeadLettered:
		if !strings.Contains(string(e.Data), app.ReasonAdminMove) { // an operator's move is not a failure
			m.failed.WithLabelValues(queue, kind).Inc()
		}
	case app.EventStarted:
		if ms, ok := app.DataMillis(e.Data, "wait_ms"); ok {
			m.observer("wait", queue, "", func() prometheus.Observer { return m.wait.WithLabelValues(queue) }).Observe(float64(ms) / 1000)
		}
	case app.EventSucceeded:
		if ms, ok := app.DataMillis(e.Data, "duration_ms"); ok {
			m.observer("run", queue, kind, func() prometheus.Observer { return m.run.WithLabelValues(queue, kind) }).Observe(float64(ms) / 1000)
		}
	}
}

// counter returns the series of c for the labels, from the cache. The
// labels are bounded (labels.pair), so the cache is too.
func (m *Metrics) counter(typ string, c *prometheus.CounterVec, queue, kind string) prometheus.Counter {
	k := seriesKey{typ, queue, kind}
	m.seriesMu.Lock()
	defer m.seriesMu.Unlock()
	s, ok := m.series[k]
	if !ok {
		s = c.WithLabelValues(queue, kind)
		m.series[k] = s
	}
	return s
}

// observer returns the histogram series typ of the labels, from the cache
// (made by mk the first time).
func (m *Metrics) observer(typ, queue, kind string, mk func() prometheus.Observer) prometheus.Observer {
	k := seriesKey{typ, queue, kind}
	m.seriesMu.Lock()
	defer m.seriesMu.Unlock()
	o, ok := m.observed[k]
	if !ok {
		o = mk()
		m.observed[k] = o
	}
	return o
}

// AuthFailed counts a refused credential in queue_http_auth_failures_total:
// reason "login" for a failed login on the UI's form, "token" for a 401
// (a missing or wrong token). Any other reason counts as "token", so the
// label has two values. A nil *Metrics counts nothing.
func (m *Metrics) AuthFailed(reason string) {
	switch {
	case m == nil:
	case reason == "login":
		m.authLogin.Inc()
	default:
		m.authToken.Inc()
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

// labels folds queue and kind names into bounded label values: the
// configured ones and the first MaxQueueLabels queues and MaxKindLabels
// (queue, kind) pairs seen keep their names, the rest are OtherLabel. Every
// event passes through pair, so reading takes no lock: the sets are
// replaced, never changed, when a name is let in, which happens at most
// MaxQueueLabels+MaxKindLabels times.
type labels struct {
	mu  sync.Mutex // taken to let a name in
	set atomic.Pointer[labelSet]
}

// labelSet is the names with labels of their own at one time. Never changed once stored.
type labelSet struct {
	queues map[string]bool
	pairs  map[QueueKind]bool
	queued int // queues let in beyond the configured ones
	paired int // pairs let in beyond the configured ones
}

// newLabels gives a label of its own to every queue and pair that cfg and
// named name.
func newLabels(cfg *app.Config, named []QueueKind) *labels {
	s := &labelSet{queues: map[string]bool{app.DefaultQueue: true}, pairs: map[QueueKind]bool{}}
	if cfg != nil {
		for q := range cfg.Queues {
			s.queues[q] = true
		}
		for _, p := range cfg.Periodic {
			s.queues[p.Queue] = true
			s.pairs[QueueKind{p.Queue, p.Kind}] = true
		}
	}
	for _, n := range named {
		s.queues[n.Queue] = true
		if n.Kind != "" {
			s.pairs[n] = true
		}
	}
	l := &labels{}
	l.set.Store(s)
	return l
}

// pair returns the queue and kind labels of an event of kind in queue.
func (l *labels) pair(queue, kind string) (string, string) {
	key := QueueKind{queue, kind}
	s := l.set.Load()
	switch {
	case s.pairs[key]:
		return queue, kind
	case !l.own(queue):
		return OtherLabel, OtherLabel
	case s.paired >= MaxKindLabels:
		return queue, OtherLabel
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	s = l.set.Load()
	switch {
	case s.pairs[key]:
	case s.paired < MaxKindLabels:
		n := *s
		n.pairs = maps.Clone(s.pairs)
		n.pairs[key] = true
		n.paired++
		l.set.Store(&n)
	default:
		return queue, OtherLabel
	}
	return queue, kind
}

// queue returns the label of queue.
func (l *labels) queue(queue string) string {
	if l.own(queue) {
		return queue
	}
	return OtherLabel
}

// own reports whether queue has a label of its own, letting it in while
// there are places.
func (l *labels) own(queue string) bool {
	if s := l.set.Load(); s.queues[queue] || s.queued >= MaxQueueLabels {
		return s.queues[queue]
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	s := l.set.Load()
	if !s.queues[queue] && s.queued < MaxQueueLabels {
		n := *s
		n.queues = maps.Clone(s.queues)
		n.queues[queue] = true
		n.queued++
		l.set.Store(&n)
		return true
	}
	return s.queues[queue]
}

// depthCollector reads queue depths from the store at scrape time, so the
// gauges are always the stored truth (and agree with /api/stats). Queues
// beyond the label cap are summed into queue "other" (the oldest age: the
// largest).
type depthCollector struct {
	svc    *app.Service
	labels *labels
}

var (
	depthDesc  = prometheus.NewDesc("queue_jobs", "Jobs by queue and status (queued = claimable now; dead_letter = rows in the DLQ).", []string{"queue", "status"}, nil)
	oldestDesc = prometheus.NewDesc("queue_oldest_queued_age_seconds", "Age of the oldest claimable job by queue.", []string{"queue"}, nil)
	dlqDesc    = prometheus.NewDesc("queue_dead_letter_size", "Rows in the dead-letter queue by queue.", []string{"queue"}, nil)
	// dlqDepthDesc is the same gauge under the name the DLQ's alerting
	// examples use; queue_dead_letter_size stays for dashboards made before.
	dlqDepthDesc = prometheus.NewDesc("queue_dlq_depth", "Rows in the dead-letter queue by queue.", []string{"queue"}, nil)
	upDesc       = prometheus.NewDesc("queue_store_up", "1 if the store answered the last scrape.", nil, nil)
	heldDesc     = prometheus.NewDesc("queue_jobs_waiting_on_key", "Queued jobs held back until their flow-control key has room (key_concurrency, key_rate, fairness), by queue.", []string{"queue"}, nil)
)

func (d *depthCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- depthDesc
	ch <- oldestDesc
	ch <- dlqDesc
	ch <- dlqDepthDesc
	ch <- upDesc
	ch <- heldDesc
}

func (d *depthCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	all, err := d.svc.Stats(ctx)
	if err != nil {
		ch <- prometheus.MustNewConstMetric(upDesc, prometheus.GaugeValue, 0)
		return
	}
	st := all.Queues
	ch <- prometheus.MustNewConstMetric(upDesc, prometheus.GaugeValue, 1)
	rows := make([]app.QueueStats, 0, min(len(st), 2*MaxQueueLabels))
	at := map[string]int{} // label -> index in rows
	for _, q := range st {
		label := d.labels.queue(q.Queue)
		if i, ok := at[label]; ok { // "other": the sum (a queue named other too)
			rows[i] = app.TotalStats([]app.QueueStats{rows[i], q})
			rows[i].Queue = label
			continue
		}
		at[label] = len(rows)
		q.Queue = label
		rows = append(rows, q)
	}
	for _, q := range rows {
		for status, n := range map[string]int64{"queued": q.Queued, "scheduled": q.Scheduled, "processing": q.Processing,
			"done": q.Done, "cancelled": q.Cancelled, "dead_letter": q.DeadLetter} {
			ch <- prometheus.MustNewConstMetric(depthDesc, prometheus.GaugeValue, float64(n), q.Queue, status)
		}
		ch <- prometheus.MustNewConstMetric(oldestDesc, prometheus.GaugeValue, q.OldestQueuedAge, q.Queue)
		ch <- prometheus.MustNewConstMetric(dlqDesc, prometheus.GaugeValue, float64(q.DeadLetter), q.Queue)
		ch <- prometheus.MustNewConstMetric(dlqDepthDesc, prometheus.GaugeValue, float64(q.DeadLetter), q.Queue)
	}
	d.collectHeld(ctx, ch, rows)
}

// collectHeld writes queue_jobs_waiting_on_key: every queue of rows (0 when
// it holds none back) and any other queue holding jobs back, folded into
// the bounded labels like the other gauges. A store that fails to count
// leaves the gauge out of this scrape.
func (d *depthCollector) collectHeld(ctx context.Context, ch chan<- prometheus.Metric, rows []app.QueueStats) {
	counts, err := d.svc.HeldCounts(ctx)
	if err != nil {
		return
	}
	held := make(map[string]int, len(counts))
	for q, n := range counts {
		held[d.labels.queue(q)] += n
	}
	for _, q := range rows {
		ch <- prometheus.MustNewConstMetric(heldDesc, prometheus.GaugeValue, float64(held[q.Queue]), q.Queue)
		delete(held, q.Queue)
	}
	for label, n := range held {
		ch <- prometheus.MustNewConstMetric(heldDesc, prometheus.GaugeValue, float64(n), label)
	}
}
