// Table folders on the shared folder tree: list, create, relocate, delete and restore. The rules (tables move
// and archive with their folder) are src/tables/folders.ts; here the request is read and the answer shaped.
import type { Handler } from '../../../generated/handlers.ts';
import { conflict, invalidField } from '../../http/errors.ts';
import type { FolderRecord } from '../../store/folders.ts';
import * as folders from '../../tables/folders.ts';
import { folderPathToWire } from '../../workflows/folder-wire.ts';
import { tableFolderPath, workspaceOf } from './shared.ts';

const TRUE_WORDS = new Set(['true', '1', 'yes', 'on', 'y', 'enabled']);

function folderView(f: FolderRecord) {
  return { name: f.name, path: folderPathToWire(f.path), parentPath: folderPathToWire(f.parentPath), createdAt: f.createdAt, updatedAt: f.updatedAt };
}

export const listTableFolders: Handler<'listTableFolders'> = async ({ query, ctx }) => {
  const all = await folders.allFolders(ctx.services.store, workspaceOf(ctx).id);
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
  const folder = await ctx.mutate((tx, audit) => folders.createFolder(tx, audit, workspaceId, path));
  return { status: 201, body: { data: folderView(folder) } };
};

export const relocateTableFolder: Handler<'relocateTableFolder'> = async ({ body, ctx }) => {
  const workspaceId = workspaceOf(ctx).id;
  const from = tableFolderPath(body.path, ['body', 'path']);
  const destination = tableFolderPath(body.destinationPath, ['body', 'destinationPath']);
  if (from === '/') throw invalidField(['body', 'path'], 'The root folder cannot be moved.');
  const folder = await ctx.mutate((tx, audit) => folders.relocateFolder(tx, audit, workspaceId, from, destination));
  return { status: 200, body: { data: folderView(folder) } };
};

export const deleteTableFolder: Handler<'deleteTableFolder'> = async ({ query, ctx }) => {
  const workspaceId = workspaceOf(ctx).id;
  const path = tableFolderPath(query.path, ['query', 'path']);
  if (path === '/') throw invalidField(['query', 'path'], 'The root folder cannot be deleted.');
  const recursive = TRUE_WORDS.has(query.recursive ?? 'false');
  const counts = await ctx.mutate((tx, audit) => folders.archiveFolder(tx, audit, workspaceId, path, recursive));
  return { status: 200, body: { data: { path: folderPathToWire(path), deleted: true as const, deletedItems: counts } } };
};

export const restoreTableFolder: Handler<'restoreTableFolder'> = async ({ body, ctx }) => {
  const workspaceId = workspaceOf(ctx).id;
  const path = tableFolderPath(body.path, ['body', 'path']);
  if (path === '/') throw invalidField(['body', 'path'], 'The root folder is never archived.');
  const result = await ctx.mutate((tx, audit) => folders.restoreFolder(tx, audit, workspaceId, path));
  return { status: 200, body: { data: { folder: folderView(result.folder), restoredItems: result.restoredItems } } };
};
