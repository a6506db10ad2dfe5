-- knowledge bases
CREATE TABLE knowledge_bases (
  id TEXT PRIMARY KEY,
  workspace_id TEXT NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
  name TEXT NOT NULL,
  description TEXT,
  folder_path TEXT NOT NULL DEFAULT '/',
  chunking_config TEXT NOT NULL,
  embedding_model TEXT NOT NULL,
  embedding_dimension INTEGER NOT NULL,
  created_by TEXT,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  deleted_at TEXT
);
CREATE INDEX knowledge_bases_by_workspace ON knowledge_bases (workspace_id, created_at, id);
CREATE TABLE knowledge_documents (
  id TEXT PRIMARY KEY,
  knowledge_base_id TEXT NOT NULL REFERENCES knowledge_bases(id) ON DELETE CASCADE,
  workspace_id TEXT NOT NULL,
  filename TEXT NOT NULL,
  file_size INTEGER NOT NULL,
  mime_type TEXT NOT NULL,
  blob_key TEXT,
  source_file_id TEXT,
  processing_status TEXT NOT NULL CHECK (processing_status IN ('pending', 'processing', 'completed', 'failed')),
  processing_error TEXT,
  processing_started_at TEXT,
  processing_completed_at TEXT,
  processing_attempt INTEGER NOT NULL DEFAULT 0,
  processing_options TEXT,
  chunk_count INTEGER NOT NULL DEFAULT 0,
  token_count INTEGER NOT NULL DEFAULT 0,
  character_count INTEGER NOT NULL DEFAULT 0,
  enabled INTEGER NOT NULL DEFAULT 1,
  connector_id TEXT,
  connector_type TEXT,
  source_url TEXT,
  external_id TEXT,
  content_hash TEXT,
  user_excluded INTEGER NOT NULL DEFAULT 0,
  tag1 TEXT, tag2 TEXT, tag3 TEXT, tag4 TEXT, tag5 TEXT, tag6 TEXT, tag7 TEXT,
  number1 REAL, number2 REAL, number3 REAL, number4 REAL, number5 REAL,
  date1 TEXT, date2 TEXT,
  boolean1 INTEGER, boolean2 INTEGER, boolean3 INTEGER,
  uploaded_at TEXT NOT NULL,
  updated_at TEXT NOT NULL
);
CREATE INDEX knowledge_documents_by_base ON knowledge_documents (knowledge_base_id, uploaded_at, id);
CREATE INDEX knowledge_documents_queue ON knowledge_documents (uploaded_at, id) WHERE processing_status IN ('pending', 'processing');
CREATE TABLE knowledge_chunks (
  seq INTEGER PRIMARY KEY AUTOINCREMENT,
  id TEXT NOT NULL UNIQUE,
  document_id TEXT NOT NULL REFERENCES knowledge_documents(id) ON DELETE CASCADE,
  knowledge_base_id TEXT NOT NULL,
  chunk_index INTEGER NOT NULL,
  content TEXT NOT NULL,
  content_length INTEGER NOT NULL,
  token_count INTEGER NOT NULL,
  enabled INTEGER NOT NULL DEFAULT 1,
  start_offset INTEGER NOT NULL,
  end_offset INTEGER NOT NULL,
  embedding BLOB,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL
);
CREATE INDEX knowledge_chunks_by_document ON knowledge_chunks (document_id, chunk_index);
CREATE INDEX knowledge_chunks_by_base ON knowledge_chunks (knowledge_base_id, seq);
CREATE VIRTUAL TABLE knowledge_chunks_fts USING fts5(content, content='', contentless_delete=1, tokenize='porter unicode61');
CREATE TABLE knowledge_tag_definitions (
  id TEXT PRIMARY KEY,
  knowledge_base_id TEXT NOT NULL REFERENCES knowledge_bases(id) ON DELETE CASCADE,
  tag_slot TEXT NOT NULL,
  display_name TEXT NOT NULL,
  field_type TEXT NOT NULL CHECK (field_type IN ('text', 'number', 'date', 'boolean')),
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  UNIQUE (knowledge_base_id, tag_slot),
  UNIQUE (knowledge_base_id, display_name)
);
CREATE TABLE knowledge_upload_sessions (
  upload_id TEXT PRIMARY KEY REFERENCES file_upload_sessions(id) ON DELETE CASCADE,
  knowledge_base_id TEXT NOT NULL,
  options TEXT NOT NULL,
  document_id TEXT
)
