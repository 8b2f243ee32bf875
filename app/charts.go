package app

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// The charts (issue 26) draw each queue's throughput, queued depth and
// pickup latency over the last hour, day and week. What they read is kept
// in three steps:
//
//   - per second: the throughput counters every write upserts (completed
//     and failed attempts, and, since the charts, the jobs claimed with the
//     sum and the longest of their waits: Effects.Count and Picked), kept
//     SecondsKept;
//   - per minute: the seconds rolled up by the leader's maintenance pass
//     (Maintainer.Charts), with the queue's depth sampled once a minute,
//     kept MinutesKept;
//   - per hour: the minutes rolled up by the same pass, kept HoursKept.
//
// A roll-up computes its rows again from the step below and stores them as
// computed (never added to), so running it twice, or on two nodes one after
// the other, changes nothing.
const (
	// ChartRollEvery is how often the leader rolls seconds up into minutes
	// and minutes into hours: how far the charts may lag.
	ChartRollEvery = 15 * time.Second
	// chartLookback is how far back each roll-up computes minutes again: a
	// write counts into the second its transaction began, and commits
	// after it.
	chartLookback = 5 * time.Minute
	// SecondsKept is how long the per-second counters are kept (Sweep).
	SecondsKept = 2 * time.Hour
	// MinutesKept is how long the per-minute rows are kept: the 24-hour
	// chart and an hour to spare.
	MinutesKept = 25 * time.Hour
	// HoursKept is how long the per-hour rows are kept: the 7-day chart and
	// a day to spare.
	HoursKept = 8 * 24 * time.Hour
)

// What DeleteOld deletes of the charts' rows.
const (
	OldMinutes = "series_minutes" // per-minute chart rows, by their minute
	OldHours   = "series_hours"   // per-hour chart rows, by their hour
)

// PickupWait is how long j waited for a worker: from when it was due (its
// run_at, or its creation if later: a job submitted to run at once is due
// when it lands) to its claim, never below zero.
func PickupWait(j *Job) time.Duration {
	if j.StartedAt == nil {
		return 0
	}
	due := j.RunAt
	if j.CreatedAt.After(due) {
		due = j.CreatedAt
	}
	return max(j.StartedAt.Sub(due), 0)
}

// ChartStore keeps the charts' per-minute and per-hour rows.
type ChartStore interface {
	// RollUp writes r in one transaction: the minutes of [r.From, r.To)
	// computed from the per-second counters, the depth samples, then the
	// hours of [r.HoursFrom, r.To) computed from the minutes. A computed row
	// replaces the stored one (the depth columns of a minute are left to
	// its sample, and the sample leaves its counts alone). It calls the
	// fault hook at FaultRollUp before the hours.
	RollUp(ctx context.Context, r RollUp) error
	// Series reads the rows of step (time.Minute or time.Hour) of queue
	// (every queue, summed, if empty) from from on, oldest first; steps
	// without a row are left out.
	Series(ctx context.Context, queue string, from time.Time, step time.Duration) ([]SeriesRow, error)
}

// FaultRollUp is inside a roll-up, after its minutes and depth samples
// are written and before its hours.
const FaultRollUp FaultPoint = "rollup.after_minutes"

// RollUp is one pass of Maintainer.Charts. Times are whole minutes
// (HoursFrom a whole hour).
type RollUp struct {
	From, To  time.Time
	HoursFrom time.Time
	// DepthAt, if set, is the minute Depth was sampled in: each queue's
	// queued jobs (those without any are left out: no row reads as zero).
	DepthAt time.Time
	Depth   map[string]int64
}

// SeriesRow is one stored step of a queue (or the sum of every queue).
type SeriesRow struct {
	At                time.Time // the step's start
	Completed, Failed int64
	Claimed           int64
	WaitMS, WaitMaxMS int64 // the claims' waits: sum and the longest
	// Depth is the minute's sample of queued jobs; of an hour, the sum of
	// its minutes' samples. DepthMax is the largest sample.
	Depth, DepthMax int64
}

// chartPass is the Maintainer's memory of its chart passes.
type chartPass struct {
	rolled  time.Time // the last roll-up; zero: none since this node leads
	sampled time.Time // the minute of the last depth sample
}

// Charts rolls the throughput counters up, at most every ChartRollEvery:
// the minutes of the last five (all the seconds kept, on its first pass
// since it leads), the hours those fall in, and once a minute a sample of
// each queue's depth: its queued jobs due now (Stats' Queued: scheduled
// jobs are left out, jobs held for their key are in). One transaction;
// bounded (a few minutes, one or two hours of rows per queue).
func (m *Maintainer) Charts(ctx context.Context) error {
	s := m.Service
	now := s.Clock.Now()
	if !m.charts.rolled.IsZero() && now.Sub(m.charts.rolled) < ChartRollEvery && !now.Before(m.charts.rolled) {
		return nil
	}
	minute := now.Truncate(time.Minute)
	r := RollUp{From: minute.Add(-chartLookback), To: minute.Add(time.Minute)}
	if m.charts.rolled.IsZero() {
		r.From = minute.Add(-SecondsKept)
	}
	r.HoursFrom = r.From.Truncate(time.Hour)
	if !minute.Equal(m.charts.sampled) {
		stats, err := s.Store.Stats(ctx)
		if err != nil {
			return fmt.Errorf("charts: depth sample: %w", err)
		}
		r.DepthAt, r.Depth = minute, map[string]int64{}
		for _, q := range stats {
			if q.Queued > 0 {
				r.Depth[q.Queue] = q.Queued
			}
		}
	}
	if err := s.Store.RollUp(ctx, r); err != nil {
		return fmt.Errorf("charts: roll-up: %w", err)
	}
	m.charts.rolled = now
	if !r.DepthAt.IsZero() {
		m.charts.sampled = minute
	}
	return nil
}

// chartRetention is what Sweep deletes of the charts' rows at now.
func chartRetention(now time.Time) []DeleteOldRequest {
	return []DeleteOldRequest{
		{What: OldMinutes, Before: now.Add(-MinutesKept)},
		{What: OldHours, Before: now.Add(-HoursKept)},
	}
}

// ChartRange is a span a chart shows: its points are Step apart, read from
// the rows of Stored.
type ChartRange struct {
	Name   string
	Span   time.Duration
	Step   time.Duration
	Stored time.Duration
}

// Points is how many points a chart of r has (the last one partial).
func (r ChartRange) Points() int { return int(r.Span / r.Step) }

// ChartRanges are the ranges the charts offer, shortest first: the last
// hour per minute, the last 24 hours per 15 minutes (from the minutes), the
// last 7 days per hour.
var ChartRanges = []ChartRange{
	{Name: "1h", Span: time.Hour, Step: time.Minute, Stored: time.Minute},
	{Name: "24h", Span: 24 * time.Hour, Step: 15 * time.Minute, Stored: time.Minute},
	{Name: "7d", Span: 7 * 24 * time.Hour, Step: time.Hour, Stored: time.Hour},
}

// ParseChartRange finds the range named name ("" is 1h).
func ParseChartRange(name string) (ChartRange, error) {
	if name == "" {
		return ChartRanges[0], nil
	}
	names := make([]string, len(ChartRanges))
	for i, r := range ChartRanges {
		if r.Name == name {
			return r, nil
		}
		names[i] = r.Name
	}
	return ChartRange{}, Invalid("range", "range %q is not one of %s", clip(name), strings.Join(names, ", "))
}

// Series is a chart's numbers: a point per step of its range, the last one
// the step now falls in (so far), steps without activity zero.
type Series struct {
	Queue       string        `json:"queue,omitempty"` // empty: every queue
	Range       string        `json:"range"`
	StepSeconds int64         `json:"step_seconds"`
	From        time.Time     `json:"from"` // the first point's start
	To          time.Time     `json:"to"`   // now
	Points      []SeriesPoint `json:"points"`
}

// SeriesPoint is one step of a Series.
type SeriesPoint struct {
	At        time.Time `json:"at"` // the step's start
	Completed int64     `json:"completed"`
	Failed    int64     `json:"failed"`
	// Claimed is how many jobs were claimed; WaitMean and WaitMax their
	// pickup wait (PickupWait) on average and at most, in seconds.
	Claimed  int64   `json:"claimed"`
	WaitMean float64 `json:"wait_mean_seconds"`
	WaitMax  float64 `json:"wait_max_seconds"`
	// Queued is the queue's depth (queued jobs due, not scheduled ones),
	// sampled each minute: the mean of the step's samples (a minute
	// without one counts as zero), and the largest.
	Queued    float64 `json:"queued"`
	QueuedMax int64   `json:"queued_max"`
}

// Series reads the chart of queue (every queue if empty) over range rng
// ("1h", "24h", "7d"; "" is 1h).
func (s *Service) Series(ctx context.Context, queue, rng string) (*Series, error) {
	r, err := ParseChartRange(rng)
	if err != nil {
		return nil, err
	}
	if queue != "" {
		if err := ValidateQueue(queue); err != nil {
			return nil, Invalid("queue", "%v", err)
		}
	}
	now := s.Clock.Now()
	from := now.Truncate(r.Step).Add(-time.Duration(r.Points()-1) * r.Step)
	rows, err := s.Store.Series(ctx, queue, from, r.Stored)
	if err != nil {
		return nil, fmt.Errorf("chart of %q over %s: %w", queue, r.Name, err)
	}
	return BuildSeries(queue, r, rows, from, now), nil
}

// BuildSeries puts rows (of r.Stored, oldest first) into the points of r
// from from: sums per point, the longest wait and sample, means weighted by
// claims and by minutes (up to now in the last point).
func BuildSeries(queue string, r ChartRange, rows []SeriesRow, from, now time.Time) *Series {
	n := r.Points()
	out := &Series{Queue: queue, Range: r.Name, StepSeconds: int64(r.Step / time.Second), From: from.UTC(), To: now.UTC(),
		Points: make([]SeriesPoint, n)}
	waits := make([]int64, n)
	depth := make([]int64, n)
	for i := range out.Points {
		out.Points[i].At = from.Add(time.Duration(i) * r.Step).UTC()
	}
	for _, row := range rows {
		d := row.At.Sub(from)
		if d < 0 {
			continue
		}
		i := int(d / r.Step)
		if i >= n {
			continue
		}
		p := &out.Points[i]
		p.Completed += row.Completed
		p.Failed += row.Failed
		p.Claimed += row.Claimed
		waits[i] += row.WaitMS
		p.WaitMax = max(p.WaitMax, float64(row.WaitMaxMS)/1000)
		depth[i] += row.Depth
		p.QueuedMax = max(p.QueuedMax, row.DepthMax)
	}
	for i := range out.Points {
		p := &out.Points[i]
		if p.Claimed > 0 {
			p.WaitMean = float64(waits[i]) / float64(p.Claimed) / 1000
		}
		minutes := int64(r.Step / time.Minute)
		if end := p.At.Add(r.Step); end.After(now) { // the last point: the minutes so far
			minutes = min(minutes, int64(now.Sub(p.At)/time.Minute)+1)
		}
		if minutes > 0 {
			p.Queued = float64(depth[i]) / float64(minutes)
		}
	}
	return out
}
