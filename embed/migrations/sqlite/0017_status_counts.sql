-- 0017_status_counts.sql: the jobs of each queue per status (and the
-- dead-letter rows, as status 'dead_letter'), so that opening a database
-- reads a few rows instead of counting every job (751-874 ms at a million
-- queued). Every write transaction adds its changes to the rows it touches
-- just before it commits (sqlite/counts.go); `queue doctor --repair`
-- recounts them. Filled from the jobs once, here.
CREATE TABLE job_counts (
	queue  TEXT    NOT NULL,
	status TEXT    NOT NULL,
	n      INTEGER NOT NULL,
	PRIMARY KEY (queue, status)
) STRICT, WITHOUT ROWID;

INSERT INTO job_counts (queue, status, n)
	SELECT queue, status, count(*) FROM jobs GROUP BY queue, status
	UNION ALL SELECT queue, 'dead_letter', count(*) FROM dead_letter_jobs GROUP BY queue;
