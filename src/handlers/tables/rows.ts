// Rows: list, read, insert (batch or at a position), merge updates, deletes, bulk updates, upsert, find, and the
// query engine's query and count.
import type { Handler } from '../../../generated/handlers.ts';
import type { RequestContext } from '../../http/context.ts';
import { ApiError, badRequest, invalidField, notFound } from '../../http/errors.ts';
import { cursorFor, readCursor, type SortKey as CursorKey } from '../../http/pagination.ts';
import type { Repositories } from '../../store/index.ts';
import type { RowQuery, StoredRow } from '../../store/table-rows.ts';
import type { UserTableRecord } from '../../store/user-tables.ts';
import { cellText, type StoredValue } from '../../tables/columns.ts';
import { fold, parsePredicate, parseSort, type FieldRef, type Predicate, type SortKey } from '../../tables/predicate.ts';
import {
  appendKeys, asBadRequest, assertRowRoom, assertUniqueFree, assertUnlocked, keyAt, loadTable, newRowId, rowView, storedCells, uniqueViolation,
} from '../../tables/service.ts';
import { nowIso, workspaceOf } from './shared.ts';
import { autoDispatch, runStateView } from './groups.ts';

/** Most bytes of rows one page carries; a bounded page ends early there, an unbounded query fails. */
export const MAX_PAGE_BYTES = 5 * 1024 * 1024;
const MAX_SEARCH_MATCHES = 1000;
/** Without a limit a filter update or delete acts on every match (as the CLI documents). */
const DEFAULT_FILTER_LIMIT = Number.MAX_SAFE_INTEGER;

const maxRowBytes = (ctx: RequestContext) => ctx.services.config.tables.maxRowBytes;

function predicateOf(t: UserTableRecord, raw: unknown, path: (string | number)[]): Predicate | null {
  if (raw === undefined) return null;
  try {
    return parsePredicate(t.columns, raw, path.slice(1));
  } catch (err) {
    asBadRequest(err, path.slice(0, 1));
  }
}

function sortOf(t: UserTableRecord, raw: unknown, path: (string | number)[]): SortKey[] {
  if (raw === undefined) return [];
  try {
    return parseSort(t.columns, raw, path.slice(1));
  } catch (err) {
    asBadRequest(err, path.slice(0, 1));
  }
}

/** The fields a predicate and sort read: their indexes are built on first use. */
function fieldsOf(where: Predicate | null, sort: SortKey[]): FieldRef[] {
  const out: FieldRef[] = sort.map((k) => k.field);
  const walk = (p: Predicate) => {
    if ('all' in p) p.all.forEach(walk);
    else if ('any' in p) p.any.forEach(walk);
    else out.push(p.field);
  };
  if (where) walk(where);
  return out;
}

/** Runs a write, turning a unique index failure (a batch repeating a value within itself) into a 409. */
async function guarded<T>(t: UserTableRecord, fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    uniqueViolation(err, t);
  }
}

/**
 * One page of a query: table order pages by (order_key, id), a sort by offset. `limit` null is unbounded (and
 * refused past MAX_PAGE_BYTES); a bounded page stops early at MAX_PAGE_BYTES with a cursor to the rest.
 */
async function readPage(repos: Repositories, t: UserTableRecord, q: { where: Predicate | null; sort: SortKey[]; limit: number | null; after: CursorKey | null }, runState: RunningBlocks | null): Promise<{ rows: ReturnType<typeof rowView>[]; next: CursorKey | null }> {
  const sorted = q.sort.length > 0;
  const offset = sorted && q.after ? Number(q.after[0]) : 0;
  const query: RowQuery = {
    where: q.where,
    sort: q.sort,
    limit: q.limit === null ? null : q.limit + 1,
    after: !sorted && q.after ? [String(q.after[0]), q.after[1]] : null,
    offset,
  };
  const found = await repos.tableRows.query(t.id, t.columns, query);
  const more = q.limit !== null && found.length > q.limit;
  const page = { rows: more ? found.slice(0, q.limit!) : found };
  const views: ReturnType<typeof rowView>[] = [];
  let bytes = 0;
  let cut = page.rows.length;
  const states = runState ? await runStates(repos, t.id, page.rows.map((r) => r.id), runState) : null;
  for (const [i, r] of page.rows.entries()) {
    const v = rowView(t.columns, r, states ? (states.get(r.id) ?? {}) : undefined);
    bytes += Buffer.byteLength(JSON.stringify(v));
    if (bytes > MAX_PAGE_BYTES) {
      if (q.limit === null) throw new ApiError('PAYLOAD_TOO_LARGE', `The result passes ${MAX_PAGE_BYTES} bytes; page through it with a limit.`, { limit: MAX_PAGE_BYTES });
      cut = Math.max(1, i);
      if (i === 0) views.push(v);
      break;
    }
    views.push(v);
  }
  const ended = cut < page.rows.length || more;
  const last = page.rows[Math.min(cut, page.rows.length) - 1];
  const next: CursorKey | null = !ended || !last ? null : sorted ? [offset + views.length, 'offset'] : [last.orderKey, last.id];
  return { rows: views, next };
}

type RunningBlocks = (runId: string) => string[];
const runningBlocksOf = (ctx: RequestContext): RunningBlocks => (runId) => ctx.services.runs.runningBlockIds(runId);

/** The run state of each row (group id → state), for rows read with includeRunState. */
async function runStates(repos: Repositories, tableId: string, rowIds: string[], runningBlocks: RunningBlocks): Promise<Map<string, Record<string, ReturnType<typeof runStateView>>>> {
  const out = new Map<string, Record<string, ReturnType<typeof runStateView>>>();
  for (const r of await repos.tableGroupRuns.forRows(tableId, rowIds)) {
    const m = out.get(r.rowId) ?? {};
    m[r.groupId] = runStateView(r, runningBlocks);
    out.set(r.rowId, m);
  }
  return out;
}

/** A page with a signed cursor bound to the query (only the limit may change between pages). */
function pageBody(ctx: RequestContext, page: { rows: ReturnType<typeof rowView>[]; next: CursorKey | null }, binding: Record<string, unknown>) {
  return { data: page.rows, nextCursor: page.next ? cursorFor(ctx, page.next, binding) : null };
}

export const listTableRows: Handler<'listTableRows'> = async ({ params, query, ctx }) => {
  const t = await loadTable(ctx.services.store, workspaceOf(ctx).id, params.tableId);
  const runState = query.includeRunState ?? false;
  const limit = Math.min(query.limit ?? 100, runState ? 200 : 1000);
  const binding = { tableId: t.id, op: 'rows' };
  const after = readCursor(ctx, query.cursor, binding);
  const page = await readPage(ctx.services.store, t, { where: null, sort: [], limit, after }, runState ? runningBlocksOf(ctx) : null);
  return { status: 200, body: pageBody(ctx, page, binding) };
};

export const queryRows: Handler<'queryRows'> = async ({ params, body, ctx }) => {
  const t = await loadTable(ctx.services.store, workspaceOf(ctx).id, params.tableId);
  const where = predicateOf(t, body.predicate, ['body', 'predicate']);
  const sort = sortOf(t, body.sort, ['body', 'sort']);
  const runState = body.includeRunState ?? false;
  if (runState && body.limit === 0) throw invalidField(['body', 'limit'], 'includeRunState needs a bounded limit (1–200).');
  const limit = body.limit === 0 ? null : Math.min(body.limit ?? 100, runState ? 200 : 1000);
  const binding = { tableId: t.id, predicate: JSON.stringify(body.predicate ?? null), sort: JSON.stringify(body.sort ?? null) };
  const after = readCursor(ctx, body.cursor, binding);
  ctx.services.tableJobs.ensureIndexes(t.id, fieldsOf(where, sort));
  const page = await readPage(ctx.services.store, t, { where, sort, limit, after }, runState ? runningBlocksOf(ctx) : null);
  return { status: 200, body: pageBody(ctx, page, binding) };
};

export const queryRowsCount: Handler<'queryRowsCount'> = async ({ params, body, ctx }) => {
  const t = await loadTable(ctx.services.store, workspaceOf(ctx).id, params.tableId);
  const where = predicateOf(t, body.predicate, ['body', 'predicate']);
  ctx.services.tableJobs.ensureIndexes(t.id, fieldsOf(where, []));
  return { status: 200, body: { data: { totalCount: await ctx.services.store.tableRows.count(t.id, where) } } };
};

export const getTableRow: Handler<'getTableRow'> = async ({ params, query, ctx }) => {
  const store = ctx.services.store;
  const t = await loadTable(store, workspaceOf(ctx).id, params.tableId);
  const row = await store.tableRows.get(t.id, t.columns, params.rowId);
  if (!row) throw notFound('Row');
  const states = query.includeRunState ? await runStates(store, t.id, [row.id], runningBlocksOf(ctx)) : null;
  return { status: 200, body: { data: rowView(t.columns, row, states ? (states.get(row.id) ?? {}) : undefined) } };
};

export const createTableRows: Handler<'createTableRows'> = async ({ params, body, ctx }) => {
  const workspaceId = workspaceOf(ctx).id;
  const batch = body.rows !== undefined;
  if (batch === (body.data !== undefined)) throw badRequest('Send either rows (a batch) or data (one row).', [{ code: 'custom', keys: ['rows', 'data'], path: ['body'], message: 'Exactly one of rows and data' }]);
  if (batch && (body.afterRowId !== undefined || body.beforeRowId !== undefined)) throw invalidField(['body', 'afterRowId'], 'A position applies to a single row (data).');
  if (body.afterRowId !== undefined && body.beforeRowId !== undefined) throw invalidField(['body', 'beforeRowId'], 'Give afterRowId or beforeRowId, not both.');
  const result = await ctx.mutate(async (tx, audit) => {
    const t = await loadTable(tx, workspaceId, params.tableId);
    assertUnlocked(t, 'insert');
    const inputs = batch ? body.rows! : [body.data!];
    assertRowRoom(t, inputs.length);
    const cells = inputs.map((d, i) => storedCells(t.columns, d, 'insert', batch ? ['body', 'rows', i] : ['body', 'data'], maxRowBytes(ctx)));
    const keys = body.afterRowId
      ? [await keyAt(tx, t, body.afterRowId, 'after', 'afterRowId')]
      : body.beforeRowId
        ? [await keyAt(tx, t, body.beforeRowId, 'before', 'beforeRowId')]
        : await appendKeys(tx, t.id, inputs.length);
    const now = nowIso();
    const rows: StoredRow[] = cells.map((c, i) => ({ id: newRowId(), orderKey: keys[i]!, createdAt: now, updatedAt: now, cells: c }));
    for (const r of rows) await assertUniqueFree(tx, t, r.cells, null);
    await guarded(t, () => tx.tableRows.insert(t.id, t.columns, rows));
    await tx.userTables.addRowCount(t.id, rows.length);
    await autoDispatch(ctx, tx, t, rows.map((r) => r.id));
    audit({ action: 'table.rows_inserted', resourceType: 'table', resourceId: t.id, resourceName: t.name, metadata: { count: rows.length } });
    return rows.map((r) => rowView(t.columns, r));
  });
  ctx.services.tableGroups.poke();
  if (batch) return { status: 201, body: { data: { rows: result, insertedCount: result.length } } };
  return { status: 201, body: { data: result[0]! } };
};

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

export const updateTableRow: Handler<'updateTableRow'> = async ({ params, body, ctx }) => {
  const workspaceId = workspaceOf(ctx).id;
  const row = await ctx.mutate(async (tx, audit) => {
    const t = await loadTable(tx, workspaceId, params.tableId);
    assertUnlocked(t, 'update');
    const patch = storedCells(t.columns, body.data, 'patch', ['body', 'data'], maxRowBytes(ctx));
    const updated = await guarded(t, () => patchRow(tx, t, params.rowId, patch, nowIso()));
    if (!updated) throw notFound('Row');
    await autoDispatch(ctx, tx, t, [updated.id]);
    audit({ action: 'table.rows_updated', resourceType: 'table', resourceId: t.id, resourceName: t.name, metadata: { count: 1 } });
    return rowView(t.columns, updated);
  });
  ctx.services.tableGroups.poke();
  return { status: 200, body: { data: row } };
};

export const deleteTableRow: Handler<'deleteTableRow'> = async ({ params, ctx }) => {
  const workspaceId = workspaceOf(ctx).id;
  await ctx.mutate(async (tx, audit) => {
    const t = await loadTable(tx, workspaceId, params.tableId);
    assertUnlocked(t, 'delete');
    if ((await tx.tableRows.delete(t.id, [params.rowId])) === 0) throw notFound('Row');
    await tx.userTables.addRowCount(t.id, -1);
    audit({ action: 'table.rows_deleted', resourceType: 'table', resourceId: t.id, resourceName: t.name, metadata: { count: 1 } });
  });
  return { status: 200, body: { data: { id: params.rowId, deleted: true as const } } };
};

export const updateRowsByFilter: Handler<'updateRowsByFilter'> = async ({ params, body, ctx }) => {
  const workspaceId = workspaceOf(ctx).id;
  const result = await ctx.mutate(async (tx, audit) => {
    const t = await loadTable(tx, workspaceId, params.tableId);
    assertUnlocked(t, 'update');
    const where = predicateOf(t, body.filter, ['body', 'filter'])!;
    const patch = storedCells(t.columns, body.data, 'patch', ['body', 'data'], maxRowBytes(ctx));
    const ids = await tx.tableRows.matchingIds(t.id, where, body.limit ?? DEFAULT_FILTER_LIMIT);
    const now = nowIso();
    await guarded(t, async () => {
      for (const id of ids) await patchRow(tx, t, id, patch, now);
    });
    await autoDispatch(ctx, tx, t, ids);
    audit({ action: 'table.rows_updated', resourceType: 'table', resourceId: t.id, resourceName: t.name, metadata: { count: ids.length } });
    return { updatedCount: ids.length, updatedRowIds: ids };
  });
  ctx.services.tableGroups.poke();
  return { status: 200, body: { data: result } };
};

export const deleteTableRows: Handler<'deleteTableRows'> = async ({ params, body, ctx }) => {
  const workspaceId = workspaceOf(ctx).id;
  if ((body.filter === undefined) === (body.rowIds === undefined)) {
    throw badRequest('Send either filter or rowIds.', [{ code: 'custom', keys: ['filter', 'rowIds'], path: ['body'], message: 'Exactly one of filter and rowIds' }]);
  }
  if (body.rowIds !== undefined && body.limit !== undefined) throw invalidField(['body', 'limit'], 'limit applies to a filter.');
  const result = await ctx.mutate(async (tx, audit) => {
    const t = await loadTable(tx, workspaceId, params.tableId);
    assertUnlocked(t, 'delete');
    let out: { deletedCount: number; deletedRowIds: string[]; requestedCount?: number; missingRowIds?: string[] };
    if (body.filter !== undefined) {
      const where = predicateOf(t, body.filter, ['body', 'filter'])!;
      const ids = await tx.tableRows.matchingIds(t.id, where, body.limit ?? DEFAULT_FILTER_LIMIT);
      await tx.tableRows.delete(t.id, ids);
      out = { deletedCount: ids.length, deletedRowIds: ids };
    } else {
      const requested = [...new Set(body.rowIds!)];
      const existing = new Set((await tx.tableRows.getMany(t.id, [], requested)).map((r) => r.id));
      const ids = requested.filter((id) => existing.has(id));
      await tx.tableRows.delete(t.id, ids);
      out = { deletedCount: ids.length, deletedRowIds: ids, requestedCount: body.rowIds!.length, missingRowIds: requested.filter((id) => !existing.has(id)) };
    }
    await tx.userTables.addRowCount(t.id, -out.deletedCount);
    audit({ action: 'table.rows_deleted', resourceType: 'table', resourceId: t.id, resourceName: t.name, metadata: { count: out.deletedCount } });
    return out;
  });
  return { status: 200, body: { data: result } };
};

export const bulkUpdateTableRows: Handler<'bulkUpdateTableRows'> = async ({ params, body, ctx }) => {
  const workspaceId = workspaceOf(ctx).id;
  const seen = new Set<string>();
  for (const [i, u] of body.updates.entries()) {
    if (seen.has(u.rowId)) throw invalidField(['body', 'updates', i, 'rowId'], `Row ${u.rowId} is listed twice.`);
    seen.add(u.rowId);
  }
  const result = await ctx.mutate(async (tx, audit) => {
    const t = await loadTable(tx, workspaceId, params.tableId);
    assertUnlocked(t, 'update');
    const patches = body.updates.map((u, i) => storedCells(t.columns, u.data, 'patch', ['body', 'updates', i, 'data'], maxRowBytes(ctx)));
    const found = new Set((await tx.tableRows.getMany(t.id, [], [...seen])).map((r) => r.id));
    const missing = [...seen].filter((id) => !found.has(id));
    if (missing.length > 0) throw new ApiError('NOT_FOUND', `No row ${missing.slice(0, 10).join(', ')} in this table; nothing was changed.`, { missingRowIds: missing });
    const now = nowIso();
    await guarded(t, async () => {
      for (const [i, u] of body.updates.entries()) await patchRow(tx, t, u.rowId, patches[i]!, now);
    });
    await autoDispatch(ctx, tx, t, body.updates.map((u) => u.rowId));
    audit({ action: 'table.rows_updated', resourceType: 'table', resourceId: t.id, resourceName: t.name, metadata: { count: body.updates.length } });
    return { updatedCount: body.updates.length, updatedRowIds: body.updates.map((u) => u.rowId) };
  });
  ctx.services.tableGroups.poke();
  return { status: 200, body: { data: result } };
};

export const upsertTableRow: Handler<'upsertTableRow'> = async ({ params, body, ctx }) => {
  const workspaceId = workspaceOf(ctx).id;
  const result = await ctx.mutate(async (tx, audit) => {
    const t = await loadTable(tx, workspaceId, params.tableId);
    const uniques = t.columns.filter((c) => c.unique);
    if (uniques.length === 0) throw badRequest('Upsert needs a unique column; this table has none.', [{ code: 'custom', keys: [], path: ['body', 'conflictTarget'], message: 'No unique column' }]);
    let target = uniques[0]!;
    if (body.conflictTarget !== undefined) {
      const named = t.columns.find((c) => c.name === body.conflictTarget) ?? t.columns.find((c) => c.id === body.conflictTarget);
      if (!named) throw invalidField(['body', 'conflictTarget'], `The table has no column "${body.conflictTarget}".`);
      if (!named.unique) throw invalidField(['body', 'conflictTarget'], `Column "${named.name}" is not unique.`);
      target = named;
    } else if (uniques.length > 1) throw invalidField(['body', 'conflictTarget'], `The table has several unique columns (${uniques.map((c) => c.name).join(', ')}); name one.`);
    const cells = storedCells(t.columns, body.data, 'replace', ['body', 'data'], maxRowBytes(ctx));
    const key = cells[target.id];
    if (key === null || key === undefined) throw invalidField(['body', 'data', target.name], `The conflict column "${target.name}" needs a value.`);
    // The whole upsert is one write transaction, and writes are serialized, so two upserts of one value cannot
    // both miss the lookup: the second one sees the first one's row.
    const existing = await tx.tableRows.findUnique(t.id, t.columns, target, key);
    const now = nowIso();
    if (existing) {
      assertUnlocked(t, 'update');
      const updated = await guarded(t, () => patchRow(tx, t, existing.id, cells, now));
      await autoDispatch(ctx, tx, t, [existing.id]);
      audit({ action: 'table.rows_updated', resourceType: 'table', resourceId: t.id, resourceName: t.name, metadata: { count: 1, upsert: true } });
      return { row: rowView(t.columns, updated!), operation: 'update' as const };
    }
    assertUnlocked(t, 'insert');
    assertRowRoom(t, 1);
    await assertUniqueFree(tx, t, cells, null);
    const row: StoredRow = { id: newRowId(), orderKey: (await appendKeys(tx, t.id, 1))[0]!, createdAt: now, updatedAt: now, cells };
    await guarded(t, () => tx.tableRows.insert(t.id, t.columns, [row]));
    await tx.userTables.addRowCount(t.id, 1);
    await autoDispatch(ctx, tx, t, [row.id]);
    audit({ action: 'table.rows_inserted', resourceType: 'table', resourceId: t.id, resourceName: t.name, metadata: { count: 1, upsert: true } });
    return { row: rowView(t.columns, { ...row, cells: Object.fromEntries(Object.entries(cells).filter(([, v]) => v !== null)) }), operation: 'insert' as const };
  });
  ctx.services.tableGroups.poke();
  return { status: 200, body: { data: result } };
};

export const searchTableRows: Handler<'searchTableRows'> = async ({ params, body, ctx }) => {
  const store = ctx.services.store;
  const t = await loadTable(store, workspaceOf(ctx).id, params.tableId);
  const where = predicateOf(t, body.predicate, ['body', 'predicate']);
  const sort = sortOf(t, body.sort, ['body', 'sort']);
  const needle = fold(body.q);
  const matches: { ordinal: number; rowId: string; column: string }[] = [];
  let truncated = false;
  const BATCH = 1000;
  let ordinal = 0;
  let after: readonly [string, string] | null = null;
  scan: for (;;) {
    const rows = await store.tableRows.query(t.id, t.columns, { where, sort, limit: BATCH, offset: sort.length > 0 ? ordinal : 0, after: sort.length > 0 ? null : after });
    for (const r of rows) {
      for (const c of t.columns) {
        const text = cellText(c, r.cells[c.id] ?? null);
        if (text !== null && fold(text).includes(needle)) {
          if (matches.length === MAX_SEARCH_MATCHES) {
            truncated = true;
            break scan;
          }
          matches.push({ ordinal, rowId: r.id, column: c.name });
        }
      }
      ordinal++;
    }
    if (rows.length < BATCH) break;
    after = [rows.at(-1)!.orderKey, rows.at(-1)!.id];
  }
  return { status: 200, body: { data: { matches, truncated } } };
};
