// Knowledge-base folders on the shared folder tree: list, create, relocate (mv semantics), delete (archive) and
// restore (extension: the folders and bases archived with it come back; an archived parent sends it to the root).
import type { Handler } from '../../../generated/handlers.ts';
import { badRequest, conflict } from '../../http/errors.ts';
import type { FolderRecord } from '../../store/folders.ts';
import { folderName } from '../../domain/folder-paths.ts';
import { rebase } from '../../domain/folder-tree.ts';
import { notFound } from '../../http/errors.ts';
import { folderPathToWire } from '../../workflows/folder-wire.ts';
import { inKnowledgeTree, knowledgeTree } from '../../knowledge/folders.ts';
import { nowIso, parseKbFolder, workspaceOf } from './shared.ts';

const folderView = (f: FolderRecord) => ({ name: f.name, path: folderPathToWire(f.path), parentPath: folderPathToWire(f.parentPath), createdAt: f.createdAt, updatedAt: f.updatedAt });
const TRUE_WORDS = new Set(['true', '1', 'yes', 'on', 'y', 'enabled']);

export const listKnowledgeFolders: Handler<'listKnowledgeFolders'> = async ({ query, ctx }) => {
  const ws = workspaceOf(ctx).id;
  const store = ctx.services.store;
  const tree = knowledgeTree(store);
  let parentPath: string | null = null;
  if (query.parentPath !== undefined) {
    parentPath = await inKnowledgeTree(() => tree.resolveExisting(ws, parseKbFolder(query.parentPath!, ['query', 'parentPath'])));
    if (parentPath === null) return { status: 200, body: { data: [], nextCursor: null } };
  }
  await inKnowledgeTree(() => tree.assertSize(ws));
  const rows = await store.knowledgeFolders.list({
    workspaceId: ws, parentPath, search: query.search ?? null, sortBy: query.sortBy ?? 'name', sortOrder: query.sortOrder ?? 'asc', after: null, limit: 10_000,
  });
  return { status: 200, body: { data: rows.map(folderView), nextCursor: null } };
};

export const createKnowledgeFolder: Handler<'createKnowledgeFolder'> = async ({ body, ctx }) => {
  const ws = workspaceOf(ctx).id;
  const path = parseKbFolder(body.path, ['body', 'path']);
  if (path === '/') throw conflict('The root folder always exists.');
  const folder = await ctx.mutate(async (tx, audit) => {
    const { folder, created } = await inKnowledgeTree(() => knowledgeTree(tx).create(ws, path, nowIso()));
    audit({ action: 'knowledge_folder.created', resourceType: 'knowledge_folder', resourceId: folder.id, resourceName: folder.name, metadata: { path: folderPathToWire(path), created: created.length } });
    return folder;
  });
  return { status: 200, body: { data: folderView(folder) } };
};

export const relocateKnowledgeFolder: Handler<'relocateKnowledgeFolder'> = async ({ body, ctx }) => {
  const ws = workspaceOf(ctx).id;
  const from = parseKbFolder(body.path, ['body', 'path']);
  const destination = parseKbFolder(body.destinationPath, ['body', 'destinationPath']);
  if (from === '/') throw badRequest('The root folder cannot be moved.', [{ code: 'custom', keys: [], path: ['body', 'path'], message: 'The root cannot be moved' }]);
  const folder = await ctx.mutate(async (tx, audit) => {
    const tree = knowledgeTree(tx);
    const { source, to } = await inKnowledgeTree(() => tree.planMove(ws, from, destination));
    if (to === from) return source;
    const at = nowIso();
    const moved = await inKnowledgeTree(() => tree.move(ws, from, to, at));
    await tx.knowledgeBases.relocateSubtree(ws, from, to, at);
    audit({ action: 'knowledge_folder.moved', resourceType: 'knowledge_folder', resourceId: source.id, resourceName: folderName(to), metadata: { from: folderPathToWire(from), to: folderPathToWire(to) } });
    return moved;
  });
  return { status: 200, body: { data: folderView(folder) } };
};

export const deleteKnowledgeFolder: Handler<'deleteKnowledgeFolder'> = async ({ query, ctx }) => {
  const ws = workspaceOf(ctx).id;
  const path = parseKbFolder(query.path, ['query', 'path']);
  if (path === '/') throw badRequest('The root folder cannot be deleted.', [{ code: 'custom', keys: [], path: ['query', 'path'], message: 'The root cannot be deleted' }]);
  const recursive = TRUE_WORDS.has(query.recursive ?? 'false');
  const { result, archived } = await ctx.mutate(async (tx, audit) => {
    const tree = knowledgeTree(tx);
    const { folder, below } = await inKnowledgeTree(() => tree.inspect(ws, path));
    const bases = await tx.knowledgeBases.countInSubtree(ws, path);
    if (!recursive && below + bases > 0) {
      throw conflict('The folder is not empty; send recursive=true to archive it with everything inside.', { folders: below, knowledgeBases: bases });
    }
    const at = nowIso();
    const { folders } = await inKnowledgeTree(() => tree.archive(ws, path, at));
    const archived = await tx.knowledgeBases.archiveSubtree(ws, path, at);
    audit({ action: 'knowledge_folder.deleted', resourceType: 'knowledge_folder', resourceId: folder.id, resourceName: folder.name, metadata: { path: folderPathToWire(path), folders, knowledgeBases: archived.length } });
    return { result: { folders, knowledgeBases: archived.length }, archived };
  });
  for (const id of archived) ctx.services.knowledge.invalidate(id);
  return { status: 200, body: { data: { path: folderPathToWire(path), deleted: true as const, deletedItems: result } } };
};

export const restoreKnowledgeFolder: Handler<'restoreKnowledgeFolder'> = async ({ body, ctx }) => {
  const ws = workspaceOf(ctx).id;
  const path = parseKbFolder(body.path, ['body', 'path']);
  if (path === '/') throw badRequest('The root folder is never archived.', [{ code: 'custom', keys: [], path: ['body', 'path'], message: 'The root is never archived' }]);
  const { folder, restoredItems, bases } = await ctx.mutate(async (tx, audit) => {
    // Bases carry no archive batch: a folder delete archives them at the folder's own archive time.
    const archived = await tx.knowledgeFolders.latestArchived(ws, path);
    if (!archived?.archivedAt) throw notFound('Folder');
    const at = nowIso();
    const restored = await inKnowledgeTree(() => knowledgeTree(tx).restore(ws, path, at, { archivedParent: 'root', onConflict: 'rename' }));
    const bases = await tx.knowledgeBases.archivedWithFolder(ws, path, archived.archivedAt);
    for (const kb of bases) await tx.knowledgeBases.update(kb.id, { deletedAt: null, folderPath: rebase(kb.folderPath, restored.from, restored.to), updatedAt: at });
    audit({
      action: 'knowledge_folder.restored', resourceType: 'knowledge_folder', resourceId: restored.folder.id, resourceName: restored.folder.name,
      metadata: { path: folderPathToWire(path), restoredTo: folderPathToWire(restored.to), folders: restored.folders, knowledgeBases: bases.length },
    });
    return { folder: restored.folder, restoredItems: { folders: restored.folders, knowledgeBases: bases.length }, bases };
  });
  for (const kb of bases) ctx.services.knowledge.invalidate(kb.id);
  return { status: 200, body: { data: { folder: folderView(folder), restoredItems } } };
};
