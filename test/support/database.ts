// Raw SQL on a test server's database, whichever engine it runs on (SQLite in its DATA_DIR, or the Postgres of
// TEST_DATABASE=postgres named by its databaseEnv): for the few tests that set up a state the API cannot reach (a
// lease left by a dead process) or check how something is stored. Write portable SQL with `?` placeholders.
import path from 'node:path';
import type { Database } from '../../src/store/database.ts';
import { PostgresDatabase } from '../../src/store/postgres.ts';
import { SqliteDatabase } from '../../src/store/sqlite.ts';

export async function withTestDatabase<T>(where: { dataDir: string; databaseEnv?: Record<string, string> }, fn: (db: Database) => Promise<T>): Promise<T> {
  const url = where.databaseEnv?.DATABASE_URL;
  const db: Database = url ? new PostgresDatabase(url, { poolSize: 2 }) : new SqliteDatabase(path.join(where.dataDir, 'workspace.sqlite'));
  try {
    return await fn(db);
  } finally {
    await db.close();
  }
}
