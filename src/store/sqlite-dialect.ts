// The SQLite dialect (see ./dialect.ts). Case folding is the `owa_fold` function the SQLite connection
// registers (./sqlite.ts); full-text search is FTS5 ranked by BM25.
import { phraseVariants, type FullTextIndex, type SqlDialect, type SqlValue, type StatementRunner, type TextQuery } from './dialect.ts';
import { limitClause } from './keyset.ts';

/** The SQL function name of Unicode case folding; sqlite.ts registers it on every connection. */
export const FOLD_FUNCTION = 'owa_fold';

const IDENTIFIER = /^[a-z_][a-z0-9_]*$/;

function fts5Index(name: string): FullTextIndex {
  if (!IDENTIFIER.test(name)) throw new Error(`Not an index name: ${name}`);
  return {
    async add(db, key, text) {
      await db.run(`INSERT INTO ${name} (rowid, content) VALUES (?, ?)`, [key, text]);
    },
    async removeSelected(db, keysSql, params) {
      await db.run(`DELETE FROM ${name} WHERE rowid IN (${keysSql})`, params);
    },
    async remove(db, key) {
      await db.run(`DELETE FROM ${name} WHERE rowid = ?`, [key]);
    },
    async search(db, query, limit) {
      const match = fts5Match(query);
      if (!match) return [];
      // bm25() ordered by the statement rather than FTS5's `rank` column: the same scores, but `ORDER BY rank`
      // runs FTS5's own sorted scan, which re-reads each returned row (about 1.5× the time at 100,000 chunks).
      const rows = await db.all<{ key: number; score: number }>(
        `SELECT rowid AS key, bm25(${name}) AS score FROM ${name} WHERE ${name} MATCH ? ORDER BY score, rowid ${limitClause(limit)}`,
        [match],
      );
      return rows.map((r) => ({ key: Number(r.key), score: Number(r.score) }));
    },
  };
}

/** A parsed query in FTS5's syntax: every phrase quoted (so no word is read as an operator); null when it matches nothing. */
function fts5Match(q: TextQuery): string | null {
  const phrase = (words: string[]) => `"${words.join(' ')}"`;
  // A phrase with alternative spellings matches any of them.
  const spelled = (words: string[]) => {
    const variants = phraseVariants(words, q.alternatives).map(phrase);
    return variants.length > 1 ? `(${variants.join(' OR ')})` : variants[0]!;
  };
  const required = q.required.map(spelled);
  const optional = q.optional.map(spelled);
  const positive = required.length ? required.join(' AND ') : optional.join(' OR ');
  if (!positive) return null;
  const base = required.length && optional.length ? `${positive} AND (${optional.join(' OR ')})` : `(${positive})`;
  return q.excluded.length ? `${base} NOT (${q.excluded.map(phrase).join(' OR ')})` : base;
}

export const sqliteDialect: SqlDialect = {
  name: 'sqlite',
  fold: (expr) => `${FOLD_FUNCTION}(${expr})`,
  contains: (haystack, needle) => `instr(${haystack}, ${needle}) > 0`,
  startsWith: (haystack, needle) => `instr(${haystack}, ${needle}) = 1`,
  endsWith: (haystack, length, needle) => `substr(${haystack}, -(${length})) = ${needle}`,
  matchesPattern: (expr, pattern) => `${expr} GLOB ${pattern}`,
  // GLOB's other metacharacters (? and [) are made literal by a one-character class.
  likePattern: (pattern) => pattern.replace(/[?[]/g, (c) => `[${c}]`),
  jsonArrayHas: (expr, value) => `EXISTS (SELECT 1 FROM json_each(${expr}) WHERE value = ${value})`,
  millisBetween: (later, earlier) => `MAX(0, CAST((julianday(${later}) - julianday(${earlier})) * 86400000 AS INTEGER))`,
  epochMillis: (expr) => `((julianday(${expr}) - 2440587.5) * 86400000.0)`,
  toInteger: (expr) => `CAST(${expr} AS INTEGER)`,
  cellType: () => '',
  cellIndex: (column, _type, unique) => (unique ? ` (${column})` : ` (${column}, id)`),
  // A unary plus keeps the value and stops SQLite from using an index for the term.
  withoutIndex: (expr) => `+${expr}`,
  noLimit: 'LIMIT -1',
  skipLocked: '',
  clusteredTableSuffix: ' WITHOUT ROWID',
  indexNamesSql: "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = ?",
  databaseSizeSql: null,
  tableExistsSql: "SELECT 1 AS x FROM sqlite_master WHERE type = 'table' AND name = ?",
  async explain(db: StatementRunner, sql: string, params: readonly SqlValue[]) {
    return (await db.all<{ detail: string }>(`EXPLAIN QUERY PLAN ${sql}`, params)).map((r) => r.detail);
  },
  fullTextIndex: fts5Index,
};
