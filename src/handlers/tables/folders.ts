// Table folders on the shared folder tree: list, create, relocate (tables move along), delete (archiving the
// tables inside with the same batch) and restore (the batch comes back; an archived parent sends it to the root).
import type { Handler } from '../../../generated/handlers.ts';
import { conflict, invalidField } from '../../http/errors.ts';
import type { FolderRecord } from '../../store/folders.ts';
import type { Repositories } from '../../store/index.ts';
import { MAX_FOLDERS_PER_TREE } from '../../domain/folder-paths.ts';
import { rebase } from '../../domain/folder-tree.ts';
import { ApiError } from '../../http/errors.ts';
import { folderPathToWire } from '../../workflows/folder-wire.ts';
import { nowIso, tableFolderPath, tableTree, withTableTree, workspaceOf } from './shared.ts';

const TRUE_WORDS = new Set(['true', '1', 'yes', 'on', 'y', 'enabled']);

function folderView(f: FolderRecord) {
  return { name: f.name, path: folderPathToWire(f.path), parentPath: folderPathToWire(f.parentPath), createdAt: f.createdAt, updatedAt: f.updatedAt };
}

/** The first free table name (a restored table whose name was taken meanwhile gets a suffix). */
async function freeTableName(tx: Repositories, workspaceId: string, name: string): Promise<string> {
  if (!(await tx.userTables.activeByName(workspaceId, name))) return name;
  for (let n = 2; ; n++) {
    const candidate = `${name.slice(0, 128 - String(n).length - 1)}_${n}`;
    if (!(await tx.userTables.activeByName(workspaceId, candidate))) return candidate;
  }
}

export const listTableFolders: Handler<'listTableFolders'> = async ({ query, ctx }) => {
  const workspaceId = workspaceOf(ctx).id;
  const store = ctx.services.store;
  const all = await store.tableFolders.all(workspaceId, false);
  if (all.length > MAX_FOLDERS_PER_TREE) throw new ApiError('PAYLOAD_TOO_LARGE', `The table folder tree of this workspace has more than ${MAX_FOLDERS_PER_TREE} folders.`);
  const parent = query.parentPath === undefined ? null : tableFolderPath(query.parentPath, ['query', 'parentPath']);
  const search = query.search?.toLowerCase();
  const picked = all.filter((f) => (parent === null || f.parentPath === parent) && (!search || f.name.toLowerCase().includes(search)));
  const sortBy = query.sortBy ?? 'name';
  const dir = (query.sortOrder ?? 'asc') === 'asc' ? 1 : -1;
  const key = (f: FolderRecord) => (sortBy === 'name' ? f.name : sortBy === 'createdAt' ? f.createdAt : f.updatedAt);
  picked.sort((a, b) => (key(a) < key(b) ? -dir : key(a) > key(b) ? dir : a.path < b.path ? -dir : dir));
  return { status: 200, body: { data: picked.map(folderView), nextCursor: null } };
};

export const createTableFolder: Handler<'createTableFolder'> = async ({ body, ctx }) => {
  const workspaceId = workspaceOf(ctx).id;
  const path = tableFolderPath(body.path, ['body', 'path']);
  if (path === '/') throw conflict('The root folder always exists.');
  const folder = await ctx.mutate(async (tx, audit) => {
    const tree = tableTree(tx);
    const { folder: leaf, created } = await withTableTree(async () => {
      await tree.assertSize(workspaceId);
      return tree.create(workspaceId, path, nowIso());
    });
    audit({ action: 'table_folder.created', resourceType: 'table_folder', resourceId: leaf.id, resourceName: leaf.name, metadata: { path: folderPathToWire(path), created: created.length } });
    return leaf;
  });
  return { status: 201, body: { data: folderView(folder) } };
};

export const relocateTableFolder: Handler<'relocateTableFolder'> = async ({ body, ctx }) => {
  const workspaceId = workspaceOf(ctx).id;
  const from = tableFolderPath(body.path, ['body', 'path']);
  const destination = tableFolderPath(body.destinationPath, ['body', 'destinationPath']);
  if (from === '/') throw invalidField(['body', 'path'], 'The root folder cannot be moved.');
  const folder = await ctx.mutate(async (tx, audit) => {
    const tree = tableTree(tx);
    const { source, to } = await withTableTree(async () => {
      await tree.assertSize(workspaceId);
      return tree.planMove(workspaceId, from, destination);
    });
    if (to === from) return source;
    const now = nowIso();
    const moved = await withTableTree(() => tree.move(workspaceId, from, to, now));
    const tables = await tx.userTables.relocateSubtree(workspaceId, from, to, now);
    audit({ action: 'table_folder.moved', resourceType: 'table_folder', resourceId: source.id, resourceName: moved.name, metadata: { from: folderPathToWire(from), to: folderPathToWire(to), tables } });
    return moved;
  });
  return { status: 200, body: { data: folderView(folder) } };
};

export const deleteTableFolder: Handler<'deleteTableFolder'> = async ({ query, ctx }) => {
  const workspaceId = workspaceOf(ctx).id;
  const path = tableFolderPath(query.path, ['query', 'path']);
  if (path === '/') throw invalidField(['query', 'path'], 'The root folder cannot be deleted.');
  const recursive = TRUE_WORDS.has(query.recursive ?? 'false');
  const counts = await ctx.mutate(async (tx, audit) => {
    const tree = tableTree(tx);
    const { folder, below } = await withTableTree(async () => {
      await tree.assertSize(workspaceId);
      return tree.inspect(workspaceId, path);
    });
    const tables = await tx.userTables.activeInSubtree(workspaceId, path);
    if (!recursive && below + tables.length > 0) {
      throw conflict('The folder is not empty; send recursive=true to archive it with everything inside.', { folders: below, tables: tables.length });
    }
    const locked = tables.find((t) => t.locks.deleteLocked);
    if (locked) throw new ApiError('LOCKED', `The table "${locked.name}" inside the folder is delete-locked.`, { lock: 'delete', tableId: locked.id });
    const now = nowIso();
    const { batch, folders } = await withTableTree(() => tree.archive(workspaceId, path, now));
    for (const t of tables) await tx.userTables.update(t.id, { archivedAt: now, archiveBatch: batch, updatedAt: now });
    audit({ action: 'table_folder.deleted', resourceType: 'table_folder', resourceId: folder.id, resourceName: folder.name, metadata: { path: folderPathToWire(path), folders, tables: tables.length } });
    return { folders, tables: tables.length };
  });
  return { status: 200, body: { data: { path: folderPathToWire(path), deleted: true as const, deletedItems: counts } } };
};

export const restoreTableFolder: Handler<'restoreTableFolder'> = async ({ body, ctx }) => {
  const workspaceId = workspaceOf(ctx).id;
  const path = tableFolderPath(body.path, ['body', 'path']);
  if (path === '/') throw invalidField(['body', 'path'], 'The root folder is never archived.');
  const result = await ctx.mutate(async (tx, audit) => {
    const now = nowIso();
    const restored = await withTableTree(() => tableTree(tx).restore(workspaceId, path, now, { archivedParent: 'root', onConflict: 'rename' }));
    const tables = restored.batch ? await tx.userTables.archivedInBatch(workspaceId, restored.batch) : [];
    for (const t of tables) {
      const folderPath = rebase(t.folderPath, restored.from, restored.to);
      const name = await freeTableName(tx, workspaceId, t.name);
      await tx.userTables.update(t.id, { name, folderPath, archivedAt: null, archiveBatch: null, updatedAt: now });
    }
    audit({
      action: 'table_folder.restored', resourceType: 'table_folder', resourceId: restored.folder.id, resourceName: restored.folder.name,
      metadata: { path: folderPathToWire(path), restoredTo: folderPathToWire(restored.to), folders: restored.folders, tables: tables.length },
    });
    return { folder: restored.folder, restoredItems: { folders: restored.folders, tables: tables.length } };
  });
  return { status: 200, body: { data: { folder: folderView(result.folder), restoredItems: result.restoredItems } } };
};

