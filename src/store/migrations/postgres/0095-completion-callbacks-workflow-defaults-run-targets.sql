-- completion callbacks: workflow defaults, run targets, signing secrets, delivery outbox and attempt log
CREATE TABLE workflow_callback_defaults (
  workflow_id TEXT PRIMARY KEY REFERENCES workflows(id) ON DELETE CASCADE,
  url TEXT NOT NULL,
  updated_by TEXT,
  updated_at TEXT NOT NULL
);
CREATE TABLE run_callback_targets (
  run_id TEXT PRIMARY KEY REFERENCES workflow_runs(id) ON DELETE CASCADE,
  url TEXT NOT NULL,
  source TEXT NOT NULL CHECK (source IN ('run', 'workflow'))
);
CREATE TABLE callback_signing_secrets (
  id TEXT PRIMARY KEY,
  workspace_id TEXT NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
  sealed TEXT NOT NULL,
  last_four TEXT NOT NULL,
  created_by TEXT,
  created_at TEXT NOT NULL,
  expires_at TEXT
);
CREATE INDEX callback_signing_secrets_by_workspace ON callback_signing_secrets (workspace_id, created_at, id);
CREATE TABLE run_callback_deliveries (
  id TEXT PRIMARY KEY,
  run_id TEXT NOT NULL REFERENCES workflow_runs(id) ON DELETE CASCADE,
  workspace_id TEXT NOT NULL,
  url TEXT NOT NULL,
  event TEXT NOT NULL,
  payload TEXT NOT NULL,
  status TEXT NOT NULL CHECK (status IN ('pending', 'delivered', 'failed')),
  attempts BIGINT NOT NULL DEFAULT 0,
  next_attempt_at TEXT,
  attempt_started_at TEXT,
  in_flight_until TEXT,
  created_at TEXT NOT NULL,
  delivered_at TEXT,
  last_error TEXT
);
CREATE INDEX run_callback_deliveries_due ON run_callback_deliveries (next_attempt_at) WHERE status = 'pending';
CREATE INDEX run_callback_deliveries_by_run ON run_callback_deliveries (run_id, created_at, id);
CREATE TABLE run_callback_attempts (
  delivery_id TEXT NOT NULL REFERENCES run_callback_deliveries(id) ON DELETE CASCADE,
  attempt BIGINT NOT NULL,
  started_at TEXT NOT NULL,
  duration_ms BIGINT NOT NULL,
  status_code BIGINT,
  error TEXT,
  outcome TEXT NOT NULL CHECK (outcome IN ('delivered', 'retry', 'failed')),
  next_attempt_at TEXT,
  PRIMARY KEY (delivery_id, attempt)
)
