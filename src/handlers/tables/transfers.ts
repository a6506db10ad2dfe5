// Imports (upload sessions of src/files reused: a signed PUT or parts, the `upload-token`, then complete) and
// exports (a file streamed from the database; small tables finish in the request, larger ones queue). The rules
// are src/tables/transfers.ts; here the request is read, upload links signed and the answer shaped.
import fs from 'node:fs';
import type { Handler } from '../../../generated/handlers.ts';
import type { RequestContext } from '../../http/context.ts';
import type { Mutate } from '../../domain/changes.ts';
import { StreamBody } from '../../http/stream-body.ts';
import { signUploadToken, transferUrl } from '../../files/tokens.ts';
import * as transfers from '../../tables/transfers.ts';
import { tableFolderPath, workspaceOf } from './shared.ts';

/** The store, blobs and job runner a transfer works with; its changes audited as the caller. */
function transferIo(ctx: RequestContext) {
  const mutate: Mutate = (fn) => ctx.mutate(fn);
  return { store: ctx.services.store, blobs: ctx.services.blobs, jobs: ctx.services.tableJobs, mutate };
}

const loadImport = (ctx: RequestContext, importId: string, token: string | undefined, required: boolean) =>
  transfers.loadImport(ctx.services.store, ctx.services.signingKey, workspaceOf(ctx).id, importId, token, required);

export const createTableImport: Handler<'createTableImport'> = async ({ body, ctx }) => {
  const workspace = workspaceOf(ctx);
  transfers.checkImportOptions(body);
  const target =
    body.target.type === 'new'
      ? { type: 'new' as const, name: body.target.name, folderPath: body.target.folderPath === undefined ? '/' : tableFolderPath(body.target.folderPath, ['body', 'target', 'folderPath']) }
      : body.target;
  const input = { workspaceId: workspace.id, userId: ctx.principal.userId, source: body.source, target, mapping: body.mapping, createColumns: body.createColumns, timezone: body.timezone };
  const { imp, session } = transfers.planImport(input, ctx.services.config.files);
  const blobKey = await ctx.mutate((tx, audit) => transfers.openImport(tx, audit, imp, session));
  if (blobKey) ctx.services.tableJobs.startImport(imp.id, blobKey);
  if (!session) return { status: 200, body: { data: { session: transfers.importView(imp), uploadToken: null, transfer: null } } };
  const expiresAt = Date.parse(imp.expiresAt);
  const uploadToken = signUploadToken(ctx.services.signingKey, { uploadId: imp.id, workspaceId: workspace.id, expiresAt });
  const transfer = session.multipart
    ? { method: 'multipart' as const, partSize: session.partSize, partCount: session.partCount }
    : { method: 'put' as const, url: transferUrl(ctx.baseUrl, ctx.services.signingKey, session.id, 1, expiresAt), headers: { 'Content-Type': session.contentType }, expiresAt: imp.expiresAt };
  return { status: 200, body: { data: { session: transfers.importView(imp), uploadToken, transfer } } };
};

export const getTableImport: Handler<'getTableImport'> = async ({ params, headers, ctx }) => {
  const imp = await loadImport(ctx, params.importId, headers['upload-token'], false);
  return { status: 200, body: { data: transfers.importView(imp) } };
};

export const createTableImportPartUrls: Handler<'createTableImportPartUrls'> = async ({ params, headers, body, ctx }) => {
  const imp = await loadImport(ctx, params.importId, headers['upload-token'], true);
  const session = await transfers.uploadingSession(ctx.services.store, imp, body.partNumbers);
  const expires = Date.parse(session.expiresAt);
  const parts = [...new Set(body.partNumbers)].map((partNumber) => ({
    partNumber,
    url: transferUrl(ctx.baseUrl, ctx.services.signingKey, session.id, partNumber, expires),
    headers: { 'Content-Type': session.contentType },
    expiresAt: session.expiresAt,
  }));
  return { status: 200, body: { data: { parts } } };
};

export const completeTableImport: Handler<'completeTableImport'> = async ({ params, headers, ctx }) => {
  const imp = await loadImport(ctx, params.importId, headers['upload-token'], true);
  const done = await transfers.completeImport(transferIo(ctx), imp);
  return { status: 200, body: { data: transfers.importView(done) } };
};

export const cancelTableImport: Handler<'cancelTableImport'> = async ({ params, headers, ctx }) => {
  const imp = await loadImport(ctx, params.importId, headers['upload-token'], false);
  const result = await ctx.mutate((tx, audit) => transfers.cancelImport(tx, audit, imp));
  if (imp.uploadId && imp.status === 'uploading') await ctx.services.blobs.discardUpload(imp.uploadId);
  return { status: 200, body: { data: transfers.importView(result) } };
};

// ───────────── exports

const loadExport = (ctx: RequestContext, tableId: string, exportId: string) => transfers.loadExport(ctx.services.store, workspaceOf(ctx).id, tableId, exportId);

export const createTableExport: Handler<'createTableExport'> = async ({ params, body, ctx }) => {
  const workspaceId = workspaceOf(ctx).id;
  const e = await ctx.mutate((tx, audit) => transfers.createExport(tx, audit, workspaceId, params.tableId, ctx.principal.userId, body.format ?? 'csv'));
  const done = await transfers.runExport(transferIo(ctx), e.rec.id, e.rows);
  return { status: 200, body: { data: transfers.exportView(done) } };
};

export const getTableExport: Handler<'getTableExport'> = async ({ params, ctx }) => {
  return { status: 200, body: { data: transfers.exportView(await loadExport(ctx, params.tableId, params.exportId)) } };
};

export const cancelTableExport: Handler<'cancelTableExport'> = async ({ params, ctx }) => {
  const e = await loadExport(ctx, params.tableId, params.exportId);
  const done = await ctx.mutate((tx, audit) => transfers.cancelExport(tx, audit, e));
  return { status: 200, body: { data: transfers.exportView(done) } };
};

export const tableExportDownload: Handler<'tableExportDownload'> = async ({ params, ctx }) => {
  const e = await loadExport(ctx, params.tableId, params.exportId);
  const { config, signingKey } = ctx.services;
  return { status: 200, body: { data: transfers.downloadLink(signingKey, ctx.baseUrl, e, config.tables.exportRetentionMs) } };
};

export const downloadTableExportFile: Handler<'downloadTableExportFile'> = async ({ params, query, ctx }) => {
  const { path, export: e } = await transfers.downloadFile({ store: ctx.services.store, jobs: ctx.services.tableJobs }, ctx.services.signingKey, params.exportId, query.expires, query.signature);
  const type = e.format === 'csv' ? 'text/csv; charset=utf-8' : 'application/json; charset=utf-8';
  return {
    status: 200,
    body: new StreamBody(fs.createReadStream(path)),
    headers: { 'content-type': type, 'content-length': String(e.size ?? fs.statSync(path).size), 'content-disposition': `attachment; filename="${e.fileName.replace(/"/g, '')}"` },
  };
};
