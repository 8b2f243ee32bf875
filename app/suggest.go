package app

import "context"

// Suggest lists up to limit distinct values of field ("kind", "queue" or
// "tag") that start with prefix, in order: the UI's search suggestions.
func (s *Service) Suggest(ctx context.Context, field, prefix string, limit int) ([]string, error) {
	return nil, nil // issue 28: implemented by the store work
}
