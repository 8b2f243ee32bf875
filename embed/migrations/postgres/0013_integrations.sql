-- 0013_integrations.sql: a job's integrations (issue 27, docs/integrations.md);
-- the same columns and meaning as the SQLite schema. callback_url is called
-- when the job ends; traceparent and tracestate are the W3C trace context it
-- was submitted in, which its spans and its workers join. All three are NULL
-- for a job without them. A dead-letter row keeps them, so a replay does too.
-- Nullable columns without a default: adding them rewrites nothing.
ALTER TABLE jobs
	ADD COLUMN callback_url text,
	ADD COLUMN traceparent text,
	ADD COLUMN tracestate text;
ALTER TABLE dead_letter_jobs
	ADD COLUMN callback_url text,
	ADD COLUMN traceparent text,
	ADD COLUMN tracestate text;

-- The jobs that have a callback to make: only they are in it, so a job
-- without one costs it nothing. Built in this migration's transaction,
-- which locks jobs for writes while it reads the table once.
CREATE INDEX jobs_callback ON jobs (id) WHERE callback_url IS NOT NULL;
