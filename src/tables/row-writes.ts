// Writing rows: insert (a batch, or one row at a position), merge updates (one row, by filter, or a batch of
// patches), deletes (one, by filter, or by ids) and upsert on a unique column. The rules: table locks, the
// plan's row limit, cell types and row size, unique columns (checked, and backed by the row table's unique
// index), row counts, and the autoRun dispatch of groups on the rows written. Each change works inside the
// caller's transaction and records its audit event there; the caller pokes the group runner after the commit.
// No HTTP here.
import type { Repositories } from '../store/index.ts';
import type { StoredRow } from '../store/table-rows.ts';
import type { UserTableRecord } from '../store/user-tables.ts';
import type { Audit } from '../domain/changes.ts';
import { DomainError, domainNotFound } from '../domain/errors.ts';
import type { StoredValue } from './columns.ts';
import { parsePredicate, type Predicate } from './predicate.ts';
import {
  appendKeys, asBadRequest, assertRowRoom, assertUniqueFree, assertUnlocked, keyAt, loadTable, newRowId, rowView, storedCells, uniqueViolation,
} from './service.ts';
import { autoDispatch } from './auto-run.ts';

/** Without a limit a filter update or delete acts on every match (as the CLI documents). */
const DEFAULT_FILTER_LIMIT = Number.MAX_SAFE_INTEGER;

/** The table a row write goes to, who writes, and the size limit of one row. */
export interface RowTarget {
  workspaceId: string;
  tableId: string;
  userId: string;
  maxRowBytes: number;
}

type RowView = ReturnType<typeof rowView>;
const nowIso = () => new Date().toISOString();
const invalid = (path: (string | number)[], message: string) => new DomainError('invalid', message, [{ code: 'custom', keys: [], path, message }]);

/** A client's predicate on this table; `path` is where it sits in the request. */
export function predicateOf(t: UserTableRecord, raw: unknown, path: (string | number)[]): Predicate | null {
  if (raw === undefined) return null;
  try {
    return parsePredicate(t.columns, raw, path.slice(1));
  } catch (err) {
    asBadRequest(err, path.slice(0, 1));
  }
}

/** Runs a write, turning a unique index failure (a batch repeating a value within itself) into a conflict. */
async function guarded<T>(t: UserTableRecord, fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    uniqueViolation(err, t);
  }
}

/** Merges a patch into one row; returns the updated row, or null when the row does not exist. */
async function patchRow(tx: Repositories, t: UserTableRecord, rowId: string, patch: Record<string, StoredValue>, now: string): Promise<StoredRow | null> {
  const current = await tx.tableRows.get(t.id, t.columns, rowId);
  if (!current) return null;
  await assertUniqueFree(tx, t, patch, rowId);
  await tx.tableRows.update(t.id, rowId, patch, now);
  const cells = { ...current.cells, ...patch };
  for (const [k, v] of Object.entries(cells)) if (v === null) delete cells[k];
  return { ...current, cells, updatedAt: now };
}

const rowsAudit = (t: UserTableRecord, action: 'table.rows_inserted' | 'table.rows_updated' | 'table.rows_deleted', metadata: Record<string, unknown>) =>
  ({ action, resourceType: 'table', resourceId: t.id, resourceName: t.name, metadata });

/**
 * Inserts rows: a batch (`batch`, paths under body.rows) appended at the end, or one row (body.data) appended
 * or placed just after or before an existing row.
 */
export async function insertRows(
  tx: Repositories, audit: Audit, target: RowTarget,
  input: { data: Record<string, unknown>[]; batch: boolean; afterRowId?: string; beforeRowId?: string },
): Promise<RowView[]> {
  const t = await loadTable(tx, target.workspaceId, target.tableId);
  assertUnlocked(t, 'insert');
  const { data, batch } = input;
  assertRowRoom(t, data.length);
  const cells = data.map((d, i) => storedCells(t.columns, d, 'insert', batch ? ['body', 'rows', i] : ['body', 'data'], target.maxRowBytes));
  const keys = input.afterRowId
    ? [await keyAt(tx, t, input.afterRowId, 'after', 'afterRowId')]
    : input.beforeRowId
      ? [await keyAt(tx, t, input.beforeRowId, 'before', 'beforeRowId')]
      : await appendKeys(tx, t.id, data.length);
  const now = nowIso();
  const rows: StoredRow[] = cells.map((c, i) => ({ id: newRowId(), orderKey: keys[i]!, createdAt: now, updatedAt: now, cells: c }));
  for (const r of rows) await assertUniqueFree(tx, t, r.cells, null);
  await guarded(t, () => tx.tableRows.insert(t.id, t.columns, rows));
  await tx.userTables.addRowCount(t.id, rows.length);
  await autoDispatch(tx, t, target.userId, rows.map((r) => r.id));
  await audit(rowsAudit(t, 'table.rows_inserted', { count: rows.length }));
  return rows.map((r) => rowView(t.columns, r));
}

/** Merges `data` into one row. */
export async function updateRow(tx: Repositories, audit: Audit, target: RowTarget, rowId: string, data: Record<string, unknown>): Promise<RowView> {
  const t = await loadTable(tx, target.workspaceId, target.tableId);
  assertUnlocked(t, 'update');
  const patch = storedCells(t.columns, data, 'patch', ['body', 'data'], target.maxRowBytes);
  const updated = await guarded(t, () => patchRow(tx, t, rowId, patch, nowIso()));
  if (!updated) throw domainNotFound('Row');
  await autoDispatch(tx, t, target.userId, [updated.id]);
  await audit(rowsAudit(t, 'table.rows_updated', { count: 1 }));
  return rowView(t.columns, updated);
}

export async function deleteRow(tx: Repositories, audit: Audit, target: RowTarget, rowId: string): Promise<void> {
  const t = await loadTable(tx, target.workspaceId, target.tableId);
  assertUnlocked(t, 'delete');
  if ((await tx.tableRows.delete(t.id, [rowId])) === 0) throw domainNotFound('Row');
  await tx.userTables.addRowCount(t.id, -1);
  await audit(rowsAudit(t, 'table.rows_deleted', { count: 1 }));
}

/** Merges `data` into the rows matching `filter` (at most `limit` of them). */
export async function updateRowsByFilter(tx: Repositories, audit: Audit, target: RowTarget, filter: unknown, data: Record<string, unknown>, limit: number | undefined) {
  const t = await loadTable(tx, target.workspaceId, target.tableId);
  assertUnlocked(t, 'update');
  const where = predicateOf(t, filter, ['body', 'filter'])!;
  const patch = storedCells(t.columns, data, 'patch', ['body', 'data'], target.maxRowBytes);
  const ids = await tx.tableRows.matchingIds(t.id, where, limit ?? DEFAULT_FILTER_LIMIT);
  const now = nowIso();
  await guarded(t, async () => {
    for (const id of ids) await patchRow(tx, t, id, patch, now);
  });
  await autoDispatch(tx, t, target.userId, ids);
  await audit(rowsAudit(t, 'table.rows_updated', { count: ids.length }));
  return { updatedCount: ids.length, updatedRowIds: ids };
}

/** Deletes the rows matching a filter (at most `limit`), or the listed rows (naming the ones that are missing). */
export async function deleteRows(tx: Repositories, audit: Audit, target: RowTarget, which: { filter: unknown; limit?: number } | { rowIds: string[] }) {
  const t = await loadTable(tx, target.workspaceId, target.tableId);
  assertUnlocked(t, 'delete');
  let out: { deletedCount: number; deletedRowIds: string[]; requestedCount?: number; missingRowIds?: string[] };
  if ('filter' in which) {
    const where = predicateOf(t, which.filter, ['body', 'filter'])!;
    const ids = await tx.tableRows.matchingIds(t.id, where, which.limit ?? DEFAULT_FILTER_LIMIT);
    await tx.tableRows.delete(t.id, ids);
    out = { deletedCount: ids.length, deletedRowIds: ids };
  } else {
    const requested = [...new Set(which.rowIds)];
    const existing = new Set((await tx.tableRows.getMany(t.id, [], requested)).map((r) => r.id));
    const ids = requested.filter((id) => existing.has(id));
    await tx.tableRows.delete(t.id, ids);
    out = { deletedCount: ids.length, deletedRowIds: ids, requestedCount: which.rowIds.length, missingRowIds: requested.filter((id) => !existing.has(id)) };
  }
  await tx.userTables.addRowCount(t.id, -out.deletedCount);
  await audit(rowsAudit(t, 'table.rows_deleted', { count: out.deletedCount }));
  return out;
}

/** Applies one patch per row (row ids distinct); all or nothing: a missing row changes nothing. */
export async function bulkUpdateRows(tx: Repositories, audit: Audit, target: RowTarget, updates: { rowId: string; data: Record<string, unknown> }[]) {
  const t = await loadTable(tx, target.workspaceId, target.tableId);
  assertUnlocked(t, 'update');
  const patches = updates.map((u, i) => storedCells(t.columns, u.data, 'patch', ['body', 'updates', i, 'data'], target.maxRowBytes));
  const ids = [...new Set(updates.map((u) => u.rowId))];
  const found = new Set((await tx.tableRows.getMany(t.id, [], ids)).map((r) => r.id));
  const missing = ids.filter((id) => !found.has(id));
  if (missing.length > 0) throw new DomainError('not_found', `No row ${missing.slice(0, 10).join(', ')} in this table; nothing was changed.`, { missingRowIds: missing });
  const now = nowIso();
  await guarded(t, async () => {
    for (const [i, u] of updates.entries()) await patchRow(tx, t, u.rowId, patches[i]!, now);
  });
  await autoDispatch(tx, t, target.userId, updates.map((u) => u.rowId));
  await audit(rowsAudit(t, 'table.rows_updated', { count: updates.length }));
  return { updatedCount: updates.length, updatedRowIds: updates.map((u) => u.rowId) };
}

/** Updates the row holding `data`'s value in the conflict column (the table's one unique column, or the named one), or inserts it. */
export async function upsertRow(tx: Repositories, audit: Audit, target: RowTarget, data: Record<string, unknown>, conflictTarget: string | undefined) {
  const t = await loadTable(tx, target.workspaceId, target.tableId);
  const uniques = t.columns.filter((c) => c.unique);
  if (uniques.length === 0) {
    throw new DomainError('invalid', 'Upsert needs a unique column; this table has none.', [{ code: 'custom', keys: [], path: ['body', 'conflictTarget'], message: 'No unique column' }]);
  }
  let column = uniques[0]!;
  if (conflictTarget !== undefined) {
    const named = t.columns.find((c) => c.name === conflictTarget) ?? t.columns.find((c) => c.id === conflictTarget);
    if (!named) throw invalid(['body', 'conflictTarget'], `The table has no column "${conflictTarget}".`);
    if (!named.unique) throw invalid(['body', 'conflictTarget'], `Column "${named.name}" is not unique.`);
    column = named;
  } else if (uniques.length > 1) throw invalid(['body', 'conflictTarget'], `The table has several unique columns (${uniques.map((c) => c.name).join(', ')}); name one.`);
  const cells = storedCells(t.columns, data, 'replace', ['body', 'data'], target.maxRowBytes);
  const key = cells[column.id];
  if (key === null || key === undefined) throw invalid(['body', 'data', column.name], `The conflict column "${column.name}" needs a value.`);
  // The whole upsert is one write transaction, and writes are serialized, so two upserts of one value cannot
  // both miss the lookup: the second one sees the first one's row.
  const existing = await tx.tableRows.findUnique(t.id, t.columns, column, key);
  const now = nowIso();
  if (existing) {
    assertUnlocked(t, 'update');
    const updated = await guarded(t, () => patchRow(tx, t, existing.id, cells, now));
    await autoDispatch(tx, t, target.userId, [existing.id]);
    await audit(rowsAudit(t, 'table.rows_updated', { count: 1, upsert: true }));
    return { row: rowView(t.columns, updated!), operation: 'update' as const };
  }
  assertUnlocked(t, 'insert');
  assertRowRoom(t, 1);
  await assertUniqueFree(tx, t, cells, null);
  const row: StoredRow = { id: newRowId(), orderKey: (await appendKeys(tx, t.id, 1))[0]!, createdAt: now, updatedAt: now, cells };
  await guarded(t, () => tx.tableRows.insert(t.id, t.columns, [row]));
  await tx.userTables.addRowCount(t.id, 1);
  await autoDispatch(tx, t, target.userId, [row.id]);
  await audit(rowsAudit(t, 'table.rows_inserted', { count: 1, upsert: true }));
  return { row: rowView(t.columns, { ...row, cells: Object.fromEntries(Object.entries(cells).filter(([, v]) => v !== null)) }), operation: 'insert' as const };
}
