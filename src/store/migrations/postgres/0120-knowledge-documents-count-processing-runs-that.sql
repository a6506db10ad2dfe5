-- knowledge documents count processing runs that overran or were cut off, to retry them once and then fail them
ALTER TABLE knowledge_documents ADD COLUMN processing_interruptions BIGINT NOT NULL DEFAULT 0
