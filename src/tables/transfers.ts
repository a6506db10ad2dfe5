// Table imports and exports as a client drives them. An import reuses the upload sessions of src/files (a signed
// PUT or parts, the `upload-token`, then complete) or reads a workspace file; an export is a file written from
// the database. The rules: one write job per table at a time, locks, an import completes once and only while
// awaiting its upload, a download link never outlives the export's file. The work itself is the job runner's
// (src/tables/jobs.ts); changes here run inside the caller's transaction and record their audit event there.
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import fs from 'node:fs';
import type { FileLimits } from '../config.ts';
import type { Audit, Mutate } from '../domain/changes.ts';
import { DomainError, domainNotFound, invalidInput } from '../domain/errors.ts';
import type { BlobStore } from '../files/blob-store.ts';
import { newUploadSession } from '../files/service.ts';
import { checkUploadToken } from '../files/tokens.ts';
import { assertAllPartsArrived, commitStaged } from '../files/uploads.ts';
import type { UploadSessionRecord } from '../store/file-uploads.ts';
import type { Repositories, Store } from '../store/index.ts';
import type { ImportSource, ImportTarget, TableExportRecord, TableImportRecord } from '../store/table-jobs.ts';
import { folderPathToWire } from '../workflows/folder-wire.ts';
import { validTimeZone } from './csv.ts';
import { clearJob, INLINE_EXPORT_ROWS, type TableJobRunner } from './jobs.ts';
import { assertUnlocked, loadTable } from './service.ts';
import { assertAccess } from '../access-control/policy.ts';

const newImportId = () => `imp_${randomBytes(12).toString('hex')}`;
const newExportId = () => `exp_${randomBytes(12).toString('hex')}`;
const nowIso = () => new Date().toISOString();
/** How long a download link is good for (at most: never past the export's retention). */
const DOWNLOAD_TTL_MS = 3600 * 1000;

/** What the import and export calls need of the job runner. */
export type TableJobs = Pick<TableJobRunner, 'startImport' | 'startExport' | 'runExport' | 'exportPath'>;

export function importView(i: TableImportRecord) {
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

export function exportView(e: TableExportRecord) {
  return {
    id: e.id, tableId: e.tableId, workspaceId: e.workspaceId, format: e.format, status: e.status, rowsProcessed: e.rowsProcessed, error: e.error,
    createdAt: e.createdAt, updatedAt: e.updatedAt, completedAt: e.completedAt,
  };
}

// ───────────── imports

/** The import of this workspace; with a token, the token must be this import's (403 otherwise). */
export async function loadImport(repos: Repositories, key: Buffer, workspaceId: string, importId: string, token: string | undefined, required: boolean): Promise<TableImportRecord> {
  const imp = await repos.tableImports.get(importId);
  if (!imp || imp.workspaceId !== workspaceId) throw domainNotFound('Import');
  if (token === undefined && !required) return imp;
  if (token === undefined || imp.uploadId === null) throw new DomainError('forbidden', 'This call needs the import\'s upload-token.', { code: 'INVALID_UPLOAD_TOKEN', reason: 'missing' });
  const problem = checkUploadToken(key, token, importId, workspaceId);
  if (problem) {
    throw new DomainError('forbidden', problem === 'expired' ? 'The upload token has expired.' : 'The upload token is not valid for this import.', { code: 'INVALID_UPLOAD_TOKEN', reason: problem });
  }
  return imp;
}

/** Marks an existing target table as running this import; one write job per table at a time. */
async function claimTable(tx: Repositories, imp: TableImportRecord): Promise<void> {
  if (imp.target.type !== 'existing') return;
  const t = await loadTable(tx, imp.workspaceId, imp.target.tableId);
  assertUnlocked(t, 'insert');
  if (imp.target.mode === 'replace') assertUnlocked(t, 'delete');
  if (t.job && t.job.status === 'running') throw new DomainError('conflict', `The table is already running a ${t.job.type} job.`, { code: 'TABLE_JOB_RUNNING', jobId: t.job.id });
  await tx.userTables.update(t.id, { job: { id: imp.id, type: 'import', status: 'running', rowsProcessed: 0, error: null } });
}

export interface NewImport {
  workspaceId: string;
  userId: string;
  source: ImportSource;
  /** A new table's folderPath is canonical (read from the wire by the caller). */
  target: ImportTarget;
  mapping?: Record<string, string | null>;
  createColumns?: string[];
  timezone?: string;
}

/** Checks an import's options: a mapping and new columns only for an existing table, a known time zone. */
export function checkImportOptions(input: { target: { type: ImportTarget['type'] }; mapping?: unknown; createColumns?: unknown; timezone?: string }): void {
  if (input.target.type !== 'existing' && (input.mapping !== undefined || input.createColumns !== undefined)) {
    throw invalidInput(['body', input.mapping !== undefined ? 'mapping' : 'createColumns'], 'mapping and createColumns apply only to an existing target table.');
  }
  if (input.timezone !== undefined && !validTimeZone(input.timezone)) throw invalidInput(['body', 'timezone'], `Unknown time zone "${input.timezone}".`);
}

/** A new import (and, for an upload source, its upload session); nothing is written. */
export function planImport(input: NewImport, limits: Pick<FileLimits, 'uploadPartSize' | 'uploadSessionTtlMs'>, now = new Date()): { imp: TableImportRecord; session: UploadSessionRecord | null } {
  checkImportOptions(input);
  const { source, target } = input;
  const expiresAt = new Date(now.getTime() + limits.uploadSessionTtlMs).toISOString();
  const imp: TableImportRecord = {
    id: newImportId(), workspaceId: input.workspaceId, userId: input.userId, uploadId: null, source, target,
    options: { ...(input.mapping ? { mapping: input.mapping } : {}), ...(input.createColumns ? { createColumns: input.createColumns } : {}), ...(input.timezone ? { timezone: input.timezone } : {}) },
    status: 'uploading', tableId: target.type === 'existing' ? target.tableId : null, stagingId: null, rowsProcessed: 0, rowsRejected: 0, cellsRejected: 0,
    rejectedSamples: [], error: null, expiresAt, createdAt: now.toISOString(), updatedAt: now.toISOString(), completedAt: null,
  };
  let session: UploadSessionRecord | null = null;
  if (source.type === 'upload') {
    session = newUploadSession({ workspaceId: input.workspaceId, userId: input.userId, name: source.name, contentType: source.contentType, size: source.size }, limits, now);
    imp.uploadId = session.id;
  }
  return { imp, session };
}

/**
 * Records a planned import. A workspace file source starts processing at once: the blob key returned is what
 * the caller hands the job runner once this has committed (null for an upload, which waits for its bytes).
 */
export async function openImport(tx: Repositories, audit: Audit, imp: TableImportRecord, session: UploadSessionRecord | null): Promise<string | null> {
  const { source, target } = imp;
  if (target.type === 'new') {
    if (await tx.userTables.activeByName(imp.workspaceId, target.name)) throw new DomainError('conflict', `A table named "${target.name}" already exists.`, { name: target.name });
  } else {
    const t = await loadTable(tx, imp.workspaceId, target.tableId);
    assertUnlocked(t, 'insert');
    if (target.mode === 'replace') assertUnlocked(t, 'delete');
    for (const h of imp.options.createColumns ?? []) if (t.columns.some((c) => c.name === h)) throw new DomainError('conflict', `The table already has a column "${h}".`, { column: h });
  }
  let blobKey: string | null = null;
  if (source.type === 'workspace_file') {
    const file = await tx.files.get(source.fileId);
    if (!file || file.workspaceId !== imp.workspaceId || file.deletedAt) throw domainNotFound('File');
    blobKey = file.blobKey;
    imp.status = 'processing';
    await claimTable(tx, imp);
  }
  if (session) await tx.fileUploads.insert(session);
  await tx.tableImports.insert(imp);
  await audit({ action: 'table_import.created', resourceType: 'table_import', resourceId: imp.id, metadata: { source: source.type, target: target.type } });
  return blobKey;
}

/** The upload session of an import still awaiting its bytes, after checking the part numbers asked for. */
export async function uploadingSession(repos: Repositories, imp: TableImportRecord, partNumbers: number[]): Promise<UploadSessionRecord> {
  const session = imp.uploadId ? await repos.fileUploads.get(imp.uploadId) : undefined;
  if (!session || imp.status !== 'uploading' || Date.parse(imp.expiresAt) <= Date.now()) throw new DomainError('conflict', `The import is ${importView(imp).status}, not uploading.`);
  const bad = partNumbers.findIndex((n) => n > session.partCount);
  if (bad !== -1) throw invalidInput(['body', 'partNumbers', bad], `Part numbers run from 1 to ${session.partCount} for this import.`);
  return session;
}

/**
 * Completes an import's upload: claims the import and its session (so two completions cannot both go ahead),
 * commits the staged bytes (a failure fails the import and frees its table), and starts the import's job.
 * Returns the import as it then is.
 */
export async function completeImport(
  io: { store: Store; blobs: BlobStore; mutate: Mutate; jobs: TableJobs }, imp: TableImportRecord,
): Promise<TableImportRecord> {
  const { store } = io;
  const session = (await store.fileUploads.get(imp.uploadId!))!;
  await io.mutate(async (tx, audit) => {
    const current = (await tx.tableImports.get(imp.id))!;
    const status = importView(current).status;
    if (status !== 'uploading') throw new DomainError('conflict', `The import is ${status}; only an import awaiting its upload can complete.`, { code: 'IMPORT_NOT_UPLOADING', status });
    assertAllPartsArrived(session, await tx.fileUploads.parts(session.id));
    await claimTable(tx, current);
    await tx.fileUploads.setStatus(session.id, 'completing', nowIso());
    await tx.tableImports.update(imp.id, { status: 'processing', updatedAt: nowIso() }, 'uploading');
    await audit({ action: 'table_import.completed', resourceType: 'table_import', resourceId: imp.id });
  });
  const { key: blobKey } = await commitStaged(io, session, 'The uploaded bytes could not be read.', async (tx, message) => {
    await tx.tableImports.update(imp.id, { status: 'failed', error: message, updatedAt: nowIso(), completedAt: nowIso() });
    if (imp.target.type === 'existing') await clearJob(tx, imp.target.tableId, imp.id);
  });
  await store.transaction((tx) => tx.fileUploads.setStatus(session.id, 'completed', nowIso()));
  io.jobs.startImport(imp.id, blobKey);
  return (await store.tableImports.get(imp.id))!;
}

/** Cancels an import still uploading or processing (an uploading one's session is aborted); returns it as it now is. */
export async function cancelImport(tx: Repositories, audit: Audit, imp: TableImportRecord): Promise<TableImportRecord> {
  const current = (await tx.tableImports.get(imp.id))!;
  const status = importView(current).status;
  if (status !== 'uploading' && status !== 'processing') throw new DomainError('conflict', `The import is ${status}; it can no longer be canceled.`, { status });
  const now = nowIso();
  await tx.tableImports.update(imp.id, { status: 'canceled', updatedAt: now, completedAt: now }, current.status);
  if (current.uploadId && status === 'uploading') await tx.fileUploads.setStatus(current.uploadId, 'aborted', now);
  await audit({ action: 'table_import.canceled', resourceType: 'table_import', resourceId: imp.id });
  return (await tx.tableImports.get(imp.id))!;
}

// ───────────── exports

/** An export of this table (archived tables included). */
export async function loadExport(repos: Repositories, workspaceId: string, tableId: string, exportId: string): Promise<TableExportRecord> {
  const t = await loadTable(repos, workspaceId, tableId, 'also');
  const e = await repos.tableExports.get(exportId);
  if (!e || e.tableId !== t.id) throw domainNotFound('Export');
  return e;
}

/** Records a queued export of a table; returns it with the table's row count (which decides where it runs). */
export async function createExport(tx: Repositories, audit: Audit, workspaceId: string, tableId: string, userId: string, format: TableExportRecord['format']) {
  await assertAccess(tx, { workspaceId, userId }, { kind: 'feature', key: 'disableTableExport', action: 'Exporting tables' });
  const t = await loadTable(tx, workspaceId, tableId);
  const now = nowIso();
  const rec: TableExportRecord = {
    id: newExportId(), tableId: t.id, workspaceId, userId, format, status: 'queued', rowsProcessed: 0, error: null,
    fileName: `${t.name}.${format}`, size: null, createdAt: now, updatedAt: now, completedAt: null,
  };
  await tx.tableExports.insert(rec);
  await audit({ action: 'table_export.created', resourceType: 'table_export', resourceId: rec.id, resourceName: t.name, metadata: { format, rows: t.rowCount } });
  return { rec, rows: t.rowCount };
}

/** Runs a recorded export: a small table in the request, a larger one queued. Returns the export as it then is. */
export async function runExport(io: { store: Store; jobs: TableJobs }, exportId: string, rows: number): Promise<TableExportRecord> {
  if (rows <= INLINE_EXPORT_ROWS) await io.jobs.runExport(exportId);
  else io.jobs.startExport(exportId);
  return (await io.store.tableExports.get(exportId))!;
}

/** Cancels a queued or processing export; returns it as it now is. */
export async function cancelExport(tx: Repositories, audit: Audit, e: TableExportRecord): Promise<TableExportRecord> {
  const ok = await tx.tableExports.transition(e.id, ['queued', 'processing'], 'canceled', { completedAt: nowIso() }, nowIso());
  if (!ok) throw new DomainError('conflict', `The export is ${(await tx.tableExports.get(e.id))!.status}; it can no longer be canceled.`);
  await audit({ action: 'table_export.canceled', resourceType: 'table_export', resourceId: e.id });
  return (await tx.tableExports.get(e.id))!;
}

function signDownload(key: Buffer, exportId: string, expires: number): string {
  return createHmac('sha256', key).update(`table-export-download\n${exportId}\n${expires}`).digest('base64url');
}

/** A signed download link of a completed export, good for an hour but never past the export's retention. */
export function downloadLink(key: Buffer, baseUrl: string, e: TableExportRecord, retentionMs: number) {
  if (e.status !== 'completed') throw new DomainError('conflict', `The export is ${e.status}; a download is available once it has completed.`, { status: e.status });
  // A link never outlives the export's file, which goes when its retention is over.
  const kept = Date.parse(e.completedAt ?? e.updatedAt) + retentionMs;
  if (kept <= Date.now()) throw domainNotFound('Export');
  const expires = Math.min(Date.now() + DOWNLOAD_TTL_MS, kept);
  const url = `${baseUrl}/transfers/tables/exports/${e.id}?expires=${expires}&signature=${signDownload(key, e.id, expires)}`;
  return { url, fileName: e.fileName, expiresAt: new Date(expires).toISOString() };
}

/** The file a download link names, after checking its signature and expiry. */
export async function downloadFile(
  io: { store: Store; jobs: TableJobs }, key: Buffer, exportId: string, expires: number, signature: string,
): Promise<{ path: string; export: TableExportRecord }> {
  const expected = Buffer.from(signDownload(key, exportId, expires));
  const given = Buffer.from(signature);
  if (expected.length !== given.length || !timingSafeEqual(expected, given)) throw new DomainError('forbidden', 'The download link signature is not valid.', { code: 'INVALID_SIGNATURE' });
  if (expires <= Date.now()) throw new DomainError('forbidden', 'The download link has expired.', { code: 'INVALID_SIGNATURE', reason: 'expired' });
  const e = await io.store.tableExports.get(exportId);
  if (!e || e.status !== 'completed') throw domainNotFound('Export');
  const path = io.jobs.exportPath(e.id, e.format);
  if (!fs.existsSync(path)) throw new DomainError('not_found', 'The export file is gone.');
  return { path, export: e };
}
