// Knowledge-base folders on the shared folder tree: list, create, relocate (mv semantics), delete (archive) and
// restore (extension: the folders and bases archived with it come back; an archived parent sends it to the root).
// The rules are src/knowledge/folder-changes.ts; here the request is read and the answer shaped.
import type { Handler } from '../../../generated/handlers.ts';
import { badRequest, conflict } from '../../http/errors.ts';
import type { FolderRecord } from '../../store/folders.ts';
import { folderPathToWire } from '../../workflows/folder-wire.ts';
import * as folders from '../../knowledge/folder-changes.ts';
import { parseKbFolder, workspaceOf } from './shared.ts';

const folderView = (f: FolderRecord) => ({ name: f.name, path: folderPathToWire(f.path), parentPath: folderPathToWire(f.parentPath), createdAt: f.createdAt, updatedAt: f.updatedAt });
const TRUE_WORDS = new Set(['true', '1', 'yes', 'on', 'y', 'enabled']);

export const listKnowledgeFolders: Handler<'listKnowledgeFolders'> = async ({ query, ctx }) => {
  const parentPath = query.parentPath === undefined ? null : parseKbFolder(query.parentPath, ['query', 'parentPath']);
  const q = { parentPath, search: query.search ?? null, sortBy: query.sortBy ?? 'name', sortOrder: query.sortOrder ?? 'asc' } as const;
  const rows = await folders.listFolders(ctx.services.store, workspaceOf(ctx).id, q);
  return { status: 200, body: { data: rows.map(folderView), nextCursor: null } };
};

export const createKnowledgeFolder: Handler<'createKnowledgeFolder'> = async ({ body, ctx }) => {
  const ws = workspaceOf(ctx).id;
  const path = parseKbFolder(body.path, ['body', 'path']);
  if (path === '/') throw conflict('The root folder always exists.');
  const folder = await ctx.mutate((tx, audit) => folders.createFolder(tx, audit, ws, path));
  return { status: 200, body: { data: folderView(folder) } };
};

export const relocateKnowledgeFolder: Handler<'relocateKnowledgeFolder'> = async ({ body, ctx }) => {
  const ws = workspaceOf(ctx).id;
  const from = parseKbFolder(body.path, ['body', 'path']);
  const destination = parseKbFolder(body.destinationPath, ['body', 'destinationPath']);
  if (from === '/') throw badRequest('The root folder cannot be moved.', [{ code: 'custom', keys: [], path: ['body', 'path'], message: 'The root cannot be moved' }]);
  const folder = await ctx.mutate((tx, audit) => folders.relocateFolder(tx, audit, ws, from, destination));
  return { status: 200, body: { data: folderView(folder) } };
};

export const deleteKnowledgeFolder: Handler<'deleteKnowledgeFolder'> = async ({ query, ctx }) => {
  const ws = workspaceOf(ctx).id;
  const path = parseKbFolder(query.path, ['query', 'path']);
  if (path === '/') throw badRequest('The root folder cannot be deleted.', [{ code: 'custom', keys: [], path: ['query', 'path'], message: 'The root cannot be deleted' }]);
  const recursive = TRUE_WORDS.has(query.recursive ?? 'false');
  const { counts, archived } = await ctx.mutate((tx, audit) => folders.archiveFolder(tx, audit, ws, path, recursive));
  for (const id of archived) ctx.services.knowledge.invalidate(id);
  return { status: 200, body: { data: { path: folderPathToWire(path), deleted: true as const, deletedItems: counts } } };
};

export const restoreKnowledgeFolder: Handler<'restoreKnowledgeFolder'> = async ({ body, ctx }) => {
  const ws = workspaceOf(ctx).id;
  const path = parseKbFolder(body.path, ['body', 'path']);
  if (path === '/') throw badRequest('The root folder is never archived.', [{ code: 'custom', keys: [], path: ['body', 'path'], message: 'The root is never archived' }]);
  const { folder, restoredItems, bases } = await ctx.mutate((tx, audit) => folders.restoreFolder(tx, audit, ws, path));
  for (const kb of bases) ctx.services.knowledge.invalidate(kb.id);
  return { status: 200, body: { data: { folder: folderView(folder), restoredItems } } };
};
