-- sandboxes (dependency sets for function blocks) and their builds
CREATE TABLE sandboxes (
  id TEXT PRIMARY KEY,
  workspace_id TEXT NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
  name TEXT NOT NULL,
  language TEXT NOT NULL CHECK (language IN ('javascript', 'python')),
  dependencies TEXT NOT NULL,
  cli_tools TEXT NOT NULL,
  system_packages TEXT NOT NULL,
  spec_hash TEXT NOT NULL,
  build_status TEXT CHECK (build_status IN ('pending', 'building', 'ready', 'failed')),
  error_code TEXT,
  error_message TEXT,
  error_detail TEXT,
  built_at TEXT,
  created_by TEXT,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL
);
CREATE UNIQUE INDEX sandboxes_by_name ON sandboxes (workspace_id, name);
CREATE INDEX sandboxes_by_hash ON sandboxes (spec_hash);
