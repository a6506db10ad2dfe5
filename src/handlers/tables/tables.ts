// Tables: list, create, read, update, archive and restore, bulk delete and move. The rules are
// src/tables/table-admin.ts; here the request is read and the answer (and its entity tag) shaped.
import type { Handler } from '../../../generated/handlers.ts';
import type { RequestContext } from '../../http/context.ts';
import { readCursor, toPage } from '../../http/pagination.ts';
import type { UserTableRecord } from '../../store/user-tables.ts';
import { loadTable, planTableLimits, tableTag, tableView } from '../../tables/service.ts';
import * as tables from '../../tables/table-admin.ts';
import { tableFolderPath, workspaceOf } from './shared.ts';

const baseUrl = (ctx: { baseUrl: string }) => ctx.baseUrl;
/** The If-Match check of a write, on the table the transaction read. */
const ifMatch = (ctx: RequestContext) => (t: UserTableRecord) => ctx.precondition(() => tableTag(baseUrl(ctx), t));

const LIST_SORT = { name: (t: UserTableRecord) => t.name, createdAt: (t: UserTableRecord) => t.createdAt, updatedAt: (t: UserTableRecord) => t.updatedAt };

export const listTables: Handler<'listTables'> = async ({ query, ctx }) => {
  const workspaceId = workspaceOf(ctx).id;
  const limit = Math.min(1000, Math.max(1, Math.trunc(Number.isFinite(query.limit) ? query.limit! : 100)));
  const sortBy = query.sortBy ?? 'createdAt';
  const sortOrder = query.sortOrder ?? 'asc';
  const scope = query.scope ?? 'active';
  const binding = { workspaceId, scope, folderPath: query.folderPath, search: query.search, sortBy, sortOrder };
  const after = readCursor(ctx, query.cursor, binding);
  const folderPath = query.folderPath === undefined ? null : tableFolderPath(query.folderPath, ['query', 'folderPath']);
  const rows = await tables.listTables(ctx.services.store, { workspaceId, archived: scope === 'archived', folderPath, search: query.search ?? null, sortBy, sortOrder, after, limit: limit + 1 });
  return { status: 200, body: toPage(ctx, rows, limit, binding, (t) => [LIST_SORT[sortBy](t), t.id], (t) => tableView(baseUrl(ctx), t)) };
};

export const createTable: Handler<'createTable'> = async ({ body, ctx }) => {
  const workspace = workspaceOf(ctx);
  const columns = tables.defineColumns(body.schema.columns, ['body', 'schema', 'columns']);
  const folderPath = body.folderPath === undefined ? '/' : tableFolderPath(body.folderPath, ['body', 'folderPath']);
  const limits = planTableLimits(ctx.services.config.tables, workspace);
  const table = await ctx.mutate((tx, audit) =>
    tables.createTable(tx, audit, { workspaceId: workspace.id, name: body.name, description: body.description ?? null, folderPath, columns, ownerId: ctx.principal.userId, limits }),
  );
  return { status: 201, body: { data: tableView(baseUrl(ctx), table) } };
};

export const getTable: Handler<'getTable'> = async ({ params, ctx }) => {
  const t = await loadTable(ctx.services.store, workspaceOf(ctx).id, params.tableId, 'also');
  return { status: 200, body: { data: tableView(baseUrl(ctx), t) }, headers: { ETag: tableTag(baseUrl(ctx), t) } };
};

export const updateTable: Handler<'updateTable'> = async ({ params, body, ctx }) => {
  const workspaceId = workspaceOf(ctx).id;
  const folderPath = body.folderPath === undefined ? undefined : tableFolderPath(body.folderPath, ['body', 'folderPath']);
  const change = { name: body.name, description: body.description, folderPath };
  const table = await ctx.mutate((tx, audit) => tables.updateTable(tx, audit, workspaceId, params.tableId, change, ifMatch(ctx)));
  return { status: 200, body: { data: tableView(baseUrl(ctx), table) }, headers: { ETag: tableTag(baseUrl(ctx), table) } };
};

export const deleteTable: Handler<'deleteTable'> = async ({ params, ctx }) => {
  const workspaceId = workspaceOf(ctx).id;
  await ctx.mutate((tx, audit) => tables.archiveTable(tx, audit, workspaceId, params.tableId, ifMatch(ctx)));
  return { status: 200, body: { data: { id: params.tableId, deleted: true as const } } };
};

export const restoreTable: Handler<'restoreTable'> = async ({ params, ctx }) => {
  const workspaceId = workspaceOf(ctx).id;
  const table = await ctx.mutate((tx, audit) => tables.restoreTable(tx, audit, workspaceId, params.tableId));
  return { status: 200, body: { data: tableView(baseUrl(ctx), table) } };
};

export const bulkDeleteTables: Handler<'bulkDeleteTables'> = async ({ body, ctx }) => {
  const workspaceId = workspaceOf(ctx).id;
  const folderPaths = (body.folderPaths ?? []).map((p, i) => [p, tableFolderPath(p, ['body', 'folderPaths', i])] as const);
  const result = await ctx.mutate((tx, audit) => tables.bulkDelete(tx, audit, workspaceId, body.tableIds ?? [], folderPaths));
  return { status: 200, body: { data: result } };
};

export const moveTables: Handler<'moveTables'> = async ({ body, ctx }) => {
  const workspaceId = workspaceOf(ctx).id;
  const target = body.targetFolderPath === undefined ? '/' : tableFolderPath(body.targetFolderPath, ['body', 'targetFolderPath']);
  const folderPaths = (body.folderPaths ?? []).map((p, i) => [p, tableFolderPath(p, ['body', 'folderPaths', i])] as const);
  const result = await ctx.mutate((tx, audit) => tables.bulkMove(tx, audit, workspaceId, target, body.tableIds ?? [], folderPaths));
  return { status: 200, body: { data: result } };
};
