package sqlite_test

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/queuehq/queue/app"
	"github.com/queuehq/queue/sqlite"
)

// TestSuggestOnAMillionJobs measures GET /api/suggest's reads on a file
// of QUEUE_SUGGEST_JOBS jobs (1,000,000 if set to "1"; skipped if unset,
// as it takes a while to build): kinds walk jobs_kind, tags read the newest
// app.MaxTagScan jobs, and each answers within 50 ms.
func TestSuggestOnAMillionJobs(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("QUEUE_SUGGEST_JOBS"))
	if n == 1 {
		n = 1_000_000
	}
	if n <= 0 {
		t.Skip("QUEUE_SUGGEST_JOBS unset")
	}
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "queue.db")
	s, err := sqlite.Open(ctx, path, sqlite.Options{StoreOptions: app.StoreOptions{Log: zerolog.Nop()}, Sync: "normal"})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	// 60 kinds in 6 families, 500 tags, 8 queues.
	if _, err := db.Exec(`WITH RECURSIVE x(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM x WHERE i < ?)
		INSERT INTO jobs (queue, kind, tags) SELECT 'q' || (i % 8), 'family' || (i % 6) || '.kind' || (i % 60),
			'["tag' || (i % 500) || '","all"]' FROM x`, n); err != nil {
		t.Fatal(err)
	}
	db.Close()
	t.Logf("inserted %d jobs in %v", n, time.Since(start).Round(time.Millisecond))
	if s, err = sqlite.Open(ctx, path, sqlite.Options{StoreOptions: app.StoreOptions{Log: zerolog.Nop()}}); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	db, err = sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, q := range []string{
		`SELECT min(kind) FROM jobs WHERE kind > 'a' AND kind < 'b'`,
	} {
		rows, err := db.Query(`EXPLAIN QUERY PLAN ` + q)
		if err != nil {
			t.Fatal(err)
		}
		var plan []string
		for rows.Next() {
			var id, parent, unused int
			var detail string
			rows.Scan(&id, &parent, &unused, &detail)
			plan = append(plan, detail)
		}
		rows.Close()
		t.Logf("plan of %s: %s", q, strings.Join(plan, "; "))
		if !strings.Contains(strings.Join(plan, " "), "jobs_kind") {
			t.Errorf("the kind walk does not use jobs_kind: %v", plan)
		}
	}
	for _, c := range []struct{ field, prefix string }{
		{"kind", ""}, {"kind", "family3"}, {"kind", "family3.kind33"}, {"kind", "zzz"}, {"tag", ""}, {"tag", "tag4"}, {"tag", "nothing"},
	} {
		best := time.Hour
		var got []string
		for range 5 {
			t0 := time.Now()
			if got, err = s.Values(ctx, c.field, c.prefix, 20); err != nil {
				t.Fatal(err)
			}
			best = min(best, time.Since(t0))
		}
		t.Logf("Values(%s, %q, 20): %d values in %v (best of 5)", c.field, c.prefix, len(got), best)
		if best > 50*time.Millisecond {
			t.Errorf("Values(%s, %q) took %v, over 50 ms", c.field, c.prefix, best)
		}
	}
}
