package commands

import (
	"context"
	"errors"

	"github.com/queuehq/queue/app"
)

func openPostgres(ctx context.Context, dsn string, opts app.StoreOptions) (app.Store, error) {
	return nil, errors.New("the PostgreSQL store is not in this build yet")
}
