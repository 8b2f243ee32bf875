package sqlite_test

import (
	"database/sql"
	"path/filepath"
	"testing"

	"github.com/rs/zerolog"

	"github.com/queuehq/queue/app"
	"github.com/queuehq/queue/sqlite"
)

// A database that has the jobs_kind index without the record of its
// migration (as a development database of the release's making could)
// still opens: the migration finds the index and does nothing.
func TestMigrateJobsKindOverAnIndexAlreadyBuilt(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "queue.db")
	opts := sqlite.Options{StoreOptions: app.StoreOptions{Log: zerolog.Nop()}, Sync: "normal"}
	s, err := sqlite.Open(ctx, path, opts)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`DELETE FROM schema_migrations WHERE name = '0016_jobs_kind.sql'`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	if s, err = sqlite.Open(ctx, path, opts); err != nil {
		t.Fatalf("reopen with jobs_kind built and 0016 unrecorded: %v", err)
	}
	s.Close()
}
