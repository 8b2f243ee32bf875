package commands

import (
	"context"
	"strings"

	"github.com/rs/zerolog"

	"github.com/queuehq/queue/app"
	"github.com/queuehq/queue/memory"
	"github.com/queuehq/queue/sqlite"
)

// OpenStore opens the store a --db value names: "memory", a postgres://
// address, or a SQLite file path.
func OpenStore(ctx context.Context, dsn, sync string, opts app.StoreOptions) (app.Store, error) {
	switch {
	case dsn == "memory":
		return memory.New(opts), nil
	case strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://"):
		return openPostgres(ctx, dsn, opts)
	case strings.Contains(dsn, "://"):
		return nil, usagef("--db %q: unsupported; give a SQLite file path, postgres://..., or memory", redactDSN(dsn))
	}
	return sqlite.Open(ctx, dsn, sqlite.Options{StoreOptions: opts, Sync: sync})
}

// leaderFunc runs fn while this node leads: with a store that is an
// app.Leader (PostgreSQL), while it holds the maintenance lock; otherwise always.
func leaderFunc(s app.Store) func(ctx context.Context, log zerolog.Logger, fn func(ctx context.Context)) {
	if l, ok := s.(app.Leader); ok {
		return l.Lead
	}
	return func(ctx context.Context, _ zerolog.Logger, fn func(ctx context.Context)) { fn(ctx) }
}
