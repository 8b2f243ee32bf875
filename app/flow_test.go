package app

import (
	"slices"
	"testing"
)

// A retention pass takes the oldest finished workflows while their steps
// stay within the bound, and always the first, however big.
func TestTakeOldIsBoundedBySteps(t *testing.T) {
	olds := []OldWorkflow{{ID: 1, Steps: 2}, {ID: 2, Steps: 2}, {ID: 3, Steps: 2}}
	for _, c := range []struct {
		maxSteps int
		want     []int64
	}{{1, []int64{1}}, {3, []int64{1}}, {4, []int64{1, 2}}, {100, []int64{1, 2, 3}}} {
		if got := takeOld(olds, c.maxSteps); !slices.Equal(got, c.want) {
			t.Errorf("takeOld(bound %d) = %v, want %v", c.maxSteps, got, c.want)
		}
	}
	if got := takeOld(nil, 10); len(got) != 0 {
		t.Errorf("takeOld(none) = %v", got)
	}
}
