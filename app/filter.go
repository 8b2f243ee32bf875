package app

import (
	"cmp"
	"slices"
	"time"
)

// Listing orders and statuses beside the stored ones (JobFilter).
const (
	// OrderRunAt lists jobs by run_at, then id: the order scheduled and
	// retrying jobs run in.
	OrderRunAt = "run_at"
	// StatusRetrying is a listing's status for queued jobs whose last
	// attempt failed (attempts > 0), due or waiting out their backoff.
	StatusRetrying = "retrying"
)

// PrefixEnd is the exclusive upper bound of the kinds (and tags) that
// start with prefix, compared byte for byte: prefix followed by DEL
// (0x7f). Kinds and tags hold only A-Z a-z 0-9 _ . : - (ValidateKind,
// ValidateTag), every one below DEL, so each that starts with prefix sorts
// below the bound. The bound is ASCII, which every database encoding holds:
// a character past ASCII (U+10FFFF, say) cannot be sent to a PostgreSQL
// database whose encoding lacks it (LATIN1, SQL_ASCII).
func PrefixEnd(prefix string) string { return prefix + "\x7f" }

// InPrefixRange reports whether s lies in the range the SQL stores read for
// prefix, [prefix, PrefixEnd(prefix)): the memory store's test, so that
// the three agree even on a string no kind could be.
func InPrefixRange(s, prefix string) bool { return s >= prefix && s < PrefixEnd(prefix) }

// Cond is one condition of a filter, the form in which a filter's meaning
// is written once: the SQL stores render it as SQL, the memory store
// evaluates it with Match. Field names a column of jobs or
// dead_letter_jobs; Value is an int64, a string or a time.Time (a []int64 or
// []string for OpIn, a string for OpHas).
type Cond struct {
	Field string
	Op    Op
	Value any
}

// Op compares a field with a Cond's value.
type Op string

// The operators of a Cond.
const (
	OpEq  Op = "="
	OpLt  Op = "<"
	OpLe  Op = "<="
	OpGt  Op = ">"
	OpGe  Op = ">="
	OpIn  Op = "in"  // the field equals one of the values
	OpHas Op = "has" // the field (a list: tags) holds the value
	// OpPrefix: the field (a string) starts with the value, byte for byte
	// (no wildcards). The SQL stores render it as a range, field >= value
	// AND field < PrefixEnd(value), which an index can serve.
	OpPrefix Op = "prefix"
	// The key operators compare a row's place in a listing by a time and
	// then id, (Field, id), with a *DeadKey (its MovedAt holds the time of
	// Field): a dead-letter row's (moved_to_dead_letter_at, id), a job's
	// (run_at, id) in the run_at order.
	OpKeyLt Op = "key<"
	OpKeyLe Op = "key<="
	OpKeyGt Op = "key>"
)

// Conds is f as conditions on jobs at time now (what "queued" and
// "scheduled" mean depends on it). Limit and order are not conditions.
func (f JobFilter) Conds(now time.Time) []Cond {
	after := f.AfterID
	if f.Order == OrderRunAt {
		after = 0 // the listing continues after (run_at, id): below
	}
	c := common(f.IDs, f.Queue, f.Kind, f.Tag, f.MaxID, after, f.Asc)
	if f.Order == OrderRunAt && f.AfterID > 0 {
		op := OpKeyLt
		if f.Asc {
			op = OpKeyGt
		}
		c = append(c, Cond{"run_at", op, &DeadKey{MovedAt: f.AfterRunAt, ID: f.AfterID}})
	}
	if f.KindPrefix != "" {
		c = append(c, Cond{"kind", OpPrefix, f.KindPrefix})
	}
	switch f.Status {
	case "":
	case "queued":
		c = append(c, Cond{"status", OpEq, string(StatusQueued)}, Cond{"run_at", OpLe, now})
	case "scheduled":
		c = append(c, Cond{"status", OpEq, string(StatusQueued)}, Cond{"run_at", OpGt, now})
	case StatusRetrying: // due or waiting out its backoff alike
		c = append(c, Cond{"status", OpEq, string(StatusQueued)}, Cond{"attempts", OpGt, int64(0)})
	default:
		c = append(c, Cond{"status", OpEq, f.Status})
	}
	if f.Retried && f.Status != StatusRetrying {
		c = append(c, Cond{"attempts", OpGt, int64(0)})
	}
	if len(f.StatusIn) > 0 {
		in := make([]string, len(f.StatusIn))
		for i, s := range f.StatusIn {
			in[i] = string(s)
		}
		c = append(c, Cond{"status", OpIn, in})
	}
	if !f.StartedAfter.IsZero() {
		c = append(c, Cond{"started_at", OpGt, f.StartedAfter})
	}
	if f.ReplayedFrom > 0 {
		c = append(c, Cond{"replayed_from", OpEq, f.ReplayedFrom})
	}
	if f.Workflow > 0 {
		c = append(c, Cond{"workflow_id", OpEq, f.Workflow})
	}
	if f.Key != "" {
		c = append(c, Cond{"flow_key", OpEq, f.Key})
	}
	if !f.LeaseExpiredBefore.IsZero() {
		c = append(c, Cond{"lease_expires_at", OpLt, f.LeaseExpiredBefore})
	}
	return append(c, f.JobMatch.conds()...)
}

// Conds is f as conditions on dead-letter rows.
func (f DeadFilter) Conds() []Cond {
	c := common(f.IDs, f.Queue, f.Kind, f.Tag, f.MaxID, f.AfterID, f.Asc)
	if f.KindPrefix != "" {
		c = append(c, Cond{"kind", OpPrefix, f.KindPrefix})
	}
	if f.Reason != "" {
		c = append(c, Cond{"dead_letter_reason", OpEq, f.Reason})
	}
	if !f.OlderThan.IsZero() {
		c = append(c, Cond{"moved_to_dead_letter_at", OpLt, f.OlderThan})
	}
	if !f.MovedSince.IsZero() {
		c = append(c, Cond{"moved_to_dead_letter_at", OpGe, f.MovedSince})
	}
	if f.Replayed != nil && *f.Replayed {
		c = append(c, Cond{"resurrection_count", OpGt, int64(0)})
	} else if f.Replayed != nil {
		c = append(c, Cond{"resurrection_count", OpEq, int64(0)})
	}
	if f.Upto != nil {
		c = append(c, Cond{"moved_to_dead_letter_at", OpKeyLe, f.Upto})
	}
	if f.After != nil && f.Asc {
		c = append(c, Cond{"moved_to_dead_letter_at", OpKeyGt, f.After})
	} else if f.After != nil {
		c = append(c, Cond{"moved_to_dead_letter_at", OpKeyLt, f.After})
	}
	return c
}

// common is the conditions both filters share; a listing continues after
// AfterID in its order.
func common(ids []int64, queue, kind, tag string, maxID, afterID int64, asc bool) []Cond {
	var c []Cond
	if len(ids) > 0 {
		c = append(c, Cond{"id", OpIn, ids})
	}
	for _, eq := range [][2]string{{"queue", queue}, {"kind", kind}} {
		if eq[1] != "" {
			c = append(c, Cond{eq[0], OpEq, eq[1]})
		}
	}
	if tag != "" {
		c = append(c, Cond{"tags", OpHas, tag})
	}
	if maxID > 0 {
		c = append(c, Cond{"id", OpLe, maxID})
	}
	if afterID > 0 {
		op := OpLt
		if asc {
			op = OpGt
		}
		c = append(c, Cond{"id", op, afterID})
	}
	return c
}

// Match reports whether a record meets every condition; field gives the
// value of a named field (an int64, string, time.Time or []string).
func Match(conds []Cond, field func(name string) any) bool {
	for _, c := range conds {
		if !c.holds(field(c.Field), field) {
			return false
		}
	}
	return true
}

func (c Cond) holds(v any, field func(string) any) bool {
	switch c.Op {
	case OpKeyLt, OpKeyLe, OpKeyGt:
		k := c.Value.(*DeadKey)
		cmp := v.(time.Time).Compare(k.MovedAt)
		if cmp == 0 {
			cmp = compare(field("id"), k.ID)
		}
		return (c.Op == OpKeyLt && cmp < 0) || (c.Op == OpKeyLe && cmp <= 0) || (c.Op == OpKeyGt && cmp > 0)
	case OpIn:
		switch in := c.Value.(type) {
		case []int64:
			return slices.Contains(in, v.(int64))
		case []string:
			return slices.Contains(in, v.(string))
		}
		return false
	case OpHas:
		return slices.Contains(v.([]string), c.Value.(string))
	case OpPrefix:
		return InPrefixRange(v.(string), c.Value.(string))
	case OpPayload, OpContains:
		return c.holdsLive(v)
	}
	if v == nil { // a time the record lacks (finished_at): as SQL's NULL, no comparison holds
		return false
	}
	cmp := compare(v, c.Value)
	switch c.Op {
	case OpEq:
		return cmp == 0
	case OpLt:
		return cmp < 0
	case OpLe:
		return cmp <= 0
	case OpGt:
		return cmp > 0
	case OpGe:
		return cmp >= 0
	}
	return false
}

// compare orders two values of one of the types a Cond compares.
func compare(a, b any) int {
	switch a := a.(type) {
	case int64:
		return cmp.Compare(a, b.(int64))
	case string:
		return cmp.Compare(a, b.(string))
	case time.Time:
		return a.Compare(b.(time.Time))
	}
	panic("app: a condition on a field of no comparable type")
}
