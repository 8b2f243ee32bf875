-- 0009_workers.sql: the worker registry (issue 26). One row per worker
-- process, seen by every node: what it registered (queues in the command
-- line's form, "critical=6,default=3" or "critical,default"), the counts of
-- its last heartbeat, and the operator's command. A claim of a registered
-- worker reads its row by id; the retention sweep deletes rows by
-- last_seen_at. The API bounds pid to 1..2^31-1 (integer) and the counts
-- to 0..2^53 (bigint; app.MaxWorkerCount).
CREATE TABLE workers (
	id           text        PRIMARY KEY,
	host         text        NOT NULL,
	pid          integer     NOT NULL,
	version      text        NOT NULL DEFAULT '',
	queues       text        NOT NULL,
	kinds        text[]      NOT NULL DEFAULT '{}',
	concurrency  integer     NOT NULL,
	type         text        NOT NULL CHECK (type IN ('http', 'go', 'builtin')),
	command      text        NOT NULL DEFAULT 'run' CHECK (command IN ('run', 'quiet', 'stop')),
	started_at   timestamptz NOT NULL,
	last_seen_at timestamptz NOT NULL,
	in_flight    bigint      NOT NULL DEFAULT 0,
	done         bigint      NOT NULL DEFAULT 0,
	failed       bigint      NOT NULL DEFAULT 0
);
CREATE INDEX workers_last_seen ON workers (last_seen_at);
