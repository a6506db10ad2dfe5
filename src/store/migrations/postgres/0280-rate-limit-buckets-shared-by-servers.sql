-- rate-limit token buckets shared by the servers of one database (read and written only on Postgres; SQLite keeps its buckets in memory, one process owning the file)
-- UNLOGGED: a bucket is written on every request and worth nothing after a crash (it only starts full again);
-- skipping the WAL roughly triples the takes per second one hot key allows.
CREATE UNLOGGED TABLE rate_limit_buckets (
  key TEXT PRIMARY KEY,
  capacity INTEGER NOT NULL,
  tokens DOUBLE PRECISION NOT NULL,
  updated_ms BIGINT NOT NULL,
  allowed INTEGER NOT NULL
) WITH (fillfactor = 70)
