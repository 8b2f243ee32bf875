package memory

import (
	"cmp"
	"slices"
	"time"

	"github.com/queuehq/queue/app"
)

// selectJobs returns the stored jobs (not copies) matching f at now, in id
// order (or f.Order's), at most f.Limit (def if not positive).
func (s *Store) selectJobs(f app.JobFilter, now time.Time, def int) []*app.Job {
	order := func(a, b *app.Job) int { return cmp.Compare(a.ID, b.ID) }
	if f.Order == app.OrderRunAt {
		order = func(a, b *app.Job) int { return cmp.Or(a.RunAt.Compare(b.RunAt), cmp.Compare(a.ID, b.ID)) }
	}
	return pick(s.jobs, f.Conds(now), jobFields, order, f.Asc, f.Limit, def)
}

// selectDead is selectJobs for dead-letter rows.
func (s *Store) selectDead(f app.DeadFilter, def int) []*app.DeadJob {
	return pick(s.dead, f.Conds(), deadFields, func(a, b *app.DeadJob) int { return cmp.Compare(a.ID, b.ID) }, f.Asc, f.Limit, def)
}

// byMove orders dead-letter rows as they are listed: by the time of the
// move, then id.
func byMove(a, b *app.DeadJob) int {
	return cmp.Or(a.MovedAt.Compare(b.MovedAt), cmp.Compare(a.ID, b.ID))
}

// pick returns the rows of m that meet conds in order (descending unless
// asc), at most limit (def if not positive).
func pick[T any](m map[int64]T, conds []app.Cond, fields func(T) func(string) any, order func(a, b T) int, asc bool, limit, def int) []T {
	var out []T
	for _, r := range m {
		if app.Match(conds, fields(r)) {
			out = append(out, r)
		}
	}
	slices.SortFunc(out, order)
	if !asc {
		slices.Reverse(out)
	}
	if limit <= 0 {
		limit = def
	}
	return out[:min(len(out), limit)]
}

// jobFields gives the fields of j that app.Cond names.
func jobFields(j *app.Job) func(string) any {
	return func(name string) any {
		switch name {
		case "status":
			return string(j.Status)
		case "run_at":
			return j.RunAt
		case "attempts":
			return int64(j.Attempts)
		case "started_at": // never: long ago
			if j.StartedAt == nil {
				return time.Time{}
			}
			return *j.StartedAt
		case "workflow_id":
			return j.WorkflowID
		case "flow_key":
			return j.Key
		case "replayed_from":
			if j.ReplayedFrom == nil {
				return int64(0)
			}
			return *j.ReplayedFrom
		case "created_at":
			return j.CreatedAt
		case "finished_at": // none: no bound holds (nil, as SQL's NULL)
			if j.FinishedAt == nil {
				return nil
			}
			return *j.FinishedAt
		case "payload":
			return j.Payload
		case "errors":
			return j.Errors
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
