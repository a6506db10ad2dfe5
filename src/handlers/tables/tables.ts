// Tables: list, create, read, update, archive and restore, bulk delete and move.
import type { Handler } from '../../../generated/handlers.ts';
import { ApiError, badRequest, conflict } from '../../http/errors.ts';
import { readCursor, toPage } from '../../http/pagination.ts';
import type { Repositories } from '../../store/index.ts';
import type { UserTableRecord } from '../../store/user-tables.ts';
import { type Column, ColumnError, defineColumn, MAX_COLUMNS } from '../../tables/columns.ts';
import { SYSTEM_FIELDS } from '../../tables/predicate.ts';
import {
  assertUnlocked, asBadRequest, DEFAULT_VIEW_NAME, loadTable, newTableId, newViewId, planTableLimits, tableTag, tableView,
} from '../../tables/service.ts';
import { isWithin, parentFolderPath } from '../../domain/folder-paths.ts';
import { folderPathToWire } from '../../workflows/folder-wire.ts';
import { actorEmail, nowIso, tableFolderPath, tableTree, withTableTree, workspaceOf } from './shared.ts';

const baseUrl = (ctx: { services: { config: { baseUrl: string } } }) => ctx.services.config.baseUrl;

/** Checks a list of column definitions: names distinct (and not a system field), at most 1000. */
export function defineColumns(inputs: Parameters<typeof defineColumn>[0][], path: (string | number)[]): Column[] {
  if (inputs.length > MAX_COLUMNS) throw badRequest(`A table has at most ${MAX_COLUMNS} columns.`);
  const columns: Column[] = [];
  try {
    for (const [i, input] of inputs.entries()) {
      const c = defineColumn(input, [i]);
      if (columns.some((x) => x.name === c.name)) throw new ColumnError(`Two columns are named "${c.name}".`, [i, 'name']);
      if ((SYSTEM_FIELDS as readonly string[]).includes(c.name)) throw new ColumnError(`"${c.name}" is a system field; name the column differently.`, [i, 'name']);
      columns.push(c);
    }
  } catch (err) {
    asBadRequest(err, path);
  }
  return columns;
}

const LIST_SORT = { name: (t: UserTableRecord) => t.name, createdAt: (t: UserTableRecord) => t.createdAt, updatedAt: (t: UserTableRecord) => t.updatedAt };

export const listTables: Handler<'listTables'> = async ({ query, ctx }) => {
  const workspaceId = workspaceOf(ctx).id;
  const limit = Math.min(1000, Math.max(1, Math.trunc(Number.isFinite(query.limit) ? query.limit! : 100)));
  const sortBy = query.sortBy ?? 'createdAt';
  const sortOrder = query.sortOrder ?? 'asc';
  const scope = query.scope ?? 'active';
  const binding = { workspaceId, scope, folderPath: query.folderPath, search: query.search, sortBy, sortOrder };
  const after = readCursor(ctx, query.cursor, binding);
  const store = ctx.services.store;
  let folderPath: string | null = null;
  if (query.folderPath !== undefined) {
    const canonical = tableFolderPath(query.folderPath, ['query', 'folderPath']);
    const tree = tableTree(store);
    await withTableTree(() => tree.assertSize(workspaceId));
    folderPath = await tree.resolveExisting(workspaceId, canonical);
    if (folderPath === null) return { status: 200, body: { data: [], nextCursor: null } };
  }
  const rows = await store.userTables.list({ workspaceId, archived: scope === 'archived', folderPath, search: query.search ?? null, sortBy, sortOrder, after, limit: limit + 1 });
  return { status: 200, body: toPage(ctx, rows, limit, binding, (t) => [LIST_SORT[sortBy](t), t.id], (t) => tableView(baseUrl(ctx), t)) };
};

export const createTable: Handler<'createTable'> = async ({ body, ctx }) => {
  const workspace = workspaceOf(ctx);
  const columns = defineColumns(body.schema.columns, ['body', 'schema', 'columns']);
  const folderPath = body.folderPath === undefined ? '/' : tableFolderPath(body.folderPath, ['body', 'folderPath']);
  const limits = planTableLimits(ctx.services.config.tables, workspace);
  const table = await ctx.mutate(async (tx, audit) => {
    if ((await tx.userTables.countActive(workspace.id)) >= limits.tables) {
      throw new ApiError('FORBIDDEN', `This workspace's plan allows ${limits.tables} tables.`, { code: 'PLAN_LIMIT', limit: limits.tables });
    }
    if (await tx.userTables.activeByName(workspace.id, body.name)) throw conflict(`A table named "${body.name}" already exists.`, { name: body.name });
    const now = nowIso();
    await withTableTree(() => tableTree(tx).ensure(workspace.id, folderPath, now));
    const t: UserTableRecord = {
      id: newTableId(),
      workspaceId: workspace.id,
      name: body.name,
      description: body.description ?? null,
      folderPath,
      columns,
      ownerId: ctx.principal.userId,
      ownerEmail: await actorEmail(tx, ctx.principal.userId),
      rowCount: 0,
      maxRows: limits.rowsPerTable,
      locks: { schemaLocked: false, insertLocked: false, updateLocked: false, deleteLocked: false },
      job: null,
      archivedAt: null,
      archiveBatch: null,
      createdAt: now,
      updatedAt: now,
    };
    await tx.userTables.insert(t);
    await tx.tableRows.createTable(t.id, columns);
    await tx.tableViews.insert({ id: newViewId(), tableId: t.id, name: DEFAULT_VIEW_NAME, config: {}, isDefault: true, createdByEmail: t.ownerEmail, createdAt: now, updatedAt: now });
    audit({ action: 'table.created', resourceType: 'table', resourceId: t.id, resourceName: t.name, metadata: { columns: columns.length, folderPath: folderPathToWire(folderPath) } });
    return t;
  });
  return { status: 201, body: { data: tableView(baseUrl(ctx), table) } };
};

export const getTable: Handler<'getTable'> = async ({ params, ctx }) => {
  const t = await loadTable(ctx.services.store, workspaceOf(ctx).id, params.tableId, 'also');
  return { status: 200, body: { data: tableView(baseUrl(ctx), t) }, headers: { ETag: tableTag(baseUrl(ctx), t) } };
};

export const updateTable: Handler<'updateTable'> = async ({ params, body, ctx }) => {
  const workspaceId = workspaceOf(ctx).id;
  const folderPath = body.folderPath === undefined ? undefined : tableFolderPath(body.folderPath, ['body', 'folderPath']);
  const table = await ctx.mutate(async (tx, audit) => {
    const t = await loadTable(tx, workspaceId, params.tableId);
    ctx.precondition(() => tableTag(baseUrl(ctx), t));
    const now = nowIso();
    const changes: Partial<UserTableRecord> = {};
    if (body.name !== undefined && body.name !== t.name) {
      assertUnlocked(t, 'schema');
      if (await tx.userTables.activeByName(workspaceId, body.name)) throw conflict(`A table named "${body.name}" already exists.`, { name: body.name });
      changes.name = body.name;
    }
    if (body.description !== undefined) changes.description = body.description;
    if (folderPath !== undefined && folderPath !== t.folderPath) {
      await withTableTree(() => tableTree(tx).ensure(workspaceId, folderPath, now));
      changes.folderPath = folderPath;
    }
    if (Object.keys(changes).length === 0) return t;
    await tx.userTables.update(t.id, { ...changes, updatedAt: now });
    audit({ action: 'table.updated', resourceType: 'table', resourceId: t.id, resourceName: changes.name ?? t.name, metadata: { fields: Object.keys(changes) } });
    return { ...t, ...changes, updatedAt: now };
  });
  return { status: 200, body: { data: tableView(baseUrl(ctx), table) }, headers: { ETag: tableTag(baseUrl(ctx), table) } };
};

export const deleteTable: Handler<'deleteTable'> = async ({ params, ctx }) => {
  const workspaceId = workspaceOf(ctx).id;
  await ctx.mutate(async (tx, audit) => {
    const t = await loadTable(tx, workspaceId, params.tableId);
    assertUnlocked(t, 'delete');
    ctx.precondition(() => tableTag(baseUrl(ctx), t));
    const now = nowIso();
    await tx.userTables.update(t.id, { archivedAt: now, archiveBatch: null, updatedAt: now });
    audit({ action: 'table.deleted', resourceType: 'table', resourceId: t.id, resourceName: t.name });
  });
  return { status: 200, body: { data: { id: params.tableId, deleted: true as const } } };
};

/** The name an archived table comes back under: its own, or the first free `name_<n>`. */
async function freeName(tx: Repositories, workspaceId: string, name: string): Promise<string> {
  if (!(await tx.userTables.activeByName(workspaceId, name))) return name;
  for (let n = 2; n < 1000; n++) {
    const candidate = `${name.slice(0, 128 - String(n).length - 1)}_${n}`;
    if (!(await tx.userTables.activeByName(workspaceId, candidate))) return candidate;
  }
  throw conflict(`A table named "${name}" already exists.`, { name });
}

export const restoreTable: Handler<'restoreTable'> = async ({ params, ctx }) => {
  const workspaceId = workspaceOf(ctx).id;
  const table = await ctx.mutate(async (tx, audit) => {
    const t = await loadTable(tx, workspaceId, params.tableId, 'also');
    if (t.archivedAt === null) return t;
    const name = await freeName(tx, workspaceId, t.name);
    const folderPath = (await tableTree(tx).resolveExisting(workspaceId, t.folderPath)) ?? '/';
    const now = nowIso();
    const changes = { name, folderPath, archivedAt: null, archiveBatch: null, updatedAt: now };
    await tx.userTables.update(t.id, changes);
    audit({ action: 'table.restored', resourceType: 'table', resourceId: t.id, resourceName: name, metadata: { renamed: name !== t.name, folderPath: folderPathToWire(folderPath) } });
    return { ...t, ...changes };
  });
  return { status: 200, body: { data: tableView(baseUrl(ctx), table) } };
};

type BatchItem = { kind: 'table' | 'folder'; id: string; name: string };

export const bulkDeleteTables: Handler<'bulkDeleteTables'> = async ({ body, ctx }) => {
  const workspaceId = workspaceOf(ctx).id;
  const folderPaths = (body.folderPaths ?? []).map((p, i) => [p, tableFolderPath(p, ['body', 'folderPaths', i])] as const);
  const result = await ctx.mutate(async (tx, audit) => {
    const out = { deleted: [] as BatchItem[], skipped: [] as BatchItem[], notFound: [] as { kind: 'table' | 'folder'; id: string }[], failed: [] as (BatchItem & { reason: string })[] };
    const counts = { tables: 0, folders: 0 };
    const now = nowIso();
    for (const id of new Set(body.tableIds ?? [])) {
      const t = await tx.userTables.get(id);
      if (!t || t.workspaceId !== workspaceId) out.notFound.push({ kind: 'table', id });
      else if (t.archivedAt !== null) out.skipped.push({ kind: 'table', id, name: t.name });
      else if (t.locks.deleteLocked) out.failed.push({ kind: 'table', id, name: t.name, reason: 'The table is delete-locked.' });
      else {
        await tx.userTables.update(t.id, { archivedAt: now, archiveBatch: null, updatedAt: now });
        out.deleted.push({ kind: 'table', id, name: t.name });
        counts.tables++;
      }
    }
    const tree = tableTree(tx);
    for (const [wire, path] of folderPaths) {
      if (path === '/' || !(await tx.tableFolders.getActive(workspaceId, path))) {
        out.notFound.push({ kind: 'folder', id: wire });
        continue;
      }
      const tables = await tx.userTables.activeInSubtree(workspaceId, path);
      const locked = tables.find((t) => t.locks.deleteLocked);
      if (locked) {
        out.failed.push({ kind: 'folder', id: wire, name: path.slice(path.lastIndexOf('/') + 1), reason: `The table "${locked.name}" inside is delete-locked.` });
        continue;
      }
      const { batch, folders } = await withTableTree(() => tree.archive(workspaceId, path, now));
      for (const t of tables) await tx.userTables.update(t.id, { archivedAt: now, archiveBatch: batch, updatedAt: now });
      out.deleted.push({ kind: 'folder', id: wire, name: path.slice(path.lastIndexOf('/') + 1) });
      counts.folders += folders;
      counts.tables += tables.length;
    }
    if (counts.tables + counts.folders > 0) audit({ action: 'table.bulk_deleted', resourceType: 'table', metadata: counts });
    return { ...out, deletedItems: counts };
  });
  return { status: 200, body: { data: result } };
};

export const moveTables: Handler<'moveTables'> = async ({ body, ctx }) => {
  const workspaceId = workspaceOf(ctx).id;
  const target = body.targetFolderPath === undefined ? '/' : tableFolderPath(body.targetFolderPath, ['body', 'targetFolderPath']);
  const folderPaths = (body.folderPaths ?? []).map((p, i) => [p, tableFolderPath(p, ['body', 'folderPaths', i])] as const);
  const result = await ctx.mutate(async (tx, audit) => {
    const out = { moved: [] as BatchItem[], skipped: [] as BatchItem[], notFound: [] as { kind: 'table' | 'folder'; id: string }[], failed: [] as (BatchItem & { reason: string })[] };
    const tree = tableTree(tx);
    const now = nowIso();
    await withTableTree(async () => {
      await tree.assertSize(workspaceId);
      await tree.ensure(workspaceId, target, now);
    });
    for (const id of new Set(body.tableIds ?? [])) {
      const t = await tx.userTables.get(id);
      if (!t || t.workspaceId !== workspaceId || t.archivedAt !== null) out.notFound.push({ kind: 'table', id });
      else if (t.folderPath === target) out.skipped.push({ kind: 'table', id, name: t.name });
      else {
        await tx.userTables.update(t.id, { folderPath: target, updatedAt: now });
        out.moved.push({ kind: 'table', id, name: t.name });
      }
    }
    for (const [wire, from] of folderPaths) {
      const name = from.slice(from.lastIndexOf('/') + 1);
      if (from === '/' || !(await tx.tableFolders.getActive(workspaceId, from))) {
        out.notFound.push({ kind: 'folder', id: wire });
        continue;
      }
      const to = target === '/' ? `/${name}` : `${target}/${name}`;
      if (to === from || parentFolderPath(from) === target) {
        out.skipped.push({ kind: 'folder', id: wire, name });
        continue;
      }
      if (isWithin(target, from)) {
        out.failed.push({ kind: 'folder', id: wire, name, reason: 'A folder cannot be moved into itself.' });
        continue;
      }
      if (await tx.tableFolders.getActive(workspaceId, to)) {
        out.failed.push({ kind: 'folder', id: wire, name, reason: `The folder ${folderPathToWire(to)} already exists.` });
        continue;
      }
      await withTableTree(() => tree.move(workspaceId, from, to, now));
      await tx.userTables.relocateSubtree(workspaceId, from, to, now);
      out.moved.push({ kind: 'folder', id: wire, name });
    }
    if (out.moved.length > 0) audit({ action: 'table.moved', resourceType: 'table', metadata: { moved: out.moved.length, target: folderPathToWire(target) } });
    return out;
  });
  return { status: 200, body: { data: result } };
};
