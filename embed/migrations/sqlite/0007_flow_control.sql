-- 0007_flow_control.sql: flow control by key (docs/flow-control.md).
-- A job's key (flow_key), whether it is held back until its key has room
-- (held: queued, but out of the claim index, so a claim never walks a
-- flooding key's backlog), and the signature a unique, debounce or
-- throttle rule stored it under (dedupe). A dead-letter row keeps the key,
-- so a replay does too.
ALTER TABLE jobs ADD COLUMN flow_key TEXT;
ALTER TABLE jobs ADD COLUMN held INTEGER NOT NULL DEFAULT 0;
ALTER TABLE jobs ADD COLUMN dedupe TEXT;
ALTER TABLE dead_letter_jobs ADD COLUMN flow_key TEXT;

-- The claim index holds released jobs only.
DROP INDEX IF EXISTS jobs_claim;
CREATE INDEX jobs_claim ON jobs (queue, kind, priority, run_at, id) WHERE status = 'queued' AND held = 0;
-- A key's held jobs in claim order: the next to release is the first.
CREATE INDEX jobs_held ON jobs (queue, flow_key, priority, run_at, id) WHERE status = 'queued' AND held = 1;
-- A key's jobs that hold a place (processing, or released and queued).
CREATE INDEX jobs_key_live ON jobs (queue, flow_key, status) WHERE flow_key IS NOT NULL AND held = 0 AND status IN ('queued', 'processing');
-- The jobs of one dedupe signature, newest first.
CREATE INDEX jobs_dedupe ON jobs (queue, dedupe, id) WHERE dedupe IS NOT NULL;

-- The rate bucket of each key of a queue with a key_rate, and when a key
-- that holds jobs back gets its next token (wake).
CREATE TABLE key_buckets (
	queue    TEXT    NOT NULL,
	flow_key TEXT    NOT NULL,
	tokens   REAL    NOT NULL,
	at       INTEGER NOT NULL,
	wake     INTEGER,
	PRIMARY KEY (queue, flow_key)
) STRICT, WITHOUT ROWID;
CREATE INDEX key_buckets_wake ON key_buckets (queue, wake) WHERE wake IS NOT NULL;
