package postgres

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/rs/zerolog"

	"github.com/queuehq/queue/app"
	"github.com/queuehq/queue/app/storetest"
)

// dsnVar names the variable holding the test database's address.
const dsnVar = "QUEUE_TEST_POSTGRES_DSN"

// testDSN returns the test database's address from QUEUE_TEST_POSTGRES_DSN.
// Without it the test is skipped, except in CI (CI=true), where it fails:
// CI must never pass with the PostgreSQL suite skipped.
func testDSN(tb testing.TB) string {
	tb.Helper()
	dsn := os.Getenv(dsnVar)
	if dsn == "" {
		if os.Getenv("CI") == "true" {
			tb.Fatalf("%s is not set; CI must run the PostgreSQL tests (e.g. %s=postgres://postgres@127.0.0.1:5432/test?sslmode=disable)", dsnVar, dsnVar)
		}
		tb.Skipf("%s is not set; skipping the PostgreSQL tests (e.g. %s=postgres://postgres@127.0.0.1:5432/test?sslmode=disable)", dsnVar, dsnVar)
	}
	return dsn
}

// tempSchema returns the name of a fresh schema that is dropped (with
// everything in it) at cleanup; the store creates it when it opens.
func tempSchema(tb testing.TB, dsn string) string {
	tb.Helper()
	b := make([]byte, 6)
	rand.Read(b)
	schema := "queue_test_" + hex.EncodeToString(b)
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, dsn)
		if err != nil {
			tb.Errorf("drop schema %s: %v", schema, err)
			return
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, `DROP SCHEMA IF EXISTS `+pgx.Identifier{schema}.Sanitize()+` CASCADE`); err != nil {
			tb.Errorf("drop schema %s: %v", schema, err)
		}
	})
	return schema
}

// mustOpen opens a migrated store in a schema of its own (opts.Schema, or a
// fresh one dropped at cleanup) and closes it at cleanup.
func mustOpen(tb testing.TB, opts Options) *Store {
	tb.Helper()
	dsn := testDSN(tb)
	if opts.Schema == "" {
		opts.Schema = tempSchema(tb, dsn)
	}
	if opts.MaxConns == 0 {
		opts.MaxConns = 4
	}
	if opts.Log.GetLevel() == zerolog.TraceLevel { // zero Logger: to the test
		opts.Log = zerolog.New(zerolog.NewTestWriter(tb)).Level(zerolog.WarnLevel)
	}
	s, err := Open(context.Background(), dsn, opts)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { s.Close() })
	return s
}

func TestStore(t *testing.T) {
	testDSN(t) // skip (or, in CI, fail) once, not in every case
	storetest.Run(t, func(t *testing.T, opts app.StoreOptions) app.Store {
		return mustOpen(t, Options{StoreOptions: opts})
	})
}
