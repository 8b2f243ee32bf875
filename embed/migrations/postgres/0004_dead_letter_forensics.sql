-- 0004_dead_letter_forensics.sql: a dead-letter row keeps the failed
-- attempt's start, run_at and worker, an operator's note (admin moves), and
-- the last job a replay made from it. The DLQ is listed by the time of the
-- move, newest first, with the id to break ties: one index serves the list,
-- its cursor, the dry run's bound and retention.
ALTER TABLE dead_letter_jobs ADD COLUMN started_at timestamptz;
ALTER TABLE dead_letter_jobs ADD COLUMN run_at timestamptz;
ALTER TABLE dead_letter_jobs ADD COLUMN worker_id text;
ALTER TABLE dead_letter_jobs ADD COLUMN note text NOT NULL DEFAULT '';
ALTER TABLE dead_letter_jobs ADD COLUMN replayed_job_id bigint;
DROP INDEX IF EXISTS dead_letter_moved;
CREATE INDEX dead_letter_moved ON dead_letter_jobs (moved_to_dead_letter_at, id);
