-- organizations, their members and credit limits, and the workspaces they own
-- The team and billing entity above workspaces. Each has its own billing account, which the workspaces it owns
-- bill to (so their usage and plan are the organization's).
CREATE TABLE organizations (
  id TEXT PRIMARY KEY,
  name TEXT NOT NULL,
  slug TEXT NOT NULL UNIQUE,
  logo TEXT,
  billing_account_id TEXT NOT NULL REFERENCES billing_accounts(id),
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL
);
CREATE INDEX organizations_by_name ON organizations (name, id);
CREATE TABLE organization_members (
  organization_id TEXT NOT NULL REFERENCES organizations(id) ON DELETE CASCADE,
  user_id TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
  role TEXT NOT NULL CHECK (role IN ('owner', 'admin', 'member')),
  joined_at TEXT NOT NULL,
  PRIMARY KEY (organization_id, user_id)
);
-- A user belongs to at most one organization.
CREATE UNIQUE INDEX organization_members_one_per_user ON organization_members (user_id);
-- At most one owner per organization; the domain keeps at least one (the owner is never demoted or removed).
CREATE UNIQUE INDEX organization_members_one_owner ON organization_members (organization_id) WHERE role = 'owner';
CREATE INDEX organization_members_by_join ON organization_members (organization_id, joined_at, user_id);
-- A per-person credit cap inside an organization (members and external collaborators alike); no row = no cap.
CREATE TABLE organization_credit_limits (
  organization_id TEXT NOT NULL REFERENCES organizations(id) ON DELETE CASCADE,
  user_id TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
  credit_limit BIGINT NOT NULL CHECK (credit_limit >= 0),
  updated_at TEXT NOT NULL,
  PRIMARY KEY (organization_id, user_id)
);
-- NULL: a personal workspace, billed to its owner's account.
ALTER TABLE workspaces ADD COLUMN organization_id TEXT REFERENCES organizations(id);
CREATE INDEX workspaces_by_organization ON workspaces (organization_id, name, id);
