// The engine-neutral face of the database. Repositories write SQL with `?` placeholders against an
// executor; the engine decides how reads and transactions reach the disk. The API is asynchronous so a
// networked engine (Postgres, for the scale-out mode) can implement it without changing any caller.

export type SqlValue = string | number | bigint | null | Uint8Array;
export type Row = Record<string, SqlValue>;

export interface SqlExecutor {
  all<T = Row>(sql: string, params?: readonly SqlValue[]): Promise<T[]>;
  get<T = Row>(sql: string, params?: readonly SqlValue[]): Promise<T | undefined>;
  run(sql: string, params?: readonly SqlValue[]): Promise<{ changes: number }>;
}

export interface Database {
  /** Reads outside a transaction see only committed data. */
  readonly read: SqlExecutor;
  /** Runs `fn` in one serializable write transaction: all of it commits, or none of it. */
  transaction<T>(fn: (tx: SqlExecutor) => Promise<T>): Promise<T>;
  close(): Promise<void>;
}
