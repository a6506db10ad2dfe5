// Versioned schema changes, applied in order at start-up. Each migration is one file,
// `migrations/<dialect>/<version>-<slug>.sql`, whose first line is `-- <name>`. Add a new file with a version no
// other file uses; never edit an applied one. Another engine keeps its own set in a sibling folder.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Database } from './database.ts';

export interface Migration {
  version: number;
  name: string;
  sql: string;
}

const MIGRATIONS_ROOT = path.join(path.dirname(fileURLToPath(import.meta.url)), 'migrations');

/** The migrations of one dialect's folder, in version order. */
export function loadMigrations(dialect: string): Migration[] {
  const dir = path.join(MIGRATIONS_ROOT, dialect);
  const found: Migration[] = [];
  const seen = new Map<number, string>();
  for (const file of fs.readdirSync(dir).filter((f) => f.endsWith('.sql'))) {
    const match = /^(\d+)-[a-z0-9-]+\.sql$/.exec(file);
    if (!match) throw new Error(`Migration file ${file} is not named <version>-<slug>.sql.`);
    const version = Number(match[1]);
    if (seen.has(version)) throw new Error(`Migrations ${seen.get(version)} and ${file} share version ${version}.`);
    seen.set(version, file);
    const text = fs.readFileSync(path.join(dir, file), 'utf8');
    const [header = '', ...rest] = text.split('\n');
    if (!header.startsWith('-- ')) throw new Error(`Migration ${file} must start with a "-- <name>" line.`);
    found.push({ version, name: header.slice(3).trim(), sql: rest.join('\n') });
  }
  return found.sort((a, b) => a.version - b.version);
}

/** Splits a script on statement boundaries (a semicolon ending a line), since node:sqlite runs one statement per prepare. */
export function statementsOf(sql: string): string[] {
  return sql.split(/;\s*(?:\n|$)/).map((s) => s.trim()).filter(Boolean);
}

/**
 * The database holds migrations this build does not have: a newer version wrote it. Starting on it could
 * misread or damage what that version stored, so the start stops, naming both versions.
 */
export class NewerDatabaseError extends Error {
  readonly databaseVersion: number;
  readonly knownVersion: number;
  constructor(databaseVersion: number, knownVersion: number) {
    super(
      `the database has schema version ${databaseVersion}, newer than this build knows (up to ${knownVersion}); ` +
        'it was written by a newer version: run that version, or restore the backup taken before the upgrade',
    );
    this.name = 'NewerDatabaseError';
    this.databaseVersion = databaseVersion;
    this.knownVersion = knownVersion;
  }
}

/** Told of each migration as it is applied (start-up logs them). */
export type MigrationListener = (migration: Migration) => void;

export async function migrate(db: Database, migrations: Migration[] = loadMigrations(db.dialect.name), onApplied?: MigrationListener): Promise<number[]> {
  return db.withMigrationLock ? db.withMigrationLock(() => migrateNow(db, migrations, onApplied)) : migrateNow(db, migrations, onApplied);
}

async function migrateNow(db: Database, migrations: Migration[], onApplied?: MigrationListener): Promise<number[]> {
  await db.transaction((tx) =>
    tx.run('CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)'),
  );
  const applied = new Set((await db.read.all<{ version: number }>('SELECT version FROM schema_migrations')).map((r) => r.version));
  const known = new Set(migrations.map((m) => m.version));
  const unknown = [...applied].filter((v) => !known.has(v));
  if (unknown.length > 0) throw new NewerDatabaseError(Math.max(...unknown), latestVersion(migrations));
  const done: number[] = [];
  for (const m of migrations) {
    if (applied.has(m.version)) continue;
    await db.transaction(async (tx) => {
      for (const statement of statementsOf(m.sql)) await tx.run(statement);
      await tx.run('INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)', [m.version, m.name, new Date().toISOString()]);
    });
    done.push(m.version);
    onApplied?.(m);
  }
  return done;
}

/** The highest version among `migrations` (0 when there are none). */
export function latestVersion(migrations: Migration[]): number {
  return migrations.reduce((max, m) => Math.max(max, m.version), 0);
}

/** True when every migration of `migrations` is recorded as applied: one indexed read, cheap enough for a readiness probe. */
export async function schemaIsCurrent(db: Pick<Database, 'read'>, migrations: Migration[]): Promise<boolean> {
  const row = await db.read.get<{ applied: number }>('SELECT COUNT(*) AS applied FROM schema_migrations WHERE version <= ?', [latestVersion(migrations)]);
  return Number(row?.applied ?? 0) === migrations.length;
}
