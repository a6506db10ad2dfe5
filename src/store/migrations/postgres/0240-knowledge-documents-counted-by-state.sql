-- knowledge documents are counted by state for metrics at every scrape: an index on the state alone makes that an index-only count
CREATE INDEX knowledge_documents_by_status ON knowledge_documents (processing_status)
