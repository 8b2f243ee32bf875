package app

import (
	"bytes"
	"encoding/json"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
)

// QueueChoice is the queues one claim takes from: with Weights (one per
// name), each claim's shares are drawn in proportion to them, so over many
// claims the queues get work in that ratio while all have some (asynq's and
// Sidekiq's weighted queues); without, Names is a strict order, each queue
// emptied before the next is asked. JSON writes the first as an object
// ({"critical": 6, "default": 3, "low": 1}) and the second as an array
// (["critical", "default", "low"]).
type QueueChoice struct {
	Names   []string
	Weights []int
}

// MaxClaimQueues bounds the queues one claim names.
const MaxClaimQueues = 20

// UnmarshalJSON reads an object of weights or an array of names.
func (q *QueueChoice) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) > 0 && b[0] == '[' {
		q.Weights = nil
		return json.Unmarshal(b, &q.Names)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return Invalid("queues", "queues is an object of weights or an array of names")
	}
	q.Names, q.Weights = nil, []int{}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return Invalid("queues", "queues is an object of weights or an array of names")
		}
		var w int
		if err := dec.Decode(&w); err != nil {
			return Invalid("queues", "the weight of queue %q is not a whole number", clip(t.(string)))
		}
		q.Names, q.Weights = append(q.Names, t.(string)), append(q.Weights, w)
	}
	return nil
}

// MarshalJSON writes q as UnmarshalJSON reads it.
func (q QueueChoice) MarshalJSON() ([]byte, error) {
	if q.Weights == nil {
		return json.Marshal(q.Names)
	}
	var b bytes.Buffer
	b.WriteByte('{')
	for i, n := range q.Names {
		if i > 0 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(n)
		b.Write(k)
		b.WriteByte(':')
		b.WriteString(strconv.Itoa(q.Weights[i]))
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// ParseQueueChoice reads the command line's form: "critical=6,default=3"
// (weights) or "critical,default" (a strict order); one name is one queue.
func ParseQueueChoice(s string) (*QueueChoice, error) {
	q := &QueueChoice{}
	weighted := strings.Contains(s, "=")
	if weighted {
		q.Weights = []int{}
	}
	for part := range strings.SplitSeq(s, ",") {
		name, w, ok := strings.Cut(strings.TrimSpace(part), "=")
		if ok != weighted {
			return nil, Invalid("queues", "give every queue a weight (critical=6,default=3) or none (critical,default)")
		}
		q.Names = append(q.Names, strings.TrimSpace(name))
		if ok {
			n, err := strconv.Atoi(strings.TrimSpace(w))
			if err != nil {
				return nil, Invalid("queues", "the weight of queue %q is not a whole number", clip(name))
			}
			q.Weights = append(q.Weights, n)
		}
	}
	return q, q.check()
}

// check validates q.
func (q *QueueChoice) check() error {
	if len(q.Names) == 0 {
		return Invalid("queues", "name at least one queue")
	}
	if len(q.Names) > MaxClaimQueues {
		return Invalid("queues", "%d queues; a claim names at most %d", len(q.Names), MaxClaimQueues)
	}
	for i, n := range q.Names {
		if err := ValidateQueue(n); err != nil {
			return Invalid("queues", "%v", err)
		}
		if slices.Index(q.Names, n) != i {
			return Invalid("queues", "queue %q is named twice", n)
		}
		if q.Weights != nil && (q.Weights[i] < 1 || q.Weights[i] > 1000) {
			return Invalid("queues", "the weight of queue %q is %d; give 1 to 1000", n, q.Weights[i])
		}
	}
	return nil
}

// String writes q in the command line's form.
func (q *QueueChoice) String() string {
	parts := make([]string, len(q.Names))
	for i, n := range q.Names {
		parts[i] = n
		if q.Weights != nil {
			parts[i] += "=" + strconv.Itoa(q.Weights[i])
		}
	}
	return strings.Join(parts, ",")
}

// plan orders q's queues for one claim of limit jobs and gives each its
// share (indexes into Names). Weighted: the order is drawn at random, a
// queue's chance to come first in proportion to its weight, and each share
// is the queue's part of limit, at least one, so a claim of one job goes
// to a queue picked by weight. Strict: the given order, all to each.
func (q *QueueChoice) plan(limit int) (order []int, shares []int) {
	order, shares = make([]int, len(q.Names)), make([]int, len(q.Names))
	for i := range order {
		order[i], shares[i] = i, limit
	}
	if q.Weights == nil {
		return order, shares
	}
	total := 0
	for _, w := range q.Weights {
		total += w
	}
	// Weighted sampling without replacement (Efraimidis-Spirakis): sort by
	// u^(1/w), largest first.
	score := make([]float64, len(q.Names))
	for i, w := range q.Weights {
		score[i] = math.Pow(rand.Float64(), 1/float64(w))
		shares[i] = max(1, limit*w/total)
	}
	slices.SortFunc(order, func(a, b int) int {
		switch {
		case score[a] > score[b]:
			return -1
		case score[a] < score[b]:
			return 1
		}
		return a - b
	})
	return order, shares
}
