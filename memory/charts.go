package memory

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/queuehq/queue/app"
)

// seriesKey is a row of the charts: a queue's step (60 or 3600 seconds)
// starting at unix second at.
type seriesKey struct {
	queue    string
	step, at int64
}

// putSeries stores row at k, undone if the write fails.
func (t *tx) putSeries(k seriesKey, row app.SeriesRow) {
	s := t.s
	if s.series == nil {
		s.series = map[seriesKey]*app.SeriesRow{}
	}
	old, had := s.series[k]
	r := row
	s.series[k] = &r
	t.undo = append(t.undo, func() {
		if had {
			s.series[k] = old
		} else {
			delete(s.series, k)
		}
	})
}

// RollUp implements app.ChartStore.
func (s *Store) RollUp(ctx context.Context, r app.RollUp) error {
	err := s.write(ctx, func(t *tx) error {
		// The minutes, from the seconds.
		minutes := map[seriesKey]*app.SeriesRow{}
		for k, c := range s.throughput {
			if k.Second < r.From.Unix() || k.Second >= r.To.Unix() {
				continue
			}
			mk := seriesKey{k.Queue, 60, k.Second / 60 * 60}
			m := minutes[mk]
			if m == nil {
				m = &app.SeriesRow{}
				minutes[mk] = m
			}
			m.Completed += c.Completed
			m.Failed += c.Failed
			m.Claimed += c.Claimed
			m.WaitMS += c.WaitMS
			m.WaitMaxMS = max(m.WaitMaxMS, c.WaitMaxMS)
		}
		for k, m := range minutes {
			row := *m
			if old := s.series[k]; old != nil {
				row.Depth, row.DepthMax = old.Depth, old.DepthMax
			}
			t.putSeries(k, row)
		}
		// The depth sample of its minute.
		if !r.DepthAt.IsZero() {
			at := r.DepthAt.Truncate(time.Minute).Unix()
			for k, old := range s.series {
				if k.step == 60 && k.at == at && old.DepthMax > 0 {
					row := *old
					row.Depth, row.DepthMax = 0, 0
					t.putSeries(k, row)
				}
			}
			for q, n := range r.Depth {
				k := seriesKey{q, 60, at}
				var row app.SeriesRow
				if old := s.series[k]; old != nil {
					row = *old
				}
				row.Depth, row.DepthMax = n, n
				t.putSeries(k, row)
			}
		}
		if err := t.Fault(app.FaultRollUp, 0); err != nil {
			return err
		}
		// The hours, from the minutes.
		hours := map[seriesKey]*app.SeriesRow{}
		for k, m := range s.series {
			if k.step != 60 || k.at < r.HoursFrom.Unix() || k.at >= r.To.Unix() {
				continue
			}
			hk := seriesKey{k.queue, 3600, k.at / 3600 * 3600}
			h := hours[hk]
			if h == nil {
				h = &app.SeriesRow{}
				hours[hk] = h
			}
			h.Completed += m.Completed
			h.Failed += m.Failed
			h.Claimed += m.Claimed
			h.WaitMS += m.WaitMS
			h.WaitMaxMS = max(h.WaitMaxMS, m.WaitMaxMS)
			h.Depth += m.Depth
			h.DepthMax = max(h.DepthMax, m.DepthMax)
		}
		for k, h := range hours {
			t.putSeries(k, *h)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("roll up %s to %s: %w", r.From.UTC().Format(time.DateTime), r.To.UTC().Format(time.DateTime), err)
	}
	return nil
}

// Series implements app.ChartStore. Every queue's steps are summed (the
// largest depth too: the sum of each queue's largest).
func (s *Store) Series(ctx context.Context, queue string, from time.Time, step time.Duration) ([]app.SeriesRow, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	byAt := map[int64]*app.SeriesRow{}
	st := int64(step / time.Second)
	for k, r := range s.series {
		if k.step != st || k.at < from.Unix() || queue != "" && k.queue != queue {
			continue
		}
		sum := byAt[k.at]
		if sum == nil {
			sum = &app.SeriesRow{At: time.Unix(k.at, 0).UTC()}
			byAt[k.at] = sum
		}
		sum.Completed += r.Completed
		sum.Failed += r.Failed
		sum.Claimed += r.Claimed
		sum.WaitMS += r.WaitMS
		sum.WaitMaxMS = max(sum.WaitMaxMS, r.WaitMaxMS)
		sum.Depth += r.Depth
		sum.DepthMax += r.DepthMax
	}
	out := make([]app.SeriesRow, 0, len(byAt))
	for _, r := range byAt {
		out = append(out, *r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].At.Before(out[j].At) })
	return out, nil
}
