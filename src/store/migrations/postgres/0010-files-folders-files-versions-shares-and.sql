-- files: folders, files, versions, shares and upload sessions
CREATE TABLE file_folders (
  id TEXT PRIMARY KEY,
  workspace_id TEXT NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
  path TEXT NOT NULL,
  parent_path TEXT NOT NULL,
  name TEXT NOT NULL,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  deleted_at TEXT,
  archive_batch TEXT
);
CREATE UNIQUE INDEX file_folders_active_path ON file_folders (workspace_id, path) WHERE deleted_at IS NULL;
CREATE INDEX file_folders_by_parent ON file_folders (workspace_id, parent_path);
CREATE TABLE files (
  id TEXT PRIMARY KEY,
  workspace_id TEXT NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
  folder_path TEXT NOT NULL DEFAULT '/',
  name TEXT NOT NULL,
  content_type TEXT NOT NULL,
  size BIGINT NOT NULL,
  blob_key TEXT NOT NULL,
  current_version BIGINT NOT NULL,
  uploaded_by TEXT NOT NULL,
  uploaded_by_email TEXT NOT NULL,
  uploaded_at TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  deleted_at TEXT,
  archive_batch TEXT
);
CREATE UNIQUE INDEX files_active_name ON files (workspace_id, folder_path, name) WHERE deleted_at IS NULL;
CREATE INDEX files_by_uploaded ON files (workspace_id, uploaded_at, id);
CREATE INDEX files_by_deleted ON files (deleted_at) WHERE deleted_at IS NOT NULL;
CREATE TABLE file_versions (
  file_id TEXT NOT NULL REFERENCES files(id) ON DELETE CASCADE,
  version BIGINT NOT NULL,
  blob_key TEXT NOT NULL,
  size BIGINT NOT NULL,
  content_type TEXT NOT NULL,
  source TEXT NOT NULL,
  author_id TEXT,
  author_email TEXT,
  restored_from_version BIGINT,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  superseded_at TEXT,
  PRIMARY KEY (file_id, version)
);
CREATE INDEX file_versions_by_blob ON file_versions (blob_key);
CREATE TABLE file_shares (
  id TEXT PRIMARY KEY,
  file_id TEXT NOT NULL UNIQUE REFERENCES files(id) ON DELETE CASCADE,
  workspace_id TEXT NOT NULL,
  token TEXT NOT NULL UNIQUE,
  is_active BIGINT NOT NULL,
  auth_type TEXT NOT NULL,
  password_hash TEXT,
  allowed_emails TEXT NOT NULL DEFAULT '[]',
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL
);
CREATE TABLE file_upload_sessions (
  id TEXT PRIMARY KEY,
  workspace_id TEXT NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
  user_id TEXT NOT NULL,
  name TEXT NOT NULL,
  content_type TEXT NOT NULL,
  size BIGINT NOT NULL,
  folder_path TEXT NOT NULL,
  part_size BIGINT NOT NULL,
  part_count BIGINT NOT NULL,
  multipart BIGINT NOT NULL,
  status TEXT NOT NULL,
  error TEXT,
  file_id TEXT,
  expires_at TEXT NOT NULL,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL
);
CREATE INDEX file_upload_sessions_by_status ON file_upload_sessions (status, expires_at);
CREATE TABLE file_upload_parts (
  session_id TEXT NOT NULL REFERENCES file_upload_sessions(id) ON DELETE CASCADE,
  part_number BIGINT NOT NULL,
  size BIGINT NOT NULL,
  PRIMARY KEY (session_id, part_number)
);
