// Rows: list, read, insert (batch or at a position), merge updates, deletes, bulk updates, upsert, find, and the
// query engine's query and count. The rules are src/tables/row-writes.ts and row-reads.ts; here the request is
// read, cursors signed and checked, and the answer shaped. A write that may start autoRun groups pokes the
// group runner once it has committed.
import type { Handler } from '../../../generated/handlers.ts';
import type { RequestContext } from '../../http/context.ts';
import { badRequest, invalidField } from '../../http/errors.ts';
import { cursorFor, readCursor } from '../../http/pagination.ts';
import { loadTable } from '../../tables/service.ts';
import * as reads from '../../tables/row-reads.ts';
import * as writes from '../../tables/row-writes.ts';
import { workspaceOf } from './shared.ts';

const runningBlocksOf = (ctx: RequestContext): reads.RunningBlocks => (runId) => ctx.services.runs.runningBlockIds(runId);

/** Where a row write goes, on behalf of whom. */
const targetOf = (ctx: RequestContext, tableId: string): writes.RowTarget => ({
  workspaceId: workspaceOf(ctx).id, tableId, userId: ctx.principal.userId, maxRowBytes: ctx.services.config.tables.maxRowBytes,
});

/** A page with a signed cursor bound to the query (only the limit may change between pages). */
function pageBody(ctx: RequestContext, page: Awaited<ReturnType<typeof reads.readPage>>, binding: Record<string, unknown>) {
  return { data: page.rows, nextCursor: page.next ? cursorFor(ctx, page.next, binding) : null };
}

export const listTableRows: Handler<'listTableRows'> = async ({ params, query, ctx }) => {
  const runState = query.includeRunState ?? false;
  const limit = Math.min(query.limit ?? 100, runState ? 200 : 1000);
  const binding = { tableId: params.tableId, op: 'rows' };
  const t = await loadTable(ctx.services.store, workspaceOf(ctx).id, params.tableId);
  const after = readCursor(ctx, query.cursor, binding);
  const page = await reads.readPage(ctx.services.store, t, { where: null, sort: [], limit, after, runState: runState ? runningBlocksOf(ctx) : null });
  return { status: 200, body: pageBody(ctx, page, binding) };
};

export const queryRows: Handler<'queryRows'> = async ({ params, body, ctx }) => {
  const t = await loadTable(ctx.services.store, workspaceOf(ctx).id, params.tableId);
  const where = reads.predicateOf(t, body.predicate, ['body', 'predicate']);
  const sort = reads.sortOf(t, body.sort, ['body', 'sort']);
  const runState = body.includeRunState ?? false;
  if (runState && body.limit === 0) throw invalidField(['body', 'limit'], 'includeRunState needs a bounded limit (1–200).');
  const limit = body.limit === 0 ? null : Math.min(body.limit ?? 100, runState ? 200 : 1000);
  const binding = { tableId: t.id, predicate: JSON.stringify(body.predicate ?? null), sort: JSON.stringify(body.sort ?? null) };
  const after = readCursor(ctx, body.cursor, binding);
  const page = await reads.queryTable(ctx.services.store, ctx.services.tableJobs, t, { where, sort, limit, after, runState: runState ? runningBlocksOf(ctx) : null });
  return { status: 200, body: pageBody(ctx, page, binding) };
};

export const queryRowsCount: Handler<'queryRowsCount'> = async ({ params, body, ctx }) => {
  const totalCount = await reads.countRows(ctx.services.store, ctx.services.tableJobs, workspaceOf(ctx).id, params.tableId, body.predicate);
  return { status: 200, body: { data: { totalCount } } };
};

export const getTableRow: Handler<'getTableRow'> = async ({ params, query, ctx }) => {
  const row = await reads.getRow(ctx.services.store, workspaceOf(ctx).id, params.tableId, params.rowId, query.includeRunState ? runningBlocksOf(ctx) : null);
  return { status: 200, body: { data: row } };
};

export const createTableRows: Handler<'createTableRows'> = async ({ params, body, ctx }) => {
  const batch = body.rows !== undefined;
  if (batch === (body.data !== undefined)) throw badRequest('Send either rows (a batch) or data (one row).', [{ code: 'custom', keys: ['rows', 'data'], path: ['body'], message: 'Exactly one of rows and data' }]);
  if (batch && (body.afterRowId !== undefined || body.beforeRowId !== undefined)) throw invalidField(['body', 'afterRowId'], 'A position applies to a single row (data).');
  if (body.afterRowId !== undefined && body.beforeRowId !== undefined) throw invalidField(['body', 'beforeRowId'], 'Give afterRowId or beforeRowId, not both.');
  const input = { data: batch ? body.rows! : [body.data!], batch, afterRowId: body.afterRowId, beforeRowId: body.beforeRowId };
  const result = await ctx.mutate((tx, audit) => writes.insertRows(tx, audit, targetOf(ctx, params.tableId), input));
  ctx.services.tableGroups.poke();
  if (batch) return { status: 201, body: { data: { rows: result, insertedCount: result.length } } };
  return { status: 201, body: { data: result[0]! } };
};

export const updateTableRow: Handler<'updateTableRow'> = async ({ params, body, ctx }) => {
  const row = await ctx.mutate((tx, audit) => writes.updateRow(tx, audit, targetOf(ctx, params.tableId), params.rowId, body.data));
  ctx.services.tableGroups.poke();
  return { status: 200, body: { data: row } };
};

export const deleteTableRow: Handler<'deleteTableRow'> = async ({ params, ctx }) => {
  await ctx.mutate((tx, audit) => writes.deleteRow(tx, audit, targetOf(ctx, params.tableId), params.rowId));
  return { status: 200, body: { data: { id: params.rowId, deleted: true as const } } };
};

export const updateRowsByFilter: Handler<'updateRowsByFilter'> = async ({ params, body, ctx }) => {
  const result = await ctx.mutate((tx, audit) => writes.updateRowsByFilter(tx, audit, targetOf(ctx, params.tableId), body.filter, body.data, body.limit));
  ctx.services.tableGroups.poke();
  return { status: 200, body: { data: result } };
};

export const deleteTableRows: Handler<'deleteTableRows'> = async ({ params, body, ctx }) => {
  if ((body.filter === undefined) === (body.rowIds === undefined)) {
    throw badRequest('Send either filter or rowIds.', [{ code: 'custom', keys: ['filter', 'rowIds'], path: ['body'], message: 'Exactly one of filter and rowIds' }]);
  }
  if (body.rowIds !== undefined && body.limit !== undefined) throw invalidField(['body', 'limit'], 'limit applies to a filter.');
  const which = body.filter !== undefined ? { filter: body.filter, limit: body.limit } : { rowIds: body.rowIds! };
  const result = await ctx.mutate((tx, audit) => writes.deleteRows(tx, audit, targetOf(ctx, params.tableId), which));
  return { status: 200, body: { data: result } };
};

export const bulkUpdateTableRows: Handler<'bulkUpdateTableRows'> = async ({ params, body, ctx }) => {
  const seen = new Set<string>();
  for (const [i, u] of body.updates.entries()) {
    if (seen.has(u.rowId)) throw invalidField(['body', 'updates', i, 'rowId'], `Row ${u.rowId} is listed twice.`);
    seen.add(u.rowId);
  }
  const result = await ctx.mutate((tx, audit) => writes.bulkUpdateRows(tx, audit, targetOf(ctx, params.tableId), body.updates));
  ctx.services.tableGroups.poke();
  return { status: 200, body: { data: result } };
};

export const upsertTableRow: Handler<'upsertTableRow'> = async ({ params, body, ctx }) => {
  const result = await ctx.mutate((tx, audit) => writes.upsertRow(tx, audit, targetOf(ctx, params.tableId), body.data, body.conflictTarget));
  ctx.services.tableGroups.poke();
  return { status: 200, body: { data: result } };
};

export const searchTableRows: Handler<'searchTableRows'> = async ({ params, body, ctx }) => {
  const data = await reads.searchRows(ctx.services.store, workspaceOf(ctx).id, params.tableId, { q: body.q, predicate: body.predicate, sort: body.sort });
  return { status: 200, body: { data } };
};
