-- secrets: personal secrets follow their owner across workspaces; unredacted workspace secrets
CREATE TABLE secrets_v70 (
  id TEXT PRIMARY KEY,
  workspace_id TEXT REFERENCES workspaces(id) ON DELETE CASCADE,
  scope TEXT NOT NULL CHECK (scope IN ('workspace', 'personal')),
  owner_user_id TEXT REFERENCES users(id) ON DELETE CASCADE,
  name TEXT NOT NULL,
  ciphertext TEXT NOT NULL,
  seal_workspace_id TEXT NOT NULL DEFAULT '',
  description TEXT NOT NULL DEFAULT '',
  unredacted BIGINT NOT NULL DEFAULT 0,
  created_by TEXT,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  CHECK ((scope = 'personal') = (owner_user_id IS NOT NULL)),
  CHECK ((scope = 'workspace') = (workspace_id IS NOT NULL))
);
INSERT INTO secrets_v70 (id, workspace_id, scope, owner_user_id, name, ciphertext, seal_workspace_id, description, unredacted, created_by, created_at, updated_at)
  SELECT id, CASE WHEN scope = 'workspace' THEN workspace_id END, scope, owner_user_id, name, ciphertext, workspace_id, description, 0, created_by, created_at, updated_at
  FROM secrets s
  WHERE s.scope = 'workspace' OR NOT EXISTS (
    SELECT 1 FROM secrets n WHERE n.scope = 'personal' AND n.owner_user_id = s.owner_user_id AND n.name = s.name
      AND (n.updated_at > s.updated_at OR (n.updated_at = s.updated_at AND n.id > s.id))
  );
DROP TABLE secrets;
ALTER TABLE secrets_v70 RENAME TO secrets;
CREATE UNIQUE INDEX secrets_workspace_name ON secrets (workspace_id, name) WHERE scope = 'workspace';
CREATE UNIQUE INDEX secrets_personal_name ON secrets (owner_user_id, name) WHERE scope = 'personal';
