// Knowledge-base folders on the shared folder tree: create, relocate (mv semantics; the bases inside move
// along), archive (with the bases inside) and restore (the folders and bases archived with it come back; an
// archived parent sends it to the root). Each change works inside the caller's transaction and records its audit
// event there; the caller drops the cached vectors of the bases it returns after the commit. No HTTP here.
import type { Repositories } from '../store/index.ts';
import type { FolderRecord } from '../store/folders.ts';
import type { Audit } from '../domain/changes.ts';
import { DomainError, domainNotFound } from '../domain/errors.ts';
import { folderName } from '../domain/folder-paths.ts';
import { rebase } from '../domain/folder-tree.ts';
import { folderPathToWire } from '../workflows/folder-wire.ts';
import { inKnowledgeTree, knowledgeTree } from './folders.ts';

const nowIso = () => new Date().toISOString();

/** The folders under `parentPath` (every folder when null; none when that folder does not exist). */
export async function listFolders(repos: Repositories, workspaceId: string, q: { parentPath: string | null; search: string | null; sortBy: 'name' | 'createdAt' | 'updatedAt'; sortOrder: 'asc' | 'desc' }): Promise<FolderRecord[]> {
  const tree = knowledgeTree(repos);
  let parentPath: string | null = null;
  if (q.parentPath !== null) {
    const asked = q.parentPath;
    parentPath = await inKnowledgeTree(() => tree.resolveExisting(workspaceId, asked));
    if (parentPath === null) return [];
  }
  await inKnowledgeTree(() => tree.assertSize(workspaceId));
  return repos.knowledgeFolders.list({ workspaceId, parentPath, search: q.search, sortBy: q.sortBy, sortOrder: q.sortOrder, after: null, limit: 10_000 });
}

export async function createFolder(tx: Repositories, audit: Audit, workspaceId: string, path: string): Promise<FolderRecord> {
  const { folder, created } = await inKnowledgeTree(() => knowledgeTree(tx).create(workspaceId, path, nowIso()));
  await audit({ action: 'knowledge_folder.created', resourceType: 'knowledge_folder', resourceId: folder.id, resourceName: folder.name, metadata: { path: folderPathToWire(path), created: created.length } });
  return folder;
}

export async function relocateFolder(tx: Repositories, audit: Audit, workspaceId: string, from: string, destination: string): Promise<FolderRecord> {
  const tree = knowledgeTree(tx);
  const { source, to } = await inKnowledgeTree(() => tree.planMove(workspaceId, from, destination));
  if (to === from) return source;
  const at = nowIso();
  const moved = await inKnowledgeTree(() => tree.move(workspaceId, from, to, at));
  await tx.knowledgeBases.relocateSubtree(workspaceId, from, to, at);
  await audit({ action: 'knowledge_folder.moved', resourceType: 'knowledge_folder', resourceId: source.id, resourceName: folderName(to), metadata: { from: folderPathToWire(from), to: folderPathToWire(to) } });
  return moved;
}

/** Archives a folder (a non-empty one only when `recursive`) with the bases inside; returns the counts and the archived bases' ids. */
export async function archiveFolder(tx: Repositories, audit: Audit, workspaceId: string, path: string, recursive: boolean) {
  const tree = knowledgeTree(tx);
  const { folder, below } = await inKnowledgeTree(() => tree.inspect(workspaceId, path));
  const bases = await tx.knowledgeBases.countInSubtree(workspaceId, path);
  if (!recursive && below + bases > 0) {
    throw new DomainError('conflict', 'The folder is not empty; send recursive=true to archive it with everything inside.', { folders: below, knowledgeBases: bases });
  }
  const at = nowIso();
  const { folders } = await inKnowledgeTree(() => tree.archive(workspaceId, path, at));
  const archived = await tx.knowledgeBases.archiveSubtree(workspaceId, path, at);
  await audit({ action: 'knowledge_folder.deleted', resourceType: 'knowledge_folder', resourceId: folder.id, resourceName: folder.name, metadata: { path: folderPathToWire(path), folders, knowledgeBases: archived.length } });
  return { counts: { folders, knowledgeBases: archived.length }, archived };
}

/** Restores the folder's latest archive with the bases archived with it; returns them. */
export async function restoreFolder(tx: Repositories, audit: Audit, workspaceId: string, path: string) {
  // Bases carry no archive batch: a folder delete archives them at the folder's own archive time.
  const archived = await tx.knowledgeFolders.latestArchived(workspaceId, path);
  if (!archived?.archivedAt) throw domainNotFound('Folder');
  const at = nowIso();
  const restored = await inKnowledgeTree(() => knowledgeTree(tx).restore(workspaceId, path, at, { archivedParent: 'root', onConflict: 'rename' }));
  const bases = await tx.knowledgeBases.archivedWithFolder(workspaceId, path, archived.archivedAt);
  for (const kb of bases) await tx.knowledgeBases.update(kb.id, { deletedAt: null, folderPath: rebase(kb.folderPath, restored.from, restored.to), updatedAt: at });
  await audit({
    action: 'knowledge_folder.restored', resourceType: 'knowledge_folder', resourceId: restored.folder.id, resourceName: restored.folder.name,
    metadata: { path: folderPathToWire(path), restoredTo: folderPathToWire(restored.to), folders: restored.folders, knowledgeBases: bases.length },
  });
  return { folder: restored.folder, restoredItems: { folders: restored.folders, knowledgeBases: bases.length }, bases };
}
