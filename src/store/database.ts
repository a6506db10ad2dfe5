// The engine-neutral face of the database. Repositories write SQL with `?` placeholders against an
// executor; the engine decides how reads and transactions reach the disk. The API is asynchronous so a
// networked engine (Postgres, for the scale-out mode) can implement it without changing any caller.
// What SQL text differs between engines is asked of the executor's dialect (./dialect.ts), never written inline.
import type { SqlDialect, SqlValue } from './dialect.ts';
import type { TokenBuckets, Wakes } from './coordination.ts';

export type { SqlValue } from './dialect.ts';
export type Row = Record<string, SqlValue>;

export interface SqlExecutor {
  /** The SQL dialect of the engine behind this executor. */
  readonly dialect: SqlDialect;
  all<T = Row>(sql: string, params?: readonly SqlValue[]): Promise<T[]>;
  get<T = Row>(sql: string, params?: readonly SqlValue[]): Promise<T | undefined>;
  run(sql: string, params?: readonly SqlValue[]): Promise<{ changes: number }>;
  /**
   * Loads `rows` rows into `table` (a trusted identifier) through the engine's bulk-load path (Postgres: COPY),
   * `value(row, column)` giving each cell in `columns` order. Absent where multi-row INSERTs are the fastest way
   * (SQLite, whose statements run in process); callers then insert.
   */
  copyIn?(table: string, columns: readonly string[], rows: number, value: (row: number, column: number) => SqlValue): Promise<void>;
}

export interface TransactionOptions {
  /**
   * The transaction only reads (a consistent snapshot of several reads). The engine may take weaker locks; a
   * write inside it fails.
   */
  readOnly?: boolean;
  /**
   * Run `fn` again (at most this many more times) when the engine reports a SerializationFailure (lock not
   * obtained, or serialization conflict). `fn` must then be safe to repeat: everything it wrote was rolled back.
   */
  retryOnSerializationFailure?: number;
  /**
   * Every write in `fn` is a conditional statement whose WHERE names the state it expects (a status, a lease
   * holder), or takes rows with SKIP LOCKED, so it stays correct without serializing with the other writers:
   * the run queue's claims, lease renewals and completions. Postgres then runs it at READ COMMITTED on row locks
   * alone, beside other transactions, instead of queueing it on the global write lock; SQLite runs it as any
   * write (one writer anyway). Two such transactions may deadlock on rows (a SerializationFailure): pass
   * `retryOnSerializationFailure` and keep `fn` safe to repeat.
   */
  rowLocked?: boolean;
}

export interface Database {
  readonly dialect: SqlDialect;
  /** Reads outside a transaction see only committed data. */
  readonly read: SqlExecutor;
  /** Runs `fn` in one serializable transaction: all of it commits, or none of it. */
  transaction<T>(fn: (tx: SqlExecutor) => Promise<T>, options?: TransactionOptions): Promise<T>;
  /**
   * How another thread or process opens this same database (a serializable description for openWorkerStore),
   * or null when it cannot (an in-memory database lives on one connection).
   */
  readonly connection: StoreConnection | null;
  /**
   * Runs `fn` (the migrations) while no other process sharing this database runs its own: servers starting
   * together on an empty database then migrate it once. Absent when one process owns the database (SQLite, under
   * the data directory's lock).
   */
  withMigrationLock?<T>(fn: () => Promise<T>): Promise<T>;
  /** Wake-ups between the processes sharing this database; absent when one process owns it. */
  readonly wakes?: Wakes;
  /** Rate-limit buckets shared by the processes sharing this database; absent when one process owns it. */
  readonly tokenBuckets?: TokenBuckets;
  close(): Promise<void>;
}

/** A serializable description of a database, handed to worker threads; each engine has its own shape. */
export type StoreConnection = { engine: 'sqlite'; file: string } | { engine: 'postgres'; url: string };
