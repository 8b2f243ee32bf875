-- 001_jobs_status.sql: guards jobs.status; keep in step with app.Status and
-- app.Transition. Four values only; dead_letter is never a job status (the
-- row moves to dead_letter_jobs); a job is inserted queued; done and
-- cancelled are terminal. Keeping the same status (a heartbeat) is allowed.
CREATE TRIGGER IF NOT EXISTS jobs_status_insert BEFORE INSERT ON jobs
BEGIN
	SELECT CASE
		WHEN NEW.status = 'dead_letter' THEN
			RAISE(ABORT, 'jobs.status: dead_letter is not a job status; dead-lettered jobs live in dead_letter_jobs')
		WHEN NEW.status NOT IN ('queued', 'processing', 'done', 'cancelled') THEN
			RAISE(ABORT, 'jobs.status: invalid value (want queued, processing, done or cancelled)')
		WHEN NEW.status <> 'queued' THEN
			RAISE(ABORT, 'jobs.status: illegal insert (a job is inserted as queued)')
	END;
END;

CREATE TRIGGER IF NOT EXISTS jobs_status_update BEFORE UPDATE OF status ON jobs
BEGIN
	SELECT CASE
		WHEN NEW.status = 'dead_letter' THEN
			RAISE(ABORT, 'jobs.status: dead_letter is not a job status; dead-lettered jobs live in dead_letter_jobs')
		WHEN NEW.status IS NULL OR NEW.status NOT IN ('queued', 'processing', 'done', 'cancelled') THEN
			RAISE(ABORT, 'jobs.status: invalid value (want queued, processing, done or cancelled)')
		WHEN NEW.status = OLD.status THEN NULL
		WHEN OLD.status = 'queued' AND NEW.status IN ('processing', 'cancelled') THEN NULL
		WHEN OLD.status = 'processing' AND NEW.status IN ('done', 'queued', 'cancelled') THEN NULL
		ELSE RAISE(ABORT, 'jobs.status: illegal transition')
	END;
END;
