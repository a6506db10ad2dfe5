// Files handlers: one file (list, create, read, rename, archive, restore, replace or edit its content, read its text).
import type { Handler } from '../../../generated/handlers.ts';
import type { RequestContext } from '../../http/context.ts';
import { invalidField } from '../../http/errors.ts';
import { readCursor, toPage } from '../../http/pagination.ts';
import { StreamBody } from '../../http/stream-body.ts';
import type { StoredFile } from '../../store/files.ts';
import { checkFileName, folderPathOf, mediaTypeFor } from '../../files/names.ts';
import { fileRevision, fileView } from '../../files/views.ts';
import { assertNameFree, loadFile } from '../../files/service.ts';
import { serveContent } from '../../files/download.ts';
import { textKind } from '../../files/text.ts';
import * as fileChanges from '../../files/file-changes.ts';
import { applyEdit, EditError, lineCount, type TextEdit } from '../../files/edit.ts';
import { baseUrl, checked, decodeContent, fileByIdOrPath, flag, readWholeText, textOf, viewOfShare, workspaceOf, writeBuffer } from './shared.ts';

// ───────────────────────────── files ─────────────────────────────

export const listFiles: Handler<'listFiles'> = async ({ query, ctx }) => {
  const folderPath = query.folderPath === undefined ? null : checked('query', () => folderPathOf(query.folderPath));
  const search = query.search ?? null;
  const recursive = flag(query.recursive, search !== null);
  const archived = query.scope === 'archived';
  const sortBy = query.sortBy ?? 'uploadedAt';
  const sortOrder = query.sortOrder ?? 'asc';
  const limit = Math.min(1000, Math.max(1, Math.trunc(query.limit ?? 100)));
  const binding = { folderPath, recursive, archived, search, sortBy, sortOrder };
  const rows = await ctx.services.store.files.list({
    workspaceId: workspaceOf(ctx).id, archived, folderPath, recursive, search, sortBy, sortOrder, after: readCursor(ctx, query.cursor, binding), limit: limit + 1,
  });
  const column = { name: (f: StoredFile) => f.name, size: (f: StoredFile) => f.size, uploadedAt: (f: StoredFile) => f.uploadedAt, updatedAt: (f: StoredFile) => f.updatedAt }[sortBy];
  return { status: 200, body: toPage(ctx, rows, limit, binding, (f) => [column(f), f.id], (f) => fileView(baseUrl(ctx), f)) };
};

export const createFile: Handler<'createFile'> = async ({ body, ctx }) => {
  const workspace = workspaceOf(ctx);
  const name = checked('body', () => checkFileName(body.name));
  const folderPath = checked('body', () => folderPathOf(body.folderPath));
  const bytes = decodeContent(body.content ?? '', body.encoding);
  const contentType = body.contentType ?? mediaTypeFor(name);
  // An early check spares writing bytes that would be refused; it is repeated inside the transaction.
  await assertNameFree(ctx.services.store, workspace.id, folderPath, name);
  const blob = await writeBuffer(ctx, bytes);
  const file = await ctx.mutate((tx, audit) =>
    fileChanges.createFile(tx, audit, { workspace, limits: ctx.services.config.files, actorId: ctx.principal.userId, folderPath, name, contentType, blob }),
  );
  return { status: 200, body: { data: fileView(baseUrl(ctx), file) } };
};

export const downloadFile: Handler<'downloadFile'> = async ({ params, query, headers, ctx }) => {
  const file = await loadFile(ctx.services.store, workspaceOf(ctx).id, params.fileId, { archived: query.scope === 'archived' ? 'also' : undefined });
  const served = serveContent(ctx.services.blobs, { blobKey: file.blobKey, size: file.size, contentType: file.contentType, name: file.name }, headers.range);
  return { status: served.status, headers: served.headers, body: new StreamBody(served.stream) };
};

export const getFile: Handler<'getFile'> = async ({ params, query, ctx }) => {
  const file = await loadFile(ctx.services.store, workspaceOf(ctx).id, params.fileId, { archived: query.scope === 'archived' ? 'also' : undefined });
  const share = await ctx.services.store.fileShares.forFile(file.id);
  return {
    status: 200,
    body: { data: { ...fileView(baseUrl(ctx), file), share: share ? viewOfShare(ctx, share) : null, revision: fileRevision(file), currentVersion: file.currentVersion } },
  };
};

export const renameFile: Handler<'renameFile'> = async ({ params, body, ctx }) => {
  const workspaceId = workspaceOf(ctx).id;
  const name = checked('body', () => checkFileName(body.name));
  const file = await ctx.mutate((tx, audit) => fileChanges.renameFile(tx, audit, workspaceId, params.fileId, name));
  return { status: 200, body: { data: fileView(baseUrl(ctx), file) } };
};


export const deleteFile: Handler<'deleteFile'> = async ({ params, ctx }) => {
  const workspaceId = workspaceOf(ctx).id;
  await ctx.mutate((tx, audit) => fileChanges.archiveFile(tx, audit, workspaceId, params.fileId));
  return { status: 200, body: { data: { id: params.fileId, deleted: true as const } } };
};

export const restoreFile: Handler<'restoreFile'> = async ({ params, ctx }) => {
  const workspaceId = workspaceOf(ctx).id;
  // A file whose folder is gone comes back at the root rather than recreating the folder.
  const file = await ctx.mutate((tx, audit) => fileChanges.restoreFile(tx, audit, workspaceId, params.fileId));
  return { status: 200, body: { data: fileView(baseUrl(ctx), file) } };
};

async function replaceContent(
  ctx: RequestContext,
  fileId: string,
  produce: (file: StoredFile) => Promise<Buffer>,
  expectedRevision: string | undefined,
  action: string,
): Promise<StoredFile> {
  const workspace = workspaceOf(ctx);
  const before = await loadFile(ctx.services.store, workspace.id, fileId);
  fileChanges.assertRevision(before, expectedRevision);
  const bytes = await produce(before);
  const blob = await writeBuffer(ctx, bytes);
  return ctx.mutate((tx, audit) => fileChanges.writeVersion(tx, audit, { workspace, limits: ctx.services.config.files, actorId: ctx.principal.userId, before, blob, action }));
}

export const updateFileContent: Handler<'updateFileContent'> = async ({ params, body, ctx }) => {
  const bytes = decodeContent(body.content, body.encoding);
  const file = await replaceContent(ctx, params.fileId, async () => bytes, body.expectedRevision, 'file.content_replaced');
  return { status: 200, body: { data: { ...fileView(baseUrl(ctx), file), revision: fileRevision(file) } } };
};

export const editFileContent: Handler<'editFileContent'> = async ({ params, body, ctx }) => {
  let lines = 0;
  const file = await replaceContent(
    ctx,
    params.fileId,
    async (current) => {
      if (textKind(current.contentType, current.name) !== 'text') throw invalidField(['params', 'fileId'], 'Only text files can be edited.');
      let edited: string;
      try {
        edited = applyEdit(await readWholeText(ctx, current.blobKey, current.size), body.edit as TextEdit);
      } catch (err) {
        if (err instanceof EditError) throw invalidField(['body', 'edit'], err.message);
        throw err;
      }
      lines = lineCount(edited);
      return Buffer.from(edited, 'utf8');
    },
    body.expectedRevision,
    'file.content_edited',
  );
  return { status: 200, body: { data: { file: fileView(baseUrl(ctx), file), lineCount: lines, revision: fileRevision(file) } } };
};


export const readFileText: Handler<'readFileText'> = async ({ params, query, ctx }) => {
  const file = await fileByIdOrPath(ctx, params.fileId);
  return { status: 200, body: { data: await textOf(ctx, { ...file, fileId: file.id }, query) } };
};

