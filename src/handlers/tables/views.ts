// Saved views: list, create, read, update (config replace or configPatch, the one default view), delete.
import type { Handler } from '../../../generated/handlers.ts';
import { badRequest, notFound } from '../../http/errors.ts';
import { tagOf } from '../../http/conditional.ts';
import type { Repositories } from '../../store/index.ts';
import type { TableViewRecord, UserTableRecord } from '../../store/user-tables.ts';
import { asBadRequest, loadTable, newViewId } from '../../tables/service.ts';
import { storedViewConfig, wireViewConfig, type ViewConfig } from '../../tables/views.ts';
import { actorEmail, nowIso, workspaceOf } from './shared.ts';

export const MAX_VIEWS = 100;

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
const viewTag = (t: UserTableRecord, v: TableViewRecord) => tagOf(viewView(t, v));

function stored(t: UserTableRecord, config: ViewConfig, field: string): ViewConfig {
  try {
    return storedViewConfig(t.columns, config, [field]);
  } catch (err) {
    asBadRequest(err, ['body']);
  }
}

async function loadView(repos: Repositories, t: UserTableRecord, viewId: string): Promise<TableViewRecord> {
  const v = await repos.tableViews.get(t.id, viewId);
  if (!v) throw notFound('View');
  return v;
}

export const listTableViews: Handler<'listTableViews'> = async ({ params, ctx }) => {
  const store = ctx.services.store;
  const t = await loadTable(store, workspaceOf(ctx).id, params.tableId);
  const views = await store.tableViews.list(t.id);
  return { status: 200, body: { data: views.map((v) => viewView(t, v)), nextCursor: null } };
};

export const getTableView: Handler<'getTableView'> = async ({ params, ctx }) => {
  const store = ctx.services.store;
  const t = await loadTable(store, workspaceOf(ctx).id, params.tableId);
  const data = viewView(t, await loadView(store, t, params.viewId));
  return { status: 200, body: { data }, headers: { ETag: tagOf(data) } };
};

export const createTableView: Handler<'createTableView'> = async ({ params, body, ctx }) => {
  const workspaceId = workspaceOf(ctx).id;
  const result = await ctx.mutate(async (tx, audit) => {
    const t = await loadTable(tx, workspaceId, params.tableId);
    if ((await tx.tableViews.count(t.id)) >= MAX_VIEWS) throw badRequest(`A table has at most ${MAX_VIEWS} views.`);
    const now = nowIso();
    const v: TableViewRecord = {
      id: newViewId(),
      tableId: t.id,
      name: body.name,
      config: stored(t, body.config as ViewConfig, 'config') as Record<string, unknown>,
      isDefault: false,
      createdByEmail: await actorEmail(tx, ctx.principal.userId),
      createdAt: now,
      updatedAt: now,
    };
    await tx.tableViews.insert(v);
    audit({ action: 'table.view_created', resourceType: 'table_view', resourceId: v.id, resourceName: v.name, metadata: { tableId: t.id } });
    return viewView(t, v);
  });
  return { status: 201, body: { data: result } };
};

export const updateTableView: Handler<'updateTableView'> = async ({ params, body, ctx }) => {
  const workspaceId = workspaceOf(ctx).id;
  if (body.config !== undefined && body.configPatch !== undefined) {
    throw badRequest('Send config (replaces) or configPatch (merges), not both.', [{ code: 'custom', keys: ['config', 'configPatch'], path: ['body'], message: 'config and configPatch together' }]);
  }
  const result = await ctx.mutate(async (tx, audit) => {
    const t = await loadTable(tx, workspaceId, params.tableId);
    const v = await loadView(tx, t, params.viewId);
    ctx.precondition(() => viewTag(t, v));
    const now = nowIso();
    let config: ViewConfig | undefined;
    if (body.config !== undefined) config = stored(t, body.config as ViewConfig, 'config');
    if (body.configPatch !== undefined) {
      // A shallow merge over what the client sees now: each top-level key given replaces that key.
      const merged = { ...wireViewConfig(t.columns, v.config as ViewConfig), ...(body.configPatch as ViewConfig) };
      config = stored(t, merged, 'configPatch');
    }
    if (body.isDefault === true && !v.isDefault) await tx.tableViews.clearDefault(t.id);
    await tx.tableViews.update(v.id, { name: body.name, config: config as Record<string, unknown> | undefined, isDefault: body.isDefault, updatedAt: now });
    audit({ action: 'table.view_updated', resourceType: 'table_view', resourceId: v.id, resourceName: body.name ?? v.name, metadata: { tableId: t.id } });
    return viewView(t, (await tx.tableViews.get(t.id, v.id))!);
  });
  return { status: 200, body: { data: result }, headers: { ETag: tagOf(result) } };
};

export const deleteTableView: Handler<'deleteTableView'> = async ({ params, ctx }) => {
  const workspaceId = workspaceOf(ctx).id;
  await ctx.mutate(async (tx, audit) => {
    const t = await loadTable(tx, workspaceId, params.tableId);
    const v = await loadView(tx, t, params.viewId);
    ctx.precondition(() => viewTag(t, v));
    await tx.tableViews.delete(v.id);
    // The table keeps one default view while it has views: the oldest takes over.
    if (v.isDefault) {
      const next = (await tx.tableViews.list(t.id))[0];
      if (next) await tx.tableViews.update(next.id, { isDefault: true, updatedAt: nowIso() });
    }
    audit({ action: 'table.view_deleted', resourceType: 'table_view', resourceId: v.id, resourceName: v.name, metadata: { tableId: t.id } });
  });
  return { status: 200, body: { data: { id: params.viewId, deleted: true as const } } };
};
