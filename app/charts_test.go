package app_test

import (
	"errors"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/queuehq/queue/app"
	"github.com/queuehq/queue/memory"
)

// chartService is a Service over the memory store on a fake clock at
// 10:00:30 UTC.
func chartService(t *testing.T) (*app.Service, *app.FakeClock) {
	t.Helper()
	clock := app.NewFakeClock(time.Date(2026, 3, 4, 10, 0, 30, 0, time.UTC))
	bus := app.NewBus()
	store := memory.New(app.StoreOptions{Clock: clock, Bus: bus})
	return app.NewService(store, nil, clock, bus, zerolog.Nop()), clock
}

func submitN(t *testing.T, svc *app.Service, queue string, n int) {
	t.Helper()
	in := make([]app.SubmitInput, n)
	for i := range in {
		in[i] = app.SubmitInput{Queue: queue, Kind: "k"}
	}
	if _, err := svc.Submit(t.Context(), in); err != nil {
		t.Fatal(err)
	}
}

func seriesOf(t *testing.T, svc *app.Service, queue, rng string) *app.Series {
	t.Helper()
	s, err := svc.Series(t.Context(), queue, rng)
	if err != nil {
		t.Fatalf("Series(%q, %q): %v", queue, rng, err)
	}
	return s
}

// The leader's pass rolls up at most every ChartRollEvery, samples each
// queue's depth (queued jobs due, not scheduled ones) once a minute, and
// the last point of the hour's chart shows it.
func TestChartsPassRollsUpAndSamplesDepth(t *testing.T) {
	svc, clock := chartService(t)
	m := &app.Maintainer{Service: svc}
	submitN(t, svc, "q", 3)
	later := clock.Now().Add(time.Hour)
	if _, err := svc.Submit(t.Context(), []app.SubmitInput{{Queue: "q", Kind: "k", RunAt: &later}}); err != nil {
		t.Fatal(err)
	}
	if err := m.Charts(t.Context()); err != nil {
		t.Fatal(err)
	}
	s := seriesOf(t, svc, "q", "1h")
	last := s.Points[len(s.Points)-1]
	if last.Queued != 3 || last.QueuedMax != 3 {
		t.Fatalf("depth %+v, want 3 (the scheduled job left out)", last)
	}
	// A claim 5s later is not rolled up before ChartRollEvery has passed.
	clock.Advance(5 * time.Second)
	if _, err := svc.Claim(t.Context(), "q", app.ClaimInput{WorkerID: "w", Limit: 1}); err != nil {
		t.Fatal(err)
	}
	if err := m.Charts(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got := seriesOf(t, svc, "q", "1h").Points[59].Claimed; got != 0 {
		t.Fatalf("rolled up after 5s: %d claimed", got)
	}
	clock.Advance(app.ChartRollEvery)
	if err := m.Charts(t.Context()); err != nil {
		t.Fatal(err)
	}
	p := seriesOf(t, svc, "q", "1h").Points[59]
	if p.Claimed != 1 || p.WaitMean != 5 || p.WaitMax != 5 || p.Queued != 3 {
		t.Fatalf("after %s: %+v, want 1 claimed after 5s, the minute's depth sample kept (3)", app.ChartRollEvery, p)
	}
	// The next minute is sampled anew; the 7-day chart's hour averages the
	// samples over the minutes so far (3 and 2 over 2 minutes).
	clock.Advance(time.Minute)
	if err := m.Charts(t.Context()); err != nil {
		t.Fatal(err)
	}
	week := seriesOf(t, svc, "q", "7d")
	h := week.Points[len(week.Points)-1]
	if h.Queued != 2.5 || h.QueuedMax != 3 || h.Claimed != 1 {
		t.Fatalf("the hour so far: %+v, want mean depth 2.5, max 3, 1 claimed", h)
	}
}

// Every range has its number of points, a step apart, the last one the
// step now is in; steps without rows are zero; bad input is an
// InvalidError naming its field.
func TestServiceSeriesRanges(t *testing.T) {
	svc, clock := chartService(t)
	now := clock.Now()
	for _, c := range []struct {
		rng   string
		n     int
		step  time.Duration
		first time.Time
	}{
		{"", 60, time.Minute, time.Date(2026, 3, 4, 9, 1, 0, 0, time.UTC)},
		{"1h", 60, time.Minute, time.Date(2026, 3, 4, 9, 1, 0, 0, time.UTC)},
		{"24h", 96, 15 * time.Minute, time.Date(2026, 3, 3, 10, 15, 0, 0, time.UTC)},
		{"7d", 168, time.Hour, time.Date(2026, 2, 25, 11, 0, 0, 0, time.UTC)},
	} {
		s := seriesOf(t, svc, "", c.rng)
		if len(s.Points) != c.n || s.StepSeconds != int64(c.step/time.Second) || !s.From.Equal(c.first) || !s.Points[0].At.Equal(c.first) {
			t.Fatalf("range %q: %d points from %s, step %ds; want %d from %s", c.rng, len(s.Points), s.From, s.StepSeconds, c.n, c.first)
		}
		last := s.Points[c.n-1].At
		if last.After(now) || !last.Add(c.step).After(now) {
			t.Fatalf("range %q: last point at %s does not hold now (%s)", c.rng, last, now)
		}
		for _, p := range s.Points {
			if p != (app.SeriesPoint{At: p.At}) {
				t.Fatalf("range %q: a point without rows is %+v", c.rng, p)
			}
		}
	}
	var inv *app.InvalidError
	if _, err := svc.Series(t.Context(), "", "2d"); !errors.As(err, &inv) || inv.Field != "range" {
		t.Fatalf("range 2d: %v, want an InvalidError of range", err)
	}
	if _, err := svc.Series(t.Context(), "<b>x", "1h"); !errors.As(err, &inv) || inv.Field != "queue" {
		t.Fatalf("queue <b>x: %v, want an InvalidError of queue", err)
	}
}

// BuildSeries sums rows into their points, takes the longest wait and the
// largest sample, weights the mean wait by claims and the mean depth by
// minutes (those so far in the last point).
func TestBuildSeriesMeans(t *testing.T) {
	r, _ := app.ParseChartRange("24h")
	from := time.Date(2026, 3, 4, 0, 0, 0, 0, time.UTC)
	now := from.Add(24*time.Hour - 10*time.Minute + 30*time.Second) // 5.5 minutes into the last point
	last := from.Add(95 * 15 * time.Minute)
	rows := []app.SeriesRow{
		{At: from, Claimed: 1, WaitMS: 1000, WaitMaxMS: 1000, Depth: 15, DepthMax: 15},
		{At: from.Add(time.Minute), Claimed: 3, WaitMS: 9000, WaitMaxMS: 5000, Depth: 15, DepthMax: 15, Completed: 2},
		{At: last, Depth: 12, DepthMax: 12},
		{At: from.Add(-time.Minute), Completed: 100}, // before the first point
	}
	s := app.BuildSeries("q", r, rows, from, now)
	p := s.Points[0]
	if p.Claimed != 4 || p.WaitMean != 2.5 || p.WaitMax != 5 || p.Queued != 2 || p.QueuedMax != 15 || p.Completed != 2 {
		t.Fatalf("first point %+v, want 4 claimed, mean wait 2.5s, max 5s, mean depth 30/15 = 2, max 15, 2 completed", p)
	}
	if l := s.Points[95]; l.Queued != 2 {
		t.Fatalf("last point %+v, want depth 12 over the 6 minutes so far = 2", l)
	}
}
