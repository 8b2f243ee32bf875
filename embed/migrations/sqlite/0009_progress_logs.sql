-- 0009_progress_logs.sql: a job's progress and the log of each attempt (issue 26).
-- Progress is kept with the attempt that reported it (progress_attempt): it
-- shows only while that is the job's current attempt, so a claim writes
-- nothing for it, and it stays after the job ends.
ALTER TABLE jobs ADD COLUMN progress INTEGER;
ALTER TABLE jobs ADD COLUMN progress_message TEXT;
ALTER TABLE jobs ADD COLUMN progress_at INTEGER;
ALTER TABLE jobs ADD COLUMN progress_attempt INTEGER NOT NULL DEFAULT 0;

-- The lines of each attempt's log, numbered from 1. No foreign key: the
-- lines stay when the job moves to the dead-letter queue (same id); the
-- triggers below delete them with the job.
CREATE TABLE job_logs (
	job_id  INTEGER NOT NULL,
	attempt INTEGER NOT NULL,
	seq     INTEGER NOT NULL,
	at      INTEGER NOT NULL,
	stream  TEXT    NOT NULL CHECK (stream IN ('stdout', 'stderr', 'log')),
	line    TEXT    NOT NULL,
	PRIMARY KEY (job_id, attempt, seq)
) STRICT, WITHOUT ROWID;

-- One row per attempt with lines: the next line's number, the bytes kept
-- (each line's length and its newline), whether lines were dropped to keep
-- the bound, and when a line last came.
CREATE TABLE job_log_attempts (
	job_id    INTEGER NOT NULL,
	attempt   INTEGER NOT NULL,
	next_seq  INTEGER NOT NULL,
	bytes     INTEGER NOT NULL,
	truncated INTEGER NOT NULL DEFAULT 0,
	last_at   INTEGER NOT NULL,
	PRIMARY KEY (job_id, attempt)
) STRICT, WITHOUT ROWID;

-- A job's log goes with the job: when its row leaves the jobs table and no
-- dead-letter row has its id (a move inserts that row first), or leaves the
-- dead-letter table and is not a job. So retention, a purge and a
-- workflow's deletion take the logs in their own transaction, at a few
-- index probes a row, and nothing ever scans the logs for orphans.
CREATE TRIGGER jobs_log_goes AFTER DELETE ON jobs
WHEN NOT EXISTS (SELECT 1 FROM dead_letter_jobs WHERE id = OLD.id)
BEGIN
	DELETE FROM job_logs WHERE job_id = OLD.id;
	DELETE FROM job_log_attempts WHERE job_id = OLD.id;
END;
CREATE TRIGGER dead_letter_log_goes AFTER DELETE ON dead_letter_jobs
WHEN NOT EXISTS (SELECT 1 FROM jobs WHERE id = OLD.id)
BEGIN
	DELETE FROM job_logs WHERE job_id = OLD.id;
	DELETE FROM job_log_attempts WHERE job_id = OLD.id;
END;
