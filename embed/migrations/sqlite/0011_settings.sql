-- 0011_settings.sql: settings changed at runtime (issue 26), laid over the
-- config file field by field (docs/configuration.md). One row per setting:
-- kind 'queue' holds a queue's settings (name: the queue; value: the
-- fields set, as JSON), 'periodic' a periodic entry made through the API
-- (name: the entry; value: its fields), 'periodic_state' the paused state
-- of an entry of either source. Every server reads the table every second.
CREATE TABLE runtime_settings (
	kind       TEXT    NOT NULL CHECK (kind IN ('queue', 'periodic', 'periodic_state')),
	name       TEXT    NOT NULL,
	value      TEXT    NOT NULL,
	updated_at INTEGER NOT NULL,
	updated_by TEXT    NOT NULL,
	PRIMARY KEY (kind, name)
) STRICT, WITHOUT ROWID;
