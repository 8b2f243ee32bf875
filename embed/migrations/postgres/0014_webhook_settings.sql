-- 0014_webhook_settings.sql: runtime settings of webhooks (issue 27,
-- docs/integrations.md). Kind 'webhook' is a subscription made through the
-- API (name: the subscription; value: its url, secret, events, queues,
-- disabled flag and creation time), 'webhook_secret' a secret the server
-- generated once ('callback' signs the callbacks when the config file sets
-- none; nodes that generate it at once meet at its row).
ALTER TABLE runtime_settings DROP CONSTRAINT runtime_settings_kind_check;
ALTER TABLE runtime_settings ADD CONSTRAINT runtime_settings_kind_check
	CHECK (kind IN ('queue', 'periodic', 'periodic_state', 'webhook', 'webhook_secret'));
