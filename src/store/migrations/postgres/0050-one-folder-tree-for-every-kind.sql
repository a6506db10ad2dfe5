-- one folder tree for every kind: workflow and file folders move into folders
CREATE TABLE folders (
  id TEXT PRIMARY KEY,
  workspace_id TEXT NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
  kind TEXT NOT NULL,
  path TEXT NOT NULL,
  parent_path TEXT NOT NULL,
  name TEXT NOT NULL,
  locked BIGINT NOT NULL DEFAULT 0,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  archived_at TEXT,
  archive_batch TEXT
);
CREATE UNIQUE INDEX folders_active_path ON folders (workspace_id, kind, path) WHERE archived_at IS NULL;
CREATE INDEX folders_by_parent ON folders (workspace_id, kind, parent_path, name, id) WHERE archived_at IS NULL;
CREATE INDEX folders_archived ON folders (workspace_id, kind, path, archived_at) WHERE archived_at IS NOT NULL;
CREATE INDEX folders_by_batch ON folders (archive_batch) WHERE archive_batch IS NOT NULL;
INSERT INTO folders (id, workspace_id, kind, path, parent_path, name, locked, created_at, updated_at, archived_at, archive_batch)
  SELECT id, workspace_id, 'workflow', path, parent_path, name, locked, created_at, updated_at, archived_at, NULL FROM workflow_folders;
INSERT INTO folders (id, workspace_id, kind, path, parent_path, name, locked, created_at, updated_at, archived_at, archive_batch)
  SELECT id, workspace_id, 'file', path, parent_path, name, 0, created_at, updated_at, deleted_at, archive_batch FROM file_folders;
DROP TABLE workflow_folders;
DROP TABLE file_folders;
