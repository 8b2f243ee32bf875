-- 0015_webhook_settings.sql: runtime settings of webhooks (issue 27,
-- docs/integrations.md). Kind 'webhook' is a subscription made through the
-- API (name: the subscription; value: its url, secret, events, queues,
-- disabled flag and creation time, as JSON), 'webhook_secret' a secret the
-- server generated once ('callback' signs the callbacks when the config
-- file sets none). SQLite cannot change a CHECK constraint in place: the
-- table is made again with the wider list and its rows copied over.
CREATE TABLE runtime_settings_new (
	kind       TEXT    NOT NULL CHECK (kind IN ('queue', 'periodic', 'periodic_state', 'webhook', 'webhook_secret')),
	name       TEXT    NOT NULL,
	value      TEXT    NOT NULL,
	updated_at INTEGER NOT NULL,
	updated_by TEXT    NOT NULL,
	PRIMARY KEY (kind, name)
) STRICT, WITHOUT ROWID;
INSERT INTO runtime_settings_new (kind, name, value, updated_at, updated_by)
	SELECT kind, name, value, updated_at, updated_by FROM runtime_settings;
DROP TABLE runtime_settings;
ALTER TABLE runtime_settings_new RENAME TO runtime_settings;
