package app

import (
	"context"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Flow control by key, written once over a Tx (docs/flow-control.md).
//
// A job may carry a key (a customer, a document). On a queue that limits
// its keys (key_concurrency, key_rate, fairness = "round_robin"), a keyed
// job is stored held: queued, but out of the claim index, so a claim never
// looks at it. A key's held jobs are released one by one, first in claim
// order, while the key has room: fewer than key_concurrency of its jobs
// hold a place (processing, or queued and released), a token in its rate
// bucket, and, under round robin, none of its jobs released and waiting.
// Room is checked whenever it may have grown: a keyed job submitted, one
// that ends (done, cancelled, dead-lettered), a round-robin claim, a
// bucket refilled. A claim then takes released jobs as it takes any job,
// so its cost does not grow with the keys or their backlog.

// KeyLimits is how a queue limits the jobs of one key; the zero value
// limits nothing, and a keyed job of such a queue is a plain job.
type KeyLimits struct {
	// Concurrency: at most this many jobs of a key hold a place at once
	// (0: no limit). 1 runs a key's jobs strictly one after another.
	Concurrency int
	// Rate releases at most Rate.N jobs of a key per Rate.Per (a token
	// bucket of Rate.N tokens per key).
	Rate KeyRate
	// RoundRobin hands out keys in turn: a key has at most one job
	// released at a time, placed behind the jobs already released.
	RoundRobin bool
}

// Keyed reports whether l limits anything: its queue holds keyed jobs back.
func (l KeyLimits) Keyed() bool { return l.Concurrency > 0 || l.Rate.N > 0 || l.RoundRobin }

// FairnessRoundRobin is the fairness setting that hands out keys in turn.
const FairnessRoundRobin = "round_robin"

// KeyLimits is q's limits of one key.
func (q QueueConfig) KeyLimits() KeyLimits {
	return KeyLimits{Concurrency: q.KeyConcurrency, Rate: q.KeyRate, RoundRobin: q.Fairness == FairnessRoundRobin}
}

// KeyRate is a rate per key: N jobs per Per. The config file and the API
// write it "N/period" ("10/1m", "1/1s"); a bare number is per second.
type KeyRate struct {
	N   int
	Per time.Duration
}

// PerSecond is r as a rate per second (0 if r is not set).
func (r KeyRate) PerSecond() float64 {
	if r.N <= 0 || r.Per <= 0 {
		return 0
	}
	return float64(r.N) / r.Per.Seconds()
}

// String writes r as "N/period" ("" if not set).
func (r KeyRate) String() string {
	if r.N <= 0 {
		return ""
	}
	return strconv.Itoa(r.N) + "/" + FormatDuration(r.Per)
}

// MarshalText writes r as String does.
func (r KeyRate) MarshalText() ([]byte, error) { return []byte(r.String()), nil }

// UnmarshalText reads "N/period" or a number of jobs per second.
func (r *KeyRate) UnmarshalText(b []byte) error {
	v, err := ParseKeyRate(string(b))
	if err != nil {
		return err
	}
	*r = v
	return nil
}

// ParseKeyRate reads a key rate: "10/1m", "1/500ms", or "5" (per second).
func ParseKeyRate(s string) (KeyRate, error) {
	s = strings.TrimSpace(s)
	if s == "" || s == "0" {
		return KeyRate{}, nil
	}
	n, per, ok := strings.Cut(s, "/")
	r := KeyRate{Per: time.Second}
	var err error
	if r.N, err = strconv.Atoi(strings.TrimSpace(n)); err != nil || r.N < 0 || r.N > 1_000_000 {
		if strings.Contains(n, ".") {
			return KeyRate{}, fmt.Errorf("key_rate %q: give whole jobs per period: \"1/2s\" for one every two seconds", s)
		}
		return KeyRate{}, fmt.Errorf("key_rate %q: give jobs per period, like \"10/1m\"", s)
	}
	if ok {
		d, err := ParseDuration(strings.TrimSpace(per))
		if err != nil || d < time.Millisecond || d > 30*24*time.Hour {
			return KeyRate{}, fmt.Errorf("key_rate %q: the period must be a duration between 1ms and 30d, like \"1m\"", s)
		}
		r.Per = d
	}
	if r.N == 0 {
		return KeyRate{}, nil
	}
	return r, nil
}

// KeyLoad is how many jobs of one key hold a place: processing (Busy),
// and queued but released (Ready: claimable, or waiting for a retry or a
// run_at); Due counts the Ready ones due by now plus a millisecond (a
// round-robin turn, see Tx.Release).
type KeyLoad struct{ Busy, Ready, Due int }

// KeyBucket is the rate bucket of one key: Tokens as of At, and Wake, when
// a held job of the key can next be released (zero: none waits for it).
type KeyBucket struct {
	Tokens float64
	At     time.Time
	Wake   time.Time
}

// QueueKey names one key of one queue.
type QueueKey struct{ Queue, Key string }

// held marks nj held when its queue limits its keys: SettleKeys releases
// it, in the same transaction, if its key has room.
func held(tx Tx, nj *NewJob) {
	nj.Held = nj.Key != "" && tx.KeyLimits(nj.Queue).Keyed()
	if nj.Held {
		tx.KeyChanged(nj.Queue, nj.Key)
	}
}

// insert inserts njs by the rules of their keys (see held): every insert
// of the lifecycle goes through it.
func insert(tx Tx, njs ...*NewJob) ([]*Job, error) {
	anyHeld := false
	for _, nj := range njs {
		held(tx, nj)
		anyHeld = anyHeld || nj.Held
	}
	jobs, err := tx.Insert(njs...)
	if err != nil || !anyHeld {
		return jobs, err
	}
	// Release now what the keys have room for, and read back which of the
	// new jobs still wait (of the keys that released any), so the answer
	// says what GET would.
	released, err := releaseChanged(tx)
	if err != nil {
		return nil, err
	}
	byID := map[int64]*Job{}
	var ids []int64
	for _, j := range jobs {
		if j.Held && released[QueueKey{j.Queue, j.Key}] > 0 {
			byID[j.ID] = j
			ids = append(ids, j.ID)
		}
	}
	if len(ids) == 0 {
		return jobs, nil
	}
	now, err := tx.Jobs(JobFilter{IDs: ids, Limit: len(ids)})
	if err != nil {
		return nil, err
	}
	for _, n := range now {
		if j := byID[n.ID]; j != nil {
			j.Held, j.RunAt, j.UpdatedAt = n.Held, n.RunAt, n.UpdatedAt
		}
	}
	return jobs, nil
}

// KeyEnded notes that a job of key in queue no longer holds a place, so
// SettleKeys looks for the key's next job: every way a job ends calls it,
// also the SQL stores' batched completions.
func KeyEnded(tx Tx, queue, key string) {
	if key != "" {
		tx.KeyChanged(queue, key)
	}
}

// SettleKeys releases, before a write commits, the held jobs that the keys
// it changed (see Tx.KeyChanged) have room for. Every store calls it at
// the end of each write.
func SettleKeys(tx Tx) error {
	_, err := releaseChanged(tx)
	return err
}

// releaseChanged is SettleKeys; it says how many jobs it released per key.
func releaseChanged(tx Tx) (map[QueueKey]int, error) {
	changed := tx.ChangedKeys()
	if len(changed) == 0 {
		return nil, nil
	}
	byQueue := map[string][]string{}
	var queues []string
	for _, k := range changed {
		if _, ok := byQueue[k.Queue]; !ok {
			queues = append(queues, k.Queue)
		}
		byQueue[k.Queue] = append(byQueue[k.Queue], k.Key)
	}
	slices.Sort(queues)
	out := map[QueueKey]int{}
	for _, q := range queues {
		lim := tx.KeyLimits(q)
		if !lim.Keyed() {
			continue // nothing held back here (what a lifted limit left, SweepKeys releases)
		}
		keys := byQueue[q]
		slices.Sort(keys)
		got, err := releaseKeys(tx, q, slices.Compact(keys), lim)
		if err != nil {
			return nil, err
		}
		for k, n := range got {
			out[QueueKey{q, k}] = n
		}
	}
	return out, nil
}

// releaseKeys releases the held jobs of keys (distinct, sorted) of queue
// that lim gives room for, and says how many per key (keys with none are
// left out). A
// queue that limits nothing releases every held job (its limits were
// lifted); a round-robin release moves its job behind those released
// before it.
func releaseKeys(tx Tx, queue string, keys []string, lim KeyLimits) (map[string]int, error) {
	if len(keys) == 0 {
		return nil, nil
	}
	room := make(map[string]int, len(keys))
	if !lim.Keyed() {
		for _, k := range keys {
			room[k] = math.MaxInt32
		}
	} else {
		load, err := tx.KeyLoads(queue, keys)
		if err != nil {
			return nil, err
		}
		for _, k := range keys {
			r := math.MaxInt32
			if lim.Concurrency > 0 {
				r = lim.Concurrency - load[k].Busy - load[k].Ready
			}
			if lim.RoundRobin { // a turn: one job ready now (one waiting for its retry does not hold the key's turn)
				r = min(r, 1-load[k].Due)
			}
			if r > 0 {
				room[k] = r
			}
		}
	}
	var buckets map[string]KeyBucket
	if lim.Rate.N > 0 {
		var err error
		if buckets, err = tx.KeyBuckets(queue, keys); err != nil {
			return nil, err
		}
		for _, k := range keys {
			b, had := buckets[k]
			r, ok := room[k]
			if !ok {
				// No room for other reasons: the key's next end looks again,
				// so it does not wait for its bucket (a due wake would have
				// every claim look at it, in vain).
				if had && !b.Wake.IsZero() {
					b.Wake = time.Time{}
					buckets[k] = b
				} else {
					delete(buckets, k)
				}
				continue
			}
			b.Tokens = refill(b, tx.Now(), lim.Rate)
			b.At = tx.Now()
			got := min(r, int(math.Floor(b.Tokens)))
			b.Tokens -= float64(max(got, 0))
			buckets[k] = b
			room[k] = got // may be 0: the key waits for its bucket
		}
	}
	// Release what each key has room for, the keys with the same room in
	// one step (most have room for one: key_concurrency 1, round robin).
	byRoom := map[int][]string{}
	for k, r := range room {
		if r > 0 {
			r = min(r, MaxRelease)
			byRoom[r] = append(byRoom[r], k)
		}
	}
	released := map[string]int{}
	for _, r := range slices.Sorted(maps.Keys(byRoom)) {
		want := byRoom[r]
		slices.Sort(want)
		got, err := tx.Release(queue, want, r, lim.RoundRobin)
		if err != nil {
			return nil, err
		}
		if len(got) > 0 {
			if err := tx.Fault(FaultKeyRelease, 0); err != nil {
				return nil, err
			}
		}
		for k, n := range got {
			released[k] += n
		}
	}
	if lim.Rate.N > 0 && len(buckets) > 0 {
		// Tokens a release did not use go back; a key that used them all and
		// may hold more jobs back waits for its next token.
		held, err := tx.HasHeld(queue, slices.Sorted(maps.Keys(buckets)))
		if err != nil {
			return nil, err
		}
		for k, b := range buckets {
			if _, ok := room[k]; !ok {
				continue // only its wake was cleared
			}
			b.Tokens += float64(room[k] - released[k])
			b.Wake = time.Time{}
			if held[k] && b.Tokens < 1 {
				b.Wake = tx.Now().Add(untilToken(b.Tokens, lim.Rate))
			}
			buckets[k] = b
		}
		if err := tx.SetKeyBuckets(queue, buckets); err != nil {
			return nil, err
		}
	}
	if len(released) > 0 {
		tx.Wake(queue)
	}
	return released, nil
}

// MaxRelease bounds the jobs of one key one release takes (a lifted limit
// over a long backlog goes in steps; SweepKeys comes back for the rest).
const MaxRelease = 10_000

// pruneBuckets deletes the rate buckets no key needs: one untouched for a
// whole period is full again, as a key without one is; with no key_rate
// left, every bucket of the queue without a wake goes. At most limit a
// queue per call (the sweep comes again).
func pruneBuckets(ctx context.Context, w Writer, limit int) error {
	return w.Write(ctx, func(tx Tx) error {
		queues, err := tx.BucketQueues()
		if err != nil {
			return err
		}
		for _, q := range queues {
			before := tx.Now()
			if r := tx.KeyLimits(q).Rate; r.N > 0 {
				before = before.Add(-r.Per)
			}
			if _, err := tx.DeleteBuckets(q, before, limit); err != nil {
				return err
			}
		}
		return nil
	})
}

// refill is the level of bucket b at now under rate r: full when new.
func refill(b KeyBucket, now time.Time, r KeyRate) float64 {
	if b.At.IsZero() {
		return float64(r.N)
	}
	el := now.Sub(b.At).Seconds()
	return math.Min(float64(r.N), b.Tokens+max(el, 0)*r.PerSecond())
}

// untilToken is how long a bucket at tokens waits for a whole token.
func untilToken(tokens float64, r KeyRate) time.Duration {
	if tokens >= 1 {
		return 0
	}
	d := time.Duration((1 - tokens) / r.PerSecond() * float64(time.Second))
	return max(d, time.Millisecond)
}

// wokenKeys releases the held jobs of queue's keys whose rate bucket has
// refilled (at most limit keys), before a claim looks for jobs.
func wokenKeys(tx Tx, queue string, lim KeyLimits, limit int) error {
	if lim.Rate.N == 0 {
		return nil
	}
	keys, err := tx.WaitingKeys(queue, limit)
	if err != nil || len(keys) == 0 {
		return err
	}
	_, err = releaseKeys(tx, queue, keys, lim)
	return err
}

// SweepKeys goes over every key that holds jobs back, limit keys per
// transaction, and releases what their limits give room for: the safety
// net for a limit raised or lifted since the jobs were held (a queue that
// no longer limits its keys releases them all), and for a release missed.
// It returns how many jobs it released.
func SweepKeys(ctx context.Context, w Writer, limit int) (int, error) {
	var queues []string
	err := w.Write(ctx, func(tx Tx) (err error) {
		queues, err = tx.HeldQueues()
		return err
	})
	n := 0
	for _, q := range queues {
		for after, more := "", true; more && err == nil; {
			from, page := after, 0
			err = w.Write(ctx, func(tx Tx) error {
				page, more = 0, false
				keys, err := tx.HeldKeys(q, from, limit)
				if err != nil || len(keys) == 0 {
					return err
				}
				got, err := releaseKeys(tx, q, keys, tx.KeyLimits(q))
				if err != nil {
					return err
				}
				more, after = true, keys[len(keys)-1]
				for _, r := range got {
					page += r
					if r == MaxRelease {
						after = from // a key has more: this page again
					}
				}
				return nil
			})
			n += page
		}
	}
	if err == nil {
		err = pruneBuckets(ctx, w, limit)
	}
	if err != nil {
		return n, fmt.Errorf("sweep keys: %w", err)
	}
	return n, nil
}

// RankKeys fills st's lists from the counts of a queue's keys: the busiest
// (most jobs queued or processing) and those holding jobs back (most held
// first), up to limit each, ties by key.
func RankKeys(st *KeyStats, counts map[string]*KeyCount, limit int) *KeyStats {
	all := make([]KeyCount, 0, len(counts))
	for _, c := range counts {
		all = append(all, *c)
	}
	by := func(n func(KeyCount) int) func(a, b KeyCount) int {
		return func(a, b KeyCount) int {
			if d := n(b) - n(a); d != 0 {
				return d
			}
			return strings.Compare(a.Key, b.Key)
		}
	}
	slices.SortFunc(all, by(func(c KeyCount) int { return c.Queued + c.Processing }))
	st.Busiest = append(st.Busiest[:0], all[:min(len(all), limit)]...)
	slices.SortFunc(all, by(func(c KeyCount) int { return c.Held }))
	st.AtLimit = st.AtLimit[:0]
	for _, c := range all {
		if c.Held == 0 || len(st.AtLimit) == limit {
			break
		}
		st.AtLimit = append(st.AtLimit, c)
	}
	return st
}
