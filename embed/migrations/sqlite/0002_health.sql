-- 0002_health.sql: one row that /readyz rewrites after a failed write, to
-- prove the database takes writes again (disk space back, directory
-- writable). The probe writes a 256 KiB pad: a disk with room for a few
-- bytes but not for a job is not ready.
CREATE TABLE health (
	id  INTEGER PRIMARY KEY CHECK (id = 1),
	at  INTEGER NOT NULL,
	pad BLOB
) STRICT;
