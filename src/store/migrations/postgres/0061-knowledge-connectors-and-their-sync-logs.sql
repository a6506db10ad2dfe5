-- knowledge connectors and their sync logs
CREATE TABLE knowledge_connectors (
  id TEXT PRIMARY KEY,
  knowledge_base_id TEXT NOT NULL REFERENCES knowledge_bases(id) ON DELETE CASCADE,
  workspace_id TEXT NOT NULL,
  connector_type TEXT NOT NULL,
  credential_id TEXT,
  api_key_sealed TEXT,
  source_config TEXT NOT NULL,
  sync_interval_minutes BIGINT NOT NULL,
  status TEXT NOT NULL CHECK (status IN ('active', 'paused', 'pending', 'syncing', 'error', 'disabled')),
  resume_status TEXT,
  last_sync_at TEXT,
  last_sync_error TEXT,
  last_sync_doc_count BIGINT,
  next_sync_at TEXT,
  consecutive_failures BIGINT NOT NULL DEFAULT 0,
  created_by TEXT,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL
);
CREATE INDEX knowledge_connectors_by_base ON knowledge_connectors (knowledge_base_id, created_at, id);
CREATE INDEX knowledge_connectors_due ON knowledge_connectors (next_sync_at) WHERE next_sync_at IS NOT NULL;
CREATE TABLE knowledge_connector_sync_logs (
  id TEXT PRIMARY KEY,
  connector_id TEXT NOT NULL REFERENCES knowledge_connectors(id) ON DELETE CASCADE,
  status TEXT NOT NULL,
  started_at TEXT NOT NULL,
  completed_at TEXT,
  docs_added BIGINT NOT NULL DEFAULT 0,
  docs_updated BIGINT NOT NULL DEFAULT 0,
  docs_deleted BIGINT NOT NULL DEFAULT 0,
  docs_unchanged BIGINT NOT NULL DEFAULT 0,
  docs_skipped BIGINT NOT NULL DEFAULT 0,
  docs_failed BIGINT NOT NULL DEFAULT 0,
  error_message TEXT
);
CREATE INDEX knowledge_connector_sync_logs_by_connector ON knowledge_connector_sync_logs (connector_id, started_at);
CREATE INDEX knowledge_documents_by_connector ON knowledge_documents (connector_id, external_id) WHERE connector_id IS NOT NULL
