// `npm run admin -- migrate-to-postgres --to <DATABASE_URL>`: moves a stopped server's SQLite database into an
// empty Postgres database, for the scale-out mode (issue 20). The target gets this build's Postgres schema from
// its own migrations; then every table the two schemas share is copied in foreign-key order, in batches, by the
// columns both have; the user tables' row tables are created through the Postgres dialect (their cell types
// differ) and copied; the knowledge full-text index, whose form differs by engine, is rebuilt from the chunks.
// Every table's row count is compared after the copy. File bytes and the secrets key are not in the database:
// the command says what to do with them (the servers must share both).
import fs from 'node:fs';
import { DatabaseSync } from 'node:sqlite';
import type { Config } from '../config.ts';
import { lockDataDir } from '../store/data-dir-lock.ts';
import { PostgresDatabase } from '../store/postgres.ts';
import { loadMigrations, migrate } from '../store/migrations.ts';
import type { SqlExecutor, SqlValue } from '../store/database.ts';
import { TableRowsRepository, rowsTable } from '../store/table-rows.ts';
import { CHUNK_TEXT_INDEX } from '../store/knowledge-chunks.ts';
import { blobStoreSettings } from '../files/blob-store.ts';

export class MigrationRefused extends Error {}

/** Rows per INSERT (bounded also by Postgres's 65,535 parameters per statement). */
const BATCH_ROWS = 500;
/** Tables whose content is not copied row by row: the migration history, and the engine-specific text index. */
const NOT_COPIED = new Set(['schema_migrations', CHUNK_TEXT_INDEX]);

export interface MigrationReport {
  from: string;
  schemaVersion: number;
  tables: Record<string, number>;
  userTables: number;
  textIndexRows: number;
  next: string[];
}

const quote = (name: string) => `"${name.replace(/"/g, '""')}"`;

/** Tables in an order where each comes after the tables its foreign keys point to (self references aside). */
function dependencyOrder(tables: string[], edges: { child: string; parent: string }[]): string[] {
  const pending = new Set(tables);
  const order: string[] = [];
  while (pending.size > 0) {
    const ready = [...pending].filter((t) => !edges.some((e) => e.child === t && e.parent !== t && pending.has(e.parent)));
    if (ready.length === 0) throw new Error(`foreign keys form a cycle among ${[...pending].join(', ')}`);
    for (const t of ready.sort()) {
      order.push(t);
      pending.delete(t);
    }
  }
  return order;
}

async function insertBatch(tx: SqlExecutor, table: string, columns: string[], rows: Record<string, SqlValue>[], overriding: boolean): Promise<void> {
  const one = `(${columns.map(() => '?').join(', ')})`;
  const params: SqlValue[] = [];
  for (const r of rows) for (const c of columns) params.push(r[c] ?? null);
  await tx.run(
    `INSERT INTO ${quote(table)} (${columns.map(quote).join(', ')})${overriding ? ' OVERRIDING SYSTEM VALUE' : ''} VALUES ${rows.map(() => one).join(', ')}`,
    params,
  );
}

/** Copies `select` (rows of `columns`) from the SQLite file into `table`, in batches; the number of rows copied. */
async function copyRows(source: DatabaseSync, target: PostgresDatabase, table: string, columns: string[], overriding: boolean): Promise<number> {
  const perBatch = Math.max(1, Math.min(BATCH_ROWS, Math.floor(60_000 / Math.max(1, columns.length))));
  // Insertion order (parents before their children in self-referencing tables); a WITHOUT ROWID table is read in
  // its primary key's order.
  const select = `SELECT ${columns.map(quote).join(', ')} FROM ${quote(table)}`;
  let statement;
  try {
    statement = source.prepare(`${select} ORDER BY rowid`);
  } catch {
    statement = source.prepare(select);
  }
  let batch: Record<string, SqlValue>[] = [];
  let copied = 0;
  for (const row of statement.iterate() as Iterable<Record<string, SqlValue>>) {
    batch.push(row);
    if (batch.length >= perBatch) {
      const rows = batch;
      batch = [];
      await target.transaction((tx) => insertBatch(tx, table, columns, rows, overriding));
      copied += rows.length;
    }
  }
  if (batch.length > 0) {
    const rows = batch;
    await target.transaction((tx) => insertBatch(tx, table, columns, rows, overriding));
    copied += rows.length;
  }
  return copied;
}

/**
 * Copies the SQLite database of `config` (DATA_DIR or DATABASE_FILE; no server may be running on it: its data
 * directory lock is taken for the copy) into the empty Postgres database at `url`.
 */
export async function migrateToPostgres(config: Config, url: string): Promise<MigrationReport> {
  if (!/^postgres(ql)?:\/\//.test(url)) throw new MigrationRefused('--to must be a postgres:// URL');
  if (!fs.existsSync(config.databaseFile)) throw new MigrationRefused(`there is no SQLite database at ${config.databaseFile} (set DATA_DIR or DATABASE_FILE to the data to move)`);
  const lock = lockDataDir(config.dataDir);
  const source = new DatabaseSync(config.databaseFile, { readOnly: true });
  const target = new PostgresDatabase(url, { poolSize: 2 });
  try {
    const sqliteLatest = Math.max(...loadMigrations('sqlite').map((m) => m.version));
    const sourceVersion = Number((source.prepare('SELECT MAX(version) AS v FROM schema_migrations').get() as { v: number | null }).v ?? 0);
    if (sourceVersion !== sqliteLatest) {
      throw new MigrationRefused(`the SQLite database has schema version ${sourceVersion}, this build ${sqliteLatest}: start this version's server on it once (it migrates at start), stop it, then migrate`);
    }
    const existing = await target.read.get<{ n: number }>("SELECT COUNT(*) AS n FROM information_schema.tables WHERE table_schema = current_schema()");
    if (Number(existing?.n ?? 0) > 0) throw new MigrationRefused('the target database is not empty: migrate into a new, empty database');
    await migrate(target, loadMigrations('postgres')); // under its migration lock

    const targetTables = (await target.read.all<{ name: string }>("SELECT table_name AS name FROM information_schema.tables WHERE table_schema = current_schema() AND table_type = 'BASE TABLE'")).map((r) => r.name);
    const sourceTables = new Set((source.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").all() as { name: string }[]).map((r) => r.name));
    const edges = await target.read.all<{ child: string; parent: string }>(
      "SELECT c.conrelid::regclass::text AS child, c.confrelid::regclass::text AS parent FROM pg_constraint c WHERE c.contype = 'f' AND c.connamespace = current_schema()::regnamespace",
    );
    const tables: Record<string, number> = {};
    const order = dependencyOrder(targetTables.filter((t) => sourceTables.has(t) && !NOT_COPIED.has(t)), edges);
    // Rows the migrations seeded (built-in clients and the like) are in the source too: they are copied with the rest.
    await target.transaction(async (tx) => {
      for (const table of [...order].reverse()) await tx.run(`DELETE FROM ${quote(table)}`);
    });
    for (const table of order) {
      const targetColumns = await target.read.all<{ name: string; identity: string }>(
        'SELECT column_name AS name, is_identity AS identity FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = ?',
        [table],
      );
      const sourceColumns = new Set((source.prepare(`PRAGMA table_info(${quote(table)})`).all() as { name: string }[]).map((c) => c.name));
      const columns = targetColumns.map((c) => c.name).filter((c) => sourceColumns.has(c));
      const copied = await copyRows(source, target, table, columns, targetColumns.some((c) => c.identity === 'YES'));
      // Sequences behind serial or identity columns continue after the copied keys.
      for (const c of columns) {
        const seq = await target.read.get<{ s: string | null }>('SELECT pg_get_serial_sequence(?, ?) AS s', [quote(table), c]);
        if (seq?.s) await target.read.get(`SELECT setval(?::regclass, GREATEST(1, (SELECT COALESCE(MAX(${quote(c)}), 0) FROM ${quote(table)})))`, [seq.s]);
      }
      tables[table] = copied;
    }

    // User tables: each has a rows table of its own, typed by the Postgres dialect.
    const userTables = source.prepare('SELECT id, columns FROM user_tables').all() as { id: string; columns: string }[];
    for (const t of userTables) {
      const name = rowsTable(t.id).slice(1, -1);
      if (!sourceTables.has(name)) continue;
      await target.transaction((tx) => new TableRowsRepository(tx).createTable(t.id, JSON.parse(t.columns)));
      const columns = (source.prepare(`PRAGMA table_info(${quote(name)})`).all() as { name: string }[]).map((c) => c.name);
      tables[name] = await copyRows(source, target, name, columns, false);
    }

    // The full-text index, rebuilt in the target's own form.
    const index = target.dialect.fullTextIndex(CHUNK_TEXT_INDEX);
    let textIndexRows = 0;
    let batch: { seq: number; content: string }[] = [];
    const flush = async () => {
      const rows = batch;
      batch = [];
      await target.transaction(async (tx) => {
        for (const r of rows) await index.add(tx, r.seq, r.content);
      });
      textIndexRows += rows.length;
    };
    for (const r of source.prepare('SELECT seq, content FROM knowledge_chunks ORDER BY seq').iterate() as Iterable<{ seq: number; content: string }>) {
      batch.push({ seq: Number(r.seq), content: r.content });
      if (batch.length >= BATCH_ROWS) await flush();
    }
    if (batch.length > 0) await flush();

    // Verify: every copied table holds as many rows as its source.
    for (const [table, copied] of Object.entries(tables)) {
      const had = Number((source.prepare(`SELECT COUNT(*) AS n FROM ${quote(table)}`).get() as { n: number }).n);
      const has = Number((await target.read.get<{ n: number }>(`SELECT COUNT(*) AS n FROM ${quote(table)}`))?.n ?? 0);
      if (had !== copied || has !== had) throw new Error(`table ${table}: ${had} rows in SQLite, ${has} in Postgres after the copy`);
    }

    const blobs = blobStoreSettings(config);
    const blobAdvice =
      blobs.kind === 's3'
        ? 'File bytes are already in the S3 bucket: give every server the same BLOB_STORE=s3 settings.'
        : `File bytes stay in ${blobs.blobDir}: put that directory where every server can reach it (a shared filesystem) and set BLOB_DIR to it on every server, or copy it into an S3 bucket and set BLOB_STORE=s3.`;
    const keyAdvice = config.secretsKey
      ? 'Secrets were sealed with the SECRETS_KEY set now: set the same SECRETS_KEY on every server.'
      : `Secrets were sealed with the key in ${config.dataDir}/secrets.key: set SECRETS_KEY to that file's content (base64) on every server; without it no server can open the secrets.`;
    return {
      from: config.databaseFile,
      schemaVersion: sourceVersion,
      tables,
      userTables: userTables.length,
      textIndexRows,
      next: [keyAdvice, blobAdvice, 'Start the servers with DATABASE_URL set to the target; keep the SQLite data directory until the servers answer as before.'],
    };
  } finally {
    source.close();
    await target.close();
    lock.release();
  }
}
