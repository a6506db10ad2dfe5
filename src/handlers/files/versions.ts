// Files handlers: the versions of a file.
import type { Handler } from '../../../generated/handlers.ts';
import type { RequestContext } from '../../http/context.ts';
import { conflict, notFound } from '../../http/errors.ts';
import { readCursor, toPage } from '../../http/pagination.ts';
import { StreamBody } from '../../http/stream-body.ts';
import { fileRevision, fileView, versionView } from '../../files/views.ts';
import { actorOf, appendVersion, assertStorageFits, loadFile } from '../../files/service.ts';
import { serveContent } from '../../files/download.ts';
import { baseUrl, checkRevision, nowIso, textOf, workspaceOf } from './shared.ts';

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
  await ctx.mutate(async (tx, audit) => {
    const file = await loadFile(tx, workspaceId, params.fileId);
    if (file.currentVersion === params.version) throw conflict('The current version cannot be deleted; revert to another version first.', { code: 'CURRENT_VERSION' });
    if (!(await tx.files.deleteVersion(file.id, params.version))) throw notFound('File version');
    audit({ action: 'file.version_deleted', resourceType: 'file', resourceId: file.id, resourceName: file.name, metadata: { version: params.version } });
  });
  return { status: 200, body: { data: { fileId: params.fileId, version: params.version, deleted: true as const } } };
};

export const revertFileVersion: Handler<'revertFileVersion'> = async ({ params, body, ctx }) => {
  const workspace = workspaceOf(ctx);
  const result = await ctx.mutate(async (tx, audit) => {
    const file = await loadFile(tx, workspace.id, params.fileId);
    if (body.expectedCurrentVersion !== undefined && body.expectedCurrentVersion !== file.currentVersion) {
      throw conflict(`The current version is ${file.currentVersion}, not ${body.expectedCurrentVersion}.`, { code: 'VERSION_MISMATCH', currentVersion: file.currentVersion });
    }
    checkRevision(file, body.expectedRevision);
    const target = await tx.files.getVersion(file.id, params.version);
    if (!target) throw notFound('File version');
    if (target.version === file.currentVersion) return { reverted: false, file, version: target };
    await assertStorageFits(tx, workspace, ctx.services.config.files, target.size);
    const updated = await appendVersion(tx, file, {
      blob: { key: target.blobKey, size: target.size, sha256: target.blobKey }, contentType: target.contentType, source: 'revert',
      actor: await actorOf(tx, ctx.principal.userId), restoredFrom: target.version, now: nowIso(),
    });
    audit({ action: 'file.version_reverted', resourceType: 'file', resourceId: file.id, resourceName: file.name, metadata: { from: target.version, version: updated.currentVersion } });
    return { reverted: true, file: updated, version: (await tx.files.getVersion(file.id, updated.currentVersion))! };
  });
  return {
    status: 200,
    body: { data: { reverted: result.reverted, file: fileView(baseUrl(ctx), result.file), version: versionView(result.version, result.file.currentVersion), revision: fileRevision(result.file) } },
  };
};

