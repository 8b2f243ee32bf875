package commands

import (
	"context"

	"github.com/queuehq/queue/app"
	"github.com/queuehq/queue/postgres"
)

// openPostgres opens the PostgreSQL store at dsn (postgres://...). A schema
// other than the default comes from the address: search_path=... or
// options=-csearch_path=... .
func openPostgres(ctx context.Context, dsn string, opts app.StoreOptions) (app.Store, error) {
	s, err := postgres.Open(ctx, dsn, postgres.Options{StoreOptions: opts})
	if err != nil {
		return nil, err // not a typed nil inside the interface
	}
	return s, nil
}
