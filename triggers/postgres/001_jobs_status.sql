-- 001_jobs_status.sql: guards jobs.status; keep in step with app.Status and
-- app.Transition. The CHECK constraint jobs_status_check (migration
-- 0001_jobs.sql) holds the four values even where triggers do not fire
-- (session_replication_role = replica); this trigger adds the rules a CHECK
-- cannot state: dead_letter is never a job status (the row moves to
-- dead_letter_jobs), a job is inserted queued, done and cancelled are
-- terminal, and only these transitions exist:
--   queued -> processing | cancelled, processing -> done | queued | cancelled.
-- Keeping the same status (a heartbeat) is allowed. Errors are raised with
-- SQLSTATE P0001 (raise_exception) and a message starting "jobs.status:".
-- The triggers' WHEN clauses let through every legal write without calling
-- the function (a PL/pgSQL call per claimed and completed row cost about 6%
-- of the e2e benchmark's CPU); the function runs only for a write it refuses,
-- and names why. Idempotent: stores run it at every start, after the migrations.
CREATE OR REPLACE FUNCTION jobs_status_guard() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
	IF NEW.status = 'dead_letter' THEN
		RAISE EXCEPTION 'jobs.status: dead_letter is not a job status; dead-lettered jobs live in dead_letter_jobs';
	END IF;
	IF NEW.status IS NULL OR NEW.status NOT IN ('queued', 'processing', 'done', 'cancelled') THEN
		RAISE EXCEPTION 'jobs.status: invalid value % (want queued, processing, done or cancelled)', quote_nullable(NEW.status);
	END IF;
	IF TG_OP = 'INSERT' THEN
		IF NEW.status <> 'queued' THEN
			RAISE EXCEPTION 'jobs.status: illegal insert as % (a job is inserted as queued)', NEW.status;
		END IF;
		RETURN NEW;
	END IF;
	IF NEW.status = OLD.status
		OR (OLD.status = 'queued' AND NEW.status IN ('processing', 'cancelled'))
		OR (OLD.status = 'processing' AND NEW.status IN ('done', 'queued', 'cancelled')) THEN
		RETURN NEW;
	END IF;
	RAISE EXCEPTION 'jobs.status: illegal transition % -> % (job %)', OLD.status, NEW.status, OLD.id;
END;
$$;

DROP TRIGGER IF EXISTS jobs_status_insert ON jobs;
CREATE TRIGGER jobs_status_insert BEFORE INSERT ON jobs
	FOR EACH ROW WHEN (NEW.status IS DISTINCT FROM 'queued')
	EXECUTE FUNCTION jobs_status_guard();

DROP TRIGGER IF EXISTS jobs_status_update ON jobs;
CREATE TRIGGER jobs_status_update BEFORE UPDATE OF status ON jobs
	FOR EACH ROW WHEN (NOT COALESCE(
		NEW.status = OLD.status
		OR (OLD.status = 'queued' AND NEW.status IN ('processing', 'cancelled'))
		OR (OLD.status = 'processing' AND NEW.status IN ('done', 'queued', 'cancelled')),
		false))
	EXECUTE FUNCTION jobs_status_guard();
