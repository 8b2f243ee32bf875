-- 0013_charts.sql: the charts' history (issue 26). A claim counts its jobs
-- and their pickup waits (milliseconds from due to claim: the sum and the
-- longest) in the same per-queue, per-second upsert a completion counts
-- into; the leader's maintenance rolls the seconds up into minutes and the
-- minutes into hours (app/charts.go). A minute's depth is its sample of the
-- queue's queued jobs; an hour's, the sum of its minutes' samples.
ALTER TABLE throughput ADD COLUMN claimed INTEGER NOT NULL DEFAULT 0;
ALTER TABLE throughput ADD COLUMN wait_ms INTEGER NOT NULL DEFAULT 0;
ALTER TABLE throughput ADD COLUMN wait_max_ms INTEGER NOT NULL DEFAULT 0;

CREATE TABLE series (
	queue       TEXT    NOT NULL,
	step        INTEGER NOT NULL, -- seconds: 60 or 3600
	at          INTEGER NOT NULL, -- the step's start, unix ms
	completed   INTEGER NOT NULL DEFAULT 0,
	failed      INTEGER NOT NULL DEFAULT 0,
	claimed     INTEGER NOT NULL DEFAULT 0,
	wait_ms     INTEGER NOT NULL DEFAULT 0,
	wait_max_ms INTEGER NOT NULL DEFAULT 0,
	depth       INTEGER NOT NULL DEFAULT 0,
	depth_max   INTEGER NOT NULL DEFAULT 0,
	PRIMARY KEY (queue, step, at)
) STRICT;
-- every queue's steps (the dashboard's chart of all queues, retention)
CREATE INDEX series_at ON series (step, at);
