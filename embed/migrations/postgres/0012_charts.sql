-- 0012_charts.sql: the charts' history (issue 26). A claim counts its jobs
-- and their pickup waits (milliseconds from due to claim: the sum and the
-- longest) in the same per-queue, per-second (and shard) upsert a completion
-- counts into; the leader's maintenance rolls the seconds up into minutes and
-- the minutes into hours (app/charts.go). A minute's depth is its sample of
-- the queue's queued jobs; an hour's, the sum of its minutes' samples.
ALTER TABLE throughput
	ADD COLUMN claimed bigint NOT NULL DEFAULT 0,
	ADD COLUMN wait_ms bigint NOT NULL DEFAULT 0,
	ADD COLUMN wait_max_ms bigint NOT NULL DEFAULT 0;

CREATE TABLE series (
	queue       text        NOT NULL,
	step        integer     NOT NULL, -- seconds: 60 or 3600
	at          timestamptz NOT NULL, -- the step's start
	completed   bigint      NOT NULL DEFAULT 0,
	failed      bigint      NOT NULL DEFAULT 0,
	claimed     bigint      NOT NULL DEFAULT 0,
	wait_ms     bigint      NOT NULL DEFAULT 0,
	wait_max_ms bigint      NOT NULL DEFAULT 0,
	depth       bigint      NOT NULL DEFAULT 0,
	depth_max   bigint      NOT NULL DEFAULT 0,
	PRIMARY KEY (queue, step, at)
);
-- every queue's steps (the dashboard's chart of all queues, retention)
CREATE INDEX series_at ON series (step, at);
