// Table folders on the shared folder tree: create, relocate (tables move along), archive (the tables inside go
// with the same batch) and restore (the batch comes back; an archived parent sends it to the root). Works inside
// the caller's transaction and records its audit event there. No HTTP here.
import type { Repositories } from '../store/index.ts';
import type { FolderRecord } from '../store/folders.ts';
import type { Audit } from '../domain/changes.ts';
import { DomainError, domainNotFound } from '../domain/errors.ts';
import { MAX_FOLDERS_PER_TREE } from '../domain/folder-paths.ts';
import { FolderTree, FolderTreeError, rebase } from '../domain/folder-tree.ts';
import { folderPathToWire } from '../workflows/folder-wire.ts';

const nowIso = () => new Date().toISOString();

/** The table folder tree (the shared folder-tree rules on the table kind). */
export const tableTree = (repos: Repositories) => new FolderTree(repos.tableFolders);

/** Runs folder-tree work, turning its failures into the Tables errors. */
export async function withTableTree<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    if (!(err instanceof FolderTreeError)) throw err;
    const path = typeof err.details.path === 'string' ? folderPathToWire(err.details.path) : undefined;
    switch (err.reason) {
      case 'TOO_LARGE':
        throw treeTooLarge(err.details);
      case 'NOT_FOUND':
        throw domainNotFound('Folder');
      case 'NOT_ARCHIVED':
        throw domainNotFound('Archived folder');
      case 'EXISTS':
        throw new DomainError('conflict', `The folder ${path} already exists.`, { path });
      case 'INTO_ITSELF':
        throw new DomainError('conflict', 'A folder cannot be moved into itself.', { path });
      case 'NOT_EMPTY':
        throw new DomainError('conflict', err.message, err.details);
    }
  }
}

const treeTooLarge = (details?: unknown) => new DomainError('too_large', `The table folder tree of this workspace has more than ${MAX_FOLDERS_PER_TREE} folders.`, details);

/** The first free table name (a restored table whose name was taken meanwhile gets a suffix). */
export async function freeTableName(tx: Repositories, workspaceId: string, name: string): Promise<string> {
  if (!(await tx.userTables.activeByName(workspaceId, name))) return name;
  for (let n = 2; ; n++) {
    const candidate = `${name.slice(0, 128 - String(n).length - 1)}_${n}`;
    if (!(await tx.userTables.activeByName(workspaceId, candidate))) return candidate;
  }
}

/** Every active folder of the workspace (refused past the tree's size limit). */
export async function allFolders(repos: Repositories, workspaceId: string): Promise<FolderRecord[]> {
  const all = await repos.tableFolders.all(workspaceId, false);
  if (all.length > MAX_FOLDERS_PER_TREE) throw treeTooLarge();
  return all;
}

/** Creates the folder (and its missing parents); returns the leaf. */
export async function createFolder(tx: Repositories, audit: Audit, workspaceId: string, path: string): Promise<FolderRecord> {
  const tree = tableTree(tx);
  const { folder, created } = await withTableTree(async () => {
    await tree.assertSize(workspaceId);
    return tree.create(workspaceId, path, nowIso());
  });
  await audit({ action: 'table_folder.created', resourceType: 'table_folder', resourceId: folder.id, resourceName: folder.name, metadata: { path: folderPathToWire(path), created: created.length } });
  return folder;
}

/** Moves a folder (mv semantics for the destination); the tables inside move along. */
export async function relocateFolder(tx: Repositories, audit: Audit, workspaceId: string, from: string, destination: string): Promise<FolderRecord> {
  const tree = tableTree(tx);
  const { source, to } = await withTableTree(async () => {
    await tree.assertSize(workspaceId);
    return tree.planMove(workspaceId, from, destination);
  });
  if (to === from) return source;
  const now = nowIso();
  const moved = await withTableTree(() => tree.move(workspaceId, from, to, now));
  const tables = await tx.userTables.relocateSubtree(workspaceId, from, to, now);
  await audit({ action: 'table_folder.moved', resourceType: 'table_folder', resourceId: source.id, resourceName: moved.name, metadata: { from: folderPathToWire(from), to: folderPathToWire(to), tables } });
  return moved;
}

/** Archives a folder; a non-empty one only when `recursive`, and never one holding a delete-locked table. */
export async function archiveFolder(tx: Repositories, audit: Audit, workspaceId: string, path: string, recursive: boolean): Promise<{ folders: number; tables: number }> {
  const tree = tableTree(tx);
  const { folder, below } = await withTableTree(async () => {
    await tree.assertSize(workspaceId);
    return tree.inspect(workspaceId, path);
  });
  const tables = await tx.userTables.activeInSubtree(workspaceId, path);
  if (!recursive && below + tables.length > 0) {
    throw new DomainError('conflict', 'The folder is not empty; send recursive=true to archive it with everything inside.', { folders: below, tables: tables.length });
  }
  const locked = tables.find((t) => t.locks.deleteLocked);
  if (locked) throw new DomainError('locked', `The table "${locked.name}" inside the folder is delete-locked.`, { lock: 'delete', tableId: locked.id });
  const now = nowIso();
  const { batch, folders } = await withTableTree(() => tree.archive(workspaceId, path, now));
  for (const t of tables) await tx.userTables.update(t.id, { archivedAt: now, archiveBatch: batch, updatedAt: now });
  await audit({ action: 'table_folder.deleted', resourceType: 'table_folder', resourceId: folder.id, resourceName: folder.name, metadata: { path: folderPathToWire(path), folders, tables: tables.length } });
  return { folders, tables: tables.length };
}

/** Restores an archived folder with the tables archived in its batch (renamed where their name was taken). */
export async function restoreFolder(tx: Repositories, audit: Audit, workspaceId: string, path: string): Promise<{ folder: FolderRecord; restoredItems: { folders: number; tables: number } }> {
  const now = nowIso();
  const restored = await withTableTree(() => tableTree(tx).restore(workspaceId, path, now, { archivedParent: 'root', onConflict: 'rename' }));
  const tables = restored.batch ? await tx.userTables.archivedInBatch(workspaceId, restored.batch) : [];
  for (const t of tables) {
    const folderPath = rebase(t.folderPath, restored.from, restored.to);
    const name = await freeTableName(tx, workspaceId, t.name);
    await tx.userTables.update(t.id, { name, folderPath, archivedAt: null, archiveBatch: null, updatedAt: now });
  }
  await audit({
    action: 'table_folder.restored', resourceType: 'table_folder', resourceId: restored.folder.id, resourceName: restored.folder.name,
    metadata: { path: folderPathToWire(path), restoredTo: folderPathToWire(restored.to), folders: restored.folders, tables: tables.length },
  });
  return { folder: restored.folder, restoredItems: { folders: restored.folders, tables: tables.length } };
}
