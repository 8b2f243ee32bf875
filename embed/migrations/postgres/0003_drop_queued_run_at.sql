-- 0003_drop_queued_run_at.sql: the stats read the queued and scheduled
-- counts and the oldest claimable job through jobs_claim, and max_queued
-- counts through it too, so a third index over queued rows is no longer
-- worth its cost on every submission and claim (as on SQLite).
DROP INDEX IF EXISTS jobs_queued_run_at;
