// Workspace file folders: creating, moving, archiving (with what is inside) and restoring them, on the shared
// folder tree (src/domain/folder-tree.ts). Each function is one change, inside the caller's transaction.
import type { Repositories } from '../store/index.ts';
import type { FolderRecord } from '../store/folders.ts';
import type { Audit } from '../domain/changes.ts';
import { DomainError } from '../domain/errors.ts';
import { archiveFiles, assertNameFree, fileTree, withFileTree } from './service.ts';

const nowIso = () => new Date().toISOString();

/** Creates `path` and any missing parents (`mkdir -p`); returns the folder at `path`. */
export async function createFolder(tx: Repositories, audit: Audit, workspaceId: string, path: string): Promise<FolderRecord> {
  const tree = fileTree(tx);
  const { folder, created } = await withFileTree(async () => {
    await tree.assertSize(workspaceId);
    return tree.create(workspaceId, path, nowIso());
  });
  audit({ action: 'file_folder.created', resourceType: 'file_folder', resourceName: path, metadata: { path, created: created.length } });
  return folder;
}

/** Moves a folder with everything below it (`mv` semantics: into an existing folder, under its own name). */
export async function relocateFolder(tx: Repositories, audit: Audit, workspaceId: string, from: string, destination: string): Promise<FolderRecord> {
  const tree = fileTree(tx);
  const { source, to } = await withFileTree(() => tree.planMove(workspaceId, from, destination));
  if (to === from) return source;
  const now = nowIso();
  const foldersMoved = 1 + (await tx.fileFolders.countBelow(workspaceId, from));
  const moved = await withFileTree(() => tree.move(workspaceId, from, to, now));
  const files = await tx.files.moveFolderPrefix(workspaceId, from, to, now);
  audit({ action: 'file_folder.moved', resourceType: 'file_folder', resourceName: to, metadata: { from, to, folders: foldersMoved, files } });
  return moved;
}

/** Archives a folder; one that is not empty only when `recursive`, and then with everything inside (409 otherwise). */
export async function archiveFolder(tx: Repositories, audit: Audit, workspaceId: string, path: string, recursive: boolean): Promise<{ folders: number; files: number }> {
  const tree = fileTree(tx);
  const { below } = await withFileTree(() => tree.inspect(workspaceId, path));
  const files = await tx.files.activeUnder(workspaceId, path);
  if ((below > 0 || files.length > 0) && !recursive) {
    throw new DomainError('conflict', 'The folder is not empty; delete it with recursive=true to archive what is inside.', { code: 'FOLDER_NOT_EMPTY', folders: below, files: files.length });
  }
  const now = nowIso();
  const { batch, folders } = await withFileTree(() => tree.archive(workspaceId, path, now));
  await archiveFiles(tx, files, now, batch);
  audit({ action: 'file_folder.deleted', resourceType: 'file_folder', resourceName: path, metadata: { path, folders, files: files.length } });
  return { folders, files: files.length };
}

/** Brings back an archived folder and everything archived in the same delete, under recreated parents if those are gone too. */
export async function restoreFolder(tx: Repositories, audit: Audit, workspaceId: string, path: string) {
  const now = nowIso();
  const restored = await withFileTree(() => fileTree(tx).restore(workspaceId, path, now, { archivedParent: 'recreate', onConflict: 'refuse' }));
  const files = restored.batch ? await tx.files.archivedInBatch(workspaceId, restored.batch) : [];
  for (const f of files) {
    await assertNameFree(tx, workspaceId, f.folderPath, f.name);
    await tx.files.update(f.id, { deletedAt: null, archiveBatch: null, updatedAt: now });
  }
  audit({ action: 'file_folder.restored', resourceType: 'file_folder', resourceName: path, metadata: { path, folders: restored.folders, files: files.length } });
  return { folder: restored.folder, restoredItems: { files: files.length, folders: restored.folders } };
}
