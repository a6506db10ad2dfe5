// The Postgres dialect (see ./dialect.ts). Case folding is lower(), which folds all of Unicode under the
// database's UTF-8 locale (create the database with a UTF-8 locale; `C.UTF-8` also sorts text by code point as
// SQLite does). Full-text search is a tsvector table with a GIN index, under the `owa_text` configuration of the
// migrations: English stemming like FTS5's porter tokenizer, and no stop words (FTS5 has none either), so the
// same queries match the same documents; ranked by ts_rank_cd.
import { phraseVariants, type FullTextIndex, type SqlDialect, type SqlValue, type StatementRunner, type TextQuery } from './dialect.ts';
import { limitClause } from './keyset.ts';

const IDENTIFIER = /^[a-z_][a-z0-9_]*$/;
/** The text search configuration the Postgres migrations create. */
const TEXT_CONFIG = 'owa_text';

/** A tsquery expression for the parsed query, each phrase a bound parameter; null when it matches nothing. */
function tsQuery(q: TextQuery): { sql: string; params: string[] } | null {
  const params: string[] = [];
  const phrase = (words: string[]) => {
    params.push(words.join(' '));
    return `phraseto_tsquery('${TEXT_CONFIG}', ?)`;
  };
  // A phrase with alternative spellings matches any of them.
  const spelled = (words: string[]) => {
    const variants = phraseVariants(words, q.alternatives).map(phrase);
    return variants.length > 1 ? `(${variants.join(' || ')})` : variants[0]!;
  };
  const required = q.required.map(spelled);
  const optional = q.optional.map(spelled);
  if (required.length === 0 && optional.length === 0) return null;
  const parts: string[] = [];
  if (required.length) parts.push(`(${required.join(' && ')})`);
  if (optional.length) parts.push(`(${optional.join(' || ')})`);
  if (q.excluded.length) parts.push(`!!(${q.excluded.map(phrase).join(' || ')})`);
  return { sql: parts.join(' && '), params };
}

function tsvectorIndex(name: string): FullTextIndex {
  if (!IDENTIFIER.test(name)) throw new Error(`Not an index name: ${name}`);
  return {
    async add(db, key, text) {
      await db.run(`INSERT INTO ${name} (key, document) VALUES (?, to_tsvector('${TEXT_CONFIG}', ?))`, [key, text]);
    },
    async removeSelected(db, keysSql, params) {
      await db.run(`DELETE FROM ${name} WHERE key IN (${keysSql})`, params);
    },
    async remove(db, key) {
      await db.run(`DELETE FROM ${name} WHERE key = ?`, [key]);
    },
    async search(db, query, limit) {
      const q = tsQuery(query);
      if (!q) return [];
      const rows = await db.all<{ key: number; score: number }>(
        `SELECT key, -ts_rank_cd(document, q) AS score FROM ${name}, (SELECT ${q.sql} AS q) AS query
         WHERE numnode(q) > 0 AND document @@ q ORDER BY score, key ${limitClause(limit)}`,
        q.params,
      );
      return rows.map((r) => ({ key: Number(r.key), score: Number(r.score) }));
    },
  };
}

export const postgresDialect: SqlDialect = {
  name: 'postgres',
  fold: (expr) => `lower(${expr})`,
  contains: (haystack, needle) => `strpos(${haystack}, ${needle}) > 0`,
  startsWith: (haystack, needle) => `strpos(${haystack}, ${needle}) = 1`,
  endsWith: (haystack, length, needle) => `right(${haystack}, CAST(${length} AS INTEGER)) = ${needle}`,
  matchesPattern: (expr, pattern) => `${expr} LIKE ${pattern} ESCAPE '\\'`,
  // LIKE's own metacharacters (% _ and the escape) are made literal; * becomes %.
  likePattern: (pattern) => pattern.replace(/[\\%_]/g, (c) => `\\${c}`).replace(/\*/g, '%'),
  // `expr` appears once (it may be a placeholder); a value that is not a JSON array has no elements here.
  jsonArrayHas: (expr, value) =>
    `EXISTS (SELECT 1 FROM (SELECT CAST(${expr} AS jsonb) AS j) AS a, jsonb_array_elements_text(CASE WHEN jsonb_typeof(a.j) = 'array' THEN a.j ELSE '[]' END) AS e(v) WHERE e.v = CAST(${value} AS TEXT))`,
  millisBetween: (later, earlier) =>
    `CAST(GREATEST(0, trunc(EXTRACT(EPOCH FROM (CAST(${later} AS timestamptz) - CAST(${earlier} AS timestamptz))) * 1000)) AS BIGINT)`,
  epochMillis: (expr) => `(EXTRACT(EPOCH FROM CAST(${expr} AS timestamptz)) * 1000)`,
  toInteger: (expr) => `CAST(trunc(${expr}) AS BIGINT)`,
  cellType: (type) => (type === 'number' || type === 'currency' || type === 'ttl' || type === 'boolean' ? ' DOUBLE PRECISION' : ' TEXT'),
  // A B-tree entry holds at most ~2.7 kB, and text cells may be longer: text is indexed by hash for equality (no
  // length limit; sorts and ranges on it scan), and kept unique through its md5.
  cellIndex: (column, type, unique) => {
    if (type !== 'string') return unique ? ` (${column})` : ` (${column}, id)`;
    return unique ? ` (md5(${column}))` : ` USING hash (${column})`;
  },
  // Postgres's planner weighs the filter's index against the sort's by cost itself (SQLite needs the hint).
  withoutIndex: (expr) => expr,
  noLimit: 'LIMIT ALL',
  skipLocked: ' FOR UPDATE SKIP LOCKED',
  clusteredTableSuffix: '',
  indexNamesSql: 'SELECT indexname AS name FROM pg_indexes WHERE schemaname = current_schema() AND tablename = ?',
  databaseSizeSql: 'SELECT pg_database_size(current_database()) AS bytes',
  tableExistsSql: 'SELECT 1 AS x FROM pg_tables WHERE schemaname = current_schema() AND tablename = ?',
  async explain(db: StatementRunner, sql: string, params: readonly SqlValue[]) {
    return (await db.all<{ 'QUERY PLAN': string }>(`EXPLAIN ${sql}`, params)).map((r) => r['QUERY PLAN']);
  },
  fullTextIndex: tsvectorIndex,
};
