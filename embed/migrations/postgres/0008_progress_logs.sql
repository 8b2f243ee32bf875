-- 0008_progress_logs.sql: a job's progress and the log of each attempt (issue 26).
-- Progress is kept with the attempt that reported it (progress_attempt): it
-- shows only while that is the job's current attempt, so a claim writes
-- nothing for it, and it stays after the job ends.
ALTER TABLE jobs ADD COLUMN progress smallint;
ALTER TABLE jobs ADD COLUMN progress_message text;
ALTER TABLE jobs ADD COLUMN progress_at timestamptz;
ALTER TABLE jobs ADD COLUMN progress_attempt integer NOT NULL DEFAULT 0;

-- The lines of each attempt's log, numbered from 1. No foreign key: the
-- lines stay when the job moves to the dead-letter queue (same id), and
-- the retention pass deletes those of jobs gone from both tables.
CREATE TABLE job_logs (
	job_id  bigint      NOT NULL,
	attempt integer     NOT NULL,
	seq     bigint      NOT NULL,
	at      timestamptz NOT NULL,
	stream  text        NOT NULL CHECK (stream IN ('stdout', 'stderr', 'log')),
	line    text        NOT NULL,
	PRIMARY KEY (job_id, attempt, seq)
);

-- One row per attempt with lines: the next line's number, the bytes kept
-- (each line's length and its newline), whether lines were dropped to keep
-- the bound, and when a line last came (the retention pass reads it).
CREATE TABLE job_log_attempts (
	job_id    bigint      NOT NULL,
	attempt   integer     NOT NULL,
	next_seq  bigint      NOT NULL,
	bytes     bigint      NOT NULL,
	truncated boolean     NOT NULL DEFAULT false,
	last_at   timestamptz NOT NULL,
	PRIMARY KEY (job_id, attempt)
);
