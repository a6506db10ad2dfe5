-- invitations to an organization or to workspaces, and their workspace grants
-- organization_id is NULL only for an invitation to a personal workspace. The e-mail is stored lower-cased and
-- the accept-link token only as its SHA-256 hash. `pending` rows past expires_at are marked `expired` lazily.
CREATE TABLE invitations (
  id TEXT PRIMARY KEY,
  organization_id TEXT REFERENCES organizations(id) ON DELETE CASCADE,
  email TEXT NOT NULL,
  role TEXT NOT NULL CHECK (role IN ('member', 'admin')),
  kind TEXT NOT NULL CHECK (kind IN ('organization', 'workspace')),
  membership_intent TEXT NOT NULL CHECK (membership_intent IN ('internal', 'external')),
  status TEXT NOT NULL CHECK (status IN ('pending', 'accepted', 'rejected', 'cancelled', 'expired')),
  token_hash TEXT NOT NULL UNIQUE,
  invited_by TEXT REFERENCES users(id) ON DELETE SET NULL,
  created_at TEXT NOT NULL,
  expires_at TEXT NOT NULL,
  updated_at TEXT NOT NULL
);
-- At most one pending invitation per (organization, e-mail).
CREATE UNIQUE INDEX invitations_one_pending ON invitations (organization_id, email) WHERE status = 'pending';
CREATE INDEX invitations_by_organization ON invitations (organization_id, created_at, id);
CREATE INDEX invitations_by_email ON invitations (email, status);
CREATE INDEX invitations_pending_expiry ON invitations (status, expires_at);
CREATE TABLE invitation_workspace_grants (
  invitation_id TEXT NOT NULL REFERENCES invitations(id) ON DELETE CASCADE,
  workspace_id TEXT NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
  permission TEXT NOT NULL CHECK (permission IN ('admin', 'write', 'read')),
  PRIMARY KEY (invitation_id, workspace_id)
);
CREATE INDEX invitation_grants_by_workspace ON invitation_workspace_grants (workspace_id, invitation_id);
