package app

import (
	"math"
	"testing"
	"time"
)

// A spread at the slowest rate never overflows, however many jobs it has:
// it saturates at MaxDelay from now.
func TestSpreadAtSaturates(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	spacing := rateSpacing(MinRate)
	if spacing != 1000*time.Second {
		t.Fatalf("rateSpacing(%g) = %v, want 1000s", MinRate, spacing)
	}
	last := now.Add(MaxDelay)
	for _, c := range []struct {
		start time.Time
		n     int
		want  time.Time
	}{
		{now, 0, now},
		{now, 3, now.Add(3000 * time.Second)},
		{now, int(MaxDelay / spacing), now.Add(spacing * (MaxDelay / spacing))},
		{now, int(MaxDelay/spacing) + 1, last},
		{now, 1 << 40, last},
		{now, math.MaxInt, last},
		{last, 1, last},
	} {
		if got := spreadAt(c.start, now, spacing, c.n); !got.Equal(c.want) {
			t.Errorf("spreadAt(now+%v, %d) = %v, want %v", c.start.Sub(now), c.n, got, c.want)
		}
	}
	if got := spreadAt(now, now, rateSpacing(MaxRate), math.MaxInt); !got.Equal(last) {
		t.Errorf("spreadAt at the fastest rate, MaxInt jobs = %v, want %v", got, last)
	}
	for _, rate := range []float64{1e-10, 0.0009, MaxRate * 2, -1, math.NaN(), math.Inf(1)} {
		if checkRate(rate) == nil {
			t.Errorf("checkRate(%g) = nil, want an error", rate)
		}
	}
	for _, rate := range []float64{0, MinRate, 1, MaxRate} {
		if err := checkRate(rate); err != nil {
			t.Errorf("checkRate(%g) = %v", rate, err)
		}
	}
}
