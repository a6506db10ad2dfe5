-- file share tokens stored as a hash and a sealed value
CREATE TABLE file_shares_v45 (
  id TEXT PRIMARY KEY,
  file_id TEXT NOT NULL UNIQUE REFERENCES files(id) ON DELETE CASCADE,
  workspace_id TEXT NOT NULL,
  token_hash TEXT UNIQUE,
  token_sealed TEXT,
  plain_token TEXT,
  is_active BIGINT NOT NULL,
  auth_type TEXT NOT NULL,
  password_hash TEXT,
  allowed_emails TEXT NOT NULL DEFAULT '[]',
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL
);
INSERT INTO file_shares_v45 (id, file_id, workspace_id, plain_token, is_active, auth_type, password_hash, allowed_emails, created_at, updated_at)
  SELECT id, file_id, workspace_id, token, is_active, auth_type, password_hash, allowed_emails, created_at, updated_at FROM file_shares;
DROP TABLE file_shares;
ALTER TABLE file_shares_v45 RENAME TO file_shares;
