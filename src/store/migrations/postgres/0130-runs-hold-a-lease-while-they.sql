-- runs hold a lease while they execute (owner, expiry, attempt), and a cancel request any process can see
ALTER TABLE workflow_runs ADD COLUMN lease_owner TEXT;
ALTER TABLE workflow_runs ADD COLUMN lease_until TEXT;
ALTER TABLE workflow_runs ADD COLUMN attempts BIGINT NOT NULL DEFAULT 0;
ALTER TABLE workflow_runs ADD COLUMN cancel_requested_at TEXT;
CREATE INDEX workflow_runs_running_lease ON workflow_runs (lease_until) WHERE status = 'running';
