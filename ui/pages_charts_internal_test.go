package ui

import (
	"strings"
	"testing"
	"time"

	"github.com/queuehq/queue/app"
)

// series24h is a day's series of a queue with claims in points 1-3 and 7
// (alone), depth in point 2, and 5 jobs done in point 95 (the last).
func series24h() *app.Series {
	from := time.Date(2026, 3, 3, 10, 15, 0, 0, time.UTC)
	r, _ := app.ParseChartRange("24h")
	rows := []app.SeriesRow{
		{At: from.Add(15 * time.Minute), Claimed: 2, WaitMS: 3000, WaitMaxMS: 2000},
		{At: from.Add(30 * time.Minute), Claimed: 1, WaitMS: 500, WaitMaxMS: 500, Depth: 45, DepthMax: 9},
		{At: from.Add(45 * time.Minute), Claimed: 1, WaitMS: 8000, WaitMaxMS: 8000},
		{At: from.Add(7 * 15 * time.Minute), Claimed: 4, WaitMS: 4000, WaitMaxMS: 1000},
		{At: from.Add(95 * 15 * time.Minute), Completed: 5, Failed: 1},
	}
	return app.BuildSeries("q", r, rows, from, from.Add(24*time.Hour-time.Minute))
}

// The bars of a range: one per point, the totals, the time axis in hours.
func TestSeriesBars(t *testing.T) {
	c := seriesBars(series24h(), "last 24 hours, per 15 minutes")
	if len(c.Bars) != 96 || c.Done != 5 || c.Failed != 1 || c.Empty {
		t.Fatalf("%d bars, %d done, %d failed, empty %v; want 96, 5, 1, false", len(c.Bars), c.Done, c.Failed, c.Empty)
	}
	var labels []string
	for _, l := range c.XLabels {
		labels = append(labels, l.Label)
	}
	if got := strings.Join(labels, ","); got != "24 h ago,18 h ago,12 h ago,6 h ago,now" {
		t.Fatalf("x labels %s", got)
	}
	if b := c.Bars[95]; b.DoneH <= 0 || b.FailH <= 0 || !strings.Contains(b.Title, "5 completed, 1 failed") || !strings.Contains(b.Title, "Mar 4 10:00–10:15 UTC") {
		t.Fatalf("last bar %+v", b)
	}
	if c.Label != "Completed and failed jobs, last 24 hours, per 15 minutes" || c.EmptyText != "No jobs finished in the last 24 hours" {
		t.Fatalf("label %q, empty text %q", c.Label, c.EmptyText)
	}
}

// The latency line breaks where no job was claimed, shows a point alone
// as a dot, and its dashed maximum follows the same points.
func TestLatencyChartLines(t *testing.T) {
	l := latencyChart(series24h(), "last 24 hours, per 15 minutes")
	if len(l.Lines) != 2 || len(l.Hits) != 96 || len(l.Rows) != 96 || l.Empty {
		t.Fatalf("%d lines, %d hits, %d rows, empty %v", len(l.Lines), len(l.Hits), len(l.Rows), l.Empty)
	}
	mean := l.Lines[1]
	if mean.Class != "line-wait" || strings.Count(mean.D, "M") != 2 || strings.Count(mean.D, "L") != 2 || len(mean.Dots) != 1 {
		t.Fatalf("mean line %q with %d dots: want points 1-3 joined and point 7 alone", mean.D, len(mean.Dots))
	}
	if l.Rows[0][1] != "–" || l.Rows[1][1] != "1.5s" || l.Rows[1][2] != "2s" || l.Rows[2][1] != "500ms" {
		t.Fatalf("rows %v %v %v", l.Rows[0], l.Rows[1], l.Rows[2])
	}
	if !strings.Contains(l.Hits[3].Title, "mean wait 8s, longest wait 8s (1 claimed)") || !strings.HasSuffix(l.Hits[0].Title, "no claims") {
		t.Fatalf("titles %q, %q", l.Hits[3].Title, l.Hits[0].Title)
	}
	if top := l.Grid[len(l.Grid)-1]; top.Label != "8s" {
		t.Fatalf("grid top %q, want 8s (the longest wait)", top.Label)
	}
}

// The depth line is drawn from every point (zero where nothing was
// queued), with its maximum only where a point spans several samples.
func TestDepthChart(t *testing.T) {
	l := depthChart(series24h(), "last 24 hours, per 15 minutes")
	if !l.HasMax || len(l.Lines) != 2 || strings.Count(l.Lines[1].D, "M") != 1 || l.Empty {
		t.Fatalf("depth chart: max %v, %d lines, mean %q", l.HasMax, len(l.Lines), l.Lines[1].D)
	}
	if l.Rows[2][1] != "3" || l.Rows[2][2] != "9" {
		t.Fatalf("row of the sampled point %v, want mean 45/15 = 3, largest 9", l.Rows[2])
	}
	r, _ := app.ParseChartRange("1h")
	hour := app.BuildSeries("q", r, nil, time.Date(2026, 3, 3, 10, 0, 0, 0, time.UTC), time.Date(2026, 3, 3, 10, 59, 0, 0, time.UTC))
	if d := depthChart(hour, "last hour, per minute"); d.HasMax || !d.Empty || len(d.Rows[0]) != 2 {
		t.Fatalf("an hour without samples: max %v, empty %v, row %v", d.HasMax, d.Empty, d.Rows[0])
	}
}
