// Saved views of a table: create, update (config replace or a shallow configPatch, the one default view) and
// delete (the oldest view takes over as default). Configs are checked and stored with column ids
// (src/tables/views.ts). Each change works inside the caller's transaction and records its audit event there;
// `guard` lets the caller check the view it read (an If-Match) before anything is written. No HTTP here.
import type { Repositories } from '../store/index.ts';
import type { TableViewRecord, UserTableRecord } from '../store/user-tables.ts';
import type { Audit } from '../domain/changes.ts';
import { DomainError, domainNotFound } from '../domain/errors.ts';
import { asBadRequest, loadTable, newViewId } from './service.ts';
import { storedViewConfig, wireViewConfig, type ViewConfig } from './views.ts';
import { actorEmail } from './table-admin.ts';

export const MAX_VIEWS = 100;

/** Checks the view a change read (with its table) before it writes; throws to refuse. */
export type ViewGuard = (table: UserTableRecord, current: TableViewRecord) => void;

/** A view and the table it belongs to (its wire form names the table's current columns). */
export interface TableAndView {
  table: UserTableRecord;
  view: TableViewRecord;
}

const nowIso = () => new Date().toISOString();

function stored(t: UserTableRecord, config: ViewConfig, field: string): ViewConfig {
  try {
    return storedViewConfig(t.columns, config, [field]);
  } catch (err) {
    asBadRequest(err, ['body']);
  }
}

export async function loadView(repos: Repositories, t: UserTableRecord, viewId: string): Promise<TableViewRecord> {
  const v = await repos.tableViews.get(t.id, viewId);
  if (!v) throw domainNotFound('View');
  return v;
}

/** The views of a table of the workspace. */
export async function listViews(repos: Repositories, workspaceId: string, tableId: string): Promise<{ table: UserTableRecord; views: TableViewRecord[] }> {
  const table = await loadTable(repos, workspaceId, tableId);
  return { table, views: await repos.tableViews.list(table.id) };
}

export async function getView(repos: Repositories, workspaceId: string, tableId: string, viewId: string): Promise<TableAndView> {
  const table = await loadTable(repos, workspaceId, tableId);
  return { table, view: await loadView(repos, table, viewId) };
}

export async function createView(tx: Repositories, audit: Audit, workspaceId: string, tableId: string, input: { name: string; config: ViewConfig; userId: string }): Promise<TableAndView> {
  const t = await loadTable(tx, workspaceId, tableId);
  if ((await tx.tableViews.count(t.id)) >= MAX_VIEWS) throw new DomainError('invalid', `A table has at most ${MAX_VIEWS} views.`);
  const now = nowIso();
  const v: TableViewRecord = {
    id: newViewId(),
    tableId: t.id,
    name: input.name,
    config: stored(t, input.config, 'config') as Record<string, unknown>,
    isDefault: false,
    createdByEmail: await actorEmail(tx, input.userId),
    createdAt: now,
    updatedAt: now,
  };
  await tx.tableViews.insert(v);
  await audit({ action: 'table.view_created', resourceType: 'table_view', resourceId: v.id, resourceName: v.name, metadata: { tableId: t.id } });
  return { table: t, view: v };
}

export interface ViewChange {
  name?: string;
  /** Replaces the whole config. */
  config?: ViewConfig;
  /** Merges over the config as the client sees it: each top-level key given replaces that key. */
  configPatch?: ViewConfig;
  isDefault?: boolean;
}

export async function updateView(tx: Repositories, audit: Audit, workspaceId: string, tableId: string, viewId: string, change: ViewChange, guard: ViewGuard): Promise<TableAndView> {
  const t = await loadTable(tx, workspaceId, tableId);
  const v = await loadView(tx, t, viewId);
  guard(t, v);
  const now = nowIso();
  let config: ViewConfig | undefined;
  if (change.config !== undefined) config = stored(t, change.config, 'config');
  if (change.configPatch !== undefined) config = stored(t, { ...wireViewConfig(t.columns, v.config as ViewConfig), ...change.configPatch }, 'configPatch');
  if (change.isDefault === true && !v.isDefault) await tx.tableViews.clearDefault(t.id);
  await tx.tableViews.update(v.id, { name: change.name, config: config as Record<string, unknown> | undefined, isDefault: change.isDefault, updatedAt: now });
  await audit({ action: 'table.view_updated', resourceType: 'table_view', resourceId: v.id, resourceName: change.name ?? v.name, metadata: { tableId: t.id } });
  return { table: t, view: (await tx.tableViews.get(t.id, v.id))! };
}

/** Deletes a view; the table keeps one default view while it has views (the oldest takes over). */
export async function deleteView(tx: Repositories, audit: Audit, workspaceId: string, tableId: string, viewId: string, guard: ViewGuard): Promise<void> {
  const t = await loadTable(tx, workspaceId, tableId);
  const v = await loadView(tx, t, viewId);
  guard(t, v);
  await tx.tableViews.delete(v.id);
  if (v.isDefault) {
    const next = (await tx.tableViews.list(t.id))[0];
    if (next) await tx.tableViews.update(next.id, { isDefault: true, updatedAt: nowIso() });
  }
  await audit({ action: 'table.view_deleted', resourceType: 'table_view', resourceId: v.id, resourceName: v.name, metadata: { tableId: t.id } });
}
