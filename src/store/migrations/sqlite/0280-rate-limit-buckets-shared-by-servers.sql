-- rate-limit token buckets shared by the servers of one database (read and written only on Postgres; SQLite keeps its buckets in memory, one process owning the file)
CREATE TABLE rate_limit_buckets (
  key TEXT PRIMARY KEY,
  capacity INTEGER NOT NULL,
  tokens REAL NOT NULL,
  updated_ms INTEGER NOT NULL,
  allowed INTEGER NOT NULL
)
