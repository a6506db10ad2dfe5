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
