// Errors the store raises in place of an engine's own, so callers switch on a type instead of parsing engine
// text. Each engine's adapter maps its errors here (SQLite: ./sqlite.ts); nothing outside src/store/ should
// look at an engine's error message.

/** Base of every typed store error; `cause` keeps the engine's original error. */
export class StoreError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
  }
}

/** A write would repeat a value a unique index or primary key forbids. */
export class UniqueViolation extends StoreError {
  /** The table the index belongs to. */
  readonly table: string;
  /** The indexed columns, in index order. */
  readonly columns: string[];
  constructor(table: string, columns: string[], options?: { cause?: unknown }) {
    super(`A unique constraint on ${table}(${columns.join(', ')}) was violated.`, options);
    this.table = table;
    this.columns = columns;
  }
  /** True when the violated index covers exactly these columns of this table (in any order). */
  is(table: string, ...columns: string[]): boolean {
    return this.table === table && this.columns.length === columns.length && columns.every((c) => this.columns.includes(c));
  }
}

/** A write references a row that does not exist, or deletes one that is still referenced. */
export class ForeignKeyViolation extends StoreError {}

/** The engine could not get the lock or serialize the transaction; the whole transaction may be retried. */
export class SerializationFailure extends StoreError {}

/**
 * Runs a write and answers a violation of the unique index on `table(columns)` with `answer()`: the same error
 * the check before the write gives, so a write that lost a race to another process ends the same way as one the
 * check refused. Any other error passes through.
 */
export async function onUniqueViolation<T>(write: Promise<T>, table: string, columns: readonly string[], answer: () => Error): Promise<T> {
  try {
    return await write;
  } catch (err) {
    if (err instanceof UniqueViolation && err.is(table, ...columns)) throw answer();
    throw err;
  }
}
