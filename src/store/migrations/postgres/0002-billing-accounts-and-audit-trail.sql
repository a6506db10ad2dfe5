-- billing accounts and audit trail
CREATE TABLE billing_accounts (
  id TEXT PRIMARY KEY,
  name TEXT NOT NULL,
  plan TEXT NOT NULL DEFAULT 'free' CHECK (plan IN ('free', 'pro', 'team', 'max', 'enterprise')),
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL
);
INSERT INTO billing_accounts (id, name, plan, created_at, updated_at)
  SELECT 'ba-' || id, name, 'free', created_at, created_at FROM users;
ALTER TABLE workspaces ADD COLUMN billing_account_id TEXT REFERENCES billing_accounts(id);
UPDATE workspaces SET billing_account_id = 'ba-' || owner_id;
CREATE TABLE audit_events (
  id TEXT PRIMARY KEY,
  created_at TEXT NOT NULL,
  workspace_id TEXT,
  actor_user_id TEXT,
  actor_name TEXT,
  actor_email TEXT,
  credential_kind TEXT,
  credential_id TEXT,
  action TEXT NOT NULL,
  resource_type TEXT NOT NULL,
  resource_id TEXT,
  resource_name TEXT,
  description TEXT,
  metadata TEXT NOT NULL DEFAULT '{}'
);
CREATE INDEX audit_events_by_time ON audit_events (created_at, id);
CREATE INDEX audit_events_by_workspace ON audit_events (workspace_id, created_at, id);
