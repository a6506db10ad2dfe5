// Imports (upload sessions of src/files reused: a signed PUT or parts, the `upload-token`, then complete) and
// exports (a file streamed from the database; small tables finish in the request, larger ones queue).
import fs from 'node:fs';
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { Handler } from '../../../generated/handlers.ts';
import type { RequestContext } from '../../http/context.ts';
import { ApiError, conflict, forbidden, invalidField, notFound } from '../../http/errors.ts';
import { StreamBody } from '../../http/stream-body.ts';
import type { UploadSessionRecord } from '../../store/file-uploads.ts';
import type { Repositories } from '../../store/index.ts';
import type { TableExportRecord, TableImportRecord } from '../../store/table-jobs.ts';
import { assertAllPartsArrived, commitStaged } from '../../files/uploads.ts';
import { checkUploadToken, signUploadToken, transferUrl } from '../../files/tokens.ts';
import { newUploadSession } from '../../files/service.ts';
import { validTimeZone } from '../../tables/csv.ts';
import { INLINE_EXPORT_ROWS } from '../../tables/jobs.ts';
import { assertUnlocked, loadTable } from '../../tables/service.ts';
import { folderPathToWire } from '../../workflows/folder-wire.ts';
import { nowIso, tableFolderPath, workspaceOf } from './shared.ts';

const newImportId = () => `imp_${randomBytes(12).toString('hex')}`;
const newExportId = () => `exp_${randomBytes(12).toString('hex')}`;
const DOWNLOAD_TTL_MS = 3600 * 1000;

function importView(i: TableImportRecord) {
  const expired = i.status === 'uploading' && Date.parse(i.expiresAt) <= Date.now();
  const target = i.target.type === 'new' ? { ...i.target, folderPath: folderPathToWire(i.target.folderPath ?? '/') } : i.target;
  return {
    id: i.id,
    workspaceId: i.workspaceId,
    status: expired ? ('expired' as const) : i.status,
    source: i.source,
    target,
    tableId: i.tableId,
    rowsProcessed: i.rowsProcessed,
    rowsRejected: i.rowsRejected,
    cellsRejected: i.cellsRejected,
    rejectedSamples: i.rejectedSamples,
    error: i.error,
    createdAt: i.createdAt,
    updatedAt: i.updatedAt,
    completedAt: i.completedAt,
  };
}

/** The import of this workspace; with a token, the token must be this import's (403 otherwise). */
async function loadImport(ctx: RequestContext, importId: string, token: string | undefined, required: boolean): Promise<TableImportRecord> {
  const workspaceId = workspaceOf(ctx).id;
  const imp = await ctx.services.store.tableImports.get(importId);
  if (!imp || imp.workspaceId !== workspaceId) throw notFound('Import');
  if (token === undefined && !required) return imp;
  if (token === undefined || imp.uploadId === null) throw forbidden('This call needs the import\'s upload-token.', { code: 'INVALID_UPLOAD_TOKEN', reason: 'missing' });
  const problem = checkUploadToken(ctx.services.signingKey, token, importId, workspaceId);
  if (problem) {
    throw forbidden(problem === 'expired' ? 'The upload token has expired.' : 'The upload token is not valid for this import.', { code: 'INVALID_UPLOAD_TOKEN', reason: problem });
  }
  return imp;
}

/** Marks an existing target table as running this import; one write job per table at a time. */
async function claimTable(tx: Repositories, imp: TableImportRecord): Promise<void> {
  if (imp.target.type !== 'existing') return;
  const t = await loadTable(tx, imp.workspaceId, imp.target.tableId);
  assertUnlocked(t, 'insert');
  if (imp.target.mode === 'replace') assertUnlocked(t, 'delete');
  if (t.job && t.job.status === 'running') throw conflict(`The table is already running a ${t.job.type} job.`, { code: 'TABLE_JOB_RUNNING', jobId: t.job.id });
  await tx.userTables.update(t.id, { job: { id: imp.id, type: 'import', status: 'running', rowsProcessed: 0, error: null } });
}

export const createTableImport: Handler<'createTableImport'> = async ({ body, ctx }) => {
  const workspace = workspaceOf(ctx);
  const existing = body.target.type === 'existing';
  if (!existing && (body.mapping !== undefined || body.createColumns !== undefined)) {
    throw invalidField(['body', body.mapping !== undefined ? 'mapping' : 'createColumns'], 'mapping and createColumns apply only to an existing target table.');
  }
  if (body.timezone !== undefined && !validTimeZone(body.timezone)) throw invalidField(['body', 'timezone'], `Unknown time zone "${body.timezone}".`);
  const target =
    body.target.type === 'new'
      ? { type: 'new' as const, name: body.target.name, folderPath: body.target.folderPath === undefined ? '/' : tableFolderPath(body.target.folderPath, ['body', 'target', 'folderPath']) }
      : body.target;
  const limits = ctx.services.config.files;
  const now = new Date();
  const importId = newImportId();
  const expiresAt = new Date(now.getTime() + limits.uploadSessionTtlMs).toISOString();
  let session: UploadSessionRecord | null = null;
  let blobKey: string | null = null;
  const source = body.source;
  const imp: TableImportRecord = {
    id: importId, workspaceId: workspace.id, userId: ctx.principal.userId, uploadId: null, source, target,
    options: { ...(body.mapping ? { mapping: body.mapping } : {}), ...(body.createColumns ? { createColumns: body.createColumns } : {}), ...(body.timezone ? { timezone: body.timezone } : {}) },
    status: 'uploading', tableId: existing ? (target as { tableId: string }).tableId : null, stagingId: null, rowsProcessed: 0, rowsRejected: 0, cellsRejected: 0,
    rejectedSamples: [], error: null, expiresAt, createdAt: now.toISOString(), updatedAt: now.toISOString(), completedAt: null,
  };
  if (source.type === 'upload') {
    session = newUploadSession({ workspaceId: workspace.id, userId: ctx.principal.userId, name: source.name, contentType: source.contentType, size: source.size }, limits, now);
    imp.uploadId = session.id;
  }
  await ctx.mutate(async (tx, audit) => {
    if (target.type === 'new') {
      if (await tx.userTables.activeByName(workspace.id, target.name)) throw conflict(`A table named "${target.name}" already exists.`, { name: target.name });
    } else {
      const t = await loadTable(tx, workspace.id, target.tableId);
      assertUnlocked(t, 'insert');
      if (target.mode === 'replace') assertUnlocked(t, 'delete');
      for (const h of body.createColumns ?? []) if (t.columns.some((c) => c.name === h)) throw conflict(`The table already has a column "${h}".`, { column: h });
    }
    if (source.type === 'workspace_file') {
      const file = await tx.files.get(source.fileId);
      if (!file || file.workspaceId !== workspace.id || file.deletedAt) throw notFound('File');
      blobKey = file.blobKey;
      imp.status = 'processing';
      await claimTable(tx, imp);
    }
    if (session) await tx.fileUploads.insert(session);
    await tx.tableImports.insert(imp);
    audit({ action: 'table_import.created', resourceType: 'table_import', resourceId: imp.id, metadata: { source: source.type, target: target.type } });
  });
  if (blobKey) ctx.services.tableJobs.startImport(imp.id, blobKey);
  if (!session) return { status: 200, body: { data: { session: importView(imp), uploadToken: null, transfer: null } } };
  const uploadToken = signUploadToken(ctx.services.signingKey, { uploadId: imp.id, workspaceId: workspace.id, expiresAt: Date.parse(expiresAt) });
  const base = ctx.services.config.baseUrl;
  const transfer = session.multipart
    ? { method: 'multipart' as const, partSize: session.partSize, partCount: session.partCount }
    : { method: 'put' as const, url: transferUrl(base, ctx.services.signingKey, session.id, 1, Date.parse(expiresAt)), headers: { 'Content-Type': session.contentType }, expiresAt };
  return { status: 200, body: { data: { session: importView(imp), uploadToken, transfer } } };
};

export const getTableImport: Handler<'getTableImport'> = async ({ params, headers, ctx }) => {
  const imp = await loadImport(ctx, params.importId, headers['upload-token'], false);
  return { status: 200, body: { data: importView(imp) } };
};

export const createTableImportPartUrls: Handler<'createTableImportPartUrls'> = async ({ params, headers, body, ctx }) => {
  const imp = await loadImport(ctx, params.importId, headers['upload-token'], true);
  const session = imp.uploadId ? await ctx.services.store.fileUploads.get(imp.uploadId) : undefined;
  if (!session || imp.status !== 'uploading' || Date.parse(imp.expiresAt) <= Date.now()) throw conflict(`The import is ${importView(imp).status}, not uploading.`);
  const bad = body.partNumbers.findIndex((n) => n > session.partCount);
  if (bad !== -1) throw invalidField(['body', 'partNumbers', bad], `Part numbers run from 1 to ${session.partCount} for this import.`);
  const expires = Date.parse(session.expiresAt);
  const parts = [...new Set(body.partNumbers)].map((partNumber) => ({
    partNumber,
    url: transferUrl(ctx.services.config.baseUrl, ctx.services.signingKey, session.id, partNumber, expires),
    headers: { 'Content-Type': session.contentType },
    expiresAt: session.expiresAt,
  }));
  return { status: 200, body: { data: { parts } } };
};

export const completeTableImport: Handler<'completeTableImport'> = async ({ params, headers, ctx }) => {
  const imp = await loadImport(ctx, params.importId, headers['upload-token'], true);
  const store = ctx.services.store;
  const session = (await store.fileUploads.get(imp.uploadId!))!;
  // Claim the import (and the session), so two completions cannot both go ahead.
  await ctx.mutate(async (tx, audit) => {
    const current = (await tx.tableImports.get(imp.id))!;
    const status = importView(current).status;
    if (status !== 'uploading') throw conflict(`The import is ${status}; only an import awaiting its upload can complete.`, { code: 'IMPORT_NOT_UPLOADING', status });
    assertAllPartsArrived(session, await tx.fileUploads.parts(session.id));
    await claimTable(tx, current);
    await tx.fileUploads.setStatus(session.id, 'completing', nowIso());
    await tx.tableImports.update(imp.id, { status: 'processing', updatedAt: nowIso() }, 'uploading');
    audit({ action: 'table_import.completed', resourceType: 'table_import', resourceId: imp.id });
  });
  const { key: blobKey } = await commitStaged(ctx.services, session, 'The uploaded bytes could not be read.', async (tx, message) => {
    await tx.tableImports.update(imp.id, { status: 'failed', error: message, updatedAt: nowIso(), completedAt: nowIso() });
    if (imp.target.type === 'existing') {
      const t = await tx.userTables.get(imp.target.tableId);
      if (t?.job?.id === imp.id) await tx.userTables.update(t.id, { job: null });
    }
  });
  await store.transaction((tx) => tx.fileUploads.setStatus(session.id, 'completed', nowIso()));
  ctx.services.tableJobs.startImport(imp.id, blobKey);
  return { status: 200, body: { data: importView((await store.tableImports.get(imp.id))!) } };
};

export const cancelTableImport: Handler<'cancelTableImport'> = async ({ params, headers, ctx }) => {
  const imp = await loadImport(ctx, params.importId, headers['upload-token'], false);
  const result = await ctx.mutate(async (tx, audit) => {
    const current = (await tx.tableImports.get(imp.id))!;
    const status = importView(current).status;
    if (status !== 'uploading' && status !== 'processing') throw conflict(`The import is ${status}; it can no longer be canceled.`, { status });
    const now = nowIso();
    await tx.tableImports.update(imp.id, { status: 'canceled', updatedAt: now, completedAt: now }, current.status);
    if (current.uploadId && status === 'uploading') await tx.fileUploads.setStatus(current.uploadId, 'aborted', now);
    audit({ action: 'table_import.canceled', resourceType: 'table_import', resourceId: imp.id });
    return (await tx.tableImports.get(imp.id))!;
  });
  if (imp.uploadId && imp.status === 'uploading') await ctx.services.blobs.discardUpload(imp.uploadId);
  return { status: 200, body: { data: importView(result) } };
};

// ───────────── exports

function exportView(e: TableExportRecord) {
  return {
    id: e.id, tableId: e.tableId, workspaceId: e.workspaceId, format: e.format, status: e.status, rowsProcessed: e.rowsProcessed, error: e.error,
    createdAt: e.createdAt, updatedAt: e.updatedAt, completedAt: e.completedAt,
  };
}

async function loadExport(ctx: RequestContext, tableId: string, exportId: string): Promise<TableExportRecord> {
  const t = await loadTable(ctx.services.store, workspaceOf(ctx).id, tableId, 'also');
  const e = await ctx.services.store.tableExports.get(exportId);
  if (!e || e.tableId !== t.id) throw notFound('Export');
  return e;
}

export const createTableExport: Handler<'createTableExport'> = async ({ params, body, ctx }) => {
  const workspaceId = workspaceOf(ctx).id;
  const format = body.format ?? 'csv';
  const e = await ctx.mutate(async (tx, audit) => {
    const t = await loadTable(tx, workspaceId, params.tableId);
    const now = nowIso();
    const rec: TableExportRecord = {
      id: newExportId(), tableId: t.id, workspaceId, userId: ctx.principal.userId, format, status: 'queued', rowsProcessed: 0, error: null,
      fileName: `${t.name}.${format}`, size: null, createdAt: now, updatedAt: now, completedAt: null,
    };
    await tx.tableExports.insert(rec);
    audit({ action: 'table_export.created', resourceType: 'table_export', resourceId: rec.id, resourceName: t.name, metadata: { format, rows: t.rowCount } });
    return { rec, rows: t.rowCount };
  });
  if (e.rows <= INLINE_EXPORT_ROWS) await ctx.services.tableJobs.runExport(e.rec.id);
  else ctx.services.tableJobs.startExport(e.rec.id);
  return { status: 200, body: { data: exportView((await ctx.services.store.tableExports.get(e.rec.id))!) } };
};

export const getTableExport: Handler<'getTableExport'> = async ({ params, ctx }) => {
  return { status: 200, body: { data: exportView(await loadExport(ctx, params.tableId, params.exportId)) } };
};

export const cancelTableExport: Handler<'cancelTableExport'> = async ({ params, ctx }) => {
  const e = await loadExport(ctx, params.tableId, params.exportId);
  const done = await ctx.mutate(async (tx, audit) => {
    const ok = await tx.tableExports.transition(e.id, ['queued', 'processing'], 'canceled', { completedAt: nowIso() }, nowIso());
    if (!ok) throw conflict(`The export is ${(await tx.tableExports.get(e.id))!.status}; it can no longer be canceled.`);
    audit({ action: 'table_export.canceled', resourceType: 'table_export', resourceId: e.id });
    return (await tx.tableExports.get(e.id))!;
  });
  return { status: 200, body: { data: exportView(done) } };
};

function signDownload(key: Buffer, exportId: string, expires: number): string {
  return createHmac('sha256', key).update(`table-export-download\n${exportId}\n${expires}`).digest('base64url');
}

export const tableExportDownload: Handler<'tableExportDownload'> = async ({ params, ctx }) => {
  const e = await loadExport(ctx, params.tableId, params.exportId);
  if (e.status !== 'completed') throw conflict(`The export is ${e.status}; a download is available once it has completed.`, { status: e.status });
  // A link never outlives the export's file, which goes when its retention is over.
  const kept = Date.parse(e.completedAt ?? e.updatedAt) + ctx.services.config.tables.exportRetentionMs;
  if (kept <= Date.now()) throw notFound('Export');
  const expires = Math.min(Date.now() + DOWNLOAD_TTL_MS, kept);
  const url = `${ctx.services.config.baseUrl}/transfers/tables/exports/${e.id}?expires=${expires}&signature=${signDownload(ctx.services.signingKey, e.id, expires)}`;
  return { status: 200, body: { data: { url, fileName: e.fileName, expiresAt: new Date(expires).toISOString() } } };
};

export const downloadTableExportFile: Handler<'downloadTableExportFile'> = async ({ params, query, ctx }) => {
  const expected = Buffer.from(signDownload(ctx.services.signingKey, params.exportId, query.expires));
  const given = Buffer.from(query.signature);
  if (expected.length !== given.length || !timingSafeEqual(expected, given)) throw forbidden('The download link signature is not valid.', { code: 'INVALID_SIGNATURE' });
  if (query.expires <= Date.now()) throw forbidden('The download link has expired.', { code: 'INVALID_SIGNATURE', reason: 'expired' });
  const e = await ctx.services.store.tableExports.get(params.exportId);
  if (!e || e.status !== 'completed') throw notFound('Export');
  const file = ctx.services.tableJobs.exportPath(e.id, e.format);
  if (!fs.existsSync(file)) throw new ApiError('NOT_FOUND', 'The export file is gone.');
  const type = e.format === 'csv' ? 'text/csv; charset=utf-8' : 'application/json; charset=utf-8';
  return {
    status: 200,
    body: new StreamBody(fs.createReadStream(file)),
    headers: { 'content-type': type, 'content-length': String(e.size ?? fs.statSync(file).size), 'content-disposition': `attachment; filename="${e.fileName.replace(/"/g, '')}"` },
  };
};

