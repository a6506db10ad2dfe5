// Files handlers: the versions of a file.
import type { Handler } from '../../../generated/handlers.ts';
import type { RequestContext } from '../../http/context.ts';
import { notFound } from '../../http/errors.ts';
import { readCursor, toPage } from '../../http/pagination.ts';
import { StreamBody } from '../../http/stream-body.ts';
import { fileRevision, fileView, versionView } from '../../files/views.ts';
import { loadFile } from '../../files/service.ts';
import * as fileChanges from '../../files/file-changes.ts';
import { serveContent } from '../../files/download.ts';
import { baseUrl, textOf, workspaceOf } from './shared.ts';

// ───────────────────────────── versions ─────────────────────────────

async function versionOf(ctx: RequestContext, fileId: string, version: number) {
  const file = await loadFile(ctx.services.store, workspaceOf(ctx).id, fileId);
  const v = await ctx.services.store.files.getVersion(file.id, version);
  if (!v) throw notFound('File version');
  return { file, v };
}

export const listFileVersions: Handler<'listFileVersions'> = async ({ params, query, ctx }) => {
  const file = await loadFile(ctx.services.store, workspaceOf(ctx).id, params.fileId);
  const sortOrder = query.sortOrder ?? 'desc';
  const limit = query.limit ?? 50;
  const binding = { fileId: file.id, sortOrder };
  const rows = await ctx.services.store.files.listVersions(file.id, sortOrder, readCursor(ctx, query.cursor, binding), limit + 1);
  return { status: 200, body: toPage(ctx, rows, limit, binding, (v) => [v.version, String(v.version)], (v) => versionView(v, file.currentVersion)) };
};

export const getFileVersion: Handler<'getFileVersion'> = async ({ params, ctx }) => {
  const { file, v } = await versionOf(ctx, params.fileId, params.version);
  return { status: 200, body: { data: versionView(v, file.currentVersion) } };
};

export const downloadFileVersion: Handler<'downloadFileVersion'> = async ({ params, headers, ctx }) => {
  const { file, v } = await versionOf(ctx, params.fileId, params.version);
  const served = serveContent(ctx.services.blobs, { blobKey: v.blobKey, size: v.size, contentType: v.contentType, name: file.name }, headers.range);
  return { status: served.status, headers: served.headers, body: new StreamBody(served.stream) };
};

export const readFileVersionText: Handler<'readFileVersionText'> = async ({ params, query, ctx }) => {
  const { file, v } = await versionOf(ctx, params.fileId, params.version);
  const text = await textOf(ctx, { fileId: file.id, name: file.name, folderPath: file.folderPath, blobKey: v.blobKey, size: v.size, contentType: v.contentType }, query);
  return { status: 200, body: { data: { ...text, version: v.version } } };
};

export const deleteFileVersion: Handler<'deleteFileVersion'> = async ({ params, ctx }) => {
  const workspaceId = workspaceOf(ctx).id;
  await ctx.mutate((tx, audit) => fileChanges.deleteVersion(tx, audit, workspaceId, params.fileId, params.version));
  return { status: 200, body: { data: { fileId: params.fileId, version: params.version, deleted: true as const } } };
};

export const revertFileVersion: Handler<'revertFileVersion'> = async ({ params, body, ctx }) => {
  const workspace = workspaceOf(ctx);
  const result = await ctx.mutate((tx, audit) =>
    fileChanges.revertToVersion(tx, audit, {
      workspace, limits: ctx.services.config.files, actorId: ctx.principal.userId, fileId: params.fileId, version: params.version,
      expectedCurrentVersion: body.expectedCurrentVersion, expectedRevision: body.expectedRevision,
    }),
  );
  return {
    status: 200,
    body: { data: { reverted: result.reverted, file: fileView(baseUrl(ctx), result.file), version: versionView(result.version, result.file.currentVersion), revision: fileRevision(result.file) } },
  };
};

