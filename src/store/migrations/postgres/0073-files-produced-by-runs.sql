-- files produced by runs
CREATE TABLE run_files (
  id TEXT PRIMARY KEY,
  run_id TEXT NOT NULL REFERENCES workflow_runs(id) ON DELETE CASCADE,
  workflow_id TEXT NOT NULL,
  workspace_id TEXT NOT NULL,
  block_id TEXT,
  name TEXT NOT NULL,
  content_type TEXT NOT NULL,
  size BIGINT NOT NULL,
  blob_key TEXT NOT NULL,
  created_at TEXT NOT NULL
);
CREATE INDEX run_files_by_run ON run_files (run_id, created_at);
