-- workflows, folders, versions and deployments
CREATE TABLE workflow_folders (
  id TEXT PRIMARY KEY,
  workspace_id TEXT NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
  path TEXT NOT NULL,
  parent_path TEXT NOT NULL,
  name TEXT NOT NULL,
  locked BIGINT NOT NULL DEFAULT 0,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  archived_at TEXT
);
CREATE UNIQUE INDEX workflow_folders_active_path ON workflow_folders (workspace_id, path) WHERE archived_at IS NULL;
CREATE INDEX workflow_folders_by_parent ON workflow_folders (workspace_id, parent_path, name, id) WHERE archived_at IS NULL;
CREATE TABLE workflows (
  id TEXT PRIMARY KEY,
  workspace_id TEXT NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
  name TEXT NOT NULL,
  description TEXT,
  folder_path TEXT NOT NULL DEFAULT '/',
  position BIGINT NOT NULL,
  archived BIGINT NOT NULL DEFAULT 0,
  archived_at TEXT,
  locked BIGINT NOT NULL DEFAULT 0,
  is_deployed BIGINT NOT NULL DEFAULT 0,
  deployed_at TEXT,
  active_version_id TEXT,
  is_public_api BIGINT NOT NULL DEFAULT 0,
  run_count BIGINT NOT NULL DEFAULT 0,
  last_run_at TEXT,
  state TEXT NOT NULL,
  state_saved_at TEXT NOT NULL,
  created_by TEXT,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL
);
CREATE INDEX workflows_by_position ON workflows (workspace_id, archived, position, id);
CREATE INDEX workflows_in_folder_by_position ON workflows (workspace_id, archived, folder_path, position, id);
CREATE INDEX workflows_by_name ON workflows (workspace_id, archived, name, id);
CREATE INDEX workflows_in_folder_by_name ON workflows (workspace_id, archived, folder_path, name, id);
CREATE INDEX workflows_by_created ON workflows (workspace_id, archived, created_at, id);
CREATE INDEX workflows_in_folder_by_created ON workflows (workspace_id, archived, folder_path, created_at, id);
CREATE INDEX workflows_by_updated ON workflows (workspace_id, archived, updated_at, id);
CREATE INDEX workflows_in_folder_by_updated ON workflows (workspace_id, archived, folder_path, updated_at, id);
CREATE INDEX workflows_by_runs ON workflows (workspace_id, archived, run_count, id);
CREATE INDEX workflows_in_folder_by_runs ON workflows (workspace_id, archived, folder_path, run_count, id);
CREATE TABLE workflow_element_ids (
  id TEXT PRIMARY KEY,
  workflow_id TEXT NOT NULL REFERENCES workflows(id) ON DELETE CASCADE,
  kind TEXT NOT NULL CHECK (kind IN ('block', 'edge'))
);
CREATE INDEX workflow_element_ids_by_workflow ON workflow_element_ids (workflow_id);
CREATE TABLE workflow_versions (
  id TEXT PRIMARY KEY,
  workflow_id TEXT NOT NULL REFERENCES workflows(id) ON DELETE CASCADE,
  version BIGINT NOT NULL,
  name TEXT,
  description TEXT,
  state TEXT NOT NULL,
  deployed_by TEXT,
  created_at TEXT NOT NULL,
  UNIQUE (workflow_id, version)
);
CREATE TABLE workflow_deployment_attempts (
  id TEXT PRIMARY KEY,
  workflow_id TEXT NOT NULL REFERENCES workflows(id) ON DELETE CASCADE,
  seq BIGINT NOT NULL,
  version_id TEXT NOT NULL REFERENCES workflow_versions(id) ON DELETE CASCADE,
  version BIGINT NOT NULL,
  action TEXT NOT NULL CHECK (action IN ('deploy', 'activate')),
  status TEXT NOT NULL CHECK (status IN ('preparing', 'activating', 'active', 'failed', 'superseded')),
  requested_at TEXT NOT NULL,
  activated_at TEXT,
  UNIQUE (workflow_id, seq)
);
