-- tables: workflow groups, their per-row runs and dispatches
ALTER TABLE user_tables ADD COLUMN groups TEXT NOT NULL DEFAULT '[]';
CREATE TABLE table_row_runs (
  table_id TEXT NOT NULL REFERENCES user_tables(id) ON DELETE CASCADE,
  row_id TEXT NOT NULL,
  group_id TEXT NOT NULL,
  status TEXT NOT NULL,
  run_id TEXT,
  workflow_id TEXT NOT NULL,
  dispatch_id TEXT,
  error TEXT,
  running_block_ids TEXT NOT NULL DEFAULT '[]',
  block_errors TEXT NOT NULL DEFAULT '{}',
  canceled_at TEXT,
  updated_at TEXT NOT NULL,
  PRIMARY KEY (table_id, row_id, group_id)
);
CREATE INDEX table_row_runs_active ON table_row_runs (status, updated_at) WHERE status IN ('queued', 'running');
CREATE INDEX table_row_runs_by_run ON table_row_runs (run_id);
CREATE TABLE table_dispatches (
  id TEXT PRIMARY KEY,
  table_id TEXT NOT NULL REFERENCES user_tables(id) ON DELETE CASCADE,
  workspace_id TEXT NOT NULL,
  user_id TEXT,
  status TEXT NOT NULL,
  mode TEXT NOT NULL,
  scope TEXT NOT NULL,
  filter TEXT,
  row_limit TEXT,
  processed_count BIGINT NOT NULL DEFAULT 0,
  is_manual BIGINT NOT NULL,
  requested_at TEXT NOT NULL,
  completed_at TEXT,
  canceled_at TEXT
);
CREATE INDEX table_dispatches_by_table ON table_dispatches (table_id, requested_at);
CREATE INDEX table_dispatches_open ON table_dispatches (status) WHERE status IN ('pending', 'dispatching');
