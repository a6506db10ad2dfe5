// Workflows handlers: workflow folders (list, create, move, archive). The tree rules live in src/workflows/.
import type { Handler } from '../../../generated/handlers.ts';
import { readCursor, toPage } from '../../http/pagination.ts';
import type { FolderRecord } from '../../store/folders.ts';
import { folderPathToWire } from '../../workflows/folder-wire.ts';
import { assertTreeSize, parseFolderPath, resolveExistingFolder } from '../../workflows/folders.ts';
import * as workflows from '../../workflows/service.ts';
import { folderView, TRUE_WORDS } from './shared.ts';

const FOLDER_SORT_VALUE = { name: (f: FolderRecord) => f.name, createdAt: (f: FolderRecord) => f.createdAt, updatedAt: (f: FolderRecord) => f.updatedAt };

export const listWorkflowFolders: Handler<'listWorkflowFolders'> = async ({ query, ctx }) => {
  const sortBy = query.sortBy ?? 'name';
  const sortOrder = query.sortOrder ?? 'asc';
  const limit = query.limit ?? 50;
  const binding = { workspaceId: query.workspaceId, parentPath: query.parentPath, search: query.search, sortBy, sortOrder };
  const after = readCursor(ctx, query.cursor, binding);
  const store = ctx.services.store;
  let parentPath: string | null = null;
  if (query.parentPath !== undefined) {
    parentPath = await resolveExistingFolder(store, query.workspaceId, parseFolderPath(query.parentPath, ['query', 'parentPath']));
    if (parentPath === null) return { status: 200, body: { data: [], nextCursor: null } };
  } else await assertTreeSize(store, query.workspaceId);
  const rows = await store.workflowFolders.list({ workspaceId: query.workspaceId, parentPath, search: query.search ?? null, sortBy, sortOrder, after, limit: limit + 1 });
  return { status: 200, body: toPage(ctx, rows, limit, binding, (f) => [FOLDER_SORT_VALUE[sortBy](f), f.id], folderView) };
};

export const createWorkflowFolder: Handler<'createWorkflowFolder'> = async ({ body, ctx }) => {
  const path = parseFolderPath(body.path, ['body', 'path']);
  const folder = await ctx.mutate((tx, audit) => workflows.createFolder(tx, audit, body.workspaceId, path));
  return { status: 201, body: { data: folderView(folder) } };
};

export const relocateWorkflowFolder: Handler<'relocateWorkflowFolder'> = async ({ body, ctx }) => {
  const from = parseFolderPath(body.path, ['body', 'path']);
  const destination = parseFolderPath(body.destinationPath, ['body', 'destinationPath']);
  const folder = await ctx.mutate((tx, audit) => workflows.relocateFolder(tx, audit, body.workspaceId, from, destination));
  return { status: 200, body: { data: folderView(folder) } };
};

export const deleteWorkflowFolder: Handler<'deleteWorkflowFolder'> = async ({ query, ctx }) => {
  const path = parseFolderPath(query.path, ['query', 'path']);
  const recursive = TRUE_WORDS.has(query.recursive ?? 'false');
  const deletedItems = await ctx.mutate((tx, audit) => workflows.archiveFolder(tx, audit, query.workspaceId, path, recursive));
  return { status: 200, body: { data: { path: folderPathToWire(path), deleted: true, deletedItems } } };
};
