package ui

import (
	"fmt"
	"math"
	"net/http"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/queuehq/queue/app"
)

// The charts (issue 26): the dashboard's throughput over a range (1 h, as
// it was, from the live per-second counters; 24 h and 7 d from the rolled
// up rows), and a page per queue with its throughput, queued depth and
// pickup latency over the same ranges. All of it server-side SVG in the
// templates "chart" and "linechart" (partials.html), switched by links
// (?range=), so it works without JavaScript.

// chartPages adds the queue chart page.
func (p *pages) chartPages(e *echo.Echo, page func(string, echo.HandlerFunc), mw []echo.MiddlewareFunc) {
	page("/queues/chart", p.queueChart)
}

// rangeNav is a chart's range switch: a link per range, the shown one
// marked.
type rangeNav struct {
	Range   app.ChartRange
	Param   string // the ?range= of the shown range ("" for the default)
	Caption string // "last hour, per minute"
	Links   []rangeLink
}

type rangeLink struct {
	Label, URL string
	Current    bool
}

var rangeLabels = map[string][2]string{ // label, caption
	"1h":  {"1 h", "last hour, per minute"},
	"24h": {"24 h", "last 24 hours, per 15 minutes"},
	"7d":  {"7 d", "last 7 days, per hour"},
}

// chartRange reads ?range= of a page and builds its switch: links to path
// with the pairs of keep (empty values left out).
func chartRange(c echo.Context, path string, keep ...string) (rangeNav, error) {
	r, err := app.ParseChartRange(c.QueryParam("range"))
	if err != nil {
		return rangeNav{}, err
	}
	nav := rangeNav{Range: r, Caption: rangeLabels[r.Name][1]}
	if r.Name != app.ChartRanges[0].Name {
		nav.Param = r.Name
	}
	for i, o := range app.ChartRanges {
		param := o.Name
		if i == 0 {
			param = ""
		}
		nav.Links = append(nav.Links, rangeLink{Label: rangeLabels[o.Name][0], URL: link(path, append(keep, "range", param)...), Current: o.Name == r.Name})
	}
	return nav, nil
}

// dashboardChart fills the dashboard's chart for its ?range=: the last
// hour from counts (the live per-second counters, as before), longer
// ranges from the rolled-up series of the chosen queue (or all).
func (p *pages) dashboardChart(c echo.Context, v *dashboardView, counts []app.MinuteCount, now time.Time) error {
	nav, err := chartRange(c, "/", "queue", v.ChartQueue)
	if err != nil {
		return err
	}
	v.ChartRange = nav
	if nav.Param == "" {
		v.Chart = buildChart(counts, now)
		return nil
	}
	s, err := p.svc.Series(c.Request().Context(), v.ChartQueue, nav.Range.Name)
	if err != nil {
		return err
	}
	v.Chart = seriesBars(s, nav.Caption)
	return nil
}

// seriesBars lays out the completed and failed counts of s as the
// dashboard's stacked bars (see buildChart, whose geometry it shares).
func seriesBars(s *app.Series, caption string) chart {
	c := chart{W: 960, H: 220, Left: 48, Right: 952, Top: 12, Bottom: 192}
	c.Label = "Completed and failed jobs, " + caption
	c.EmptyText = "No jobs finished in the " + strings.SplitN(caption, ",", 2)[0]
	n := len(s.Points)
	for _, pt := range s.Points {
		c.Done += pt.Completed
		c.Failed += pt.Failed
		c.Peak = max(c.Peak, pt.Completed+pt.Failed)
	}
	top := niceCeil(c.Peak)
	plotH := float64(c.Bottom - c.Top)
	slot := float64(c.Right-c.Left) / float64(n)
	gap := math.Max(0.5, slot*0.18)
	scale := func(v int64) float64 { return float64(v) / float64(top) * plotH }
	step := time.Duration(s.StepSeconds) * time.Second
	for i, pt := range s.Points {
		x := float64(c.Left) + float64(i)*slot
		b := chartBar{X: round1(x + gap/2), W: round1(math.Max(slot-gap, 0.5)), HitY: float64(c.Top), HitH: plotH}
		dh, fh := scale(pt.Completed), scale(pt.Failed)
		if pt.Completed > 0 {
			dh = math.Max(dh, 1)
		}
		if pt.Failed > 0 {
			fh = math.Max(fh, 1)
		}
		b.DoneH, b.DoneY = round1(dh), round1(float64(c.Bottom)-dh)
		b.FailH, b.FailY = round1(fh), round1(float64(c.Bottom)-dh-fh)
		b.Title = fmt.Sprintf("%s: %s completed, %s failed", stepLabel(pt.At, step), num(pt.Completed), num(pt.Failed))
		c.Bars = append(c.Bars, b)
	}
	for k := 0; k <= 4; k++ {
		v := top * int64(k) / 4
		y := float64(c.Bottom) - scale(v)
		c.Grid = append(c.Grid, chartTick{X: float64(c.Left - 8), Y: round1(y), Label: compactNum(v), Anchor: "end"})
	}
	c.XLabels = xLabels(s, c.Left, c.Right, c.Bottom+20)
	c.Empty = c.Peak == 0
	c.EmptyX, c.EmptyY = (c.Left+c.Right)/2, (c.Top+c.Bottom)/2
	return c
}

// stepLabel names the step of a point starting at at: its minute, its
// quarter hour, or its hour with the day.
func stepLabel(at time.Time, step time.Duration) string {
	at = at.UTC()
	switch {
	case step <= time.Minute:
		return at.Format("15:04") + " UTC"
	case step < time.Hour:
		return at.Format("Jan 2 15:04") + "–" + at.Add(step).Format("15:04") + " UTC"
	}
	return at.Format("Mon Jan 2 15:04") + "–" + at.Add(step).Format("15:04") + " UTC"
}

// xLabels are the time axis of a chart of s between x left and right:
// five (seven for a week) labels of how long ago, the last one "now".
func xLabels(s *app.Series, left, right, y int) []chartTick {
	n := len(s.Points)
	step := time.Duration(s.StepSeconds) * time.Second
	parts, unit, per := 4, "min", time.Minute
	switch {
	case step >= time.Hour:
		parts, unit, per = 7, "d", 24*time.Hour
	case step > time.Minute:
		unit, per = "h", time.Hour
	}
	slot := float64(right-left) / float64(n)
	var out []chartTick
	for k := 0; k <= parts; k++ {
		ago := n - k*n/parts // points before the end
		x, anchor := float64(left)+float64(n-ago)*slot+slot/2, "middle"
		label := fmt.Sprintf("%d %s ago", time.Duration(ago)*step/per, unit)
		switch k {
		case 0:
			x, anchor = float64(left), "start"
		case parts:
			x, anchor, label = float64(right), "end", "now"
		}
		out = append(out, chartTick{X: round1(x), Y: float64(y), Label: label, Anchor: anchor})
	}
	return out
}

// lineChart is a chart of one or two lines over a Series (template
// "linechart"): a mean and, dashed, a maximum; points without a value
// (a step without claims, for the waits) break the line.
type lineChart struct {
	ID             string // unique on its page: the ids of its title and desc
	W, H           int
	Left, Right    int
	Top, Bottom    int
	Title, Desc    string
	Lines          []chartLine
	Grid, XLabels  []chartTick
	Hits           []chartHit
	Empty          bool
	EmptyText      string
	EmptyX, EmptyY int
	// Heads and Rows are the table that says what the picture shows.
	Heads []string
	Rows  [][]string
	// MeanLabel and MaxLabel name the lines (the legend, the table);
	// HasMax: the dashed line of the maximum is drawn.
	MeanLabel, MaxLabel string
	HasMax              bool

	meanClass, maxClass string
	valueLabel          func(float64) string
	defined             func(app.SeriesPoint) bool // a point without a value breaks the line
	mean, maxOf         func(app.SeriesPoint) float64
	emptyAtZero         bool // nothing but zeros is "empty" too
	perPoint            func(app.SeriesPoint) string
}

type chartLine struct {
	Class string
	D     string // the SVG path
	Dots  []chartTick
}

type chartHit struct {
	X, W  float64
	Y, H  float64
	Title string
}

// depthChart is the queued depth of s: the mean of the minutes' samples
// and, when a point spans several minutes, the largest.
func depthChart(s *app.Series, caption string) lineChart {
	l := lineChart{ID: "depth", Title: "Queued jobs (due, not scheduled), " + caption,
		EmptyText: "No jobs waited in the queue", MeanLabel: "Queued (mean)", MaxLabel: "Queued (largest)",
		meanClass: "line-depth", maxClass: "line-depth-max", emptyAtZero: true,
		valueLabel: trimFloat,
		defined:    func(app.SeriesPoint) bool { return true },
		mean:       func(p app.SeriesPoint) float64 { return p.Queued },
		maxOf:      func(p app.SeriesPoint) float64 { return float64(p.QueuedMax) },
	}
	l.HasMax = s.StepSeconds > 60
	l.Desc = "Sampled once a minute: queued jobs that are due (held for their key included), not those scheduled for later."
	return l.build(s)
}

// latencyChart is the pickup latency of s: how long the jobs claimed in a
// point waited from due to claim, on average and at most.
func latencyChart(s *app.Series, caption string) lineChart {
	l := lineChart{ID: "latency", Title: "Pickup latency (due to claim), " + caption,
		EmptyText: "No jobs were claimed", MeanLabel: "Mean wait", MaxLabel: "Longest wait", HasMax: true,
		meanClass: "line-wait", maxClass: "line-wait-max",
		valueLabel: secs,
		perPoint:   func(p app.SeriesPoint) string { return fmt.Sprintf(" (%s claimed)", num(p.Claimed)) },
		defined:    func(p app.SeriesPoint) bool { return p.Claimed > 0 },
		mean:       func(p app.SeriesPoint) float64 { return p.WaitMean },
		maxOf:      func(p app.SeriesPoint) float64 { return p.WaitMax },
	}
	l.Desc = "The time from a job being due (its run_at, or its submission if later) to its claim, of the jobs claimed in each step; steps without claims are left blank."
	return l.build(s)
}

func (l lineChart) build(s *app.Series) lineChart {
	l.W, l.H, l.Left, l.Right, l.Top, l.Bottom = 960, 200, 56, 952, 12, 172
	n := len(s.Points)
	peak := 0.0
	some := false
	for _, p := range s.Points {
		if !l.defined(p) {
			continue
		}
		some = true
		peak = math.Max(peak, l.mean(p))
		if l.HasMax {
			peak = math.Max(peak, l.maxOf(p))
		}
	}
	top := niceCeilFloat(peak)
	plotH := float64(l.Bottom - l.Top)
	slot := float64(l.Right-l.Left) / float64(n)
	y := func(v float64) float64 { return round1(float64(l.Bottom) - v/top*plotH) }
	x := func(i int) float64 { return round1(float64(l.Left) + float64(i)*slot + slot/2) }
	line := func(class string, val func(app.SeriesPoint) float64) chartLine {
		var d strings.Builder
		ln := chartLine{Class: class}
		prev := false
		for i, p := range s.Points {
			if !l.defined(p) {
				prev = false
				continue
			}
			cmd := "L"
			if !prev {
				cmd = "M"
			}
			fmt.Fprintf(&d, "%s%g %g ", cmd, x(i), y(val(p)))
			next := i+1 < n && l.defined(s.Points[i+1])
			if !prev && !next { // alone: a dot, or it would not show
				ln.Dots = append(ln.Dots, chartTick{X: x(i), Y: y(val(p))})
			}
			prev = true
		}
		ln.D = strings.TrimSpace(d.String())
		return ln
	}
	if some {
		if l.HasMax {
			l.Lines = append(l.Lines, line(l.maxClass, l.maxOf))
		}
		l.Lines = append(l.Lines, line(l.meanClass, l.mean))
	}
	for k := 0; k <= 4; k++ {
		v := top * float64(k) / 4
		l.Grid = append(l.Grid, chartTick{X: float64(l.Left - 8), Y: y(v), Label: l.valueLabel(v), Anchor: "end"})
	}
	l.XLabels = xLabels(s, l.Left, l.Right, l.Bottom+20)
	step := time.Duration(s.StepSeconds) * time.Second
	l.Heads = []string{"Time", l.MeanLabel}
	if l.HasMax {
		l.Heads = append(l.Heads, l.MaxLabel)
	}
	for i, p := range s.Points {
		title := stepLabel(p.At, step) + ": "
		row := []string{stepLabel(p.At, step)}
		switch {
		case !l.defined(p):
			title += "no claims"
			row = append(row, "–")
			if l.HasMax {
				row = append(row, "–")
			}
		case l.HasMax:
			title += fmt.Sprintf("%s %s, %s %s", strings.ToLower(l.MeanLabel), l.valueLabel(l.mean(p)), strings.ToLower(l.MaxLabel), l.valueLabel(l.maxOf(p)))
			row = append(row, l.valueLabel(l.mean(p)), l.valueLabel(l.maxOf(p)))
		default:
			title += fmt.Sprintf("%s %s", strings.ToLower(l.MeanLabel), l.valueLabel(l.mean(p)))
			row = append(row, l.valueLabel(l.mean(p)))
		}
		if l.perPoint != nil && l.defined(p) {
			title += l.perPoint(p)
		}
		l.Hits = append(l.Hits, chartHit{X: round1(float64(l.Left) + float64(i)*slot), W: round1(slot), Y: float64(l.Top), H: plotH, Title: title})
		l.Rows = append(l.Rows, row)
	}
	l.Empty = !some || l.emptyAtZero && peak == 0
	l.EmptyX, l.EmptyY = (l.Left+l.Right)/2, (l.Top+l.Bottom)/2
	return l
}

// niceCeilFloat is niceCeil for values below 1 too (seconds of latency):
// four grid steps of 1, 2 or 5 times a power of ten; 1 for nothing.
func niceCeilFloat(v float64) float64 {
	if v <= 0 {
		return 1
	}
	for p := 0.001; ; p *= 10 {
		for _, m := range []float64{1, 2, 5} {
			if 4*m*p >= v*(1-1e-9) {
				return 4 * m * p
			}
		}
	}
}

// secs writes seconds of latency: milliseconds below one, a tenth below ten.
func secs(v float64) string {
	switch {
	case v <= 0:
		return "0s"
	case v < 1:
		return fmt.Sprintf("%dms", int(math.Round(v*1000)))
	case v < 10:
		return trimFloat(v) + "s"
	}
	return shortDuration(time.Duration(v * float64(time.Second)))
}

// trimFloat writes v with at most one decimal.
func trimFloat(v float64) string {
	return strings.TrimSuffix(fmt.Sprintf("%.1f", v), ".0")
}

// queueChartView is the data of queue_chart.html.
type queueChartView struct {
	base
	Queue      string
	ChartRange rangeNav
	Throughput chart
	Depth      lineChart
	Latency    lineChart
	Claimed    int64
	WaitMax    float64
}

// queueChart is GET /queues/chart?queue=&range=: the queue's throughput,
// queued depth and pickup latency over the range.
func (p *pages) queueChart(c echo.Context) error {
	q := c.QueryParam("queue")
	if err := app.ValidateQueue(q); err != nil {
		return app.Invalid("queue", "%v", err)
	}
	nav, err := chartRange(c, "/queues/chart", "queue", q)
	if err != nil {
		return err
	}
	s, err := p.svc.Series(c.Request().Context(), q, nav.Range.Name)
	if err != nil {
		return err
	}
	v := queueChartView{base: p.base(c, "Chart of queue "+q, "queues"), Queue: q, ChartRange: nav,
		Throughput: seriesBars(s, nav.Caption), Depth: depthChart(s, nav.Caption), Latency: latencyChart(s, nav.Caption)}
	for _, pt := range s.Points {
		v.Claimed += pt.Claimed
		v.WaitMax = math.Max(v.WaitMax, pt.WaitMax)
	}
	v.Refresh = 15
	return p.render(c, http.StatusOK, "queue_chart", v)
}
