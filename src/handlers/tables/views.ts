// Saved views: list, create, read, update (config replace or configPatch, the one default view), delete. The
// rules are src/tables/saved-views.ts; here the request is read and the answer (and its entity tag) shaped.
import type { Handler } from '../../../generated/handlers.ts';
import type { RequestContext } from '../../http/context.ts';
import { badRequest } from '../../http/errors.ts';
import { tagOf } from '../../http/conditional.ts';
import type { TableViewRecord, UserTableRecord } from '../../store/user-tables.ts';
import * as views from '../../tables/saved-views.ts';
import { wireViewConfig, type ViewConfig } from '../../tables/views.ts';
import { workspaceOf } from './shared.ts';

function viewView(t: UserTableRecord, v: TableViewRecord) {
  return {
    id: v.id,
    tableId: v.tableId,
    name: v.name,
    config: wireViewConfig(t.columns, v.config as ViewConfig),
    isDefault: v.isDefault,
    createdByEmail: v.createdByEmail,
    createdAt: v.createdAt,
    updatedAt: v.updatedAt,
  };
}

/** A view's entity tag is the hash of its answer, which also follows renames of the columns it names. */
const ifMatch = (ctx: RequestContext) => (t: UserTableRecord, v: TableViewRecord) => ctx.precondition(() => tagOf(viewView(t, v)));

export const listTableViews: Handler<'listTableViews'> = async ({ params, ctx }) => {
  const { table, views: all } = await views.listViews(ctx.services.store, workspaceOf(ctx).id, params.tableId);
  return { status: 200, body: { data: all.map((v) => viewView(table, v)), nextCursor: null } };
};

export const getTableView: Handler<'getTableView'> = async ({ params, ctx }) => {
  const { table, view } = await views.getView(ctx.services.store, workspaceOf(ctx).id, params.tableId, params.viewId);
  const data = viewView(table, view);
  return { status: 200, body: { data }, headers: { ETag: tagOf(data) } };
};

export const createTableView: Handler<'createTableView'> = async ({ params, body, ctx }) => {
  const workspaceId = workspaceOf(ctx).id;
  const input = { name: body.name, config: body.config as ViewConfig, userId: ctx.principal.userId };
  const { table, view } = await ctx.mutate((tx, audit) => views.createView(tx, audit, workspaceId, params.tableId, input));
  return { status: 201, body: { data: viewView(table, view) } };
};

export const updateTableView: Handler<'updateTableView'> = async ({ params, body, ctx }) => {
  const workspaceId = workspaceOf(ctx).id;
  if (body.config !== undefined && body.configPatch !== undefined) {
    throw badRequest('Send config (replaces) or configPatch (merges), not both.', [{ code: 'custom', keys: ['config', 'configPatch'], path: ['body'], message: 'config and configPatch together' }]);
  }
  const change = { name: body.name, config: body.config as ViewConfig | undefined, configPatch: body.configPatch as ViewConfig | undefined, isDefault: body.isDefault };
  const { table, view } = await ctx.mutate((tx, audit) => views.updateView(tx, audit, workspaceId, params.tableId, params.viewId, change, ifMatch(ctx)));
  const data = viewView(table, view);
  return { status: 200, body: { data }, headers: { ETag: tagOf(data) } };
};

export const deleteTableView: Handler<'deleteTableView'> = async ({ params, ctx }) => {
  const workspaceId = workspaceOf(ctx).id;
  await ctx.mutate((tx, audit) => views.deleteView(tx, audit, workspaceId, params.tableId, params.viewId, ifMatch(ctx)));
  return { status: 200, body: { data: { id: params.viewId, deleted: true as const } } };
};
