-- 0003_drop_queued_run_at.sql: stats read the scheduled count and the oldest
-- claimable job from the claim index (a skip-scan over priorities), so a
-- second index over queued rows is no longer worth its cost on every
-- submission and claim.
DROP INDEX IF EXISTS jobs_queued_run_at;
