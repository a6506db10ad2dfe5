-- knowledge connector syncs are leased by the process running them (owner, expiry, and which sync holds it)
ALTER TABLE knowledge_connectors ADD COLUMN lease_owner TEXT;
ALTER TABLE knowledge_connectors ADD COLUMN lease_until TEXT;
ALTER TABLE knowledge_connectors ADD COLUMN sync_id TEXT
