// Postgres through node-postgres (`pg`), for the scale-out mode: several server processes share one database.
//
// Isolation model. Every caller was written against SQLite, where one writer at a time holds the database
// (BEGIN IMMEDIATE): a transaction's check-then-write never races another writer. Postgres keeps that promise
// here by serializing write transactions on one transaction-scoped advisory lock (WRITE_LOCK), taken as the
// transaction's first statement, at READ COMMITTED: once the lock is held every later statement sees every
// transaction that committed before, and no other writer can commit until this one ends, so each write
// transaction behaves as if it ran alone, on every server. The alternative, SERIALIZABLE with the engine
// re-running fn on 40001, would let writers overlap but re-runs every fn on conflict; many fns do work beside the
// database (announce a run, wake a worker, write a blob), so re-running them is not safe without auditing each of
// the ~100 call sites, and commit latency, not lock hold time, bounds a queue's rate on one machine anyway
// (measured: see the report of the branch that added this file). Within one process write transactions queue
// before they take a pool client (as on SQLite), so waiting writers never exhaust the pool while the lock holder
// still needs a client for a plain read. Read-only transactions take no lock: REPEATABLE READ READ ONLY, one
// snapshot, concurrent with everything. Plain reads (`read`) run on any pooled client and see committed data.
// Row-locked transactions (the run queue's claims, renewals and completions: `rowLocked`) take no advisory lock
// either: every write in them is conditional on the row's state or skips locked rows, so they run at READ
// COMMITTED beside every other transaction, on row locks alone; at most half the pool at once, so a write-lock
// holder always finds a client for its plain reads while row-locked transactions wait for its rows.
import { once } from 'node:events';
import pg from 'pg';
import { from as copyFrom } from 'pg-copy-streams';
import type { Database, Row, SqlExecutor, SqlValue, StoreConnection, TransactionOptions } from './database.ts';
import type { SqlDialect } from './dialect.ts';
import { postgresDialect } from './postgres-dialect.ts';
import { PostgresTokenBuckets, PostgresWakes } from './postgres-coordination.ts';
import { ForeignKeyViolation, SerializationFailure, UniqueViolation } from './errors.ts';
import { TransactionQueue } from './transaction-queue.ts';

/** The advisory lock key every write transaction holds (an arbitrary constant: "owa" write). */
const WRITE_LOCK = 0x6f7761;
/** Longest a write transaction waits for WRITE_LOCK (SQLite's busy timeout is 5 s; more writers share it here). */
const LOCK_TIMEOUT = '10s';
/** The advisory lock key held while migrating, so servers starting together migrate once. */
const MIGRATION_LOCK = 0x6f776d;

// Type OIDs (pg_type) whose text form is parsed here to what the SQLite engine returns.
const INT8 = 20;
const NUMERIC = 1700;
const BOOL = 16;
const BYTEA = 17;

/** Values read the way node:sqlite returns them: numbers (not strings) for int8/numeric, 0/1 for booleans, Uint8Array for bytes. */
const types: pg.CustomTypesConfig = {
  getTypeParser: ((oid: number, format?: 'text' | 'binary') => {
    if (oid === INT8 || oid === NUMERIC) return (v: string) => Number(v);
    if (oid === BOOL) return (v: string) => (v === 't' ? 1 : 0);
    if (oid === BYTEA) {
      const parse = pg.types.getTypeParser(BYTEA, 'text') as (v: string) => Buffer;
      return (v: string) => {
        const b = parse(v);
        return new Uint8Array(b.buffer, b.byteOffset, b.byteLength);
      };
    }
    return pg.types.getTypeParser(oid, format ?? 'text');
  }) as pg.CustomTypesConfig['getTypeParser'],
};

/** The typed store error for a Postgres error (or the error itself when it is not one callers switch on). */
export function mapPostgresError(err: unknown): unknown {
  const e = err as { code?: string; table?: string; detail?: string; message?: string };
  if (typeof e.code !== 'string') return err;
  switch (e.code) {
    case '23505': {
      // detail: "Key (workspace_id, name)=(…) already exists."
      // An expression index names its expression: lower(email) is reported as the column email.
      const columns = (/^Key \((.+?)\)=\(/.exec(e.detail ?? '')?.[1]?.split(',') ?? []).map((c) => c.trim().replace(/^\w+\((\w+)\)$/, '$1'));
      return new UniqueViolation(e.table ?? '', columns, { cause: err });
    }
    case '23503':
      return new ForeignKeyViolation(e.message ?? 'foreign key violation', { cause: err });
    case '40001': // serialization_failure
    case '40P01': // deadlock_detected
    case '55P03': // lock_not_available
      return new SerializationFailure(e.message ?? 'serialization failure', { cause: err });
  }
  return err;
}

const translations = new Map<string, string>();
const TRANSLATION_CACHE_SIZE = 2000;

/**
 * The SQL with each `?` placeholder numbered (`$1`, `$2`, …), skipping string literals, quoted identifiers and
 * comments; cached per text (bounded: generated table queries vary with their input).
 */
export function numberPlaceholders(sql: string): string {
  const cached = translations.get(sql);
  if (cached !== undefined) return cached;
  let out = '';
  let n = 0;
  for (let i = 0; i < sql.length; i++) {
    const c = sql[i]!;
    if (c === "'" || c === '"') {
      const end = sql.indexOf(c, i + 1);
      const stop = end < 0 ? sql.length : end;
      out += sql.slice(i, stop + 1);
      i = stop;
    } else if (c === '-' && sql[i + 1] === '-') {
      const end = sql.indexOf('\n', i);
      const stop = end < 0 ? sql.length : end;
      out += sql.slice(i, stop);
      i = stop - 1;
    } else if (c === '?') {
      out += `$${++n}`;
    } else {
      out += c;
    }
  }
  if (translations.size >= TRANSLATION_CACHE_SIZE) translations.delete(translations.keys().next().value!);
  translations.set(sql, out);
  return out;
}

function bind(params: readonly SqlValue[]): unknown[] {
  return params.map((p) => {
    if (p instanceof Uint8Array) return Buffer.from(p.buffer, p.byteOffset, p.byteLength);
    if (typeof p === 'bigint') return p.toString();
    return p;
  });
}

/** Statements run this often get a server-side prepared statement per connection (planning once). */
const PREPARE_AFTER = 3;
const prepareCounts = new Map<string, number>();
const preparedNames = new Map<string, string>();

/**
 * Only statements whose result shape cannot change under them are prepared: a cached plan of `SELECT *` fails
 * ("cached plan must not change result type") once a user table gains a column, and DDL gains nothing.
 */
// A user table's rows table ("trows_…") has columns whose types change (a retype is ALTER COLUMN TYPE), and a
// prepared plan must not change its result type (0A000), so SQL on it is never prepared.
function preparable(text: string): boolean {
  return !text.includes('*') && !text.includes('"trows_') && !/^\s*(CREATE|ALTER|DROP)\b/i.test(text);
}

function queryConfig(sql: string, params: readonly SqlValue[]): pg.QueryConfig {
  const text = numberPlaceholders(sql);
  let name = preparedNames.get(text);
  if (name === undefined && preparedNames.size < 500 && preparable(text)) {
    const seen = (prepareCounts.get(text) ?? 0) + 1;
    if (seen >= PREPARE_AFTER) {
      name = `owa_${preparedNames.size}`;
      preparedNames.set(text, name);
      prepareCounts.delete(text);
    } else if (prepareCounts.size < 5000) {
      prepareCounts.set(text, seen);
    }
  }
  return name ? { name, text, values: bind(params) } : { text, values: bind(params) };
}

/** A value in COPY's text format: \N for NULL; backslash, tab and line breaks escaped; bytes as \\x hex. */
function copyText(v: SqlValue): string {
  if (v === null) return '\\N';
  if (typeof v === 'string') return /[\\\t\n\r]/.test(v) ? v.replace(/[\\\t\n\r]/g, (c) => COPY_ESCAPES[c]!) : v;
  if (v instanceof Uint8Array) return `\\\\x${Buffer.from(v.buffer, v.byteOffset, v.byteLength).toString('hex')}`;
  return String(v);
}
const COPY_ESCAPES: Record<string, string> = { '\\': '\\\\', '\t': '\\t', '\n': '\\n', '\r': '\\r' };
/** Text sent to COPY per write: large enough to keep round trips few, small enough to stay off the heap's mind. */
const COPY_CHUNK_CHARS = 256 * 1024;

/** COPY … FROM STDIN on `client`, the rows written in chunks, waiting whenever the socket is full. */
async function copyRows(client: pg.PoolClient, table: string, columns: readonly string[], rows: number, value: (row: number, column: number) => SqlValue): Promise<void> {
  const stream = client.query(copyFrom(`COPY ${table} (${columns.join(', ')}) FROM STDIN`));
  const done = new Promise<void>((resolve, reject) => {
    stream.on('finish', resolve);
    stream.on('error', reject);
  });
  // A failed COPY ends the stream with an error; writing on would throw a second, less helpful one.
  let failed = false;
  stream.on('error', () => (failed = true));
  const width = columns.length;
  let chunk = '';
  for (let row = 0; row < rows && !failed; row++) {
    for (let c = 0; c < width; c++) chunk += (c === 0 ? '' : '\t') + copyText(value(row, c));
    chunk += '\n';
    if (chunk.length >= COPY_CHUNK_CHARS) {
      const ok = stream.write(chunk);
      chunk = '';
      if (!ok) await Promise.race([once(stream, 'drain'), done]);
    }
  }
  if (!failed) stream.end(chunk);
  await done;
}

class Executor implements SqlExecutor {
  readonly dialect: SqlDialect = postgresDialect;
  private readonly target: pg.Pool | pg.PoolClient;
  constructor(target: pg.Pool | pg.PoolClient) {
    this.target = target;
  }
  private async query<T>(sql: string, params: readonly SqlValue[]): Promise<pg.QueryResult<T & pg.QueryResultRow>> {
    try {
      return await this.target.query<T & pg.QueryResultRow>(queryConfig(sql, params));
    } catch (err) {
      throw mapPostgresError(err);
    }
  }
  async all<T = Row>(sql: string, params: readonly SqlValue[] = []): Promise<T[]> {
    return (await this.query<T>(sql, params)).rows;
  }
  async get<T = Row>(sql: string, params: readonly SqlValue[] = []): Promise<T | undefined> {
    return (await this.query<T>(sql, params)).rows[0];
  }
  async run(sql: string, params: readonly SqlValue[] = []): Promise<{ changes: number }> {
    return { changes: (await this.query(sql, params)).rowCount ?? 0 };
  }
  async copyIn(table: string, columns: readonly string[], rows: number, value: (row: number, column: number) => SqlValue): Promise<void> {
    if (rows === 0) return;
    const client = this.target instanceof pg.Pool ? await this.target.connect() : (this.target as pg.PoolClient);
    try {
      await copyRows(client, table, columns, rows, value);
    } catch (err) {
      throw mapPostgresError(err);
    } finally {
      if (client !== this.target) client.release();
    }
  }
}


/**
 * The database's encoding and locale cannot give the answers SQLite gives: text must be UTF-8, sort by code point
 * (collation C, POSIX or C.UTF-8; not ICU or a language's collation, under which ORDER BY, ranges and keyset
 * cursors on text order differently) and fold case over all of Unicode (a UTF-8 ctype: lower() under ctype C
 * folds ASCII only). `createdb --template=template0 --encoding=UTF8 --locale=C.UTF-8` makes one that can.
 */
export class UnsupportedDatabaseLocaleError extends Error {
  constructor(found: string) {
    super(`the Postgres database at DATABASE_URL has ${found}; it needs encoding UTF8 with locale C.UTF-8 (create it with: createdb --template=template0 --encoding=UTF8 --locale=C.UTF-8 <name>)`);
    this.name = 'UnsupportedDatabaseLocaleError';
  }
}

const CODE_POINT_COLLATIONS = new Set(['c', 'posix', 'c.utf-8', 'c.utf8', 'ucs_basic']);

/** Refuses (UnsupportedDatabaseLocaleError) a database whose encoding or locale differs from what the README requires. */
export async function checkDatabaseLocale(db: SqlExecutor): Promise<void> {
  const r = await db.get<{ encoding: string; collate: string; ctype: string; provider: string }>(
    "SELECT pg_encoding_to_char(encoding) AS encoding, datcollate AS collate, datctype AS ctype, CAST(datlocprovider AS TEXT) AS provider FROM pg_database WHERE datname = current_database()",
  );
  if (!r) return;
  const utf8 = (locale: string) => /\.utf-?8$/i.test(locale);
  const ok = r.encoding === 'UTF8' && r.provider !== 'i' && CODE_POINT_COLLATIONS.has(r.collate.toLowerCase()) && utf8(r.ctype);
  if (!ok) throw new UnsupportedDatabaseLocaleError(`encoding ${r.encoding}, collation ${r.collate}${r.provider === 'i' ? ' (ICU)' : ''} and ctype ${r.ctype}`);
}

/** At most `size` tasks at once; the others wait in order. */
class Slots {
  private running = 0;
  private readonly waiting: (() => void)[] = [];
  private drained: (() => void)[] = [];
  private readonly size: number;
  constructor(size: number) {
    this.size = size;
  }
  async run<T>(task: () => Promise<T>): Promise<T> {
    if (this.running >= this.size) await new Promise<void>((r) => this.waiting.push(r));
    else this.running++;
    try {
      return await task();
    } finally {
      const next = this.waiting.shift();
      if (next) next();
      else if (--this.running === 0) for (const d of this.drained.splice(0)) d();
    }
  }
  idle(): Promise<void> {
    return this.running === 0 ? Promise.resolve() : new Promise((r) => this.drained.push(r));
  }
}

export interface PostgresOptions {
  /** Most connections this process opens (default 10). */
  poolSize?: number;
}

export class PostgresDatabase implements Database {
  readonly dialect: SqlDialect = postgresDialect;
  readonly connection: StoreConnection;
  readonly read: SqlExecutor;
  private readonly pool: pg.Pool;
  private readonly writes = new TransactionQueue();
  private readonly rowLocked: Slots;
  private closed = false;
  readonly tokenBuckets: PostgresTokenBuckets;
  private wakeChannel: PostgresWakes | null = null;

  constructor(url: string, options: PostgresOptions = {}) {
    this.connection = { engine: 'postgres', url };
    const poolSize = options.poolSize ?? 10;
    this.pool = new pg.Pool({ connectionString: url, max: poolSize, types });
    this.rowLocked = new Slots(Math.max(1, Math.floor(poolSize / 2)));
    // An idle client that loses its connection (the server restarted) is dropped from the pool, not fatal.
    this.pool.on('error', () => undefined);
    this.read = new Executor(this.pool);
    this.tokenBuckets = new PostgresTokenBuckets(this.pool);
  }

  /** Opened on first use: a worker thread's store never listens. */
  get wakes(): PostgresWakes {
    return (this.wakeChannel ??= new PostgresWakes(this.connection.engine === 'postgres' ? this.connection.url : '', this.pool));
  }

  transaction<T>(fn: (tx: SqlExecutor) => Promise<T>, options: TransactionOptions = {}): Promise<T> {
    const retries = Math.max(0, Math.floor(options.retryOnSerializationFailure ?? 0));
    const attempt = async (): Promise<T> => {
      if (this.closed) throw new Error('The database is closed.');
      const client = await this.pool.connect();
      let broken: unknown;
      try {
        if (options.readOnly) {
          await client.query('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY');
        } else if (options.rowLocked) {
          await client.query(`BEGIN; SET LOCAL lock_timeout = '${LOCK_TIMEOUT}'`);
        } else {
          // One round trip (one simple-protocol message). A lock not obtained within LOCK_TIMEOUT is a
          // SerializationFailure (55P03), as SQLite's busy timeout is: a caller may retry, nothing waits forever.
          await client.query(`BEGIN; SET LOCAL lock_timeout = '${LOCK_TIMEOUT}'; SELECT pg_advisory_xact_lock(${WRITE_LOCK})`);
        }
        try {
          const result = await fn(new Executor(client));
          await client.query('COMMIT');
          return result;
        } catch (err) {
          await client.query('ROLLBACK').catch((e: unknown) => (broken = e));
          throw mapPostgresError(err);
        }
      } catch (err) {
        throw mapPostgresError(err);
      } finally {
        client.release(broken instanceof Error ? broken : undefined);
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
    if (options.readOnly) return withRetries();
    if (options.rowLocked) return this.rowLocked.run(withRetries);
    return this.writes.enqueue(withRetries);
  }

  /** Runs `fn` while holding the migration lock, so only one server migrates at a time (the others then find it done). */
  async withMigrationLock<T>(fn: () => Promise<T>): Promise<T> {
    const client = await this.pool.connect();
    try {
      await client.query('SELECT pg_advisory_lock($1)', [MIGRATION_LOCK]);
      try {
        return await fn();
      } finally {
        await client.query('SELECT pg_advisory_unlock($1)', [MIGRATION_LOCK]);
      }
    } finally {
      client.release();
    }
  }

  async close(): Promise<void> {
    await Promise.all([this.writes.idle(), this.rowLocked.idle()]);
    if (this.closed) return;
    this.closed = true;
    await this.wakeChannel?.close();
    await this.pool.end();
  }
}
