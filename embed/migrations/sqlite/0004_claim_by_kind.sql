-- 0004_claim_by_kind.sql: the claim index gains the kind after the queue,
-- so a claim that names kinds (every Go worker's does) walks one range per
-- kind and its cost does not grow with a backlog of other kinds. A claim
-- without kinds visits each kind of the queue (a skip-scan) and merges the
-- first rows of each. One index serves both: a second one would cost every
-- submission and claim.
DROP INDEX IF EXISTS jobs_claim;
CREATE INDEX jobs_claim ON jobs (queue, kind, priority, run_at, id) WHERE status = 'queued';
