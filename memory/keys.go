package memory

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"time"

	"github.com/queuehq/queue/app"
)

// The flow-control steps of app.Tx (see app/keys.go, app/dedupe.go): each
// walks the jobs, as everything in this store does.

// keySet is keys as a set.
func keySet(keys []string) map[string]bool {
	m := make(map[string]bool, len(keys))
	for _, k := range keys {
		m[k] = true
	}
	return m
}

// KeyLoads implements app.Tx.
func (t *tx) KeyLoads(queue string, keys []string) (map[string]app.KeyLoad, error) {
	want := keySet(keys)
	out := map[string]app.KeyLoad{}
	for _, j := range t.s.jobs {
		if j.Queue != queue || !want[j.Key] || j.Held {
			continue
		}
		l := out[j.Key]
		switch j.Status {
		case app.StatusProcessing:
			l.Busy++
		case app.StatusQueued:
			l.Ready++
			if !j.RunAt.After(t.now.Add(time.Millisecond)) {
				l.Due++
			}
		default:
			continue
		}
		out[j.Key] = l
	}
	return out, nil
}

// held is the held jobs of each of keys of queue, in claim order.
func (t *tx) held(queue string, keys []string) map[string][]*app.Job {
	want := keySet(keys)
	out := map[string][]*app.Job{}
	for _, j := range t.s.jobs {
		if j.Queue == queue && j.Held && j.Status == app.StatusQueued && want[j.Key] {
			out[j.Key] = append(out[j.Key], j)
		}
	}
	for _, js := range out {
		slices.SortFunc(js, app.ClaimOrder)
	}
	return out
}

// Release implements app.Tx.
func (t *tx) Release(queue string, keys []string, n int, turn bool) (map[string]int, error) {
	out := map[string]int{}
	for k, js := range t.held(queue, keys) {
		for _, j := range js[:min(n, len(js))] {
			nj := j.Clone()
			nj.Held, nj.UpdatedAt = false, t.now
			if turn && nj.RunAt.Before(t.now) {
				nj.RunAt = t.now.Add(time.Millisecond)
			}
			if err := t.putJob(nj); err != nil {
				return nil, err
			}
			out[k]++
		}
	}
	return out, nil
}

// HasHeld implements app.Tx.
func (t *tx) HasHeld(queue string, keys []string) (map[string]bool, error) {
	out := map[string]bool{}
	for k := range t.held(queue, keys) {
		out[k] = true
	}
	return out, nil
}

// KeyBuckets implements app.Tx.
func (t *tx) KeyBuckets(queue string, keys []string) (map[string]app.KeyBucket, error) {
	out := map[string]app.KeyBucket{}
	for _, k := range keys {
		if b, ok := t.s.buckets[app.QueueKey{Queue: queue, Key: k}]; ok {
			out[k] = b
		}
	}
	return out, nil
}

// SetKeyBuckets implements app.Tx.
func (t *tx) SetKeyBuckets(queue string, buckets map[string]app.KeyBucket) error {
	for k, b := range buckets {
		put(t, t.s.buckets, app.QueueKey{Queue: queue, Key: k}, b)
	}
	return nil
}

// WaitingKeys implements app.Tx.
func (t *tx) WaitingKeys(queue string, limit int) ([]string, error) {
	type due struct {
		key  string
		wake time.Time
	}
	var ds []due
	for qk, b := range t.s.buckets {
		if qk.Queue == queue && !b.Wake.IsZero() && !b.Wake.After(t.now) {
			ds = append(ds, due{qk.Key, b.Wake})
		}
	}
	slices.SortFunc(ds, func(a, b due) int {
		if c := a.wake.Compare(b.wake); c != 0 {
			return c
		}
		return strings.Compare(a.key, b.key)
	})
	out := make([]string, 0, min(len(ds), limit))
	for _, d := range ds[:min(len(ds), limit)] {
		out = append(out, d.key)
	}
	return out, nil
}

// BucketQueues implements app.Tx.
func (t *tx) BucketQueues() ([]string, error) {
	seen := map[string]bool{}
	var out []string
	for qk := range t.s.buckets {
		if !seen[qk.Queue] {
			seen[qk.Queue] = true
			out = append(out, qk.Queue)
		}
	}
	slices.Sort(out)
	return out, nil
}

// DeleteBuckets implements app.Tx.
func (t *tx) DeleteBuckets(queue string, before time.Time, limit int) (int, error) {
	n := 0
	for qk, b := range t.s.buckets {
		if n < limit && qk.Queue == queue && b.Wake.IsZero() && b.At.Before(before) {
			del(t, t.s.buckets, qk)
			n++
		}
	}
	return n, nil
}

// HeldQueues implements app.Tx.
func (t *tx) HeldQueues() ([]string, error) {
	seen := map[string]bool{}
	var out []string
	for _, j := range t.s.jobs {
		if j.Held && j.Status == app.StatusQueued && !seen[j.Queue] {
			seen[j.Queue] = true
			out = append(out, j.Queue)
		}
	}
	slices.Sort(out)
	return out, nil
}

// HeldKeys implements app.Tx.
func (t *tx) HeldKeys(queue, after string, limit int) ([]string, error) {
	seen := map[string]bool{}
	var out []string
	for _, j := range t.s.jobs {
		if j.Queue == queue && j.Held && j.Status == app.StatusQueued && j.Key > after && !seen[j.Key] {
			seen[j.Key] = true
			out = append(out, j.Key)
		}
	}
	slices.Sort(out)
	return out[:min(len(out), limit)], nil
}

// Dedupe implements app.Tx.
func (t *tx) Dedupe(queue, sig string, since time.Time, limit int) ([]*app.Job, error) {
	var all []*app.Job
	for _, j := range t.s.jobs {
		if j.Queue == queue && j.Dedupe == sig {
			all = append(all, j)
		}
	}
	slices.SortFunc(all, func(a, b *app.Job) int { return int(b.ID - a.ID) })
	var out []*app.Job
	for _, j := range all[:min(len(all), limit)] {
		if !j.CreatedAt.Before(since) {
			out = append(out, j)
		}
	}
	return copyJobs(out), nil
}

// Debounce implements app.Tx.
func (t *tx) Debounce(j *app.Job, payload json.RawMessage, runAt time.Time) (*app.Job, error) {
	return t.change(j, func(nj *app.Job) {
		nj.Payload, nj.RunAt, nj.UpdatedAt = slices.Clone(payload), runAt.UTC().Truncate(time.Millisecond), t.now
	})
}

// KeyStats implements app.QueueStore.
func (s *Store) KeyStats(ctx context.Context, queue string, limit int) (*app.KeyStats, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	counts := map[string]*app.KeyCount{}
	st := &app.KeyStats{Busiest: []app.KeyCount{}, AtLimit: []app.KeyCount{}}
	for _, j := range s.jobs {
		if j.Queue != queue || j.Key == "" || (j.Status != app.StatusQueued && j.Status != app.StatusProcessing) {
			continue
		}
		c := counts[j.Key]
		if c == nil {
			c = &app.KeyCount{Key: j.Key}
			counts[j.Key] = c
		}
		switch {
		case j.Status == app.StatusProcessing:
			c.Processing++
		case j.Held:
			c.Held++
			c.Queued++
			st.Held++
		default:
			c.Queued++
		}
	}
	return app.RankKeys(st, counts, limit), nil
}

// HeldCounts implements app.QueueStore.
func (s *Store) HeldCounts(ctx context.Context) (map[string]int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]int{}
	for _, j := range s.jobs {
		if j.Held && j.Status == app.StatusQueued {
			out[j.Queue]++
		}
	}
	return out, nil
}
