-- hosted chat deployments and their one-time codes
CREATE TABLE chat_deployments (
  id TEXT PRIMARY KEY,
  workflow_id TEXT NOT NULL UNIQUE REFERENCES workflows(id) ON DELETE CASCADE,
  workspace_id TEXT NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
  identifier TEXT NOT NULL UNIQUE,
  title TEXT NOT NULL,
  description TEXT NOT NULL DEFAULT '',
  customizations TEXT NOT NULL DEFAULT '{}',
  auth_type TEXT NOT NULL CHECK (auth_type IN ('public', 'password', 'email', 'sso')),
  password_hash TEXT,
  allowed_emails TEXT NOT NULL DEFAULT '[]',
  output_configs TEXT NOT NULL DEFAULT '[]',
  include_thinking BIGINT NOT NULL DEFAULT 0,
  include_tool_calls BIGINT NOT NULL DEFAULT 0,
  is_active BIGINT NOT NULL DEFAULT 1,
  created_by TEXT NOT NULL REFERENCES users(id),
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL
);
CREATE INDEX chat_deployments_by_workspace ON chat_deployments (workspace_id, created_at, id);
CREATE TABLE chat_codes (
  chat_id TEXT NOT NULL REFERENCES chat_deployments(id) ON DELETE CASCADE,
  email TEXT NOT NULL,
  code_hash TEXT NOT NULL,
  expires_at TEXT NOT NULL,
  attempts BIGINT NOT NULL DEFAULT 0,
  PRIMARY KEY (chat_id, email)
);
