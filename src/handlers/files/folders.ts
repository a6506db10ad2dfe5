// Files handlers: folders of workspace files.
import type { Handler } from '../../../generated/handlers.ts';
import { ApiError, invalidField } from '../../http/errors.ts';
import { folderPathOf, folderDisplayName } from '../../files/names.ts';
import { folderView } from '../../files/views.ts';
import { isWithin, MAX_FOLDERS_PER_TREE, parentFolderPath } from '../../domain/folder-paths.ts';
import { archiveFolder, createFolder, relocateFolder, restoreFolder } from '../../files/folders.ts';
import { checked, flag, workspaceOf } from './shared.ts';

// ───────────────────────────── folders ─────────────────────────────

export const listFileFolders: Handler<'listFileFolders'> = async ({ query, ctx }) => {
  const workspaceId = workspaceOf(ctx).id;
  const parent = query.parentPath === undefined ? '/' : checked('query', () => folderPathOf(query.parentPath, 'parentPath'));
  const archived = query.scope === 'archived';
  const all = await ctx.services.store.fileFolders.all(workspaceId, archived);
  if (!archived && all.length > MAX_FOLDERS_PER_TREE) throw new ApiError('PAYLOAD_TOO_LARGE', `The folder tree has more than ${MAX_FOLDERS_PER_TREE} folders.`);
  const recursive = flag(query.recursive, false);
  const baseDepth = parent === '/' ? 0 : parent.split('/').length - 1;
  const search = query.search?.toLowerCase();
  const picked = all.filter((f) => {
    if (recursive) {
      if (f.path === parent || !isWithin(f.path, parent)) return false;
      if (query.depth !== undefined && f.path.split('/').length - 1 - baseDepth > query.depth) return false;
    } else if (parentFolderPath(f.path) !== parent) return false;
    return !search || folderDisplayName(f.path).toLowerCase().includes(search);
  });
  const sortBy = query.sortBy ?? 'name';
  const dir = (query.sortOrder ?? 'asc') === 'asc' ? 1 : -1;
  const key = (f: (typeof picked)[number]) => (sortBy === 'name' ? folderDisplayName(f.path) : sortBy === 'createdAt' ? f.createdAt : f.updatedAt);
  picked.sort((a, b) => (key(a) < key(b) ? -dir : key(a) > key(b) ? dir : a.path < b.path ? -dir : dir));
  return { status: 200, body: { data: picked.map(folderView), nextCursor: null } };
};

export const createFileFolder: Handler<'createFileFolder'> = async ({ body, ctx }) => {
  const workspaceId = workspaceOf(ctx).id;
  const path = checked('body', () => folderPathOf(body.path, 'path'));
  if (path === '/') throw invalidField(['body', 'path'], 'The root folder always exists; name a folder below it.');
  const folder = await ctx.mutate((tx, audit) => createFolder(tx, audit, workspaceId, path));
  return { status: 200, body: { data: folderView(folder) } };
};

export const relocateFileFolder: Handler<'relocateFileFolder'> = async ({ body, ctx }) => {
  const workspaceId = workspaceOf(ctx).id;
  const from = checked('body', () => folderPathOf(body.path, 'path'));
  const dest = checked('body', () => folderPathOf(body.destinationPath, 'destinationPath'));
  if (from === '/') throw invalidField(['body', 'path'], 'The root folder cannot be moved.');
  const folder = await ctx.mutate((tx, audit) => relocateFolder(tx, audit, workspaceId, from, dest));
  return { status: 200, body: { data: folderView(folder) } };
};

export const deleteFileFolder: Handler<'deleteFileFolder'> = async ({ query, ctx }) => {
  const workspaceId = workspaceOf(ctx).id;
  const path = checked('query', () => folderPathOf(query.path, 'path'));
  if (path === '/') throw invalidField(['query', 'path'], 'The root folder cannot be deleted.');
  const counts = await ctx.mutate((tx, audit) => archiveFolder(tx, audit, workspaceId, path, flag(query.recursive, false)));
  return { status: 200, body: { data: { path, deleted: true as const, deletedItems: counts } } };
};

export const restoreFileFolder: Handler<'restoreFileFolder'> = async ({ body, ctx }) => {
  const workspaceId = workspaceOf(ctx).id;
  const path = checked('body', () => folderPathOf(body.path, 'path'));
  // Everything archived in the same delete comes back, under recreated parents if those are gone too.
  const result = await ctx.mutate((tx, audit) => restoreFolder(tx, audit, workspaceId, path));
  return { status: 200, body: { data: { folder: folderView(result.folder), restoredItems: result.restoredItems } } };
};
