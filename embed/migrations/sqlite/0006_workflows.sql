-- 0006_workflows.sql: workflows, jobs that depend on jobs. A step waits in
-- workflow_steps until its last dependency is resolved; the transaction
-- that resolves it inserts its job into jobs (with workflow_id and step),
-- so the claim never sees a waiting step and jobs keeps its four statuses.
ALTER TABLE jobs ADD COLUMN workflow_id INTEGER;
ALTER TABLE jobs ADD COLUMN step TEXT;
ALTER TABLE dead_letter_jobs ADD COLUMN workflow_id INTEGER;
ALTER TABLE dead_letter_jobs ADD COLUMN step TEXT;
-- A workflow's cancel and its retention find its jobs.
CREATE INDEX jobs_workflow ON jobs (workflow_id) WHERE workflow_id IS NOT NULL;

CREATE TABLE workflows (
	id           INTEGER PRIMARY KEY AUTOINCREMENT,
	name         TEXT    NOT NULL,
	tags         TEXT    NOT NULL DEFAULT '[]',
	status       TEXT    NOT NULL CHECK (status IN ('running', 'blocked', 'done', 'cancelled')),
	step_count   INTEGER NOT NULL,
	done_count   INTEGER NOT NULL DEFAULT 0,
	failed_count INTEGER NOT NULL DEFAULT 0,
	created_at   INTEGER NOT NULL,
	updated_at   INTEGER NOT NULL,
	finished_at  INTEGER
) STRICT;
CREATE INDEX workflows_status ON workflows (status, id);
CREATE INDEX workflows_finished ON workflows (finished_at) WHERE status IN ('done', 'cancelled');

CREATE TABLE workflow_steps (
	workflow_id INTEGER NOT NULL,
	name        TEXT    NOT NULL,
	position    INTEGER NOT NULL, -- the order the steps were given in
	queue       TEXT    NOT NULL,
	kind        TEXT    NOT NULL,
	status      TEXT    NOT NULL CHECK (status IN ('waiting', 'released', 'done', 'dead_letter', 'cancelled')),
	job_id      INTEGER,
	waiting     INTEGER NOT NULL, -- dependencies not yet resolved
	failed      INTEGER NOT NULL DEFAULT 0,
	result      TEXT,
	error       TEXT    NOT NULL DEFAULT '',
	spec        TEXT    NOT NULL, -- the job it becomes (app.StepJob), but its payload
	payload     TEXT    NOT NULL, -- byte for byte as submitted
	released_at INTEGER,
	finished_at INTEGER,
	PRIMARY KEY (workflow_id, name)
) STRICT, WITHOUT ROWID;

-- One row per dependency: the steps waiting on a parent, found from it;
-- a step's dependencies, found from it in the order given (its
-- depends_on). Not a column of the step: a fan-in's callback has thousands,
-- and SQLite rewrites a whole row on every update of its waiting count.
CREATE TABLE workflow_edges (
	workflow_id INTEGER NOT NULL,
	parent      TEXT    NOT NULL,
	child       TEXT    NOT NULL,
	continue    INTEGER NOT NULL DEFAULT 0, -- on_failure "continue"
	ord         INTEGER NOT NULL,           -- its place in the child's depends_on
	PRIMARY KEY (workflow_id, parent, child)
) STRICT, WITHOUT ROWID;
CREATE INDEX workflow_edges_child ON workflow_edges (workflow_id, child, ord);
