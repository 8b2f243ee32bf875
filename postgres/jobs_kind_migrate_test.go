package postgres

import "testing"

// 0015_jobs_kind.sql was numbered 0016 for a while: a database migrated
// then has the index but no record of 0015, and must still open (the
// migration finds the index and does nothing).
func TestMigrateJobsKindOverAnIndexAlreadyBuilt(t *testing.T) {
	ctx := t.Context()
	s := mustOpen(t, Options{})
	if _, err := s.Pool().Exec(ctx, `DELETE FROM schema_migrations WHERE name = '0015_jobs_kind.sql'`); err != nil {
		t.Fatal(err)
	}
	s.Close()
	s = mustOpen(t, Options{Schema: s.Schema()})
	var n int
	if err := s.Pool().QueryRow(ctx, `SELECT count(*) FROM schema_migrations WHERE name = '0015_jobs_kind.sql'`).Scan(&n); err != nil || n != 1 {
		t.Fatalf("0015_jobs_kind.sql recorded %d times, %v; want once", n, err)
	}
}
