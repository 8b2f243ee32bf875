-- 0016_status_counts.sql: the jobs of each queue per status (and the
-- dead-letter rows, as status 'dead_letter'), so that Stats reads a few
-- rows instead of counting ten million.
--
-- Many nodes write at once, so no write may update a shared row (every
-- submit adding to one (queue, 'queued') row would serialize all submits
-- on its lock): each statement that moves jobs appends its net change per
-- (queue, status) to job_count_deltas (inserts take no row locks), and
-- now and then (about one statement in 64) a statement that can take the
-- fold lock without waiting folds the deltas into job_counts (one folder
-- at a time; the others skip). Stats sums both tables: a fold moves rows
-- from one to the other in one transaction, so any snapshot sums right.
--
-- Statement triggers with transition tables see every path that changes
-- job rows (the store's writes, imports, retention deletes, restores,
-- hand-written SQL) at one trigger call per statement, not per row.
-- `queue doctor --repair` recounts. Filled from the rows once, here.
CREATE TABLE job_counts (
	queue  text   NOT NULL,
	status text   NOT NULL,
	n      bigint NOT NULL,
	PRIMARY KEY (queue, status)
);

CREATE TABLE job_count_deltas (
	queue  text   NOT NULL,
	status text   NOT NULL,
	n      bigint NOT NULL
);

-- job_counts_fold folds the deltas into the counts when it can take the
-- fold lock at once (and does nothing when another transaction holds it).
CREATE FUNCTION job_counts_fold() RETURNS void LANGUAGE plpgsql AS $$
BEGIN
	IF pg_try_advisory_xact_lock(hashtext('queue.job_counts'), hashtext(current_schema())) THEN
		WITH d AS (DELETE FROM job_count_deltas RETURNING queue, status, n)
		INSERT INTO job_counts (queue, status, n)
			SELECT queue, status, sum(n) FROM d GROUP BY queue, status
		ON CONFLICT (queue, status) DO UPDATE SET n = job_counts.n + excluded.n;
	END IF;
END $$;

CREATE FUNCTION job_counts_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	IF TG_TABLE_NAME = 'dead_letter_jobs' THEN
		INSERT INTO job_count_deltas (queue, status, n)
			SELECT queue, 'dead_letter', count(*) FROM new_rows GROUP BY queue;
	ELSE
		INSERT INTO job_count_deltas (queue, status, n)
			SELECT queue, status, count(*) FROM new_rows GROUP BY queue, status;
	END IF;
	IF random() < 1.0 / 64 THEN
		PERFORM job_counts_fold();
	END IF;
	RETURN NULL;
END $$;

CREATE FUNCTION job_counts_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	IF TG_TABLE_NAME = 'dead_letter_jobs' THEN
		INSERT INTO job_count_deltas (queue, status, n)
			SELECT queue, 'dead_letter', -count(*) FROM old_rows GROUP BY queue;
	ELSE
		INSERT INTO job_count_deltas (queue, status, n)
			SELECT queue, status, -count(*) FROM old_rows GROUP BY queue, status;
	END IF;
	IF random() < 1.0 / 64 THEN
		PERFORM job_counts_fold();
	END IF;
	RETURN NULL;
END $$;

-- An update that leaves every job's queue and status as they were (a
-- heartbeat, a progress report) appends nothing.
CREATE FUNCTION job_counts_updated() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	INSERT INTO job_count_deltas (queue, status, n)
		SELECT queue, status, sum(n) FROM (
			SELECT queue, status, -1 AS n FROM old_rows
			UNION ALL SELECT queue, status, 1 FROM new_rows) c
		GROUP BY queue, status HAVING sum(n) <> 0;
	IF random() < 1.0 / 64 THEN
		PERFORM job_counts_fold();
	END IF;
	RETURN NULL;
END $$;

CREATE TRIGGER jobs_count_insert AFTER INSERT ON jobs
	REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION job_counts_inserted();
CREATE TRIGGER jobs_count_delete AFTER DELETE ON jobs
	REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION job_counts_deleted();
CREATE TRIGGER jobs_count_update AFTER UPDATE ON jobs
	REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION job_counts_updated();
CREATE TRIGGER dead_count_insert AFTER INSERT ON dead_letter_jobs
	REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION job_counts_inserted();
CREATE TRIGGER dead_count_delete AFTER DELETE ON dead_letter_jobs
	REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION job_counts_deleted();

INSERT INTO job_counts (queue, status, n)
	SELECT queue, status, count(*) FROM jobs GROUP BY queue, status
	UNION ALL SELECT queue, 'dead_letter', count(*) FROM dead_letter_jobs GROUP BY queue;
