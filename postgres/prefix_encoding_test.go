package postgres

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/rs/zerolog"

	"github.com/queuehq/queue/app"
)

// A kind prefix's bound (app.PrefixEnd) reaches a database whose encoding
// is not UTF-8: a listing by prefix and the kind suggestions answer on a
// LATIN1 database whose clients speak UTF-8 (a bound past ASCII, as
// U+10FFFF, failed to encode: a 500).
func TestKindPrefixOnALatin1Database(t *testing.T) {
	dsn := testDSN(t)
	ctx := t.Context()
	admin, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(context.Background())
	name := "queue_test_latin1_" + strings.ReplaceAll(strings.TrimPrefix(tempSchema(t, dsn), "queue_test_"), "-", "")
	if _, err := admin.Exec(ctx, `CREATE DATABASE `+name+` ENCODING 'LATIN1' LC_COLLATE 'C' LC_CTYPE 'C' TEMPLATE template0`); err != nil {
		t.Skipf("cannot make a LATIN1 database here: %v", err)
	}
	t.Cleanup(func() {
		c, err := pgx.Connect(context.Background(), dsn)
		if err == nil {
			c.Exec(context.Background(), `DROP DATABASE IF EXISTS `+name+` WITH (FORCE)`)
			c.Close(context.Background())
		}
	})
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	// The client speaks UTF-8 (as pgx's own text does), so the server
	// converts each parameter into LATIN1: one past it fails.
	latin := strings.Replace(dsn, "/"+cfg.Database+"?", "/"+name+"?client_encoding=UTF8&", 1)
	if !strings.Contains(latin, name) {
		t.Skipf("cannot point %q at another database", dsn)
	}
	s, err := Open(ctx, latin, Options{StoreOptions: app.StoreOptions{Log: zerolog.Nop()}, MaxConns: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var enc string
	if err := s.Pool().QueryRow(ctx, `SHOW server_encoding`).Scan(&enc); err != nil || enc != "LATIN1" {
		t.Fatalf("server_encoding %q, %v", enc, err)
	}
	var jobs []app.NewJob
	for _, k := range []string{"email.send", "email.bounce", "emailx", "sms.send"} {
		jobs = append(jobs, app.NewJob{Queue: "q", Kind: k, Payload: json.RawMessage(`{}`), MaxAttempts: 1, Timeout: time.Minute})
	}
	if _, err := app.Submit(ctx, s, app.SubmitRequest{Jobs: jobs}); err != nil {
		t.Fatal(err)
	}
	got, err := s.List(ctx, app.JobFilter{KindPrefix: "email.", Asc: true, Limit: 10})
	if err != nil || len(got) != 2 {
		t.Fatalf("List(kind prefix email.) on LATIN1: %d jobs, %v; want 2", len(got), err)
	}
	kinds, err := s.Values(ctx, "kind", "email", 10)
	if err != nil || !slices.Equal(kinds, []string{"email.bounce", "email.send", "emailx"}) {
		t.Fatalf("Values(kind, email) on LATIN1: %v, %v", kinds, err)
	}
}
