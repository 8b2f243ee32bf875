package memory

import (
	"slices"
	"time"

	"github.com/queuehq/queue/app"
)

// selectJobs returns the stored jobs (not copies) matching f at now, in id
// order, at most f.Limit (def if not positive).
func (s *Store) selectJobs(f app.JobFilter, now time.Time, def int) []*app.Job {
	return pick(s.jobs, f.Conds(now), jobFields, f.Asc, f.Limit, def)
}

// selectDead is selectJobs for dead-letter rows.
func (s *Store) selectDead(f app.DeadFilter, def int) []*app.DeadJob {
	return pick(s.dead, f.Conds(), deadFields, f.Asc, f.Limit, def)
}

// pick returns the rows of m that meet conds, in id order (descending
// unless asc), at most limit (def if not positive).
func pick[T any](m map[int64]T, conds []app.Cond, fields func(T) func(string) any, asc bool, limit, def int) []T {
	var ids []int64
	for id, r := range m {
		if app.Match(conds, fields(r)) {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	if !asc {
		slices.Reverse(ids)
	}
	if limit <= 0 {
		limit = def
	}
	out := make([]T, min(len(ids), limit))
	for i := range out {
		out[i] = m[ids[i]]
	}
	return out
}

// jobFields gives the fields of j that app.Cond names.
func jobFields(j *app.Job) func(string) any {
	return func(name string) any {
		switch name {
		case "status":
			return string(j.Status)
		case "run_at":
			return j.RunAt
		case "lease_expires_at": // none: never expires
			if j.LeaseExpiresAt == nil {
				return time.Date(9999, 12, 31, 0, 0, 0, 0, time.UTC)
			}
			return *j.LeaseExpiresAt
		}
		return shared(name, j.ID, j.Queue, j.Kind, j.Tags)
	}
}

// deadFields gives the fields of d that app.Cond names.
func deadFields(d *app.DeadJob) func(string) any {
	return func(name string) any {
		switch name {
		case "dead_letter_reason":
			return d.Reason
		case "moved_to_dead_letter_at":
			return d.MovedAt
		case "resurrection_count":
			return int64(d.ResurrectionCount)
		}
		return shared(name, d.ID, d.Queue, d.Kind, d.Tags)
	}
}

func shared(name string, id int64, queue, kind string, tags []string) any {
	switch name {
	case "id":
		return id
	case "queue":
		return queue
	case "kind":
		return kind
	case "tags":
		return tags
	}
	panic("memory: a condition on an unknown field " + name)
}
