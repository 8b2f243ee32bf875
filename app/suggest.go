package app

import (
	"context"
	"slices"
	"strings"
)

// Suggestion limits (GET /api/suggest).
const (
	DefaultSuggest = 20
	MaxSuggest     = 100
)

// Suggest lists up to limit distinct values of field ("kind", "queue" or
// "tag") that start with prefix, in order: the UI's search suggestions.
// Queues come from the queues the store and the config know (a small
// table); kinds from every job, through an index; tags from the newest
// MaxTagScan jobs (Store.Values). Limit 0 is DefaultSuggest.
func (s *Service) Suggest(ctx context.Context, field, prefix string, limit int) ([]string, error) {
	if limit == 0 {
		limit = DefaultSuggest
	}
	if limit < 1 || limit > MaxSuggest {
		return nil, Invalid("limit", "limit must be between 1 and %d", MaxSuggest)
	}
	if prefix != "" {
		if err := ValidateKind(prefix); err != nil { // queue names' characters are a kind's too
			return nil, Invalid("prefix", "prefix %v", err)
		}
	}
	switch field {
	case "queue":
		qs, err := s.Queues(ctx)
		if err != nil {
			return nil, err
		}
		out := []string{}
		for _, q := range qs {
			if strings.HasPrefix(q.Name, prefix) && len(out) < limit {
				out = append(out, q.Name)
			}
		}
		slices.Sort(out)
		return out, nil
	case "kind", "tag":
		out, err := s.Store.Values(ctx, field, prefix, limit)
		if out == nil {
			out = []string{}
		}
		return out, err
	}
	return nil, Invalid("field", "field %q is not one of kind, queue, tag", clip(field))
}
