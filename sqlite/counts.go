package sqlite

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/queuehq/queue/app"
)

// saveCounts writes what a transaction changed in the job counts into the
// database, in that transaction, so that Open reads the counts instead of
// counting the jobs: one prepared upsert per (queue, status) the
// transaction moved jobs in or out of.
func (s *Store) saveCounts(ctx context.Context, deltas map[statusKey]int64) error {
	if len(deltas) == 0 {
		return nil
	}
	var st *sql.Stmt
	for k, d := range deltas {
		if d == 0 {
			continue
		}
		if st == nil {
			var err error
			if st, err = s.stmt(ctx, saveCountSQL); err != nil {
				return err
			}
		}
		if _, err := st.ExecContext(ctx, k.queue, string(k.status), d); err != nil {
			return err
		}
	}
	return nil
}

const saveCountSQL = `INSERT INTO job_counts (queue, status, n) VALUES (?, ?, ?)
	ON CONFLICT (queue, status) DO UPDATE SET n = n + excluded.n`

// countRowsSQL counts the jobs per queue and status the slow way (every
// row): what the counters must equal.
const countRowsSQL = `SELECT queue, status, count(*) FROM jobs GROUP BY queue, status
	UNION ALL SELECT queue, 'dead_letter', count(*) FROM dead_letter_jobs GROUP BY queue`

type querier interface {
	QueryContext(context.Context, string, ...any) (*sql.Rows, error)
}

// readCounts reads q's (queue, status, n) rows into a map, leaving out zeros.
func readCounts(ctx context.Context, db querier, q string) (map[statusKey]int64, error) {
	rows, err := db.QueryContext(ctx, q)
	counts := map[statusKey]int64{}
	_, err = collect(rows, err, func(sc scanner) (k statusKey, err error) {
		var n int64
		if err = sc.Scan(&k.queue, &k.status, &n); err == nil && n != 0 {
			counts[k] = n
		}
		return k, err
	})
	return counts, err
}

// RecountJobs counts every job and dead-letter row and compares the
// counts with the saved counters (job_counts); with repair it rewrites the
// counters that differ, in one write transaction (so no commit of a
// running server slips between the count and the fix). It returns the
// counters that were (or, without repair, are) wrong. A running server
// keeps its own copy of the counters in memory: it sees a repair at its
// next start.
func (s *Store) RecountJobs(ctx context.Context, repair bool) ([]app.CountFix, error) {
	var fixes []app.CountFix
	check := func(db querier) error {
		want, err := readCounts(ctx, db, countRowsSQL)
		if err != nil {
			return err
		}
		got, err := readCounts(ctx, db, `SELECT queue, status, n FROM job_counts`)
		if err != nil {
			return err
		}
		fixes = app.CountFixes(got, want, func(k statusKey) (string, string) { return k.queue, string(k.status) })
		return nil
	}
	if !repair {
		if err := check(s.rdb); err != nil {
			return nil, fmt.Errorf("recount jobs: %w", mapErr(err))
		}
		return fixes, nil
	}
	// A connection of its own (the store may be read-only, and the
	// writer's is busy with its batches): BEGIN IMMEDIATE waits for the
	// writer's transaction in progress and keeps the next one out.
	conn, err := sql.Open("sqlite", dsn(s.path, "FULL", false))
	if err != nil {
		return nil, fmt.Errorf("recount jobs: %w", err)
	}
	defer conn.Close()
	conn.SetMaxOpenConns(1)
	c, err := conn.Conn(ctx)
	if err != nil {
		return nil, fmt.Errorf("recount jobs: %w", mapErr(err))
	}
	defer c.Close()
	if _, err := c.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		return nil, fmt.Errorf("recount jobs: %w", mapErr(err))
	}
	err = check(c)
	for _, f := range fixes {
		if err != nil {
			break
		}
		_, err = c.ExecContext(ctx, `INSERT INTO job_counts (queue, status, n) VALUES (?, ?, ?)
			ON CONFLICT (queue, status) DO UPDATE SET n = excluded.n`, f.Queue, f.Status, f.Rows)
	}
	if err == nil {
		_, err = c.ExecContext(ctx, `DELETE FROM job_counts WHERE n = 0`)
	}
	if err == nil {
		_, err = c.ExecContext(ctx, "COMMIT")
	}
	if err != nil {
		c.ExecContext(context.WithoutCancel(ctx), "ROLLBACK")
		return nil, fmt.Errorf("recount jobs: %w", mapErr(err))
	}
	if s.counts != nil { // this store's own writer keeps counting from the fixed values
		s.countsMu.Lock()
		for _, f := range fixes {
			k := statusKey{f.Queue, app.Status(f.Status)}
			s.counts[k] += f.Rows - f.Counter
			if s.counts[k] == 0 {
				delete(s.counts, k)
			}
		}
		s.countsMu.Unlock()
	}
	return fixes, nil
}
