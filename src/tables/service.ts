// The rules of tables that operations share: loading a table of a workspace, locks, plan limits, turning client
// rows (keyed by column name) into stored cells (keyed by column id) and back, positions, uniqueness, and the
// wire views. Works on repositories inside the caller's transaction; errors are DomainErrors (src/domain/errors.ts).
import { UniqueViolation } from '../store/errors.ts';
import { generateKeyBetween, generateNKeysBetween } from 'fractional-indexing';
import type { Repositories, Store } from '../store/index.ts';
import type { StoredRow } from '../store/table-rows.ts';
import type { TableLocks, UserTableRecord } from '../store/user-tables.ts';
import type { Workspace } from '../store/workspaces.ts';
import type { TableSettings } from '../config.ts';
import { DomainError, domainNotFound } from '../domain/errors.ts';
import { tagOf } from '../domain/entity-tags.ts';
import { type Column, ColumnError, type StoredValue, fromStored, toStored } from './columns.ts';
import { PredicateError } from './predicate.ts';
import { folderPathToWire } from '../workflows/folder-wire.ts';

export { newRowId, newTableId, newViewId } from './ids.ts';

export type LockKind = 'schema' | 'insert' | 'update' | 'delete';

/** 423 LOCKED naming the lock, when the table's lock guards this verb. */
export function assertUnlocked(t: UserTableRecord, lock: LockKind): void {
  const flag = `${lock}Locked` as keyof TableLocks;
  if (t.locks[flag]) throw new DomainError('locked', `The table "${t.name}" is ${lock}-locked.`, { lock, tableId: t.id });
}

/** The table, if it belongs to the workspace (archived ones only when asked); 404 otherwise. */
export async function loadTable(repos: Repositories, workspaceId: string, tableId: string, archived: 'no' | 'also' = 'no'): Promise<UserTableRecord> {
  const t = await repos.userTables.get(tableId);
  if (!t || t.workspaceId !== workspaceId || (archived === 'no' && t.archivedAt !== null)) throw domainNotFound('Table');
  return t;
}

/**
 * Brings every table's `maxRows` to its workspace's current plan limit (the limits are configuration and a plan
 * can change): at start-up, and after a plan change. Tables over a lowered limit keep their rows and take no more.
 */
export async function syncTableRowLimits(store: Store, perPlan: TableSettings['perPlan']): Promise<number> {
  let changed = 0;
  for (const [plan, limits] of Object.entries(perPlan)) changed += await store.transaction((tx) => tx.userTables.setMaxRowsForPlan(plan, limits.rowsPerTable));
  return changed;
}

export function planTableLimits(settings: TableSettings, workspace: Workspace) {
  return settings.perPlan[workspace.plan] ?? settings.perPlan.free;
}

/** Turns a column or predicate problem into a 400 on the request field that caused it. */
export function asBadRequest(err: unknown, prefix: (string | number)[]): never {
  if (err instanceof ColumnError || err instanceof PredicateError) {
    throw new DomainError('invalid', err.message, [{ code: 'custom', keys: [], path: [...prefix, ...err.path], message: err.message }]);
  }
  throw err;
}

export function tableView(baseUrl: string, t: UserTableRecord) {
  return {
    id: t.id,
    webUrl: `${baseUrl}/workspace/${encodeURIComponent(t.workspaceId)}/tables/${encodeURIComponent(t.id)}`,
    name: t.name,
    description: t.description,
    ownerEmail: t.ownerEmail,
    schema: { columns: t.columns.map(columnView) },
    rowCount: t.rowCount,
    maxRows: t.maxRows,
    folderPath: folderPathToWire(t.folderPath),
    locks: { ...t.locks },
    job: t.job && t.job.status === 'running' ? { ...t.job } : null,
    createdAt: t.createdAt,
    updatedAt: t.updatedAt,
  };
}

/**
 * The entity tag of a table (src/http/conditional.ts): its answer without the row count and the running job,
 * which change with its rows rather than with the table. Computed from what is stored, so every write counts.
 */
export function tableTag(baseUrl: string, t: UserTableRecord): string {
  const { rowCount: _rows, job: _job, ...definition } = tableView(baseUrl, t);
  return tagOf(definition);
}

export function columnView(c: Column) {
  return {
    id: c.id,
    name: c.name,
    type: c.type,
    required: c.required,
    unique: c.unique,
    ...(c.workflowGroupId ? { workflowGroupId: c.workflowGroupId } : {}),
    ...(c.type === 'select' ? { options: c.options ?? [], multiple: c.multiple ?? false } : {}),
    ...(c.type === 'currency' ? { currencyCode: c.currencyCode ?? 'USD' } : {}),
  };
}

/** A row on the wire; `runState` (group id → run state) is included when given. */
export interface RunStateView {
  status: string;
  executionId: string | null;
  workflowId: string;
  error: string | null;
  runningBlockIds: string[];
  blockErrors: Record<string, string>;
  canceledAt: string | null;
}

export function rowView(columns: Column[], r: StoredRow, runState?: Record<string, RunStateView>) {
  const data: Record<string, unknown> = {};
  for (const c of columns) data[c.name] = fromStored(c, r.cells[c.id] ?? null);
  return { id: r.id, data, ...(runState ? { runState } : {}), createdAt: r.createdAt, updatedAt: r.updatedAt };
}

export type WriteMode = 'insert' | 'replace' | 'patch';

/**
 * A client's cells (keyed by column name, or id) as stored cells keyed by column id. Unknown columns, values of
 * the wrong type and missing required values are 400s naming the field; a row over the size limit is a 413.
 * `insert` and `replace` give every column a value (null when omitted); `patch` only the named ones.
 */
export function storedCells(columns: Column[], data: Record<string, unknown>, mode: WriteMode, path: (string | number)[], maxRowBytes: number): Record<string, StoredValue> {
  const cells: Record<string, StoredValue> = {};
  try {
    for (const [key, value] of Object.entries(data)) {
      const column = columns.find((c) => c.name === key) ?? columns.find((c) => c.id === key);
      if (!column) throw new ColumnError(`The table has no column "${key}".`, [key]);
      if (column.id in cells) throw new ColumnError(`Column "${column.name}" is given twice.`, [key]);
      cells[column.id] = toStored(column, value, [key]);
    }
    for (const c of columns) {
      if (mode !== 'patch' && !(c.id in cells)) cells[c.id] = null;
      if (c.required && c.id in cells && (cells[c.id] === null || cells[c.id] === '')) throw new ColumnError(`Column "${c.name}" is required.`, [c.name]);
    }
  } catch (err) {
    asBadRequest(err, path);
  }
  const size = Buffer.byteLength(JSON.stringify(data));
  if (size > maxRowBytes) {
    throw new DomainError('too_large', `A row may hold at most ${maxRowBytes} bytes of JSON; this one has ${size}.`, { path, size, limit: maxRowBytes });
  }
  return cells;
}

/** Refuses values already held by another row in a unique column (409 naming column and row). */
export async function assertUniqueFree(repos: Repositories, t: UserTableRecord, cells: Record<string, StoredValue>, exceptRowId: string | null): Promise<void> {
  for (const c of t.columns) {
    if (!c.unique || !(c.id in cells) || cells[c.id] === null) continue;
    const holder = await repos.tableRows.findUnique(t.id, t.columns, c, cells[c.id]!);
    if (holder && holder.id !== exceptRowId) {
      throw new DomainError('conflict', `Column "${c.name}" is unique and row ${holder.id} already holds ${JSON.stringify(fromStored(c, cells[c.id]!))}.`, {
        code: 'UNIQUE_VIOLATION',
        column: c.name,
        rowId: holder.id,
      });
    }
  }
}

/** Maps a unique-index failure on a row table (a batch that repeats a value within itself) to a 409. */
export function uniqueViolation(err: unknown, t: UserTableRecord): never {
  if (err instanceof UniqueViolation && err.table.startsWith('trows_') && err.columns.length === 1) {
    // Row-table columns are named c_<hex of the column id>.
    const hex = err.columns[0]!.replace(/^c_/, '');
    const column = t.columns.find((c) => c.id === `col_${hex}`);
    throw new DomainError('conflict', `Column "${column?.name ?? hex}" is unique and the request would repeat a value.`, { code: 'UNIQUE_VIOLATION', column: column?.name });
  }
  throw err;
}

export function assertRowRoom(t: UserTableRecord, adding: number): void {
  if (t.rowCount + adding > t.maxRows) {
    throw new DomainError('forbidden', `The table may hold at most ${t.maxRows} rows on this plan; it has ${t.rowCount}.`, {
      code: 'TABLE_ROW_LIMIT',
      maxRows: t.maxRows,
      rowCount: t.rowCount,
    });
  }
}

/** Order keys for `n` rows appended at the end of the table. */
export async function appendKeys(repos: Repositories, tableId: string, n: number): Promise<string[]> {
  return generateNKeysBetween(await repos.tableRows.lastOrderKey(tableId), null, n);
}

/** The order key for one row placed just after or before an existing row. */
export async function keyAt(repos: Repositories, t: UserTableRecord, anchorId: string, where: 'after' | 'before', field: string): Promise<string> {
  const anchor = await repos.tableRows.get(t.id, t.columns, anchorId);
  if (!anchor) throw new DomainError('invalid', `No row ${anchorId} in this table.`, [{ code: 'custom', keys: [], path: ['body', field], message: 'Unknown row' }]);
  const other = await repos.tableRows.neighbourKey(t.id, anchor.orderKey, anchor.id, where);
  return where === 'after' ? generateKeyBetween(anchor.orderKey, other) : generateKeyBetween(other, anchor.orderKey);
}

/** The default view a new table gets. */
export const DEFAULT_VIEW_NAME = 'Default';
