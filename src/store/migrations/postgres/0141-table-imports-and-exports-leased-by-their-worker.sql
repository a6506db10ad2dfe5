-- table imports and exports running are leased by their worker (owner and expiry)
ALTER TABLE table_imports ADD COLUMN lease_owner TEXT;
ALTER TABLE table_imports ADD COLUMN lease_until TEXT;
ALTER TABLE table_exports ADD COLUMN lease_owner TEXT;
ALTER TABLE table_exports ADD COLUMN lease_until TEXT
