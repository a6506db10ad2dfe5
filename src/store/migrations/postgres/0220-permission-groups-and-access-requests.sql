-- permission groups, their workspaces and members; access requests and the organization switch
-- Access Control: an organization's permission groups. `config` is the group's PermissionConfig as JSON (read
-- back through src/access-control/config.ts, which turns unknown or invalid values into the defaults).
CREATE TABLE permission_groups (
  id TEXT PRIMARY KEY,
  organization_id TEXT NOT NULL REFERENCES organizations(id) ON DELETE CASCADE,
  name TEXT NOT NULL,
  description TEXT,
  config TEXT NOT NULL,
  is_default BIGINT NOT NULL DEFAULT 0,
  created_by TEXT NOT NULL,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL
);
CREATE UNIQUE INDEX permission_groups_name ON permission_groups (organization_id, name);
-- One default group per organization.
CREATE UNIQUE INDEX permission_groups_one_default ON permission_groups (organization_id) WHERE is_default = 1;
-- The workspaces a non-default group targets (none for the default group).
CREATE TABLE permission_group_workspaces (
  group_id TEXT NOT NULL REFERENCES permission_groups(id) ON DELETE CASCADE,
  workspace_id TEXT NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
  PRIMARY KEY (group_id, workspace_id)
);
CREATE INDEX permission_group_workspaces_by_workspace ON permission_group_workspaces (workspace_id, group_id);
-- Explicit members; a group without any governs every member of its workspaces.
CREATE TABLE permission_group_members (
  id TEXT PRIMARY KEY,
  group_id TEXT NOT NULL REFERENCES permission_groups(id) ON DELETE CASCADE,
  organization_id TEXT NOT NULL REFERENCES organizations(id) ON DELETE CASCADE,
  user_id TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
  assigned_by TEXT NOT NULL,
  assigned_at TEXT NOT NULL
);
CREATE UNIQUE INDEX permission_group_members_once ON permission_group_members (group_id, user_id);
CREATE INDEX permission_group_members_by_user ON permission_group_members (user_id, group_id);
-- A member's request to lift one restriction. `scope_id` is the workspace it was filed in, or '' for the
-- organization routes, so one pending request per person, scope and target is an index.
CREATE TABLE access_requests (
  id TEXT PRIMARY KEY,
  organization_id TEXT NOT NULL REFERENCES organizations(id) ON DELETE CASCADE,
  workspace_id TEXT REFERENCES workspaces(id) ON DELETE SET NULL,
  scope_id TEXT NOT NULL,
  requester_id TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
  target_kind TEXT NOT NULL,
  target_id TEXT NOT NULL,
  target_label TEXT NOT NULL,
  reason TEXT NOT NULL,
  status TEXT NOT NULL CHECK (status IN ('pending', 'fulfilled', 'declined', 'cancelled', 'closed')),
  decision_reason TEXT,
  decided_by TEXT,
  group_id TEXT,
  group_name TEXT,
  created_at TEXT NOT NULL,
  decided_at TEXT
);
CREATE UNIQUE INDEX access_requests_one_pending ON access_requests (organization_id, requester_id, scope_id, target_kind, target_id) WHERE status = 'pending';
CREATE INDEX access_requests_by_created ON access_requests (organization_id, created_at, id);
CREATE INDEX access_requests_by_requester ON access_requests (requester_id, created_at, id);
-- Whether members may file access requests (no row: they may).
CREATE TABLE organization_access_settings (
  organization_id TEXT PRIMARY KEY REFERENCES organizations(id) ON DELETE CASCADE,
  allow_requests BIGINT NOT NULL,
  updated_at TEXT NOT NULL
);
