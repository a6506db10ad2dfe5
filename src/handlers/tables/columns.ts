// Columns: add, update (rename, retype with conversion, flags, options), delete.
import type { Handler } from '../../../generated/handlers.ts';
import type { RequestContext } from '../../http/context.ts';
import { badRequest, conflict } from '../../http/errors.ts';
import type { Repositories } from '../../store/index.ts';
import type { UserTableRecord } from '../../store/user-tables.ts';
import { type Column, ColumnError, applyTypeFields, convertStored, defineColumn, fromStored, MAX_COLUMNS, COLUMN_NAME, MAX_COLUMN_NAME, type StoredValue } from '../../tables/columns.ts';
import { SYSTEM_FIELDS } from '../../tables/predicate.ts';
import { asBadRequest, assertUnlocked, columnView, loadTable, tableTag } from '../../tables/service.ts';
import { dropColumnFromViews } from '../../tables/views.ts';
import { nowIso, workspaceOf } from './shared.ts';

/** The table's entity tag as the transaction left it (the answer of a column change carries it). */
async function currentTag(ctx: RequestContext, tx: Repositories, tableId: string): Promise<string> {
  return tableTag(ctx.services.config.baseUrl, (await tx.userTables.get(tableId))!);
}

/** At most this many offending rows are named when a change is refused. */
const MAX_REPORTED_ROWS = 100;

function findColumn(t: UserTableRecord, name: string, field: string): Column {
  const c = t.columns.find((x) => x.name === name) ?? t.columns.find((x) => x.id === name);
  if (!c) throw badRequest(`The table has no column "${name}".`, [{ code: 'custom', keys: [], path: ['body', field], message: 'Unknown column' }]);
  return c;
}

/** A 400 whose issues name each offending row (its id in `keys`, first MAX_REPORTED_ROWS of them). */
function refuseRows(message: string, rows: { rowId: string; value?: unknown; message?: string }[], column: string): never {
  throw badRequest(
    message,
    rows.slice(0, MAX_REPORTED_ROWS).map((r) => ({
      code: 'row_not_convertible',
      keys: [r.rowId],
      path: ['rows', r.rowId, column],
      message: r.message ?? (r.value === undefined ? message : `Value ${JSON.stringify(r.value)} cannot be kept.`),
    })),
  );
}

export const addTableColumn: Handler<'addTableColumn'> = async ({ params, body, ctx }) => {
  const workspaceId = workspaceOf(ctx).id;
  const { position, ...input } = body.column;
  let column: Column;
  try {
    column = defineColumn(input, []);
  } catch (err) {
    asBadRequest(err, ['body', 'column']);
  }
  if ((SYSTEM_FIELDS as readonly string[]).includes(column.name)) throw badRequest(`"${column.name}" is a system field; name the column differently.`);
  const columns = await ctx.mutate(async (tx, audit) => {
    const t = await loadTable(tx, workspaceId, params.tableId);
    assertUnlocked(t, 'schema');
    ctx.precondition(() => tableTag(ctx.services.config.baseUrl, t));
    if (t.columns.some((c) => c.name === column.name)) throw conflict(`The table already has a column "${column.name}".`, { column: column.name });
    if (t.columns.length >= MAX_COLUMNS) throw badRequest(`A table has at most ${MAX_COLUMNS} columns.`);
    if (column.required && t.rowCount > 0) {
      const rows = await tx.tableRows.query(t.id, t.columns, { where: null, sort: [], limit: MAX_REPORTED_ROWS });
      refuseRows(`A required column cannot be added to a table with rows: ${t.rowCount} rows would have no value.`, rows.map((r) => ({ rowId: r.id })), column.name);
    }
    const next = [...t.columns];
    next.splice(Math.min(position ?? next.length, next.length), 0, column);
    await tx.tableRows.addColumn(t.id, column);
    const now = nowIso();
    await tx.userTables.update(t.id, { columns: next, updatedAt: now });
    audit({ action: 'table.column_added', resourceType: 'table', resourceId: t.id, resourceName: t.name, metadata: { column: column.name, type: column.type } });
    return { columns: next, etag: await currentTag(ctx, tx, t.id) };
  });
  return { status: 200, body: { data: { columns: columns.columns.map(columnView) } }, headers: { ETag: columns.etag } };
};

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
  for (const [id, value] of writes) await tx.tableRows.setCell(t.id, to, id, value);
}

export const updateTableColumn: Handler<'updateTableColumn'> = async ({ params, body, ctx }) => {
  const workspaceId = workspaceOf(ctx).id;
  const u = body.updates;
  const columns = await ctx.mutate(async (tx, audit) => {
    const t = await loadTable(tx, workspaceId, params.tableId);
    assertUnlocked(t, 'schema');
    ctx.precondition(() => tableTag(ctx.services.config.baseUrl, t));
    const from = findColumn(t, body.columnName, 'columnName');
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
      if (t.columns.some((c) => c.name === to.name)) throw conflict(`The table already has a column "${to.name}".`, { column: to.name });
      if ((SYSTEM_FIELDS as readonly string[]).includes(to.name)) throw badRequest(`"${to.name}" is a system field; name the column differently.`);
    }
    const retyped = to.type !== from.type || Boolean(to.multiple) !== Boolean(from.multiple) || JSON.stringify(to.options ?? []) !== JSON.stringify(from.options ?? []);
    if (retyped) await convertColumn(tx, t, from, to);
    if (to.required && !from.required || (to.required && retyped)) {
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
    audit({
      action: 'table.column_updated', resourceType: 'table', resourceId: t.id, resourceName: t.name,
      metadata: { column: from.name, ...(to.name !== from.name ? { renamedTo: to.name } : {}), ...(retyped ? { type: to.type } : {}) },
    });
    return { columns: next, etag: await currentTag(ctx, tx, t.id) };
  });
  // No workflow blocks of this server read table columns by name, so nothing is left unmigrated.
  return { status: 200, body: { data: { columns: columns.columns.map(columnView), unmigrated: [] } }, headers: { ETag: columns.etag } };
};

export const deleteTableColumn: Handler<'deleteTableColumn'> = async ({ params, body, ctx }) => {
  const workspaceId = workspaceOf(ctx).id;
  const columns = await ctx.mutate(async (tx, audit) => {
    const t = await loadTable(tx, workspaceId, params.tableId);
    assertUnlocked(t, 'schema');
    ctx.precondition(() => tableTag(ctx.services.config.baseUrl, t));
    const column = findColumn(t, body.columnName, 'columnName');
    await tx.tableRows.dropColumn(t.id, column);
    const next = t.columns.filter((c) => c.id !== column.id);
    // Workflow groups stop reading and filling the column.
    const groups = (t.groups ?? []).map((g) => ({
      ...g,
      dependencies: { columns: g.dependencies.columns.filter((id) => id !== column.id) },
      inputMappings: g.inputMappings.filter((m) => m.columnId !== column.id),
      outputs: g.outputs.filter((o) => o.columnId !== column.id),
    }));
    await tx.userTables.update(t.id, { columns: next, groups, updatedAt: nowIso() });
    await dropColumnFromViews(tx, t.id, column.id);
    audit({ action: 'table.column_deleted', resourceType: 'table', resourceId: t.id, resourceName: t.name, metadata: { column: column.name } });
    return { columns: next, etag: await currentTag(ctx, tx, t.id) };
  });
  return { status: 200, body: { data: { columns: columns.columns.map(columnView) } }, headers: { ETag: columns.etag } };
};
