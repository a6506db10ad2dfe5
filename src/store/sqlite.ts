// SQLite through the built-in node:sqlite, in WAL mode. Writes go through one connection, one transaction
// at a time (SQLite has a single writer anyway); plain reads use a second connection, so they never see a
// transaction that is still open; read-only transactions use a third (opened on first use), one at a time, so a
// snapshot read neither waits for the writer nor holds up plain reads.
import { DatabaseSync, type StatementSync } from 'node:sqlite';
import fs from 'node:fs';
import path from 'node:path';
import type { Database, Row, SqlExecutor, SqlValue, StoreConnection, TransactionOptions } from './database.ts';
import type { SqlDialect } from './dialect.ts';
import { FOLD_FUNCTION, sqliteDialect } from './sqlite-dialect.ts';
import { ForeignKeyViolation, SerializationFailure, UniqueViolation } from './errors.ts';
import { TransactionQueue } from './transaction-queue.ts';

// SQLite's extended result codes (sqlite3.h) for the failures callers need to tell apart.
const SQLITE_BUSY = 5;
const SQLITE_LOCKED = 6;
const SQLITE_CONSTRAINT_FOREIGNKEY = 787;
const SQLITE_CONSTRAINT_PRIMARYKEY = 1555;
const SQLITE_CONSTRAINT_UNIQUE = 2067;

/** The typed store error for a node:sqlite error (or the error itself when it is not one callers switch on). */
export function mapSqliteError(err: unknown): unknown {
  const errcode = (err as { errcode?: number }).errcode;
  if (typeof errcode !== 'number') return err;
  const message = (err as Error).message;
  if (errcode === SQLITE_CONSTRAINT_UNIQUE || errcode === SQLITE_CONSTRAINT_PRIMARYKEY) {
    // "UNIQUE constraint failed: table.a, table.b"
    const named = /constraint failed: (.+)$/.exec(message)?.[1] ?? '';
    const qualified = named.split(',').map((s) => s.trim()).filter(Boolean);
    const table = qualified[0]?.split('.')[0] ?? '';
    return new UniqueViolation(table, qualified.map((q) => q.slice(q.indexOf('.') + 1)), { cause: err });
  }
  if (errcode === SQLITE_CONSTRAINT_FOREIGNKEY) return new ForeignKeyViolation(message, { cause: err });
  if ((errcode & 0xff) === SQLITE_BUSY || (errcode & 0xff) === SQLITE_LOCKED) return new SerializationFailure(message, { cause: err });
  return err;
}

const STATEMENT_CACHE_SIZE = 2000;

class Connection implements SqlExecutor {
  readonly dialect: SqlDialect = sqliteDialect;
  readonly db: DatabaseSync;
  private readonly statements = new Map<string, StatementSync>();
  constructor(file: string) {
    this.db = new DatabaseSync(file);
    this.db.exec('PRAGMA journal_mode = WAL');
    this.db.exec('PRAGMA foreign_keys = ON');
    this.db.exec('PRAGMA busy_timeout = 5000');
    this.db.exec('PRAGMA synchronous = NORMAL');
    this.db.exec('PRAGMA temp_store = MEMORY');
    this.db.exec('PRAGMA mmap_size = 268435456');
    // Unicode case folding for case-insensitive matching (SQLite's lower() folds ASCII only); used by tables.
    this.db.function(FOLD_FUNCTION, { deterministic: true }, (v) => (typeof v === 'string' ? v.toLowerCase() : v));
  }
  private prepare(sql: string): StatementSync {
    let stmt = this.statements.get(sql);
    if (!stmt) {
      // SQLite re-prepares a statement with a bound LIMIT on every execution; see limitClause() in keyset.ts.
      if (/\bLIMIT\s+\?/i.test(sql)) throw new Error('Write LIMIT with limitClause(n), not as a bound parameter');
      stmt = this.db.prepare(sql);
      // Generated SQL (table queries) varies with its input, so the cache is bounded: the oldest entry goes.
      if (this.statements.size >= STATEMENT_CACHE_SIZE) this.statements.delete(this.statements.keys().next().value!);
      this.statements.set(sql, stmt);
    }
    return stmt;
  }
  allSync<T>(sql: string, params: readonly SqlValue[] = []): T[] {
    try {
      return this.prepare(sql).all(...params) as T[];
    } catch (err) {
      throw mapSqliteError(err);
    }
  }
  async all<T = Row>(sql: string, params: readonly SqlValue[] = []): Promise<T[]> {
    return this.allSync<T>(sql, params);
  }
  async get<T = Row>(sql: string, params: readonly SqlValue[] = []): Promise<T | undefined> {
    try {
      return this.prepare(sql).get(...params) as T | undefined;
    } catch (err) {
      throw mapSqliteError(err);
    }
  }
  async run(sql: string, params: readonly SqlValue[] = []): Promise<{ changes: number }> {
    try {
      const r = this.prepare(sql).run(...params);
      return { changes: Number(r.changes) };
    } catch (err) {
      throw mapSqliteError(err);
    }
  }
  /** Transaction control (BEGIN, COMMIT, ROLLBACK), with engine errors mapped like any statement's. */
  exec(sql: string): void {
    try {
      this.db.exec(sql);
    } catch (err) {
      throw mapSqliteError(err);
    }
  }
  close(): void {
    this.statements.clear();
    if (this.db.isOpen) this.db.close();
  }
}


export class SqliteDatabase implements Database {
  readonly dialect: SqlDialect = sqliteDialect;
  readonly connection: StoreConnection | null;
  private readonly file: string;
  private readonly writer: Connection;
  private readonly reader: Connection;
  private snapshotReader: Connection | null = null;
  private readonly writes = new TransactionQueue();
  private readonly snapshots = new TransactionQueue();
  private closed = false;

  constructor(file: string) {
    this.file = file;
    this.connection = file === ':memory:' ? null : { engine: 'sqlite', file };
    if (file !== ':memory:') {
      // Owner-only: SQLite creates the -wal and -shm files with the database file's mode, so creating the
      // database 0600 first covers all three; files of an older, laxer install are tightened here too.
      fs.mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
      fs.closeSync(fs.openSync(file, 'a', 0o600));
      fs.chmodSync(file, 0o600);
    }
    this.writer = new Connection(file);
    // An in-memory database exists only on its own connection, so it reads there too.
    this.reader = file === ':memory:' ? this.writer : new Connection(file);
    if (this.reader !== this.writer) this.reader.db.exec('PRAGMA query_only = ON');
    if (file !== ':memory:') {
      for (const extra of [`${file}-wal`, `${file}-shm`]) {
        try {
          fs.chmodSync(extra, 0o600);
        } catch {
          /* not created yet; SQLite will give it the database's mode */
        }
      }
    }
  }

  get read(): SqlExecutor {
    return this.reader;
  }

  transaction<T>(fn: (tx: SqlExecutor) => Promise<T>, options: TransactionOptions = {}): Promise<T> {
    const retries = Math.max(0, Math.floor(options.retryOnSerializationFailure ?? 0));
    // An in-memory database has one connection: its read-only transactions queue with the writes.
    const onSnapshot = options.readOnly === true && this.reader !== this.writer;
    const attempt = async (): Promise<T> => {
      if (this.closed) throw new Error('The database is closed.');
      const connection = onSnapshot ? (this.snapshotReader ??= this.openSnapshotReader()) : this.writer;
      // A read-only transaction takes its snapshot at the first read (DEFERRED); a write takes the lock up front.
      connection.exec(options.readOnly ? 'BEGIN DEFERRED' : 'BEGIN IMMEDIATE');
      if (options.readOnly && !onSnapshot) connection.exec('PRAGMA query_only = ON');
      try {
        const result = await fn(connection);
        connection.exec('COMMIT');
        return result;
      } catch (err) {
        if (connection.db.isTransaction) connection.db.exec('ROLLBACK');
        throw err;
      } finally {
        if (options.readOnly && !onSnapshot) connection.exec('PRAGMA query_only = OFF');
      }
    };
    const withRetries = async (): Promise<T> => {
      for (let retry = 0; ; retry++) {
        try {
          return await attempt();
        } catch (err) {
          if (!(err instanceof SerializationFailure) || retry >= retries) throw err;
        }
      }
    };
    return (onSnapshot ? this.snapshots : this.writes).enqueue(withRetries);
  }

  private openSnapshotReader(): Connection {
    const c = new Connection(this.file);
    c.db.exec('PRAGMA query_only = ON');
    return c;
  }

  /** Synchronous schema work at start-up, before the server takes requests. */
  execScript(sql: string): void {
    this.writer.db.exec(sql);
  }

  async close(): Promise<void> {
    await Promise.all([this.writes.idle(), this.snapshots.idle()]);
    this.closed = true;
    this.snapshotReader?.close();
    if (this.reader !== this.writer) this.reader.close();
    this.writer.close();
  }
}
