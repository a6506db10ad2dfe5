// What differs in SQL text between engines, asked of one object instead of written inline. Repositories reach
// it as `db.dialect` on the executor they were given; SQL that every engine reads alike (joins, row values,
// `ON CONFLICT ... DO UPDATE SET ... excluded.`, `RETURNING`, `LIMIT n` written as a literal, NULLS LAST, substr
// with a positive start, ||) stays inline. A second engine is one new file implementing this interface (SQLite:
// ./sqlite-dialect.ts), plus its own migrations folder.
// This file is the leaf of the store's types (./database.ts builds on it), so it declares the values SQL binds.

import type { ColumnType } from '../tables/columns.ts';

/** A value bound to a `?` placeholder or read from a column. */
export type SqlValue = string | number | bigint | null | Uint8Array;

/** What the dialect's helpers run statements on; every SqlExecutor (./database.ts) is one. */
export interface StatementRunner {
  all<T>(sql: string, params?: readonly SqlValue[]): Promise<T[]>;
  run(sql: string, params?: readonly SqlValue[]): Promise<{ changes: number }>;
}

export interface SqlDialect {
  /** The engine's name; also the folder of its migrations (src/store/migrations/<name>/). */
  readonly name: string;

  // ---- text
  /** `expr` with Unicode case folding (the same folding as `fold` in src/tables/predicate.ts, String#toLowerCase). */
  fold(expr: string): string;
  /** A condition: `needle` occurs in `haystack` (both SQL expressions; case-sensitive, no wildcards). */
  contains(haystack: string, needle: string): string;
  /** A condition: `haystack` begins with `needle` (both SQL expressions; no wildcards). */
  startsWith(haystack: string, needle: string): string;
  /**
   * A condition: the last `length` characters (code points) of `haystack` equal `needle`. `length` and `needle`
   * are SQL expressions (usually two `?`, in that order).
   */
  endsWith(haystack: string, length: string, needle: string): string;
  /**
   * A condition: `expr` matches a pattern whose only wildcard is `*` (any run of characters), case-sensitive.
   * The pattern is bound through `likePattern`, so its placeholder here is `pattern` (usually `?`).
   */
  matchesPattern(expr: string, pattern: string): string;
  /** The bound value for matchesPattern: a `*`-wildcard pattern in the engine's own pattern syntax. */
  likePattern(pattern: string): string;

  // ---- JSON
  /** A condition: the JSON array in `expr` has an element equal to `value` (an SQL expression). */
  jsonArrayHas(expr: string, value: string): string;

  // ---- time (ISO 8601 text columns)
  /** Whole milliseconds from `earlier` to `later` (ISO 8601 text expressions), never below zero. */
  millisBetween(later: string, earlier: string): string;
  /** Milliseconds since the Unix epoch of an ISO 8601 text expression (a real number). */
  epochMillis(expr: string): string;

  /** `expr` (a number) truncated toward zero to an integer, as SQLite's CAST(x AS INTEGER) does. */
  toInteger(expr: string): string;

  // ---- planning and schema
  /**
   * The declared type of a user table's cell column (what follows its name in CREATE TABLE / ADD COLUMN, with a
   * leading space), from the user column's type: SQLite leaves cells untyped; an engine that needs a type gets
   * one that stores the column's stored values (./table-rows.ts) and compares them as SQLite does.
   */
  cellType(type: ColumnType): string;
  /**
   * What follows `CREATE [UNIQUE] INDEX name ON table` for the index of cell column `column` (a quoted name) of a
   * user column of type `type`: ordinary indexes are on (value, id) for filters and sorts; unique ones enforce the
   * column's uniqueness.
   */
  cellIndex(column: string, type: ColumnType, unique: boolean): string;
  /** `expr` written so the planner cannot answer a term on it from an index (the sort's index is walked instead). */
  withoutIndex(expr: string): string;
  /** The clause that lets OFFSET stand without a real LIMIT. */
  readonly noLimit: string;
  /**
   * What ends a SELECT (after its LIMIT) that picks queue rows to take: on an engine with concurrent writers,
   * lock the picked rows and skip rows another transaction holds, so two claimers never wait on or take the same
   * row; empty on an engine with one writer.
   */
  readonly skipLocked: string;
  /** What follows `CREATE TABLE name (...)` for a table stored in its primary key's order. */
  readonly clusteredTableSuffix: string;
  /** SELECT of one column `name`: the indexes on the table named by the one `?`. */
  readonly indexNamesSql: string;
  /** SELECT of a row when the table named by the one `?` exists. */
  readonly tableExistsSql: string;
  /** SELECT of one column `bytes`: the database's size, when the engine can tell (null: measure its files). */
  readonly databaseSizeSql: string | null;
  /** The engine's query plan for `sql`, one line per step. */
  explain(db: StatementRunner, sql: string, params: readonly SqlValue[]): Promise<string[]>;

  // ---- full-text search
  /** The full-text index named `name` (its schema comes from the engine's migrations). */
  fullTextIndex(name: string): FullTextIndex;
}

/**
 * A full-text query, already parsed from what a user typed: phrases (each a list of lower-case words, one word
 * being a one-word phrase). A match has every `required` phrase (or, with none, at least one `optional` one),
 * at least one `optional` phrase when there are both, and no `excluded` phrase.
 */
export interface TextQuery {
  required: string[][];
  optional: string[][];
  excluded: string[][];
  /**
   * Indexed words that also stand for a query word (typo tolerance): a required or optional phrase matches with
   * any of them in that word's place. Excluded phrases are matched as written.
   */
  alternatives?: ReadonlyMap<string, readonly string[]>;
}

/** At most this many spellings of one phrase are searched. */
const MAX_PHRASE_VARIANTS = 16;

/** The spellings of a phrase: as written first, then with the words' alternatives in place (capped). */
export function phraseVariants(words: readonly string[], alternatives: TextQuery['alternatives']): string[][] {
  let variants: string[][] = [[]];
  for (const w of words) {
    const options = [w, ...(alternatives?.get(w) ?? [])];
    variants = variants.flatMap((v) => options.map((o) => [...v, o])).slice(0, MAX_PHRASE_VARIANTS);
  }
  return variants;
}

/** A full-text index over documents identified by an integer key. */
export interface FullTextIndex {
  add(db: StatementRunner, key: number, text: string): Promise<void>;
  /** Removes the keys that `keysSql` (a SELECT of one integer column, with `params`) yields. */
  removeSelected(db: StatementRunner, keysSql: string, params: readonly SqlValue[]): Promise<void>;
  remove(db: StatementRunner, key: number): Promise<void>;
  /** At most `limit` matches of the query, best first; `score`: lower is better. */
  search(db: StatementRunner, query: TextQuery, limit: number): Promise<{ key: number; score: number }[]>;
}
