-- placeholder replaced by the PostgreSQL store's guard
SELECT 1;
