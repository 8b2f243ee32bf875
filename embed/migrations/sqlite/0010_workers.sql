-- 0010_workers.sql: the worker registry (issue 26). One row per worker
-- process: what it registered (queues in the command line's form,
-- "critical=6,default=3" or "critical,default"; kinds a JSON list), the
-- counts of its last heartbeat, and the operator's command. A claim of a
-- registered worker reads its row by id; the retention sweep deletes rows
-- by last_seen_at.
CREATE TABLE workers (
	id           TEXT    PRIMARY KEY,
	host         TEXT    NOT NULL,
	pid          INTEGER NOT NULL,
	version      TEXT    NOT NULL DEFAULT '',
	queues       TEXT    NOT NULL,
	kinds        TEXT    NOT NULL DEFAULT '[]',
	concurrency  INTEGER NOT NULL,
	type         TEXT    NOT NULL CHECK (type IN ('http', 'go', 'builtin')),
	command      TEXT    NOT NULL DEFAULT 'run' CHECK (command IN ('run', 'quiet', 'stop')),
	started_at   INTEGER NOT NULL,
	last_seen_at INTEGER NOT NULL,
	in_flight    INTEGER NOT NULL DEFAULT 0,
	done         INTEGER NOT NULL DEFAULT 0,
	failed       INTEGER NOT NULL DEFAULT 0
) STRICT;
CREATE INDEX workers_last_seen ON workers (last_seen_at);
