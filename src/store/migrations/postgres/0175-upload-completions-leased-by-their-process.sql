-- upload completions are leased by the process completing them, so a session whose completer died is handed back once the lease runs out
ALTER TABLE file_upload_sessions ADD COLUMN lease_owner TEXT;
ALTER TABLE file_upload_sessions ADD COLUMN lease_until TEXT
