package sqlite_test

import (
	"database/sql"
	"strings"
	"testing"
	"time"

	"github.com/queuehq/queue/app"
	"github.com/queuehq/queue/sqlite"
)

// The workers page's listing of processing jobs (in run order, newest
// first, 500 at most) reads the partial index of processing jobs, not the
// table: by id, SQLite would walk every job backwards by its key to find
// the few that run (200 ms at a million jobs, on each refresh).
func TestProcessingListingUsesItsIndex(t *testing.T) {
	s := MustOpen(t, sqlite.Options{})
	db, err := sql.Open("sqlite", "file:"+s.Path()+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	plan := func(f app.JobFilter) string {
		q, args := sqlite.ListSQLForTest(f, time.Now())
		rows, err := db.Query(`EXPLAIN QUERY PLAN `+q, args...)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		var plan []string
		for rows.Next() {
			var id, parent, notused int
			var detail string
			rows.Scan(&id, &parent, &notused, &detail)
			plan = append(plan, detail)
		}
		return strings.Join(plan, "\n")
	}
	f := app.JobFilter{Status: string(app.StatusProcessing), Order: app.OrderRunAt, Limit: 500}
	if text := plan(f); !strings.Contains(text, "USING INDEX jobs_processing") {
		t.Errorf("processing jobs in run order: plan\n%s\nwant a read of jobs_processing", text)
	}
	f.Order = ""
	t.Logf("processing jobs by id (what the page does not do): %s", plan(f))
}
