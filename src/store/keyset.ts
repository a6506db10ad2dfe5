// Keyset ("seek") pagination: pages are read from an index, never with OFFSET, and stay stable while rows
// are added. Every order ends with the id column so ties break the same way each time.
import type { SqlExecutor, SqlValue } from './database.ts';

export interface KeysetQuery {
  /** Column (or expression) sorted on; must be the leading column of an index for large tables. */
  column: string;
  idColumn: string;
  order: 'asc' | 'desc';
  /** Sort value and id of the last row of the previous page. */
  after: readonly [SqlValue, string] | null;
  limit: number;
}

/** SQL fragments to splice in: `WHERE ... AND ${where}` and `ORDER BY ${orderBy} ${limitClause(n)}`. */
export function keyset(q: KeysetQuery): { where: string; whereParams: SqlValue[]; orderBy: string } {
  const dir = q.order === 'asc' ? 'ASC' : 'DESC';
  const cmp = q.order === 'asc' ? '>' : '<';
  const orderBy = q.column === q.idColumn ? `${q.idColumn} ${dir}` : `${q.column} ${dir}, ${q.idColumn} ${dir}`;
  if (!q.after) return { where: '1 = 1', whereParams: [], orderBy };
  const [value, id] = q.after;
  if (q.column === q.idColumn) return { where: `${q.idColumn} ${cmp} ?`, whereParams: [id], orderBy };
  return {
    where: `(${q.column} ${cmp} ? OR (${q.column} = ? AND ${q.idColumn} ${cmp} ?))`,
    whereParams: [value, value, id],
    orderBy,
  };
}

/**
 * `LIMIT n` with n written into the SQL. A bound `LIMIT ?` makes SQLite (3.47+) re-prepare the statement on
 * every execution, because its planner reads the bound value; a literal keeps the prepared statement cached
 * (one per page size, and page sizes are few).
 */
export function limitClause(n: number): string {
  if (!Number.isSafeInteger(n) || n < 0) throw new Error(`LIMIT must be a non-negative integer, got ${n}`);
  return `LIMIT ${n}`;
}

/**
 * One keyset page of a workspace's rows in `table`, optionally narrowed to rows whose `searchColumn` contains
 * `search` (ASCII case-insensitive), sorted on `sortColumn` then id.
 */
export async function workspacePage<R>(
  db: SqlExecutor,
  table: string,
  q: { workspaceId: string; search?: string; searchColumn: string; sortColumn: string; order: 'asc' | 'desc'; after: readonly [SqlValue, string] | null; limit: number },
): Promise<R[]> {
  const page = keyset({ column: q.sortColumn, idColumn: 'id', order: q.order, after: q.after, limit: q.limit });
  return db.all<R>(
    `SELECT * FROM ${table} WHERE workspace_id = ? AND (CAST(? AS TEXT) IS NULL OR ${db.dialect.contains(`lower(${q.searchColumn})`, 'lower(?)')}) AND ${page.where}
     ORDER BY ${page.orderBy} ${limitClause(q.limit)}`,
    [q.workspaceId, q.search ?? null, q.search ?? null, ...page.whereParams],
  );
}
