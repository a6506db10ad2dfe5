-- caller-chosen run ids scoped per workspace
ALTER TABLE workflow_runs ADD COLUMN run_key TEXT;
UPDATE workflow_runs SET run_key = id;
CREATE UNIQUE INDEX workflow_runs_by_key ON workflow_runs (workspace_id, run_key);
ALTER TABLE execution_logs ADD COLUMN run_key TEXT;
UPDATE execution_logs SET run_key = run_id;
CREATE INDEX execution_logs_by_key ON execution_logs (run_key);
