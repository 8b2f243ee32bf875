package app

import "context"

// The keys of a queue as its page and GET /api/queues/{queue}/keys show
// them (see KeyStats), and the jobs held back for their keys, for
// /metrics.

// KeyStats limits: how many keys each list of Service.KeyStats holds.
const (
	DefaultKeyStatsLimit = 20
	MaxKeyStatsLimit     = 100
)

// KeyStats reads queue's keys: how many of its jobs wait for their key to
// have room, the keys at their limit and the busiest keys, up to limit
// keys in each list (0: DefaultKeyStatsLimit; at most MaxKeyStatsLimit).
// The lists are never nil.
func (s *Service) KeyStats(ctx context.Context, queue string, limit int) (*KeyStats, error) {
	if err := ValidateQueue(queue); err != nil {
		return nil, Invalid("queue", "%v", err)
	}
	if limit == 0 {
		limit = DefaultKeyStatsLimit
	}
	if limit < 1 || limit > MaxKeyStatsLimit {
		return nil, Invalid("limit", "limit must be between 1 and %d", MaxKeyStatsLimit)
	}
	st, err := s.Store.KeyStats(ctx, queue, limit)
	if err != nil {
		return nil, err
	}
	if st.Busiest == nil {
		st.Busiest = []KeyCount{}
	}
	if st.AtLimit == nil {
		st.AtLimit = []KeyCount{}
	}
	return st, nil
}

// HeldCounts counts the jobs each queue holds back for their keys (queues
// holding none are left out).
func (s *Service) HeldCounts(ctx context.Context) (map[string]int, error) {
	return s.Store.HeldCounts(ctx)
}
