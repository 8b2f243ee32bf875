-- 0007_jobs_by_key.sql: the jobs of one key, newest first (GET /api/jobs?key=,
-- the keys page's links), without reading the table. Only keyed jobs are in it.
CREATE INDEX jobs_by_key ON jobs (flow_key, id) WHERE flow_key IS NOT NULL;
