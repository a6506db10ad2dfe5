-- tables: definitions and views (rows live in one SQL table per user table, trows_<id>)
CREATE TABLE user_tables (
  id TEXT PRIMARY KEY,
  workspace_id TEXT NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
  name TEXT NOT NULL,
  description TEXT,
  folder_path TEXT NOT NULL DEFAULT '/',
  columns TEXT NOT NULL,
  owner_id TEXT,
  owner_email TEXT NOT NULL,
  row_count BIGINT NOT NULL DEFAULT 0,
  max_rows BIGINT NOT NULL,
  schema_locked BIGINT NOT NULL DEFAULT 0,
  insert_locked BIGINT NOT NULL DEFAULT 0,
  update_locked BIGINT NOT NULL DEFAULT 0,
  delete_locked BIGINT NOT NULL DEFAULT 0,
  job TEXT,
  archived_at TEXT,
  archive_batch TEXT,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL
);
CREATE UNIQUE INDEX user_tables_active_name ON user_tables (workspace_id, name) WHERE archived_at IS NULL;
CREATE INDEX user_tables_by_created ON user_tables (workspace_id, created_at, id);
CREATE INDEX user_tables_by_name ON user_tables (workspace_id, name, id);
CREATE INDEX user_tables_by_updated ON user_tables (workspace_id, updated_at, id);
CREATE INDEX user_tables_by_folder ON user_tables (workspace_id, folder_path);
CREATE INDEX user_tables_by_batch ON user_tables (archive_batch) WHERE archive_batch IS NOT NULL;
CREATE TABLE table_views (
  id TEXT PRIMARY KEY,
  table_id TEXT NOT NULL REFERENCES user_tables(id) ON DELETE CASCADE,
  name TEXT NOT NULL,
  config TEXT NOT NULL,
  is_default BIGINT NOT NULL DEFAULT 0,
  created_by_email TEXT,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL
);
CREATE UNIQUE INDEX table_views_one_default ON table_views (table_id) WHERE is_default = 1;
CREATE INDEX table_views_by_table ON table_views (table_id, created_at, id);
