// Changing a table's columns: add (a required column only to an empty table), update (rename, retype with every
// stored value converted, required/unique checked against the rows, options) and delete (workflow groups and
// views stop naming it). A refused change names the offending rows. Each change works inside the caller's
// transaction, records its audit event there and returns the table as written; `guard` lets the caller check
// the table it read (an If-Match) before anything is written. No HTTP here.
import type { Repositories } from '../store/index.ts';
import type { UserTableRecord } from '../store/user-tables.ts';
import type { Audit } from '../domain/changes.ts';
import { DomainError } from '../domain/errors.ts';
import { type Column, ColumnError, applyTypeFields, convertStored, defineColumn, fromStored, MAX_COLUMNS, COLUMN_NAME, MAX_COLUMN_NAME, type StoredValue } from './columns.ts';
import { SYSTEM_FIELDS } from './predicate.ts';
import { asBadRequest, assertUnlocked, loadTable } from './service.ts';
import { dropColumnFromViews } from './views.ts';
import type { Guard } from './table-admin.ts';

/** At most this many offending rows are named when a change is refused. */
const MAX_REPORTED_ROWS = 100;

const nowIso = () => new Date().toISOString();
const isSystemField = (name: string) => (SYSTEM_FIELDS as readonly string[]).includes(name);
const systemFieldName = (name: string) => new DomainError('invalid', `"${name}" is a system field; name the column differently.`);
const nameTaken = (name: string) => new DomainError('conflict', `The table already has a column "${name}".`, { column: name });

function findColumn(t: UserTableRecord, name: string, field: string): Column {
  const c = t.columns.find((x) => x.name === name) ?? t.columns.find((x) => x.id === name);
  if (!c) throw new DomainError('invalid', `The table has no column "${name}".`, [{ code: 'custom', keys: [], path: ['body', field], message: 'Unknown column' }]);
  return c;
}

/** Refuses with one issue per offending row (its id in `keys`, first MAX_REPORTED_ROWS of them). */
function refuseRows(message: string, rows: { rowId: string; value?: unknown; message?: string }[], column: string): never {
  throw new DomainError(
    'invalid',
    message,
    rows.slice(0, MAX_REPORTED_ROWS).map((r) => ({
      code: 'row_not_convertible',
      keys: [r.rowId],
      path: ['rows', r.rowId, column],
      message: r.message ?? (r.value === undefined ? message : `Value ${JSON.stringify(r.value)} cannot be kept.`),
    })),
  );
}

/** The table as the transaction left it. */
const reread = async (tx: Repositories, tableId: string) => (await tx.userTables.get(tableId))!;

/** A new column from a client's definition (checked before any transaction). */
export function newColumn(input: Parameters<typeof defineColumn>[0]): Column {
  let column: Column;
  try {
    column = defineColumn(input, []);
  } catch (err) {
    asBadRequest(err, ['body', 'column']);
  }
  if (isSystemField(column.name)) throw systemFieldName(column.name);
  return column;
}

/** Adds a column at `position` (the end by default). */
export async function addColumn(tx: Repositories, audit: Audit, workspaceId: string, tableId: string, column: Column, position: number | undefined, guard: Guard): Promise<UserTableRecord> {
  const t = await loadTable(tx, workspaceId, tableId);
  assertUnlocked(t, 'schema');
  guard(t);
  if (t.columns.some((c) => c.name === column.name)) throw nameTaken(column.name);
  if (t.columns.length >= MAX_COLUMNS) throw new DomainError('invalid', `A table has at most ${MAX_COLUMNS} columns.`);
  if (column.required && t.rowCount > 0) {
    const rows = await tx.tableRows.query(t.id, t.columns, { where: null, sort: [], limit: MAX_REPORTED_ROWS });
    refuseRows(`A required column cannot be added to a table with rows: ${t.rowCount} rows would have no value.`, rows.map((r) => ({ rowId: r.id })), column.name);
  }
  const next = [...t.columns];
  next.splice(Math.min(position ?? next.length, next.length), 0, column);
  await tx.tableRows.addColumn(t.id, column);
  await tx.userTables.update(t.id, { columns: next, updatedAt: nowIso() });
  await audit({ action: 'table.column_added', resourceType: 'table', resourceId: t.id, resourceName: t.name, metadata: { column: column.name, type: column.type } });
  return reread(tx, t.id);
}

/** Converts every stored value of a column to its new definition; refuses naming the rows that cannot convert. */
async function convertColumn(tx: Repositories, t: UserTableRecord, from: Column, to: Column): Promise<void> {
  const failures: { rowId: string; value: unknown; message: string }[] = [];
  const writes: [string, StoredValue][] = [];
  for await (const batch of tx.tableRows.columnValues(t.id, from)) {
    for (const { id, value } of batch) {
      try {
        const next = convertStored(from, to, value);
        if (next !== value) writes.push([id, next]);
      } catch (err) {
        if (!(err instanceof ColumnError)) throw err;
        failures.push({ rowId: id, value: fromStored(from, value), message: err.message });
      }
    }
  }
  if (failures.length > 0) {
    refuseRows(`${failures.length} row(s) hold values that cannot become ${to.type}${to.type === 'select' ? ' with these options' : ''}; nothing was changed.`, failures, from.name);
  }
  // An engine with typed cells (Postgres) takes the new values as text, then casts them to the new type.
  await tx.tableRows.retypeColumn(t.id, to, 'text');
  for (const [id, value] of writes) await tx.tableRows.setCell(t.id, to, id, value);
  await tx.tableRows.retypeColumn(t.id, to, 'final');
}

export interface ColumnUpdate {
  name?: string;
  type?: Column['type'];
  required?: boolean;
  unique?: boolean;
  options?: Parameters<typeof applyTypeFields>[1]['options'];
  multiple?: boolean;
  currencyCode?: string;
}

/** Updates the column named `columnName` (or with that id). */
export async function updateColumn(tx: Repositories, audit: Audit, workspaceId: string, tableId: string, columnName: string, u: ColumnUpdate, guard: Guard): Promise<UserTableRecord> {
  const t = await loadTable(tx, workspaceId, tableId);
  assertUnlocked(t, 'schema');
  guard(t);
  const from = findColumn(t, columnName, 'columnName');
  const to: Column = { ...from, ...(u.name !== undefined ? { name: u.name } : {}), ...(u.type !== undefined ? { type: u.type } : {}) };
  if (u.required !== undefined) to.required = u.required;
  if (u.unique !== undefined) to.unique = u.unique;
  if (u.type !== undefined && u.type !== from.type) {
    // A new type starts from its own defaults; options and flags carry over only where the new type has them.
    delete to.options;
    delete to.multiple;
    delete to.currencyCode;
  }
  try {
    if (!COLUMN_NAME.test(to.name) || to.name.length > MAX_COLUMN_NAME) throw new ColumnError('Invalid column name.', ['name']);
    applyTypeFields(to, { options: u.options, multiple: u.multiple, currencyCode: u.currencyCode }, []);
  } catch (err) {
    asBadRequest(err, ['body', 'updates']);
  }
  if (to.name !== from.name) {
    if (t.columns.some((c) => c.name === to.name)) throw nameTaken(to.name);
    if (isSystemField(to.name)) throw systemFieldName(to.name);
  }
  const retyped = to.type !== from.type || Boolean(to.multiple) !== Boolean(from.multiple) || JSON.stringify(to.options ?? []) !== JSON.stringify(from.options ?? []);
  if (retyped) await convertColumn(tx, t, from, to);
  if ((to.required && !from.required) || (to.required && retyped)) {
    const empty = await tx.tableRows.emptyIds(t.id, to, MAX_REPORTED_ROWS + 1);
    if (empty.length > 0) refuseRows(`Column "${to.name}" cannot be required: some rows have no value.`, empty.map((rowId) => ({ rowId })), to.name);
  }
  if (to.unique && (!from.unique || retyped)) {
    const dupes = await tx.tableRows.duplicateIds(t.id, to, MAX_REPORTED_ROWS + 1);
    if (dupes.length > 0) refuseRows(`Column "${to.name}" cannot be unique: some rows repeat a value.`, dupes.map((rowId) => ({ rowId })), to.name);
  }
  if (to.unique !== from.unique || retyped) await tx.tableRows.syncIndex(t.id, to);
  const next = t.columns.map((c) => (c.id === from.id ? to : c));
  await tx.userTables.update(t.id, { columns: next, updatedAt: nowIso() });
  await audit({
    action: 'table.column_updated', resourceType: 'table', resourceId: t.id, resourceName: t.name,
    metadata: { column: from.name, ...(to.name !== from.name ? { renamedTo: to.name } : {}), ...(retyped ? { type: to.type } : {}) },
  });
  return reread(tx, t.id);
}

/** Deletes a column; workflow groups stop reading and filling it, and views stop naming it. */
export async function deleteColumn(tx: Repositories, audit: Audit, workspaceId: string, tableId: string, columnName: string, guard: Guard): Promise<UserTableRecord> {
  const t = await loadTable(tx, workspaceId, tableId);
  assertUnlocked(t, 'schema');
  guard(t);
  const column = findColumn(t, columnName, 'columnName');
  await tx.tableRows.dropColumn(t.id, column);
  const next = t.columns.filter((c) => c.id !== column.id);
  const groups = (t.groups ?? []).map((g) => ({
    ...g,
    dependencies: { columns: g.dependencies.columns.filter((id) => id !== column.id) },
    inputMappings: g.inputMappings.filter((m) => m.columnId !== column.id),
    outputs: g.outputs.filter((o) => o.columnId !== column.id),
  }));
  await tx.userTables.update(t.id, { columns: next, groups, updatedAt: nowIso() });
  await dropColumnFromViews(tx, t.id, column.id);
  await audit({ action: 'table.column_deleted', resourceType: 'table', resourceId: t.id, resourceName: t.name, metadata: { column: column.name } });
  return reread(tx, t.id);
}
