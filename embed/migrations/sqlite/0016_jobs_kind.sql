-- 0016_jobs_kind.sql: the kinds of the jobs, for the console's suggestions
-- (GET /api/suggest?field=kind walks it one distinct kind at a time) and
-- kind_prefix filters (a range of it). A job's kind never changes, so it
-- costs a job one entry and nothing on its way through its states.
CREATE INDEX IF NOT EXISTS jobs_kind ON jobs (kind);
