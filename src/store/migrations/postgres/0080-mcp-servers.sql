-- mcp servers
CREATE TABLE workflow_mcp_servers (
  id TEXT PRIMARY KEY,
  workspace_id TEXT NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
  name TEXT NOT NULL,
  description TEXT,
  is_public BIGINT NOT NULL DEFAULT 0,
  created_by TEXT NOT NULL,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL
);
CREATE INDEX workflow_mcp_servers_by_workspace ON workflow_mcp_servers (workspace_id, created_at, id);
CREATE TABLE workflow_mcp_tools (
  id TEXT PRIMARY KEY,
  server_id TEXT NOT NULL REFERENCES workflow_mcp_servers(id) ON DELETE CASCADE,
  workflow_id TEXT NOT NULL,
  tool_name TEXT NOT NULL,
  tool_description TEXT,
  parameter_descriptions TEXT NOT NULL DEFAULT '[]',
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  UNIQUE (server_id, workflow_id),
  UNIQUE (server_id, tool_name)
);
CREATE INDEX workflow_mcp_tools_by_workflow ON workflow_mcp_tools (workflow_id);
CREATE TABLE mcp_servers (
  id TEXT PRIMARY KEY,
  workspace_id TEXT NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
  name TEXT NOT NULL,
  description TEXT,
  transport TEXT NOT NULL DEFAULT 'streamable-http',
  url TEXT NOT NULL,
  auth_type TEXT NOT NULL CHECK (auth_type IN ('none', 'headers', 'oauth')),
  headers_sealed TEXT,
  header_names TEXT NOT NULL DEFAULT '[]',
  timeout_ms BIGINT NOT NULL,
  retries BIGINT NOT NULL,
  enabled BIGINT NOT NULL DEFAULT 1,
  oauth_client_id TEXT,
  oauth_client_secret_sealed TEXT,
  connection_status TEXT NOT NULL DEFAULT 'disconnected' CHECK (connection_status IN ('connected', 'disconnected', 'error')),
  last_error TEXT,
  tool_count BIGINT NOT NULL DEFAULT 0,
  tools TEXT,
  last_tools_refresh TEXT,
  last_connected TEXT,
  created_by TEXT NOT NULL,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL
);
CREATE INDEX mcp_servers_by_workspace ON mcp_servers (workspace_id, created_at, id);
