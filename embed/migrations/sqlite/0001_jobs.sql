-- 0001_jobs.sql: jobs and dead_letter_jobs, the two tables a job lives in
-- (exactly one at a time), and the records around them. Times are UTC unix
-- milliseconds. Defaults let a hand-written INSERT with only a kind work, so
-- the status guard (package triggers) can be tried from the sqlite3 shell.
CREATE TABLE jobs (
	id               INTEGER PRIMARY KEY AUTOINCREMENT, -- never reused, also not after a DLQ move
	queue            TEXT    NOT NULL DEFAULT 'default',
	kind             TEXT    NOT NULL,
	payload          TEXT    NOT NULL DEFAULT 'null',
	status           TEXT    NOT NULL DEFAULT 'queued',
	priority         INTEGER NOT NULL DEFAULT 0,
	run_at           INTEGER NOT NULL DEFAULT (CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER)),
	attempts         INTEGER NOT NULL DEFAULT 0,
	max_attempts     INTEGER NOT NULL DEFAULT 5,
	timeout_ms       INTEGER NOT NULL DEFAULT 30000,
	expires_at       INTEGER,
	tags             TEXT    NOT NULL DEFAULT '[]',
	idempotency_key  TEXT,
	lease            INTEGER NOT NULL DEFAULT 0,
	lease_expires_at INTEGER,
	worker_id        TEXT,
	cancel_requested INTEGER NOT NULL DEFAULT 0,
	cancel_reason    TEXT,
	errors           TEXT    NOT NULL DEFAULT '[]',
	result           TEXT,
	replayed_from    INTEGER,
	created_at       INTEGER NOT NULL DEFAULT (CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER)),
	updated_at       INTEGER NOT NULL DEFAULT (CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER)),
	started_at       INTEGER,
	finished_at      INTEGER
) STRICT;

-- Claim order over claimable rows only: the claim walks this index from the
-- front, so its cost does not grow with the depth of the queue.
CREATE INDEX jobs_claim ON jobs (queue, priority, run_at, id) WHERE status = 'queued';
-- Scheduled counts and the oldest claimable job of a queue.
CREATE INDEX jobs_queued_run_at ON jobs (queue, run_at) WHERE status = 'queued';
-- Stale-lease recovery and per-queue concurrency limits.
CREATE INDEX jobs_processing ON jobs (lease_expires_at) WHERE status = 'processing';
-- TTL expiry.
CREATE INDEX jobs_expiry ON jobs (expires_at) WHERE status = 'queued' AND expires_at IS NOT NULL;
-- Retention and the finished counts.
CREATE INDEX jobs_finished ON jobs (queue, status, finished_at) WHERE status IN ('done', 'cancelled');
CREATE UNIQUE INDEX jobs_idempotency ON jobs (queue, idempotency_key) WHERE idempotency_key IS NOT NULL;

CREATE TABLE dead_letter_jobs (
	id                      INTEGER PRIMARY KEY, -- the job's id
	queue                   TEXT    NOT NULL,
	kind                    TEXT    NOT NULL,
	payload                 TEXT    NOT NULL,
	priority                INTEGER NOT NULL,
	tags                    TEXT    NOT NULL,
	attempts                INTEGER NOT NULL,
	max_attempts            INTEGER NOT NULL,
	timeout_ms              INTEGER NOT NULL,
	errors                  TEXT    NOT NULL,
	idempotency_key         TEXT,
	original_created_at     INTEGER NOT NULL,
	replayed_from           INTEGER,
	dead_letter_reason      TEXT    NOT NULL CHECK (dead_letter_reason IN ('max_attempts', 'permanent_failure', 'lease_expired', 'admin_move')),
	last_error              TEXT    NOT NULL DEFAULT '',
	moved_to_dead_letter_at INTEGER NOT NULL,
	original_lease          INTEGER NOT NULL,
	resurrection_count      INTEGER NOT NULL DEFAULT 0,
	last_resurrection_at    INTEGER
) STRICT;

CREATE INDEX dead_letter_moved ON dead_letter_jobs (moved_to_dead_letter_at);
CREATE INDEX dead_letter_queue ON dead_letter_jobs (queue, id);
CREATE UNIQUE INDEX dead_letter_idempotency ON dead_letter_jobs (queue, idempotency_key) WHERE idempotency_key IS NOT NULL;

-- Lifecycle events, kept 7 days.
CREATE TABLE events (
	id     INTEGER PRIMARY KEY,
	job_id INTEGER,
	queue  TEXT    NOT NULL DEFAULT '',
	kind   TEXT    NOT NULL DEFAULT '',
	type   TEXT    NOT NULL,
	at     INTEGER NOT NULL,
	data   TEXT
) STRICT;
CREATE INDEX events_job ON events (job_id) WHERE job_id IS NOT NULL;
CREATE INDEX events_at ON events (at);

-- Admin actions, kept 7 days.
CREATE TABLE audit (
	id     INTEGER PRIMARY KEY,
	at     INTEGER NOT NULL,
	actor  TEXT    NOT NULL,
	action TEXT    NOT NULL,
	target TEXT,
	filter TEXT,
	count  INTEGER NOT NULL
) STRICT;
CREATE INDEX audit_at ON audit (at);

-- Queue state that outlives a restart: paused, and the shared rate bucket.
CREATE TABLE queues (
	name        TEXT PRIMARY KEY,
	paused      INTEGER NOT NULL DEFAULT 0,
	paused_at   INTEGER,
	rate_tokens REAL,
	rate_at     INTEGER
) STRICT;

-- One row per periodic fire: the primary key makes each fire enqueue once.
CREATE TABLE periodic_fires (
	entry      TEXT    NOT NULL,
	fire_at    INTEGER NOT NULL,
	job_id     INTEGER,
	created_at INTEGER NOT NULL,
	PRIMARY KEY (entry, fire_at)
) STRICT;

-- Side effects that must not repeat (POST /api/once/{key}).
CREATE TABLE once_records (
	key        TEXT PRIMARY KEY,
	token      TEXT,
	done       INTEGER NOT NULL DEFAULT 0,
	result     TEXT,
	held_until INTEGER,
	created_at INTEGER NOT NULL,
	done_at    INTEGER
) STRICT;

-- Completed and failed attempts per queue and second (unix seconds), for
-- the last-minute stats and the dashboard's hour: one upsert per queue and
-- write transaction, instead of counting job rows.
CREATE TABLE throughput (
	queue     TEXT    NOT NULL,
	second    INTEGER NOT NULL,
	completed INTEGER NOT NULL DEFAULT 0,
	failed    INTEGER NOT NULL DEFAULT 0,
	PRIMARY KEY (queue, second)
) STRICT;
