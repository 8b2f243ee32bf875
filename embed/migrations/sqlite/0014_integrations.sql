-- 0014_integrations.sql: a job's integrations (issue 27, docs/integrations.md).
-- callback_url is called when the job ends; traceparent and tracestate are
-- the W3C trace context it was submitted in, which its spans and its
-- workers join. All three are NULL for a job without them, so a plain job
-- stores nothing more. A dead-letter row keeps them, so a replay does too.
ALTER TABLE jobs ADD COLUMN callback_url TEXT;
ALTER TABLE jobs ADD COLUMN traceparent TEXT;
ALTER TABLE jobs ADD COLUMN tracestate TEXT;
ALTER TABLE dead_letter_jobs ADD COLUMN callback_url TEXT;
ALTER TABLE dead_letter_jobs ADD COLUMN traceparent TEXT;
ALTER TABLE dead_letter_jobs ADD COLUMN tracestate TEXT;

-- The jobs that have a callback to make: only they are in it, so a job
-- without one costs it nothing.
CREATE INDEX jobs_callback ON jobs (id) WHERE callback_url IS NOT NULL;
