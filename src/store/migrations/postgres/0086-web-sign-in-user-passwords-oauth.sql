-- web sign-in: user passwords, OAuth authorization codes, the CLI client and CLI pairing requests
CREATE TABLE user_passwords (
  user_id TEXT PRIMARY KEY REFERENCES users(id) ON DELETE CASCADE,
  hash TEXT NOT NULL,
  updated_at TEXT NOT NULL
);
CREATE TABLE oauth_codes (
  code_hash TEXT PRIMARY KEY,
  client_id TEXT NOT NULL REFERENCES oauth_clients(id) ON DELETE CASCADE,
  user_id TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
  redirect_uri TEXT NOT NULL,
  scopes TEXT NOT NULL,
  code_challenge TEXT NOT NULL,
  created_at TEXT NOT NULL,
  expires_at TEXT NOT NULL,
  used_at TEXT,
  grant_id TEXT
);
INSERT INTO oauth_clients (id, name, created_at) VALUES ('sim-cli', 'Sim CLI', '2026-11-23T00:00:00.000Z');
CREATE TABLE cli_auth_requests (
  request_hash TEXT PRIMARY KEY,
  challenge TEXT NOT NULL,
  pairing TEXT NOT NULL,
  workspace_id TEXT,
  approved_by TEXT REFERENCES users(id) ON DELETE CASCADE,
  approved_at TEXT,
  completed_at TEXT,
  key_id TEXT,
  created_at TEXT NOT NULL,
  expires_at TEXT NOT NULL
);
