-- runs indexed by status per workspace (queue depth reads only queued and running runs) and per workflow (a status filter on a busy workflow's runs pages without scanning its other runs)
CREATE INDEX workflow_runs_by_workspace_status ON workflow_runs (workspace_id, status, queued_at);
CREATE INDEX workflow_runs_by_workflow_status ON workflow_runs (workflow_id, status, queued_at, id);
