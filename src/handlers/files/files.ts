// Files handlers: one file (list, create, read, rename, archive, restore, replace or edit its content, read its text).
import type { Handler } from '../../../generated/handlers.ts';
import type { RequestContext } from '../../http/context.ts';
import { conflict, invalidField } from '../../http/errors.ts';
import { readCursor, toPage } from '../../http/pagination.ts';
import { StreamBody } from '../../http/stream-body.ts';
import type { StoredFile } from '../../store/files.ts';
import { checkFileName, folderPathOf, mediaTypeFor } from '../../files/names.ts';
import { fileRevision, fileView } from '../../files/views.ts';
import { actorOf, appendVersion, assertNameFree, assertStorageFits, ensureFolderChain, insertNewFile, loadFile, archiveFiles } from '../../files/service.ts';
import { serveContent } from '../../files/download.ts';
import { textKind } from '../../files/text.ts';
import { applyEdit, EditError, lineCount, type TextEdit } from '../../files/edit.ts';
import { baseUrl, checkRevision, checked, decodeContent, fileByIdOrPath, flag, nowIso, readWholeText, textOf, viewOfShare, workspaceOf, writeBuffer } from './shared.ts';

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
  const file = await ctx.mutate(async (tx, audit) => {
    const now = nowIso();
    const foldersCreated = await ensureFolderChain(tx, workspace.id, folderPath, now);
    await assertNameFree(tx, workspace.id, folderPath, name);
    await assertStorageFits(tx, workspace, ctx.services.config.files, blob.size);
    const created = await insertNewFile(tx, { workspaceId: workspace.id, folderPath, name, contentType, blob, actor: await actorOf(tx, ctx.principal.userId), source: 'api', now });
    audit({ action: 'file.created', resourceType: 'file', resourceId: created.id, resourceName: name, metadata: { size: blob.size, folderPath, foldersCreated } });
    return created;
  });
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
  const file = await ctx.mutate(async (tx, audit) => {
    const current = await loadFile(tx, workspaceId, params.fileId);
    if (current.name === name) return current;
    await assertNameFree(tx, workspaceId, current.folderPath, name, current.id);
    const updatedAt = nowIso();
    await tx.files.update(current.id, { name, updatedAt });
    audit({ action: 'file.renamed', resourceType: 'file', resourceId: current.id, resourceName: name, metadata: { from: current.name, to: name } });
    return { ...current, name, updatedAt };
  });
  return { status: 200, body: { data: fileView(baseUrl(ctx), file) } };
};


export const deleteFile: Handler<'deleteFile'> = async ({ params, ctx }) => {
  const workspaceId = workspaceOf(ctx).id;
  await ctx.mutate(async (tx, audit) => {
    const file = await loadFile(tx, workspaceId, params.fileId);
    await archiveFiles(tx, [file], nowIso(), null);
    audit({ action: 'file.deleted', resourceType: 'file', resourceId: file.id, resourceName: file.name, metadata: { size: file.size } });
  });
  return { status: 200, body: { data: { id: params.fileId, deleted: true as const } } };
};

export const restoreFile: Handler<'restoreFile'> = async ({ params, ctx }) => {
  const workspaceId = workspaceOf(ctx).id;
  const file = await ctx.mutate(async (tx, audit) => {
    const current = await loadFile(tx, workspaceId, params.fileId, { archived: 'also' });
    if (!current.deletedAt) return current;
    // A file whose folder is gone comes back at the root rather than recreating the folder.
    const folderPath = current.folderPath === '/' || (await tx.fileFolders.getActive(workspaceId, current.folderPath)) ? current.folderPath : '/';
    await assertNameFree(tx, workspaceId, folderPath, current.name);
    const updatedAt = nowIso();
    await tx.files.update(current.id, { deletedAt: null, archiveBatch: null, folderPath, updatedAt });
    audit({ action: 'file.restored', resourceType: 'file', resourceId: current.id, resourceName: current.name, metadata: { folderPath } });
    return { ...current, deletedAt: null, archiveBatch: null, folderPath, updatedAt };
  });
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
  checkRevision(before, expectedRevision);
  const bytes = await produce(before);
  const blob = await writeBuffer(ctx, bytes);
  return ctx.mutate(async (tx, audit) => {
    const current = await loadFile(tx, workspace.id, fileId);
    // The content read above must still be current: a write that slipped in between wins, this one is refused.
    if (current.blobKey !== before.blobKey || current.currentVersion !== before.currentVersion) {
      throw conflict('The file changed while this write was prepared; retry.', { code: 'REVISION_MISMATCH', revision: fileRevision(current) });
    }
    await assertStorageFits(tx, workspace, ctx.services.config.files, blob.size);
    const updated = await appendVersion(tx, current, { blob, source: 'api', actor: await actorOf(tx, ctx.principal.userId), now: nowIso() });
    audit({ action, resourceType: 'file', resourceId: current.id, resourceName: current.name, metadata: { version: updated.currentVersion, size: blob.size } });
    return updated;
  });
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

