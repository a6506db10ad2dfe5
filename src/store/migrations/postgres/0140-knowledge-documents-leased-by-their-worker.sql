-- knowledge documents being processed are leased by their worker (owner and expiry), and each base counts changes to its vectors
ALTER TABLE knowledge_documents ADD COLUMN lease_owner TEXT;
ALTER TABLE knowledge_documents ADD COLUMN lease_until TEXT;
ALTER TABLE knowledge_bases ADD COLUMN vector_version BIGINT NOT NULL DEFAULT 0
