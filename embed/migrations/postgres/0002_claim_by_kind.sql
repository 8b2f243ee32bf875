-- 0002_claim_by_kind.sql: claims that name kinds (every Go worker's do) walk
-- this index, one range per kind, so their cost does not grow with a backlog
-- of other kinds in the same queue.
CREATE INDEX IF NOT EXISTS jobs_claim_kind ON jobs (queue, kind, priority, run_at, id) WHERE status = 'queued';
