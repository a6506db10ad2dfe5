// Table rows: each user table has its own SQL table `trows_<id>` with one untyped SQL column per user
// column, named by the column's stable id (`c_<hex>`), so a rename touches only the definition and an index on a
// column is an ordinary index. Predicates compile here to SQL whose every value is a bound parameter: the only
// names in the SQL text are identifiers this server generated and checked (table and column ids), never a value
// a client sent. Engine-specific SQL (case folding, pattern matching, JSON arrays, catalog queries) comes from
// the executor's dialect.
import type { SqlExecutor, SqlValue } from './database.ts';
import type { SqlDialect } from './dialect.ts';
import { limitClause } from './keyset.ts';
import type { Column, StoredValue } from '../tables/columns.ts';
import { indexable } from '../tables/columns.ts';
import type { FieldRef, Predicate, SortKey } from '../tables/predicate.ts';

const TABLE_ID = /^tbl_([0-9a-f]{32})$/;
const COLUMN_ID = /^col_([0-9a-f]{32})$/;

export function rowsTable(tableId: string): string {
  const m = TABLE_ID.exec(tableId);
  if (!m) throw new Error(`Not a table id: ${tableId}`);
  return `"trows_${m[1]}"`;
}

export function cellColumn(columnId: string): string {
  const m = COLUMN_ID.exec(columnId);
  if (!m) throw new Error(`Not a column id: ${columnId}`);
  return `"c_${m[1]}"`;
}

const indexName = (tableId: string, suffix: string) => `"${rowsTable(tableId).slice(1, -1)}_${suffix}"`;
/** Rows from which an insert goes through the engine's bulk load (COPY on Postgres): below it, one multi-row INSERT is as quick. */
const BULK_LOAD_ROWS = 50;

export interface StoredRow {
  id: string;
  orderKey: string;
  createdAt: string;
  updatedAt: string;
  /** Stored cell values by column id; absent means null. */
  cells: Record<string, StoredValue>;
}

export interface CompiledSql {
  sql: string;
  params: SqlValue[];
}

function fieldSql(d: SqlDialect, f: FieldRef, noIndex = false): string {
  const name = f.kind === 'system' ? (f.name === 'id' ? 'id' : f.name === 'createdAt' ? 'created_at' : 'updated_at') : cellColumn(f.column.id);
  // Written so no index answers the term (see plan()).
  return noIndex ? d.withoutIndex(name) : name;
}

const codePoints = (s: string) => [...s].length;

/**
 * Compiles a resolved predicate to a WHERE fragment; values only ever travel in `params`. `noIndex` writes the
 * terms so no index answers them (the sort's index is walked instead).
 */
export function compilePredicate(d: SqlDialect, p: Predicate, noIndex = false): CompiledSql {
  if ('all' in p || 'any' in p) {
    const members = 'all' in p ? p.all : p.any;
    const parts = members.map((m) => compilePredicate(d, m, noIndex));
    return { sql: `(${parts.map((x) => x.sql).join('all' in p ? ' AND ' : ' OR ')})`, params: parts.flatMap((x) => x.params) };
  }
  const c = fieldSql(d, p.field, noIndex);
  const v = p.value;
  const multi = p.field.kind === 'column' && p.field.column.type === 'select' && Boolean(p.field.column.multiple);
  const text = p.field.kind === 'column' && p.field.column.type === 'string';
  const one = (sql: string, ...params: SqlValue[]): CompiledSql => ({ sql, params });
  switch (p.op) {
    case 'eq':
      return one(`${c} = ?`, v as SqlValue);
    case 'ne':
      return one(`(${c} IS NULL OR ${c} <> ?)`, v as SqlValue);
    case 'gt':
      return one(`${c} > ?`, v as SqlValue);
    case 'gte':
      return one(`${c} >= ?`, v as SqlValue);
    case 'lt':
      return one(`${c} < ?`, v as SqlValue);
    case 'lte':
      return one(`${c} <= ?`, v as SqlValue);
    case 'in': {
      const list = v as SqlValue[];
      return list.length === 0 ? one('1 = 0') : one(`${c} IN (${list.map(() => '?').join(', ')})`, ...list);
    }
    case 'nin': {
      const list = v as SqlValue[];
      return list.length === 0 ? one('1 = 1') : one(`(${c} IS NULL OR ${c} NOT IN (${list.map(() => '?').join(', ')}))`, ...list);
    }
    case 'contains':
      return multi ? one(d.jsonArrayHas(c, '?'), v as SqlValue) : one(d.contains(d.fold(c), '?'), v as SqlValue);
    case 'ncontains':
      return multi ? one(`(${c} IS NULL OR NOT ${d.jsonArrayHas(c, '?')})`, v as SqlValue) : one(`(${c} IS NULL OR NOT (${d.contains(d.fold(c), '?')}))`, v as SqlValue);
    case 'startsWith':
      return one(d.startsWith(d.fold(c), '?'), v as SqlValue);
    case 'endsWith':
      return one(d.endsWith(d.fold(c), '?', '?'), codePoints(v as string), v as SqlValue);
    case 'like':
      return one(d.matchesPattern(c, '?'), d.likePattern(v as string));
    case 'nlike':
      return one(`(${c} IS NULL OR NOT (${d.matchesPattern(c, '?')}))`, d.likePattern(v as string));
    case 'ilike':
      return one(d.matchesPattern(d.fold(c), '?'), d.likePattern(v as string));
    case 'nilike':
      return one(`(${c} IS NULL OR NOT (${d.matchesPattern(d.fold(c), '?')}))`, d.likePattern(v as string));
    case 'isNull':
      return one(`${c} IS NULL`);
    case 'isNotNull':
      return one(`${c} IS NOT NULL`);
    case 'isEmpty':
      return one(text ? `(${c} IS NULL OR ${c} = '')` : multi ? `(${c} IS NULL OR ${c} = '[]')` : `${c} IS NULL`);
    case 'isNotEmpty':
      return one(text ? `(${c} IS NOT NULL AND ${c} <> '')` : multi ? `(${c} IS NOT NULL AND ${c} <> '[]')` : `${c} IS NOT NULL`);
  }
}

/** ORDER BY for sort keys (nulls last, select by option name), ending in the row id. */
export function compileSort(d: SqlDialect, keys: SortKey[]): CompiledSql {
  const parts: string[] = [];
  const params: SqlValue[] = [];
  for (const k of keys) {
    const dir = k.direction === 'asc' ? 'ASC' : 'DESC';
    const f = k.field;
    if (f.kind === 'column' && f.column.type === 'select' && !f.column.multiple && (f.column.options?.length ?? 0) > 0) {
      const c = cellColumn(f.column.id);
      parts.push(`CASE ${c} ${f.column.options!.map(() => 'WHEN ? THEN ?').join(' ')} ELSE ${c} END ${dir} NULLS LAST`);
      for (const o of f.column.options!) params.push(o.id, o.name);
    } else parts.push(`${fieldSql(d, f)} ${dir} NULLS LAST`);
  }
  // Ties break by id in the direction of the last key, so a one-key sort walks that column's (value, id) index.
  parts.push(`id ${keys.at(-1)?.direction === 'desc' ? 'DESC' : 'ASC'}`);
  return { sql: parts.join(', '), params };
}

export interface RowQuery {
  where: Predicate | null;
  sort: SortKey[];
  limit: number | null;
  /** For table order without a sort: continue after this (order_key, id). */
  after?: readonly [string, string] | null;
  offset?: number;
  /** Answer the filter by walking the first sort key's index rather than the filter's own indexes. */
  walkSortIndex?: boolean;
}

/** A filter matching at least this many rows is broad: walking the sort's index finds a page sooner. */
const BROAD_FILTER_ROWS = 2000;

interface RawRow {
  id: string;
  order_key: string;
  created_at: string;
  updated_at: string;
  [column: string]: SqlValue;
}

export class TableRowsRepository {
  private readonly db: SqlExecutor;
  constructor(db: SqlExecutor) {
    this.db = db;
  }

  private toRow(r: RawRow, columns: Column[]): StoredRow {
    const cells: Record<string, StoredValue> = {};
    for (const c of columns) {
      const v = r[cellColumn(c.id).slice(1, -1)];
      if (v !== null && v !== undefined) cells[c.id] = typeof v === 'bigint' ? Number(v) : (v as StoredValue);
    }
    return { id: r.id, orderKey: r.order_key, createdAt: r.created_at, updatedAt: r.updated_at, cells };
  }

  // ---- schema

  /** Creates the rows table; `indexes: false` leaves the indexes to createIndexes (bulk loads build them once at the end). */
  async createTable(tableId: string, columns: Column[], options: { indexes?: boolean } = {}): Promise<void> {
    const t = rowsTable(tableId);
    const cols = columns.map((c) => `, ${cellColumn(c.id)}${this.db.dialect.cellType(c.type)}`).join('');
    await this.db.run(`CREATE TABLE ${t} (id TEXT PRIMARY KEY, order_key TEXT NOT NULL, created_at TEXT NOT NULL, updated_at TEXT NOT NULL${cols})${this.db.dialect.clusteredTableSuffix}`);
    if (options.indexes !== false) await this.createIndexes(tableId, columns);
  }

  /**
   * The indexes of a rows table. `lazy` (bulk loads) builds only what correctness and table order need: the order
   * index and unique indexes; the others are built on first use (see ensureFieldIndex), so a large import does not
   * pay for indexes nobody queries.
   */
  async createIndexes(tableId: string, columns: Column[], options: { lazy?: boolean } = {}): Promise<void> {
    const t = rowsTable(tableId);
    await this.db.run(`CREATE INDEX IF NOT EXISTS ${indexName(tableId, 'order')} ON ${t} (order_key, id)`);
    if (!options.lazy) {
      await this.db.run(`CREATE INDEX IF NOT EXISTS ${indexName(tableId, 'created')} ON ${t} (created_at, id)`);
      await this.db.run(`CREATE INDEX IF NOT EXISTS ${indexName(tableId, 'updated')} ON ${t} (updated_at, id)`);
    }
    for (const c of columns) if (!options.lazy || c.unique) await this.syncIndex(tableId, c);
  }

  private fieldIndex(tableId: string, f: FieldRef): { name: string; sql: string } | null {
    const t = rowsTable(tableId);
    if (f.kind === 'system') {
      if (f.name === 'id') return null;
      const suffix = f.name === 'createdAt' ? 'created' : 'updated';
      return { name: indexName(tableId, suffix), sql: `CREATE INDEX IF NOT EXISTS ${indexName(tableId, suffix)} ON ${t} (${fieldSql(this.db.dialect, f)}, id)` };
    }
    if (f.column.unique || !indexable(f.column)) return null;
    const c = cellColumn(f.column.id);
    return { name: indexName(tableId, c.slice(1, -1)), sql: `CREATE INDEX IF NOT EXISTS ${indexName(tableId, c.slice(1, -1))} ON ${t}${this.db.dialect.cellIndex(c, f.column.type, false)}` };
  }

  /** Fields whose index (an ordinary one, for filters and sorts) does not exist yet. */
  async missingIndexes(tableId: string, fields: FieldRef[]): Promise<FieldRef[]> {
    const names = new Set((await this.db.all<{ name: string }>(this.db.dialect.indexNamesSql, [rowsTable(tableId).slice(1, -1)])).map((r) => `"${r.name}"`));
    return fields.filter((f) => {
      const ix = this.fieldIndex(tableId, f);
      // Postgres cuts names to 63 bytes (they are ASCII here), and reports them cut.
      return ix !== null && !names.has(ix.name) && !names.has(`"${ix.name.slice(1, -1).slice(0, 63)}"`);
    });
  }

  /** Builds the index a field's filters and sorts use (no-op when it exists). */
  async ensureFieldIndex(tableId: string, f: FieldRef): Promise<void> {
    const ix = this.fieldIndex(tableId, f);
    if (ix) await this.db.run(ix.sql);
  }

  async dropTable(tableId: string): Promise<void> {
    await this.db.run(`DROP TABLE IF EXISTS ${rowsTable(tableId)}`);
  }

  async tableExists(tableId: string): Promise<boolean> {
    const name = rowsTable(tableId).slice(1, -1);
    return (await this.db.get(this.db.dialect.tableExistsSql, [name])) !== undefined;
  }

  /** Copies every row of one rows table into another (same column ids); returns how many. */
  async copyRows(fromTableId: string, toTableId: string, columns: Column[]): Promise<number> {
    const names = ['id', 'order_key', 'created_at', 'updated_at', ...columns.map((c) => cellColumn(c.id))].join(', ');
    return (await this.db.run(`INSERT INTO ${rowsTable(toTableId)} (${names}) SELECT ${names} FROM ${rowsTable(fromTableId)}`)).changes;
  }

  async firstOrderKey(tableId: string): Promise<string | null> {
    const r = await this.db.get<{ k: string }>(`SELECT order_key AS k FROM ${rowsTable(tableId)} ORDER BY order_key ASC, id ASC LIMIT 1`);
    return r?.k ?? null;
  }

  /** Rows in table order after (order_key, id), for streaming a whole table in batches. */
  async batchAfter(tableId: string, columns: Column[], after: readonly [string, string] | null, limit: number): Promise<StoredRow[]> {
    return this.query(tableId, columns, { where: null, sort: [], limit, after });
  }

  async addColumn(tableId: string, column: Column): Promise<void> {
    await this.db.run(`ALTER TABLE ${rowsTable(tableId)} ADD COLUMN ${cellColumn(column.id)}${this.db.dialect.cellType(column.type)}`);
    await this.syncIndex(tableId, column);
  }

  /**
   * Gives a column's SQL column the declared type of `column` (its new definition): `'text'` first, so the
   * converted values can be written whatever they were, then the type itself. A no-op on an engine with untyped
   * cells (SQLite).
   */
  async retypeColumn(tableId: string, column: Column, stage: 'text' | 'final'): Promise<void> {
    const type = this.db.dialect.cellType(stage === 'text' ? 'string' : column.type).trim();
    if (!type) return;
    const c = cellColumn(column.id);
    await this.db.run(`ALTER TABLE ${rowsTable(tableId)} ALTER COLUMN ${c} TYPE ${type} USING CAST(${c} AS ${type})`);
  }

  async dropColumn(tableId: string, column: Column): Promise<void> {
    await this.dropIndexes(tableId, column);
    await this.db.run(`ALTER TABLE ${rowsTable(tableId)} DROP COLUMN ${cellColumn(column.id)}`);
  }

  private async dropIndexes(tableId: string, column: Column): Promise<void> {
    const base = cellColumn(column.id).slice(1, -1);
    await this.db.run(`DROP INDEX IF EXISTS ${indexName(tableId, base)}`);
    await this.db.run(`DROP INDEX IF EXISTS ${indexName(tableId, `${base}_unique`)}`);
  }

  /**
   * Every scalar column gets an index on (value, id) so equality, range, in and sorts on it search instead of
   * scanning; unique columns get a unique index instead (it also serves those queries). Json and multi-select
   * columns have none.
   */
  async syncIndex(tableId: string, column: Column): Promise<void> {
    await this.dropIndexes(tableId, column);
    const t = rowsTable(tableId);
    const c = cellColumn(column.id);
    const base = c.slice(1, -1);
    const d = this.db.dialect;
    if (column.unique) await this.db.run(`CREATE UNIQUE INDEX ${indexName(tableId, `${base}_unique`)} ON ${t}${d.cellIndex(c, column.type, true)}`);
    else if (indexable(column)) await this.db.run(`CREATE INDEX ${indexName(tableId, base)} ON ${t}${d.cellIndex(c, column.type, false)}`);
  }

  // ---- rows

  /** Inserts rows, many per statement (at most ~30,000 bound values each, in fixed chunk sizes so statements are reused). */
  async insert(tableId: string, columns: Column[], rows: StoredRow[]): Promise<void> {
    await this.insertFlat(tableId, columns, {
      ids: rows.map((r) => r.id),
      orderKeys: rows.map((r) => r.orderKey),
      createdAt: rows.map((r) => r.createdAt),
      updatedAt: rows.map((r) => r.updatedAt),
      cells: rows.flatMap((r) => columns.map((c) => r.cells[c.id] ?? null)),
    });
  }

  /**
   * Inserts rows given as parallel arrays (through the engine's bulk load, COPY on Postgres, from BULK_LOAD_ROWS rows): `cells` holds each row's values in `columns` order, row after row
   * (bulk imports build them that way, without an object per row).
   */
  async insertFlat(
    tableId: string,
    columns: Column[],
    rows: { ids: string[]; orderKeys: string[]; createdAt: string[]; updatedAt: string[]; cells: readonly (StoredValue | undefined)[] },
  ): Promise<void> {
    const count = rows.ids.length;
    if (count === 0) return;
    const width = columns.length;
    const names = ['id', 'order_key', 'created_at', 'updated_at', ...columns.map((c) => cellColumn(c.id))];
    if (this.db.copyIn && count >= BULK_LOAD_ROWS) {
      const fixed = [rows.ids, rows.orderKeys, rows.createdAt, rows.updatedAt];
      return this.db.copyIn(rowsTable(tableId), names, count, (row, c) => (c < 4 ? fixed[c]![row]! : (rows.cells[row * width + c - 4] ?? null)));
    }
    const tuple = `(${names.map(() => '?').join(', ')})`;
    const perStatement = Math.max(1, Math.min(500, Math.floor(30_000 / names.length)));
    const head = `INSERT INTO ${rowsTable(tableId)} (${names.join(', ')}) VALUES `;
    const full = head + Array(perStatement).fill(tuple).join(', ');
    for (let i = 0; i < count; ) {
      // Full chunks, then single rows for the remainder: two statement shapes per table.
      const n = count - i >= perStatement ? perStatement : 1;
      const params: SqlValue[] = [];
      for (let row = i; row < i + n; row++) {
        params.push(rows.ids[row]!, rows.orderKeys[row]!, rows.createdAt[row]!, rows.updatedAt[row]!);
        for (let c = 0; c < width; c++) params.push(rows.cells[row * width + c] ?? null);
      }
      await this.db.run(n === perStatement ? full : head + tuple, params);
      i += n;
    }
  }

  async get(tableId: string, columns: Column[], rowId: string): Promise<StoredRow | undefined> {
    const r = await this.db.get<RawRow>(`SELECT * FROM ${rowsTable(tableId)} WHERE id = ?`, [rowId]);
    return r && this.toRow(r, columns);
  }

  async getMany(tableId: string, columns: Column[], rowIds: string[]): Promise<StoredRow[]> {
    const out: StoredRow[] = [];
    for (let i = 0; i < rowIds.length; i += 500) {
      const chunk = rowIds.slice(i, i + 500);
      const rows = await this.db.all<RawRow>(`SELECT * FROM ${rowsTable(tableId)} WHERE id IN (${chunk.map(() => '?').join(', ')})`, chunk);
      out.push(...rows.map((r) => this.toRow(r, columns)));
    }
    return out;
  }

  /** Writes the given cells (by column id; null clears) of one row. */
  async update(tableId: string, rowId: string, cells: Record<string, StoredValue>, updatedAt: string): Promise<boolean> {
    const entries = Object.entries(cells);
    const sets = ['updated_at = ?', ...entries.map(([id]) => `${cellColumn(id)} = ?`)];
    const r = await this.db.run(`UPDATE ${rowsTable(tableId)} SET ${sets.join(', ')} WHERE id = ?`, [updatedAt, ...entries.map(([, v]) => v), rowId]);
    return r.changes > 0;
  }

  async delete(tableId: string, rowIds: string[]): Promise<number> {
    let n = 0;
    for (let i = 0; i < rowIds.length; i += 500) {
      const chunk = rowIds.slice(i, i + 500);
      n += (await this.db.run(`DELETE FROM ${rowsTable(tableId)} WHERE id IN (${chunk.map(() => '?').join(', ')})`, chunk)).changes;
    }
    return n;
  }

  async deleteAll(tableId: string): Promise<number> {
    return (await this.db.run(`DELETE FROM ${rowsTable(tableId)}`)).changes;
  }

  async count(tableId: string, where: Predicate | null): Promise<number> {
    const w = where ? compilePredicate(this.db.dialect, where) : { sql: '1 = 1', params: [] };
    const r = await this.db.get<{ n: number }>(`SELECT COUNT(*) AS n FROM ${rowsTable(tableId)} WHERE ${w.sql}`, w.params);
    return Number(r?.n ?? 0);
  }

  /** The SQL a query runs (also what the plan tests explain). */
  querySql(tableId: string, q: RowQuery, select = '*'): CompiledSql {
    const w = q.where ? compilePredicate(this.db.dialect, q.where, q.walkSortIndex ?? false) : { sql: '1 = 1', params: [] };
    const params: SqlValue[] = [...w.params];
    let where = w.sql;
    let order: string;
    if (q.sort.length === 0) {
      order = 'order_key ASC, id ASC';
      if (q.after) {
        // A row value, so the engine seeks in the order index instead of scanning it from the start.
        where += ' AND (order_key, id) > (?, ?)';
        params.push(q.after[0], q.after[1]);
      }
    } else {
      const s = compileSort(this.db.dialect, q.sort);
      order = s.sql;
      params.push(...s.params);
    }
    let sql = `SELECT ${select} FROM ${rowsTable(tableId)} WHERE ${where} ORDER BY ${order}`;
    if (q.limit !== null) sql += ` ${limitClause(q.limit)}`;
    if (q.offset) {
      if (q.limit === null) sql += ` ${this.db.dialect.noLimit}`;
      sql += ' OFFSET ?';
      params.push(q.offset);
    }
    return { sql, params };
  }

  /**
   * SQLite answers a filter from the filter's index and then sorts every match, even when the matches are many
   * and only a page is wanted. For a bounded, sorted page whose first sort key has an index, a quick bounded
   * count decides: a broad filter (BROAD_FILTER_ROWS matches or more) walks the sort key's index instead and
   * stops after one page; a narrow one keeps its own index and sorts the few matches.
   */
  async plan(tableId: string, q: RowQuery): Promise<RowQuery> {
    const first = q.sort[0];
    if (!q.where || !first || q.limit === null || q.walkSortIndex !== undefined) return q;
    const indexed = first.field.kind === 'system' || (indexable(first.field.column) && !(first.field.column.type === 'select' && (first.field.column.options?.length ?? 0) > 0));
    if (!indexed) return q;
    const w = compilePredicate(this.db.dialect, q.where);
    const r = await this.db.get<{ n: number }>(`SELECT COUNT(*) AS n FROM (SELECT 1 FROM ${rowsTable(tableId)} WHERE ${w.sql} ${limitClause(BROAD_FILTER_ROWS)}) AS matches`, w.params);
    return { ...q, walkSortIndex: Number(r?.n ?? 0) >= BROAD_FILTER_ROWS };
  }

  async query(tableId: string, columns: Column[], q: RowQuery): Promise<StoredRow[]> {
    const { sql, params } = this.querySql(tableId, await this.plan(tableId, q));
    return (await this.db.all<RawRow>(sql, params)).map((r) => this.toRow(r, columns));
  }

  /** Ids of the rows a predicate matches, in table order, at most `limit`. */
  async matchingIds(tableId: string, where: Predicate, limit: number): Promise<string[]> {
    const { sql, params } = this.querySql(tableId, { where, sort: [], limit }, 'id');
    return (await this.db.all<{ id: string }>(sql, params)).map((r) => r.id);
  }

  async explain(tableId: string, q: RowQuery): Promise<string[]> {
    const { sql, params } = this.querySql(tableId, await this.plan(tableId, q));
    return this.db.dialect.explain(this.db, sql, params);
  }

  /** The row holding `value` in a unique column, if any. */
  async findUnique(tableId: string, columns: Column[], column: Column, value: StoredValue): Promise<StoredRow | undefined> {
    const r = await this.db.get<RawRow>(`SELECT * FROM ${rowsTable(tableId)} WHERE ${cellColumn(column.id)} = ?`, [value]);
    return r && this.toRow(r, columns);
  }

  /** Whether any row holds this value in the column (an index probe, for bulk checks). */
  async hasValue(tableId: string, column: Column, value: StoredValue): Promise<boolean> {
    return (await this.db.get(`SELECT 1 AS found FROM ${rowsTable(tableId)} WHERE ${cellColumn(column.id)} = ? LIMIT 1`, [value])) !== undefined;
  }

  /** Ids of rows whose value in the column repeats an earlier row's (a unique column cannot be made of them). */
  async duplicateIds(tableId: string, column: Column, limit: number): Promise<string[]> {
    const t = rowsTable(tableId);
    const c = cellColumn(column.id);
    const rows = await this.db.all<{ id: string }>(
      `SELECT a.id FROM ${t} a WHERE a.${c} IS NOT NULL AND EXISTS (SELECT 1 FROM ${t} b WHERE b.${c} = a.${c} AND b.id < a.id) ORDER BY a.id ${limitClause(limit)}`,
    );
    return rows.map((r) => r.id);
  }

  /** Ids of rows with no value (or empty text) in the column. */
  async emptyIds(tableId: string, column: Column, limit: number): Promise<string[]> {
    const c = cellColumn(column.id);
    const rows = await this.db.all<{ id: string }>(`SELECT id FROM ${rowsTable(tableId)} WHERE ${c} IS NULL OR ${c} = '' ORDER BY order_key, id ${limitClause(limit)}`);
    return rows.map((r) => r.id);
  }

  /** Every (id, value) of one column that has a value, in batches (for conversions). */
  async *columnValues(tableId: string, column: Column, batch = 1000): AsyncGenerator<{ id: string; value: StoredValue }[]> {
    const c = cellColumn(column.id);
    let after = '';
    for (;;) {
      const rows = await this.db.all<{ id: string; v: StoredValue }>(
        `SELECT id, ${c} AS v FROM ${rowsTable(tableId)} WHERE ${c} IS NOT NULL AND id > ? ORDER BY id ${limitClause(batch)}`,
        [after],
      );
      if (rows.length === 0) return;
      yield rows.map((r) => ({ id: r.id, value: typeof r.v === 'bigint' ? Number(r.v) : r.v }));
      after = rows.at(-1)!.id;
    }
  }

  async setOrderKey(tableId: string, rowId: string, orderKey: string): Promise<void> {
    await this.db.run(`UPDATE ${rowsTable(tableId)} SET order_key = ? WHERE id = ?`, [orderKey, rowId]);
  }

  async setCell(tableId: string, column: Column, rowId: string, value: StoredValue): Promise<void> {
    await this.db.run(`UPDATE ${rowsTable(tableId)} SET ${cellColumn(column.id)} = ? WHERE id = ?`, [value, rowId]);
  }

  /** Order keys around a position: the last key, or the neighbours of a row. */
  async lastOrderKey(tableId: string): Promise<string | null> {
    const r = await this.db.get<{ k: string }>(`SELECT order_key AS k FROM ${rowsTable(tableId)} ORDER BY order_key DESC, id DESC LIMIT 1`);
    return r?.k ?? null;
  }

  async neighbourKey(tableId: string, orderKey: string, rowId: string, direction: 'before' | 'after'): Promise<string | null> {
    const sql =
      direction === 'after'
        ? `SELECT order_key AS k FROM ${rowsTable(tableId)} WHERE (order_key, id) > (?, ?) ORDER BY order_key ASC, id ASC LIMIT 1`
        : `SELECT order_key AS k FROM ${rowsTable(tableId)} WHERE (order_key, id) < (?, ?) ORDER BY order_key DESC, id DESC LIMIT 1`;
    const r = await this.db.get<{ k: string }>(sql, [orderKey, rowId]);
    return r?.k ?? null;
  }
}
