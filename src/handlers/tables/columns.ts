// Columns: add, update (rename, retype with conversion, flags, options), delete. The rules are
// src/tables/column-changes.ts; here the request is read and the answer (with the table's new entity tag) shaped.
import type { Handler } from '../../../generated/handlers.ts';
import type { RequestContext } from '../../http/context.ts';
import type { UserTableRecord } from '../../store/user-tables.ts';
import * as columns from '../../tables/column-changes.ts';
import { columnView, tableTag } from '../../tables/service.ts';
import { workspaceOf } from './shared.ts';

const tagOfTable = (ctx: RequestContext, t: UserTableRecord) => tableTag(ctx.baseUrl, t);
/** The If-Match check of a column change, on the table the transaction read. */
const ifMatch = (ctx: RequestContext) => (t: UserTableRecord) => ctx.precondition(() => tagOfTable(ctx, t));

export const addTableColumn: Handler<'addTableColumn'> = async ({ params, body, ctx }) => {
  const workspaceId = workspaceOf(ctx).id;
  const { position, ...input } = body.column;
  const column = columns.newColumn(input);
  const t = await ctx.mutate((tx, audit) => columns.addColumn(tx, audit, workspaceId, params.tableId, column, position, ifMatch(ctx)));
  return { status: 200, body: { data: { columns: t.columns.map(columnView) } }, headers: { ETag: tagOfTable(ctx, t) } };
};

export const updateTableColumn: Handler<'updateTableColumn'> = async ({ params, body, ctx }) => {
  const workspaceId = workspaceOf(ctx).id;
  const t = await ctx.mutate((tx, audit) => columns.updateColumn(tx, audit, workspaceId, params.tableId, body.columnName, body.updates, ifMatch(ctx)));
  // No workflow blocks of this server read table columns by name, so nothing is left unmigrated.
  return { status: 200, body: { data: { columns: t.columns.map(columnView), unmigrated: [] } }, headers: { ETag: tagOfTable(ctx, t) } };
};

export const deleteTableColumn: Handler<'deleteTableColumn'> = async ({ params, body, ctx }) => {
  const workspaceId = workspaceOf(ctx).id;
  const t = await ctx.mutate((tx, audit) => columns.deleteColumn(tx, audit, workspaceId, params.tableId, body.columnName, ifMatch(ctx)));
  return { status: 200, body: { data: { columns: t.columns.map(columnView) } }, headers: { ETag: tagOfTable(ctx, t) } };
};
