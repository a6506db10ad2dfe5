-- tables: CSV imports and exports
CREATE TABLE table_imports (
  id TEXT PRIMARY KEY,
  workspace_id TEXT NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
  user_id TEXT NOT NULL,
  upload_id TEXT,
  source TEXT NOT NULL,
  target TEXT NOT NULL,
  options TEXT NOT NULL,
  status TEXT NOT NULL,
  table_id TEXT,
  staging_id TEXT,
  rows_processed BIGINT NOT NULL DEFAULT 0,
  rows_rejected BIGINT NOT NULL DEFAULT 0,
  cells_rejected BIGINT NOT NULL DEFAULT 0,
  rejected_samples TEXT NOT NULL DEFAULT '[]',
  error TEXT,
  expires_at TEXT NOT NULL,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  completed_at TEXT
);
CREATE INDEX table_imports_by_status ON table_imports (status);
CREATE TABLE table_exports (
  id TEXT PRIMARY KEY,
  table_id TEXT NOT NULL REFERENCES user_tables(id) ON DELETE CASCADE,
  workspace_id TEXT NOT NULL,
  user_id TEXT NOT NULL,
  format TEXT NOT NULL,
  status TEXT NOT NULL,
  rows_processed BIGINT NOT NULL DEFAULT 0,
  error TEXT,
  file_name TEXT NOT NULL,
  size BIGINT,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  completed_at TEXT
);
CREATE INDEX table_exports_by_status ON table_exports (status);
