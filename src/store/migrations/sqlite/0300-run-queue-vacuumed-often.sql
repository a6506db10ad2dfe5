-- the run queue's table is vacuumed often and leaves room for updates in place
-- Postgres only (storage parameters of workflow_runs); SQLite frees a page's dead space at once, so nothing changes here.
SELECT 1
