-- workflow runs, execution logs and usage
CREATE TABLE workflow_runs (
  id TEXT PRIMARY KEY,
  workflow_id TEXT NOT NULL REFERENCES workflows(id) ON DELETE CASCADE,
  workspace_id TEXT NOT NULL,
  billing_account_id TEXT NOT NULL,
  deployment_version_id TEXT,
  status TEXT NOT NULL CHECK (status IN ('queued', 'running', 'paused', 'completed', 'failed', 'cancelled')),
  mode TEXT NOT NULL CHECK (mode IN ('sync', 'async', 'stream')),
  trigger TEXT NOT NULL,
  source TEXT NOT NULL CHECK (source IN ('deployment', 'manual')),
  trigger_block_id TEXT,
  input TEXT NOT NULL,
  timeout_ms BIGINT,
  triggered_by TEXT,
  resume_input TEXT,
  checkpoint TEXT,
  pause TEXT,
  resumed_count BIGINT NOT NULL DEFAULT 0,
  output TEXT,
  block_outputs TEXT,
  error TEXT,
  cost_total DOUBLE PRECISION,
  block_executions BIGINT NOT NULL DEFAULT 0,
  queued_at TEXT NOT NULL,
  started_at TEXT,
  ended_at TEXT,
  duration_ms BIGINT,
  updated_at TEXT NOT NULL
);
CREATE INDEX workflow_runs_by_workflow ON workflow_runs (workflow_id, queued_at, id);
CREATE INDEX workflow_runs_queue ON workflow_runs (queued_at, id) WHERE status = 'queued';
CREATE INDEX workflow_runs_running ON workflow_runs (status) WHERE status = 'running';
CREATE TABLE execution_logs (
  run_id TEXT PRIMARY KEY REFERENCES workflow_runs(id) ON DELETE CASCADE,
  workspace_id TEXT NOT NULL,
  workflow_id TEXT NOT NULL,
  deployment_version_id TEXT,
  trigger TEXT NOT NULL,
  level TEXT NOT NULL CHECK (level IN ('info', 'error')),
  status TEXT NOT NULL,
  started_at TEXT NOT NULL,
  ended_at TEXT,
  duration_ms BIGINT,
  cost_total DOUBLE PRECISION,
  cost TEXT,
  has_handled_errors BIGINT NOT NULL DEFAULT 0,
  error_message TEXT,
  models TEXT,
  executed_by TEXT,
  workflow_input TEXT,
  final_output TEXT,
  trace_spans TEXT,
  created_at TEXT NOT NULL
);
CREATE INDEX execution_logs_by_workspace ON execution_logs (workspace_id, started_at, run_id);
CREATE INDEX execution_logs_by_workflow ON execution_logs (workflow_id, started_at, run_id);
CREATE TABLE usage_records (
  id TEXT PRIMARY KEY,
  billing_account_id TEXT NOT NULL,
  workspace_id TEXT NOT NULL,
  workflow_id TEXT,
  run_id TEXT,
  user_id TEXT,
  category TEXT NOT NULL,
  cost DOUBLE PRECISION NOT NULL,
  block_executions BIGINT NOT NULL,
  duration_ms BIGINT NOT NULL,
  recorded_at TEXT NOT NULL
);
CREATE INDEX usage_records_by_account ON usage_records (billing_account_id, recorded_at);
CREATE INDEX usage_records_by_workspace ON usage_records (workspace_id, recorded_at);
CREATE TABLE usage_totals (
  billing_account_id TEXT NOT NULL,
  period TEXT NOT NULL,
  cost DOUBLE PRECISION NOT NULL DEFAULT 0,
  runs BIGINT NOT NULL DEFAULT 0,
  block_executions BIGINT NOT NULL DEFAULT 0,
  PRIMARY KEY (billing_account_id, period)
);
