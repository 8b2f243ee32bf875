-- 0015_jobs_kind.sql: the kinds of the jobs, for the console's suggestions
-- (GET /api/suggest?field=kind walks it one distinct kind at a time) and
-- kind_prefix filters (a range of it), in byte order whatever the
-- database's collation (the conditions compare with COLLATE "C" too).
-- IF NOT EXISTS: a development database migrated while this file was
-- numbered 0016 has the index already.
CREATE INDEX IF NOT EXISTS jobs_kind ON jobs (kind COLLATE "C");
