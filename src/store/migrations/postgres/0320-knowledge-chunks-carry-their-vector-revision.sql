-- knowledge chunks carry the base's vector version at which their vector or state last changed, and removed chunks leave a tombstone, so a server's persisted vector index catches up with one indexed read instead of reloading every vector
ALTER TABLE knowledge_chunks ADD COLUMN vector_rev BIGINT NOT NULL DEFAULT 0;
CREATE INDEX knowledge_chunks_by_vector_rev ON knowledge_chunks (knowledge_base_id, vector_rev);
CREATE TABLE knowledge_vector_tombstones (
  knowledge_base_id TEXT NOT NULL,
  seq BIGINT NOT NULL,
  vector_rev BIGINT NOT NULL
);
CREATE INDEX knowledge_vector_tombstones_by_rev ON knowledge_vector_tombstones (knowledge_base_id, vector_rev)
