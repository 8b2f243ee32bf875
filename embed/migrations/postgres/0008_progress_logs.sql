-- 0008_progress_logs.sql: a job's progress and the log of each attempt (issue 26).
-- Progress is kept with the attempt that reported it (progress_attempt): it
-- shows only while that is the job's current attempt, so a claim writes
-- nothing for it, and it stays after the job ends.
ALTER TABLE jobs ADD COLUMN progress smallint;
ALTER TABLE jobs ADD COLUMN progress_message text;
ALTER TABLE jobs ADD COLUMN progress_at timestamptz;
ALTER TABLE jobs ADD COLUMN progress_attempt integer NOT NULL DEFAULT 0;

-- The lines of each attempt's log, numbered from 1. No foreign key: the
-- lines stay when the job moves to the dead-letter queue (same id); the
-- triggers below delete them with the job.
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
-- the bound, and when a line last came.
CREATE TABLE job_log_attempts (
	job_id    bigint      NOT NULL,
	attempt   integer     NOT NULL,
	next_seq  bigint      NOT NULL,
	bytes     bigint      NOT NULL,
	truncated boolean     NOT NULL DEFAULT false,
	last_at   timestamptz NOT NULL,
	PRIMARY KEY (job_id, attempt)
);

-- A job's log goes with the job: when its row leaves the jobs table and no
-- dead-letter row has its id (a move inserts that row in the same
-- statement or before), or leaves the dead-letter table and is not a job.
-- So retention, a purge and a workflow's deletion take the logs in their
-- own transaction, once per statement over the rows it deleted, and
-- nothing ever scans the logs for orphans.
CREATE FUNCTION job_log_goes() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	DELETE FROM job_logs l USING gone g WHERE l.job_id = g.id
		AND NOT EXISTS (SELECT 1 FROM jobs WHERE id = g.id)
		AND NOT EXISTS (SELECT 1 FROM dead_letter_jobs WHERE id = g.id);
	DELETE FROM job_log_attempts a USING gone g WHERE a.job_id = g.id
		AND NOT EXISTS (SELECT 1 FROM jobs WHERE id = g.id)
		AND NOT EXISTS (SELECT 1 FROM dead_letter_jobs WHERE id = g.id);
	RETURN NULL;
END $$;
CREATE TRIGGER jobs_log_goes AFTER DELETE ON jobs
	REFERENCING OLD TABLE AS gone FOR EACH STATEMENT EXECUTE FUNCTION job_log_goes();
CREATE TRIGGER dead_letter_log_goes AFTER DELETE ON dead_letter_jobs
	REFERENCING OLD TABLE AS gone FOR EACH STATEMENT EXECUTE FUNCTION job_log_goes();
