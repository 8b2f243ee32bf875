-- 0006_flow_control.sql: flow control by key (docs/flow-control.md); the
-- same columns and meaning as the SQLite schema. A job may carry a key
-- (flow_key; NULL: none). On a queue that limits its keys a keyed job is
-- stored held: queued, but out of the claim indexes, so a claim never
-- walks a key's backlog; the transaction that makes room for the key
-- releases its next held job (held = false). dedupe is the signature a
-- unique, debounce or throttle rule stored the job under. The new columns
-- have constant defaults: adding them rewrites nothing. Keys compare byte
-- by byte (COLLATE "C"), as in Go and SQLite: the sweep walks them in
-- that order. The indexes are rebuilt in this migration's transaction,
-- which locks jobs for writes while they build.
ALTER TABLE jobs ADD COLUMN flow_key text COLLATE "C";
ALTER TABLE jobs ADD COLUMN held boolean NOT NULL DEFAULT false;
ALTER TABLE jobs ADD COLUMN dedupe text;
ALTER TABLE dead_letter_jobs ADD COLUMN flow_key text COLLATE "C";

-- The claim indexes leave held jobs out: every claim (and every query
-- meant to walk them) says AND NOT held.
DROP INDEX IF EXISTS jobs_claim;
CREATE INDEX jobs_claim ON jobs (queue, priority, run_at, id) WHERE status = 'queued' AND NOT held;
DROP INDEX IF EXISTS jobs_claim_kind;
CREATE INDEX jobs_claim_kind ON jobs (queue, kind, priority, run_at, id) WHERE status = 'queued' AND NOT held;
-- A key's held jobs in claim order: a release takes the first of each key,
-- the sweep walks the keys, the stats count them.
CREATE INDEX jobs_held ON jobs (queue, flow_key, priority, run_at, id) WHERE status = 'queued' AND held;
-- The jobs of a key that hold a place (processing, or queued and
-- released): a key's load is one range, whatever the queue's depth.
CREATE INDEX jobs_key_load ON jobs (queue, flow_key, status)
	WHERE flow_key IS NOT NULL AND status IN ('queued', 'processing') AND NOT held;
-- The jobs a submission's dedupe rule compares itself with, newest first.
CREATE INDEX jobs_dedupe ON jobs (queue, dedupe, id) WHERE dedupe IS NOT NULL;

-- The rate bucket of each key of a queue with key_rate: tokens as of at,
-- and wake, when a held job of the key can next be released (NULL: none
-- waits for a token). A claim releases the keys whose wake is due.
CREATE TABLE key_buckets (
	queue    text             NOT NULL,
	flow_key text COLLATE "C" NOT NULL,
	tokens   double precision NOT NULL,
	at       timestamptz      NOT NULL,
	wake     timestamptz,
	PRIMARY KEY (queue, flow_key)
);
CREATE INDEX key_buckets_wake ON key_buckets (queue, wake) WHERE wake IS NOT NULL;
