-- idempotency_keys
CREATE TABLE idempotency_keys (
  subject TEXT NOT NULL,
  scope TEXT NOT NULL,
  operation_id TEXT NOT NULL,
  idem_key TEXT NOT NULL,
  fingerprint TEXT NOT NULL,
  state TEXT NOT NULL CHECK (state IN ('applied', 'completed')),
  owner TEXT,
  resource_kind TEXT,
  resource_id TEXT,
  status BIGINT,
  headers TEXT,
  body TEXT,
  created_at TEXT NOT NULL,
  expires_at TEXT NOT NULL,
  PRIMARY KEY (subject, scope, operation_id, idem_key)
);
CREATE INDEX idempotency_keys_by_expiry ON idempotency_keys (expires_at)
