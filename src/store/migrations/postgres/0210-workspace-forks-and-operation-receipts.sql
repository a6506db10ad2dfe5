-- workspace forks and operation receipts
-- A workspace has at most one parent: the edge is keyed by the child, and unlinking deletes the row.
CREATE TABLE workspace_fork_edges (
  child_workspace_id TEXT PRIMARY KEY REFERENCES workspaces(id) ON DELETE CASCADE,
  parent_workspace_id TEXT NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
  created_by TEXT NOT NULL,
  created_at TEXT NOT NULL
);
CREATE INDEX workspace_fork_edges_by_parent ON workspace_fork_edges (parent_workspace_id, created_at, child_workspace_id);
-- Resource pairs of an edge, stored child-oriented (parent id <-> child id) and read in either direction.
-- Secrets (env_var) are paired by key name. One pairing per resource on each side.
CREATE TABLE workspace_fork_mappings (
  id TEXT PRIMARY KEY,
  child_workspace_id TEXT NOT NULL REFERENCES workspace_fork_edges(child_workspace_id) ON DELETE CASCADE,
  resource_type TEXT NOT NULL,
  parent_resource_id TEXT NOT NULL,
  child_resource_id TEXT NOT NULL,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL
);
CREATE UNIQUE INDEX workspace_fork_mappings_parent_side ON workspace_fork_mappings (child_workspace_id, resource_type, parent_resource_id);
CREATE UNIQUE INDEX workspace_fork_mappings_child_side ON workspace_fork_mappings (child_workspace_id, resource_type, child_resource_id);
-- Which workflow in the child is the counterpart of which in the parent (system-managed identity).
CREATE TABLE workspace_fork_workflow_pairs (
  child_workspace_id TEXT NOT NULL REFERENCES workspace_fork_edges(child_workspace_id) ON DELETE CASCADE,
  parent_workflow_id TEXT NOT NULL,
  child_workflow_id TEXT NOT NULL,
  PRIMARY KEY (child_workspace_id, parent_workflow_id)
);
CREATE UNIQUE INDEX workspace_fork_workflow_pairs_child_side ON workspace_fork_workflow_pairs (child_workspace_id, child_workflow_id);
-- Workflows never sent by a sync or fork from their workspace, and never touched by a sync into it.
CREATE TABLE workspace_fork_exclusions (
  workflow_id TEXT PRIMARY KEY REFERENCES workflows(id) ON DELETE CASCADE,
  workspace_id TEXT NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
  created_at TEXT NOT NULL
);
CREATE INDEX workspace_fork_exclusions_by_workspace ON workspace_fork_exclusions (workspace_id, workflow_id);
-- The undo point of the latest sync along an edge into one of its two workspaces (JSON: what each workflow was).
-- operation_id is time-ordered, so the newest sync into a workspace is the greatest one.
CREATE TABLE workspace_fork_undo_points (
  child_workspace_id TEXT NOT NULL REFERENCES workspace_fork_edges(child_workspace_id) ON DELETE CASCADE,
  target_workspace_id TEXT NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
  source_workspace_id TEXT NOT NULL,
  operation_id TEXT NOT NULL,
  undo TEXT NOT NULL,
  created_at TEXT NOT NULL,
  PRIMARY KEY (child_workspace_id, target_workspace_id)
);
CREATE INDEX workspace_fork_undo_points_by_target ON workspace_fork_undo_points (target_workspace_id, operation_id);
-- Durable receipts of committed workspace mutations (workflow import, fork, push, pull), reconciled by request id.
CREATE TABLE workspace_operations (
  id TEXT PRIMARY KEY,
  workspace_id TEXT NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
  request_id TEXT NOT NULL,
  kind TEXT NOT NULL,
  status TEXT NOT NULL,
  input_fingerprint TEXT NOT NULL,
  receipt TEXT NOT NULL,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL
);
CREATE UNIQUE INDEX workspace_operations_by_request ON workspace_operations (workspace_id, request_id);
CREATE INDEX workspace_operations_by_workspace ON workspace_operations (workspace_id, id);
