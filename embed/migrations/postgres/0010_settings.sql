-- 0010_settings.sql: settings changed at runtime (issue 26), laid over the
-- config file field by field (docs/configuration.md). One row per setting:
-- kind 'queue' holds a queue's settings (name: the queue; value: the
-- fields set, as JSON), 'periodic' a periodic entry made through the API
-- (name: the entry; value: its fields), 'periodic_state' the paused state
-- of an entry of either source. Every node reads the table every second,
-- so a change on one is in effect on all within a second.
CREATE TABLE runtime_settings (
	kind       text        NOT NULL CHECK (kind IN ('queue', 'periodic', 'periodic_state')),
	name       text        NOT NULL,
	value      json        NOT NULL,
	updated_at timestamptz NOT NULL,
	updated_by text        NOT NULL,
	PRIMARY KEY (kind, name)
);
