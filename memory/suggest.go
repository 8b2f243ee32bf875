package memory

import (
	"context"
	"fmt"
	"slices"

	"github.com/queuehq/queue/app"
)

// Values implements app.Store: the kinds of every job, the tags of the
// newest app.MaxTagScan, as the SQL stores read them.
func (s *Store) Values(ctx context.Context, field, prefix string, limit int) ([]string, error) {
	if field != "kind" && field != "tag" {
		return nil, fmt.Errorf("values of %q: not a field with values", field)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	seen := map[string]bool{}
	ids := make([]int64, 0, len(s.jobs))
	for id := range s.jobs {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	slices.Reverse(ids)
	for i, id := range ids {
		j := s.jobs[id]
		if field == "kind" && app.InPrefixRange(j.Kind, prefix) {
			seen[j.Kind] = true
		}
		if field == "tag" && i < app.MaxTagScan {
			for _, t := range j.Tags {
				if app.InPrefixRange(t, prefix) {
					seen[t] = true
				}
			}
		}
	}
	out := make([]string, 0, len(seen))
	for v := range seen {
		out = append(out, v)
	}
	slices.Sort(out)
	return out[:min(len(out), limit)], nil
}
