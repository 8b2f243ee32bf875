-- 001_jobs_status.sql: guards jobs.status; keep in step with app.Status and
-- app.Transition. Four values only; dead_letter is never a job status (the
-- row moves to dead_letter_jobs); a job is inserted queued; done and
-- cancelled are terminal. Keeping the same status (a heartbeat) is allowed.
--
-- Each trigger's WHEN clause is the violation, so the body (which picks the
-- message) runs only for a write it refuses; a legal write pays for the
-- WHEN alone. Stores install this at every start, replacing older versions,
-- in one transaction.
DROP TRIGGER IF EXISTS jobs_status_insert;
DROP TRIGGER IF EXISTS jobs_status_update;

CREATE TRIGGER jobs_status_insert BEFORE INSERT ON jobs
WHEN NEW.status IS NOT 'queued'
BEGIN
	SELECT CASE
		WHEN NEW.status = 'dead_letter' THEN
			RAISE(ABORT, 'jobs.status: dead_letter is not a job status; dead-lettered jobs live in dead_letter_jobs')
		WHEN NEW.status IS NULL OR NEW.status NOT IN ('queued', 'processing', 'done', 'cancelled') THEN
			RAISE(ABORT, 'jobs.status: invalid value (want queued, processing, done or cancelled)')
		ELSE
			RAISE(ABORT, 'jobs.status: illegal insert (a job is inserted as queued)')
	END;
END;

-- The WHEN clause spells its sets out as = ... OR = ...: SQLite evaluates an
-- IN list of more than two values through a temporary b-tree, which a
-- trigger builds again for every row (a third of a batch completion's time).
CREATE TRIGGER jobs_status_update BEFORE UPDATE OF status ON jobs
WHEN NEW.status IS NULL OR NOT (
	(NEW.status = OLD.status AND (NEW.status = 'queued' OR NEW.status = 'processing' OR NEW.status = 'done' OR NEW.status = 'cancelled'))
	OR (OLD.status = 'queued' AND (NEW.status = 'processing' OR NEW.status = 'cancelled'))
	OR (OLD.status = 'processing' AND (NEW.status = 'done' OR NEW.status = 'queued' OR NEW.status = 'cancelled')))
BEGIN
	SELECT CASE
		WHEN NEW.status = 'dead_letter' THEN
			RAISE(ABORT, 'jobs.status: dead_letter is not a job status; dead-lettered jobs live in dead_letter_jobs')
		WHEN NEW.status IS NULL OR NEW.status NOT IN ('queued', 'processing', 'done', 'cancelled') THEN
			RAISE(ABORT, 'jobs.status: invalid value (want queued, processing, done or cancelled)')
		ELSE
			RAISE(ABORT, 'jobs.status: illegal transition')
	END;
END;
