-- credentials (service accounts and OAuth connections) and pending OAuth connection states
CREATE TABLE credentials (
  id TEXT PRIMARY KEY,
  workspace_id TEXT NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
  type TEXT NOT NULL CHECK (type IN ('oauth', 'service_account')),
  provider_id TEXT NOT NULL,
  display_name TEXT NOT NULL,
  description TEXT,
  account_id TEXT,
  sealed_secret TEXT NOT NULL,
  access_expires_at TEXT,
  created_by TEXT,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL
);
CREATE INDEX credentials_by_workspace ON credentials (workspace_id, created_at);
CREATE TABLE oauth_connection_states (
  state_hash TEXT PRIMARY KEY,
  workspace_id TEXT NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
  user_id TEXT NOT NULL,
  provider_id TEXT NOT NULL,
  display_name TEXT NOT NULL,
  credential_id TEXT,
  sealed_verifier TEXT NOT NULL,
  redirect_uri TEXT NOT NULL,
  created_at TEXT NOT NULL,
  expires_at TEXT NOT NULL,
  used_at TEXT
);
