-- idempotency keys in flight live in the database: a row in state in_flight, held by a lease, before the change commits
CREATE TABLE idempotency_keys_leased (
  subject TEXT NOT NULL,
  scope TEXT NOT NULL,
  operation_id TEXT NOT NULL,
  idem_key TEXT NOT NULL,
  fingerprint TEXT NOT NULL,
  state TEXT NOT NULL CHECK (state IN ('in_flight', 'applied', 'completed')),
  lease_owner TEXT,
  lease_until TEXT,
  resource_kind TEXT,
  resource_id TEXT,
  status BIGINT,
  headers TEXT,
  body TEXT,
  created_at TEXT NOT NULL,
  expires_at TEXT NOT NULL,
  PRIMARY KEY (subject, scope, operation_id, idem_key)
);
INSERT INTO idempotency_keys_leased (subject, scope, operation_id, idem_key, fingerprint, state, lease_owner, lease_until, resource_kind, resource_id, status, headers, body, created_at, expires_at)
  SELECT subject, scope, operation_id, idem_key, fingerprint, state, owner, NULL, resource_kind, resource_id, status, headers, body, created_at, expires_at FROM idempotency_keys;
DROP TABLE idempotency_keys;
ALTER TABLE idempotency_keys_leased RENAME TO idempotency_keys;
CREATE INDEX idempotency_keys_by_expiry ON idempotency_keys (expires_at)
