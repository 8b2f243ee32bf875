package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/queuehq/queue/app"
)

// The job counters live in the database (0016_status_counts.sql): statement
// triggers on jobs and dead_letter_jobs append each statement's net change
// per (queue, status) to job_count_deltas, and fold them into job_counts
// now and then; Stats sums the two. This file checks and repairs them.

// countKey is a counter: a queue's jobs in a status ("dead_letter": its
// dead-letter rows).
type countKey struct{ queue, status string }

const (
	// countersSQL reads the counters (Stats, doctor): the folded counts
	// plus the deltas, zeros left out.
	countersSQL = `SELECT queue, status, sum(n)::bigint FROM (
			SELECT queue, status, n FROM job_counts UNION ALL SELECT queue, status, n FROM job_count_deltas) c
		GROUP BY queue, status HAVING sum(n) <> 0`
	// countRowsSQL counts the rows the slow way: what the counters must equal.
	countRowsSQL = `SELECT queue, status, count(*) FROM jobs GROUP BY queue, status
		UNION ALL SELECT queue, 'dead_letter', count(*) FROM dead_letter_jobs GROUP BY queue`
)

// readCounts reads q's (queue, status, n) rows into a map, leaving out zeros.
func readCounts(ctx context.Context, tx pgx.Tx, q string) (map[countKey]int64, error) {
	rows, err := tx.Query(ctx, q)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[countKey]int64{}
	for rows.Next() {
		var k countKey
		var n int64
		if err := rows.Scan(&k.queue, &k.status, &n); err != nil {
			return nil, err
		}
		if n != 0 {
			out[k] = n
		}
	}
	return out, rows.Err()
}

// RecountJobs implements app.Recounter: it counts every job and dead-letter
// row and compares the counts with the counters. Without repair it reads
// one snapshot and writes nothing. With repair it first locks jobs and
// dead_letter_jobs against writes (SHARE: reads go on; the writes of every
// node wait for the count, about a second per ten million rows), then
// replaces the counters with the counts.
func (s *Store) RecountJobs(ctx context.Context, repair bool) ([]app.CountFix, error) {
	var fixes []app.CountFix
	check := func(tx pgx.Tx) error {
		want, err := readCounts(ctx, tx, countRowsSQL)
		if err != nil {
			return err
		}
		got, err := readCounts(ctx, tx, countersSQL)
		if err != nil {
			return err
		}
		fixes = app.CountFixes(got, want, func(k countKey) (string, string) { return k.queue, k.status })
		return nil
	}
	if !repair {
		if err := s.read(ctx, check); err != nil {
			return nil, fmt.Errorf("recount jobs: %w", mapErr(err))
		}
		return fixes, nil
	}
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return nil, fmt.Errorf("recount jobs: %w", mapErr(err))
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	for _, q := range []string{
		`LOCK TABLE jobs, dead_letter_jobs IN SHARE MODE`,
		`SELECT pg_advisory_xact_lock(hashtext('queue.job_counts'), hashtext(current_schema()))`,
	} {
		if _, err := tx.Exec(ctx, q); err != nil {
			return nil, fmt.Errorf("recount jobs: %w", mapErr(err))
		}
	}
	if err := check(tx); err != nil {
		return nil, fmt.Errorf("recount jobs: %w", mapErr(err))
	}
	if len(fixes) > 0 {
		for _, q := range []string{`DELETE FROM job_count_deltas`, `DELETE FROM job_counts`,
			`INSERT INTO job_counts (queue, status, n) ` + countRowsSQL} {
			if err == nil {
				_, err = tx.Exec(ctx, q)
			}
		}
		if err == nil {
			err = tx.Commit(ctx)
		}
		if err != nil {
			return nil, fmt.Errorf("recount jobs: %w", mapErr(err))
		}
	}
	return fixes, nil
}
