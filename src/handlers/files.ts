// Handlers for the Files operations: upload sessions, files, versions, shares and folders. The rules shared
// by several of them live in src/files/. The signed transfer URL and share links are public operations here too.
import { compileUserPattern, UserPatternError } from '../domain/safe-regex.ts';
import { Readable } from 'node:stream';
import { randomUUID } from 'node:crypto';
import type { Handler } from '../../generated/handlers.ts';
import type { RequestContext } from '../http/context.ts';
import { ApiError, conflict, forbidden, invalidField, notFound } from '../http/errors.ts';
import { readCursor, toPage } from '../http/pagination.ts';
import { StreamBody } from '../http/stream-body.ts';
import type { StoredFile } from '../store/files.ts';
import type { UploadSessionRecord } from '../store/file-uploads.ts';
import type { Repositories } from '../store/index.ts';
import { BlobSizeError, type BlobInfo } from '../files/blob-store.ts';
import { checkFileName, essence, folderPathOf, mediaTypeFor, NameError, vfsPath } from '../files/names.ts';
import { checkSharePassword, checkTransfer, checkUploadToken, hashSharePassword, newShareToken, signTransfer, signUploadToken } from '../files/tokens.ts';
import { fileRevision, fileView, folderView, sessionView, shareView, versionView } from '../files/views.ts';
import { hashShareToken, openShareToken, sealShareToken } from '../files/share-tokens.ts';
import type { FileShareRecord } from '../store/file-shares.ts';
import {
  actorOf, appendVersion, assertNameFree, assertStorageFits, ensureFolderChain, fileTree, insertNewFile, loadFile, newUploadSession, requireFolder, withFileTree,
} from '../files/service.ts';
import { serveContent } from '../files/download.ts';
import { readPrefix, selectLines, textKind } from '../files/text.ts';
import { WorkerOverrun } from '../content/index.ts';
import { applyEdit, EditError, lineCount, type TextEdit } from '../files/edit.ts';
import { zipStream } from '../files/zip.ts';
import { unzipArchive, type UnzipFailure } from '../files/unzip.ts';
import { JobWorkerError } from '../workers/job-worker.ts';
import { folderDisplayName } from '../files/names.ts';
import { isWithin, MAX_FOLDERS_PER_TREE, parentFolderPath } from '../domain/folder-paths.ts';
import { releaseTransferBuffers } from '../http/transfer-memory.ts';

/** Inline content (createFile, updateFileContent) is capped; larger content goes through an upload session. */
const MAX_INLINE_BYTES = 50 * 1024 * 1024;
const MAX_BULK_DOWNLOAD_FILES = 100;
const MAX_SEARCH_FILE_BYTES = 5 * 1024 * 1024;

const workspaceOf = (ctx: RequestContext) => ctx.workspace!.workspace;
const baseUrl = (ctx: RequestContext) => ctx.services.config.baseUrl;
const nowIso = () => new Date().toISOString();
const TRUE_FLAGS = new Set(['true', '1', 'yes', 'on', 'y', 'enabled']);
const flag = (v: string | undefined, fallback: boolean) => (v === undefined ? fallback : TRUE_FLAGS.has(v));

/** Name and path rules the schema cannot state, reported as a 400 on the field that broke them. */
function checked<T>(where: 'body' | 'query', fn: () => T): T {
  try {
    return fn();
  } catch (err) {
    if (err instanceof NameError) throw invalidField([where, err.field], err.message);
    throw err;
  }
}

function decodeContent(content: string, encoding: 'utf-8' | 'base64' | undefined): Buffer {
  let bytes: Buffer;
  if (encoding === 'base64') {
    const compact = content.replace(/\s+/g, '');
    if (!/^[A-Za-z0-9+/]*={0,2}$/.test(compact) || compact.length % 4 === 1) throw invalidField(['body', 'content'], 'content is not valid base64.');
    bytes = Buffer.from(compact, 'base64');
  } else bytes = Buffer.from(content, 'utf8');
  if (bytes.length > MAX_INLINE_BYTES) {
    throw new ApiError('PAYLOAD_TOO_LARGE', `Inline content may be at most ${MAX_INLINE_BYTES} bytes; use an upload session for larger files.`);
  }
  return bytes;
}

const writeBuffer = (ctx: RequestContext, bytes: Buffer) => ctx.services.blobs.write(Readable.from([bytes]), { expectedSize: bytes.length });

async function readWholeText(ctx: RequestContext, blobKey: string, size: number): Promise<string> {
  if (size > ctx.services.config.files.textMaxBytes) {
    throw new ApiError('PAYLOAD_TOO_LARGE', `Only files up to ${ctx.services.config.files.textMaxBytes} bytes can be edited as text.`);
  }
  return (await readPrefix(ctx.services.blobs.read(blobKey), size)).toString('utf8');
}

function checkRevision(file: StoredFile, expected: string | undefined): void {
  if (expected !== undefined && expected !== fileRevision(file)) {
    throw conflict('The file changed since that revision; read it again and retry.', { code: 'REVISION_MISMATCH', revision: fileRevision(file) });
  }
}

// ───────────────────────────── upload sessions ─────────────────────────────

function partUrl(ctx: RequestContext, session: UploadSessionRecord, partNumber: number): string {
  const expires = Date.parse(session.expiresAt);
  const signature = signTransfer(ctx.services.signingKey, session.id, partNumber, expires);
  return `${baseUrl(ctx)}/transfers/files/${session.id}/parts/${partNumber}?expires=${expires}&signature=${signature}`;
}

/** The session named in the path, after checking the `upload-token` header belongs to it. */
async function sessionFor(ctx: RequestContext, uploadId: string, token: string): Promise<UploadSessionRecord> {
  const workspaceId = workspaceOf(ctx).id;
  const session = await ctx.services.store.fileUploads.get(uploadId);
  if (!session || session.workspaceId !== workspaceId) throw notFound('Upload session');
  const problem = checkUploadToken(ctx.services.signingKey, token, uploadId, workspaceId);
  if (problem) {
    throw forbidden(
      problem === 'expired' ? 'The upload token has expired.' : problem === 'foreign' ? 'The upload token belongs to another upload session.' : 'The upload token is not valid.',
      { code: 'INVALID_UPLOAD_TOKEN', reason: problem },
    );
  }
  return session;
}

const isExpired = (s: UploadSessionRecord) => Date.parse(s.expiresAt) <= Date.now();

async function sessionBody(ctx: RequestContext, session: UploadSessionRecord) {
  const file = session.fileId ? ((await ctx.services.store.files.get(session.fileId)) ?? null) : null;
  return { data: sessionView(baseUrl(ctx), session, file) };
}

export const createFileUpload: Handler<'createFileUpload'> = async ({ body, ctx }) => {
  const workspace = workspaceOf(ctx);
  const name = checked('body', () => checkFileName(body.name));
  const folderPath = checked('body', () => folderPathOf(body.folderPath));
  const limits = ctx.services.config.files;
  const session = newUploadSession({ workspaceId: workspace.id, userId: ctx.principal.userId, name, contentType: body.contentType, size: body.size, folderPath }, limits);
  const { multipart } = session;

  // A missing folder is made when the upload completes (like every write that names a folder), so an abandoned
  // session leaves no empty folder behind.
  await ctx.mutate(async (tx, audit) => {
    await assertNameFree(tx, workspace.id, folderPath, name);
    await assertStorageFits(tx, workspace, limits, body.size);
    await tx.fileUploads.insert(session);
    audit({ action: 'file_upload.created', resourceType: 'file_upload', resourceId: session.id, resourceName: name, metadata: { size: body.size, folderPath, multipart } });
  });
  const uploadToken = signUploadToken(ctx.services.signingKey, { uploadId: session.id, workspaceId: workspace.id, expiresAt: Date.parse(session.expiresAt) });
  const transfer = multipart
    ? { method: 'multipart' as const, partSize: session.partSize, partCount: session.partCount }
    : { method: 'put' as const, url: partUrl(ctx, session, 1), headers: { 'Content-Type': session.contentType }, expiresAt: session.expiresAt };
  return { status: 200, body: { data: { session: sessionView(baseUrl(ctx), session, null), uploadToken, transfer } } };
};

export const getFileUpload: Handler<'getFileUpload'> = async ({ params, headers, ctx }) => {
  const session = await sessionFor(ctx, params.uploadId, headers['upload-token']);
  return { status: 200, body: await sessionBody(ctx, session) };
};

export const createFileUploadPartUrls: Handler<'createFileUploadPartUrls'> = async ({ params, headers, body, ctx }) => {
  const session = await sessionFor(ctx, params.uploadId, headers['upload-token']);
  if (session.status !== 'uploading' || isExpired(session)) throw conflict(`The upload session is ${isExpired(session) ? 'expired' : session.status}.`);
  const bad = body.partNumbers.findIndex((n) => n > session.partCount);
  if (bad !== -1) throw invalidField(['body', 'partNumbers', bad], `Part numbers run from 1 to ${session.partCount} for this upload.`);
  const parts = [...new Set(body.partNumbers)].map((partNumber) => ({
    partNumber,
    url: partUrl(ctx, session, partNumber),
    headers: { 'Content-Type': session.contentType },
    expiresAt: session.expiresAt,
  }));
  return { status: 200, body: { data: { parts } } };
};

export const abortFileUpload: Handler<'abortFileUpload'> = async ({ params, headers, ctx }) => {
  const session = await sessionFor(ctx, params.uploadId, headers['upload-token']);
  if (session.status === 'completed') throw conflict('The upload is already completed; delete the file instead.');
  if (session.status !== 'aborted') {
    await ctx.mutate(async (tx, audit) => {
      await tx.fileUploads.setStatus(session.id, 'aborted', nowIso());
      audit({ action: 'file_upload.aborted', resourceType: 'file_upload', resourceId: session.id, resourceName: session.name });
    });
    await ctx.services.blobs.discardUpload(session.id);
  }
  return { status: 200, body: await sessionBody(ctx, (await ctx.services.store.fileUploads.get(session.id))!) };
};

export const completeFileUpload: Handler<'completeFileUpload'> = async ({ params, headers, ctx }) => {
  const workspace = workspaceOf(ctx);
  const session = await sessionFor(ctx, params.uploadId, headers['upload-token']);
  const parts = await ctx.services.store.fileUploads.parts(session.id);
  // Claim the session, so two completions cannot both go ahead.
  await ctx.services.store.transaction(async (tx) => {
    const current = (await tx.fileUploads.get(session.id))!;
    if (current.status === 'completed') throw conflict('The upload is already completed.', { code: 'UPLOAD_COMPLETED' });
    if (current.status !== 'uploading') throw conflict(`The upload session is ${current.status}.`, { code: 'UPLOAD_NOT_ACTIVE', status: current.status });
    if (isExpired(current)) throw conflict('The upload session is expired.', { code: 'UPLOAD_NOT_ACTIVE', status: 'expired' });
    const missing: number[] = [];
    for (let n = 1; n <= current.partCount; n++) {
      const expected = n < current.partCount ? current.partSize : current.size - (current.partCount - 1) * current.partSize;
      const got = parts.find((p) => p.partNumber === n);
      if (expected > 0 && (!got || got.size !== expected)) missing.push(n);
    }
    if (missing.length > 0) {
      throw conflict(`Not every byte has arrived: ${missing.length} of ${current.partCount} parts are missing.`, {
        code: 'UPLOAD_INCOMPLETE',
        missingParts: missing.slice(0, 100),
      });
    }
    await tx.fileUploads.setStatus(session.id, 'completing', nowIso());
  });
  let blob: BlobInfo;
  try {
    blob = await ctx.services.blobs.commitUpload(session.id, session.size);
  } catch (err) {
    const message = err instanceof BlobSizeError ? err.message : 'The uploaded bytes could not be stored.';
    await ctx.services.store.transaction((tx) => tx.fileUploads.setStatus(session.id, 'failed', nowIso(), { error: message }));
    if (err instanceof BlobSizeError) throw conflict(message, { code: 'UPLOAD_INCOMPLETE' });
    throw err;
  }
  try {
    await ctx.mutate(async (tx, audit) => {
      const now = nowIso();
      const foldersCreated = await ensureFolderChain(tx, workspace.id, session.folderPath, now);
      await assertNameFree(tx, workspace.id, session.folderPath, session.name);
      const actor = await actorOf(tx, session.userId);
      const file = await insertNewFile(tx, {
        workspaceId: workspace.id, folderPath: session.folderPath, name: session.name, contentType: session.contentType, blob, actor, source: 'upload', now,
      });
      await tx.fileUploads.setStatus(session.id, 'completed', now, { fileId: file.id });
      audit({ action: 'file.uploaded', resourceType: 'file', resourceId: file.id, resourceName: file.name, metadata: { size: file.size, uploadId: session.id, folderPath: file.folderPath, foldersCreated } });
    });
  } catch (err) {
    const message = err instanceof ApiError ? err.message : 'The file could not be registered.';
    await ctx.services.store.transaction((tx) => tx.fileUploads.setStatus(session.id, 'failed', nowIso(), { error: message }));
    await ctx.services.blobs.discardUpload(session.id);
    throw err;
  }
  // The file is recorded: the commit's temporary name (kept for crash recovery) can go.
  await ctx.services.blobs.discardUpload(session.id);
  return { status: 200, body: await sessionBody(ctx, (await ctx.services.store.fileUploads.get(session.id))!) };
};

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

async function archiveFiles(tx: Repositories, files: StoredFile[], now: string, batch: string | null): Promise<void> {
  for (const f of files) await tx.files.update(f.id, { deletedAt: now, archiveBatch: batch, updatedAt: now });
}

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

/** Resolves an id, or the `files/<folder>/<name>` path form Read File Text also accepts. */
async function fileByIdOrPath(ctx: RequestContext, idOrPath: string): Promise<StoredFile> {
  const workspaceId = workspaceOf(ctx).id;
  if (!idOrPath.startsWith('files/')) return loadFile(ctx.services.store, workspaceId, idOrPath);
  const rest = idOrPath.slice('files/'.length);
  const cut = rest.lastIndexOf('/');
  const folder = cut === -1 ? '/' : checked('query', () => folderPathOf(rest.slice(0, cut)));
  const file = await ctx.services.store.files.activeByName(workspaceId, folder, rest.slice(cut + 1));
  if (!file) throw notFound('File');
  return file;
}

async function textOf(
  ctx: RequestContext,
  item: { fileId: string; name: string; folderPath: string; blobKey: string; size: number; contentType: string },
  query: { maxBytes?: number; offset?: number; limit?: number },
) {
  const limit = Math.min(query.maxBytes ?? Number.MAX_SAFE_INTEGER, ctx.services.config.files.textMaxBytes);
  const toRead = Math.min(limit, item.size);
  const bytes = await readPrefix(ctx.services.blobs.read(item.blobKey), toRead);
  const complete = toRead === item.size;
  const extracted = await ctx.services.content.fileText(textKind(item.contentType, item.name), bytes, complete);
  const selected = selectLines(extracted.text, query.offset, query.limit, complete);
  return {
    fileId: item.fileId,
    name: item.name,
    path: vfsPath(item.folderPath, item.name),
    type: item.contentType,
    text: selected.text,
    truncated: !complete,
    degraded: extracted.degraded,
    degradedReason: extracted.degradedReason,
    charCount: selected.text.length,
    byteCount: bytes.length,
    ...(selected.lineRange ? { lineRange: selected.lineRange } : {}),
  };
}

export const readFileText: Handler<'readFileText'> = async ({ params, query, ctx }) => {
  const file = await fileByIdOrPath(ctx, params.fileId);
  return { status: 200, body: { data: await textOf(ctx, { ...file, fileId: file.id }, query) } };
};

/** An unzip's failure as the documented error: the archive's limits (and the job's budgets) are 413, its defects 400. */
function unzipError(err: JobWorkerError): ApiError {
  switch (err.reason as UnzipFailure | 'timeout' | 'memory' | 'crash' | null) {
    case 'too_large':
    case 'too_many_entries':
    case 'timeout':
    case 'memory':
      return new ApiError('PAYLOAD_TOO_LARGE', err.message, { code: 'ZIP_REFUSED', reason: err.reason });
    case 'not_a_zip':
    case 'unsafe_path':
    case 'bad_name':
    case 'encrypted':
    case 'not_extracted':
      return invalidField(['params', 'fileId'], err.message, 'zip_refused');
    default:
      return new ApiError('INTERNAL_ERROR', err.message);
  }
}

export const unzipFile: Handler<'unzipFile'> = async ({ params, ctx }) => {
  const workspace = workspaceOf(ctx);
  const limits = ctx.services.config.files;
  const archive = await loadFile(ctx.services.store, workspace.id, params.fileId);
  const stem = archive.name.replace(/\.zip$/i, '') || archive.name;
  const target = archive.folderPath === '/' ? `/${encodeURIComponent(stem)}` : `${archive.folderPath}/${encodeURIComponent(stem)}`;
  if (await ctx.services.store.fileFolders.getActive(workspace.id, target)) {
    throw conflict(`A folder named "${stem}" already exists beside the archive.`, { code: 'NAME_CONFLICT', path: target });
  }
  // The archive is read, checked and inflated into blobs in a worker thread; only then are folders and files
  // recorded, all in one transaction. If anything fails (a refusal, the time budget, the worker's heap), no row
  // was written and the blobs it wrote are left for the purge job.
  const unzipped = await unzipArchive(ctx.services.blobs, archive, limits, (plan) => assertStorageFits(ctx.services.store, workspace, limits, 0, plan.totalBytes)).catch(
    (err: unknown) => {
      throw err instanceof JobWorkerError ? unzipError(err) : err;
    },
  );
  const extracted = unzipped.entries;
  let skipped = unzipped.skipped;
  const seen = new Set<string>();
  await ctx.mutate(async (tx, audit) => {
    const now = nowIso();
    const actor = await actorOf(tx, ctx.principal.userId);
    await ensureFolderChain(tx, workspace.id, target, now);
    for (const e of extracted) {
      const folder = [target, ...e.folders.map((s) => encodeURIComponent(s))].join('/');
      const key = `${folder}/${e.name}`;
      if (seen.has(key)) {
        skipped++; // a name repeated inside the archive: the first one wins
        continue;
      }
      seen.add(key);
      await ensureFolderChain(tx, workspace.id, folder, now);
      await insertNewFile(tx, { workspaceId: workspace.id, folderPath: folder, name: e.name, contentType: mediaTypeFor(e.name), blob: e.blob, actor, source: 'api', now });
    }
    await assertStorageFits(tx, workspace, limits, 0, 0);
    audit({ action: 'file.unzipped', resourceType: 'file', resourceId: archive.id, resourceName: archive.name, metadata: { folderPath: target, files: seen.size, skipped } });
  });
  return { status: 200, body: { data: { folderPath: target, extractedFileCount: seen.size, skippedFileCount: skipped } } };
};

// ───────────────────────────── sharing ─────────────────────────────

/** The share as members see it: its link rebuilt from the sealed token (only a hash and the sealed copy are stored). */
const viewOfShare = (ctx: RequestContext, share: FileShareRecord) => shareView(baseUrl(ctx), share, openShareToken(ctx.services.secrets, share));

export const getFileShare: Handler<'getFileShare'> = async ({ params, ctx }) => {
  const file = await loadFile(ctx.services.store, workspaceOf(ctx).id, params.fileId);
  const share = await ctx.services.store.fileShares.forFile(file.id);
  return { status: 200, body: { data: share ? viewOfShare(ctx, share) : null } };
};

export const upsertFileShare: Handler<'upsertFileShare'> = async ({ params, body, ctx }) => {
  const workspaceId = workspaceOf(ctx).id;
  const share = await ctx.mutate(async (tx, audit) => {
    const file = await loadFile(tx, workspaceId, params.fileId);
    const existing = await tx.fileShares.forFile(file.id);
    const now = nowIso();
    const authType = body.authType ?? existing?.authType ?? 'public';
    let passwordHash = body.password !== undefined ? hashSharePassword(body.password) : (existing?.passwordHash ?? null);
    let allowedEmails = body.allowedEmails ?? existing?.allowedEmails ?? [];
    if (body.isActive) {
      // Enabling rewrites the credentials the chosen mode does not use.
      if (authType === 'public') [passwordHash, allowedEmails] = [null, []];
      if (authType === 'password') {
        allowedEmails = [];
        if (!passwordHash) throw invalidField(['body', 'password'], 'A password share needs a password.');
      }
      if (authType === 'email' || authType === 'sso') {
        passwordHash = null;
        if (allowedEmails.length === 0) throw invalidField(['body', 'allowedEmails'], `An ${authType} share needs at least one allowed address.`);
      }
    }
    const id = existing?.id ?? randomUUID();
    const next: FileShareRecord = {
      id,
      fileId: file.id,
      workspaceId,
      ...(existing ? { tokenHash: existing.tokenHash, tokenSealed: existing.tokenSealed } : sealShareToken(ctx.services.secrets, id, newShareToken())),
      isActive: body.isActive,
      authType,
      passwordHash,
      allowedEmails,
      createdAt: existing?.createdAt ?? now,
      updatedAt: now,
    };
    await tx.fileShares.upsert(next);
    audit({ action: body.isActive ? 'file.share_enabled' : 'file.share_disabled', resourceType: 'file', resourceId: file.id, resourceName: file.name, metadata: { authType } });
    return next;
  });
  return { status: 200, body: { data: viewOfShare(ctx, share) } };
};

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

// ───────────────────────────── several files at once ─────────────────────────────

async function activeFiles(tx: Repositories, workspaceId: string, ids: readonly string[], field: string): Promise<StoredFile[]> {
  const unique = [...new Set(ids)];
  const found = (await tx.files.getMany(workspaceId, unique)).filter((f) => !f.deletedAt);
  if (found.length !== unique.length) {
    const have = new Set(found.map((f) => f.id));
    const missing = unique.filter((id) => !have.has(id));
    throw new ApiError('NOT_FOUND', `${missing.length} of the files were not found.`, { field, missing: missing.slice(0, 50) });
  }
  return found;
}

export const bulkDeleteFiles: Handler<'bulkDeleteFiles'> = async ({ body, ctx }) => {
  const workspaceId = workspaceOf(ctx).id;
  const count = await ctx.mutate(async (tx, audit) => {
    const files = await activeFiles(tx, workspaceId, body.fileIds, 'fileIds');
    await archiveFiles(tx, files, nowIso(), null);
    audit({ action: 'file.bulk_deleted', resourceType: 'file', metadata: { count: files.length, fileIds: files.map((f) => f.id) } });
    return files.length;
  });
  return { status: 200, body: { data: { deletedItems: { files: count } } } };
};

export const moveFileItems: Handler<'moveFileItems'> = async ({ body, ctx }) => {
  const workspaceId = workspaceOf(ctx).id;
  const target = checked('body', () => folderPathOf(body.targetFolderPath, 'targetFolderPath'));
  const count = await ctx.mutate(async (tx, audit) => {
    await requireFolder(tx, workspaceId, target, { toWriteInto: true });
    const files = await activeFiles(tx, workspaceId, body.fileIds, 'fileIds');
    const moving = new Set(files.map((f) => f.id));
    const names = new Set<string>();
    for (const f of files) {
      if (names.has(f.name)) throw conflict(`Two of the files are named "${f.name}"; they cannot share a folder.`, { code: 'NAME_CONFLICT', name: f.name });
      names.add(f.name);
      const there = await tx.files.activeByName(workspaceId, target, f.name);
      if (there && !moving.has(there.id)) throw conflict(`A file named "${f.name}" already exists in ${target}.`, { code: 'NAME_CONFLICT', name: f.name });
    }
    const now = nowIso();
    // Park the files first so swapping names between folders cannot trip the uniqueness index midway.
    for (const f of files) await tx.files.update(f.id, { folderPath: `\u0000moving/${f.id}` });
    for (const f of files) await tx.files.update(f.id, { folderPath: target, updatedAt: now });
    audit({ action: 'file.moved', resourceType: 'file', metadata: { count: files.length, targetFolderPath: target, fileIds: files.map((f) => f.id) } });
    return files.length;
  });
  return { status: 200, body: { data: { movedItems: { files: count } } } };
};

export const bulkDownloadFiles: Handler<'bulkDownloadFiles'> = async ({ query, ctx }) => {
  const workspaceId = workspaceOf(ctx).id;
  const store = ctx.services.store;
  const ids = query.fileIds ? query.fileIds.split(',').map((s) => s.trim()).filter(Boolean) : [];
  const folders = query.folderPaths ? query.folderPaths.split(',').map((s) => s.trim()).filter(Boolean) : [];
  if (ids.length === 0 && folders.length === 0) throw invalidField(['query'], 'Name some files (fileIds) or folders (folderPaths) to download.');
  if (ids.length > MAX_BULK_DOWNLOAD_FILES) throw invalidField(['query', 'fileIds'], `At most ${MAX_BULK_DOWNLOAD_FILES} files can be downloaded at once.`);
  if (folders.length > 100) throw invalidField(['query', 'folderPaths'], 'At most 100 folders can be named.');
  const entries: { file: StoredFile; path: string }[] = [];
  for (const f of await activeFiles(store, workspaceId, ids, 'fileIds')) entries.push({ file: f, path: f.name });
  for (const raw of folders) {
    const folder = checked('query', () => folderPathOf(raw, 'folderPaths'));
    await requireFolder(store, workspaceId, folder);
    const prefix = folder === '/' ? '' : folderDisplayName(folder) + '/';
    for (const f of await store.files.activeUnder(workspaceId, folder)) {
      const relative = f.folderPath.slice(folder === '/' ? 1 : folder.length + 1).split('/').filter(Boolean).map(folderDisplayName);
      entries.push({ file: f, path: prefix + [...relative, f.name].join('/') });
    }
  }
  const unique = new Map<string, (typeof entries)[number]>();
  for (const e of entries) if (![...unique.values()].some((u) => u.file.id === e.file.id)) unique.set(e.file.id, e);
  if (unique.size > MAX_BULK_DOWNLOAD_FILES) throw invalidField(['query'], `The selection holds ${unique.size} files; at most ${MAX_BULK_DOWNLOAD_FILES} can be downloaded at once.`);
  const used = new Set<string>();
  const items = [...unique.values()].map(({ file, path }) => {
    let name = path;
    for (let i = 2; used.has(name); i++) name = path.replace(/(\.[^./]*)?$/, (ext) => ` (${i})${ext}`);
    used.add(name);
    return { name, mtime: new Date(file.updatedAt), open: () => ctx.services.blobs.read(file.blobKey) };
  });
  return {
    status: 200,
    headers: { 'Content-Type': 'application/zip', 'Content-Disposition': 'attachment; filename="files.zip"' },
    body: new StreamBody(zipStream(items)),
  };
};

export const searchFileContent: Handler<'searchFileContent'> = async ({ query, ctx }) => {
  const workspaceId = workspaceOf(ctx).id;
  const store = ctx.services.store;
  try {
    // A linear-time engine: a user's pattern cannot make the search backtrack for ever. Compiled here to answer a
    // bad pattern with a 400; the content workers compile it again for the search itself.
    compileUserPattern(query.query, { literal: query.mode === 'exact' });
  } catch (err) {
    if (err instanceof UserPatternError) throw invalidField(['query', 'query'], err.message, err.problem === 'unsupported' ? 'unsupported_pattern' : 'invalid_pattern');
    throw err;
  }
  const deep = flag(query.includeSubfolders, true);
  const scopes = query.folderPaths ? query.folderPaths.split(',').map((s) => checked('query', () => folderPathOf(s.trim(), 'folderPaths'))) : ['/'];
  const maxResults = query.maxResults ?? 50;
  const candidates = new Map<string, StoredFile>();
  for (const scope of scopes) {
    for (const f of await store.files.activeUnder(workspaceId, scope)) if (deep || f.folderPath === scope) candidates.set(f.id, f);
  }
  const results: { fileId: string; lineNumber: number; text: string }[] = [];
  const status = { readyFiles: 0, pendingFiles: 0, failedFiles: 0, skippedFiles: 0, partialFiles: 0 };
  let truncated = false;
  for (const f of candidates.values()) {
    const kind = textKind(f.contentType, f.name);
    if (kind !== 'text' && kind !== 'html') {
      status.skippedFiles++;
      continue;
    }
    const complete = f.size <= MAX_SEARCH_FILE_BYTES;
    if (truncated) {
      status[complete ? 'readyFiles' : 'partialFiles']++;
      continue;
    }
    const bytes = await readPrefix(ctx.services.blobs.read(f.blobKey), Math.min(f.size, MAX_SEARCH_FILE_BYTES));
    let matches: { lineNumber: number; text: string }[];
    try {
      matches = await ctx.services.content.searchText(kind, bytes, complete, { pattern: query.query, literal: query.mode === 'exact', maxResults: maxResults - results.length });
    } catch (err) {
      // A file its worker could not search within the limits is counted as failed; the others still answer.
      if (!(err instanceof WorkerOverrun)) throw err;
      status.failedFiles++;
      continue;
    }
    status[complete ? 'readyFiles' : 'partialFiles']++;
    for (const m of matches) {
      if (results.length >= maxResults) {
        truncated = true;
        break;
      }
      results.push({ fileId: f.id, ...m });
    }
  }
  return { status: 200, body: { data: { results, count: results.length, truncated, complete: status.partialFiles === 0, indexStatus: status } } };
};

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
  const folder = await ctx.mutate(async (tx, audit) => {
    const tree = fileTree(tx);
    const { folder: leaf, created } = await withFileTree(async () => {
      await tree.assertSize(workspaceId);
      return tree.create(workspaceId, path, nowIso());
    });
    audit({ action: 'file_folder.created', resourceType: 'file_folder', resourceName: path, metadata: { path, created: created.length } });
    return leaf;
  });
  return { status: 200, body: { data: folderView(folder) } };
};

export const relocateFileFolder: Handler<'relocateFileFolder'> = async ({ body, ctx }) => {
  const workspaceId = workspaceOf(ctx).id;
  const from = checked('body', () => folderPathOf(body.path, 'path'));
  const dest = checked('body', () => folderPathOf(body.destinationPath, 'destinationPath'));
  if (from === '/') throw invalidField(['body', 'path'], 'The root folder cannot be moved.');
  const folder = await ctx.mutate(async (tx, audit) => {
    const tree = fileTree(tx);
    const { source, to } = await withFileTree(() => tree.planMove(workspaceId, from, dest));
    if (to === from) return source;
    const now = nowIso();
    const foldersMoved = 1 + (await tx.fileFolders.countBelow(workspaceId, from));
    const moved = await withFileTree(() => tree.move(workspaceId, from, to, now));
    const files = await tx.files.moveFolderPrefix(workspaceId, from, to, now);
    audit({ action: 'file_folder.moved', resourceType: 'file_folder', resourceName: to, metadata: { from, to, folders: foldersMoved, files } });
    return moved;
  });
  return { status: 200, body: { data: folderView(folder) } };
};

export const deleteFileFolder: Handler<'deleteFileFolder'> = async ({ query, ctx }) => {
  const workspaceId = workspaceOf(ctx).id;
  const path = checked('query', () => folderPathOf(query.path, 'path'));
  if (path === '/') throw invalidField(['query', 'path'], 'The root folder cannot be deleted.');
  const counts = await ctx.mutate(async (tx, audit) => {
    const tree = fileTree(tx);
    const { below } = await withFileTree(() => tree.inspect(workspaceId, path));
    const files = await tx.files.activeUnder(workspaceId, path);
    if ((below > 0 || files.length > 0) && !flag(query.recursive, false)) {
      throw conflict('The folder is not empty; delete it with recursive=true to archive what is inside.', { code: 'FOLDER_NOT_EMPTY', folders: below, files: files.length });
    }
    const now = nowIso();
    const { batch, folders } = await withFileTree(() => tree.archive(workspaceId, path, now));
    await archiveFiles(tx, files, now, batch);
    audit({ action: 'file_folder.deleted', resourceType: 'file_folder', resourceName: path, metadata: { path, folders, files: files.length } });
    return { folders, files: files.length };
  });
  return { status: 200, body: { data: { path, deleted: true as const, deletedItems: counts } } };
};

export const restoreFileFolder: Handler<'restoreFileFolder'> = async ({ body, ctx }) => {
  const workspaceId = workspaceOf(ctx).id;
  const path = checked('body', () => folderPathOf(body.path, 'path'));
  const result = await ctx.mutate(async (tx, audit) => {
    const now = nowIso();
    // Everything archived in the same delete comes back, under recreated parents if those are gone too.
    const restored = await withFileTree(() => fileTree(tx).restore(workspaceId, path, now, { archivedParent: 'recreate', onConflict: 'refuse' }));
    const files = restored.batch ? await tx.files.archivedInBatch(workspaceId, restored.batch) : [];
    for (const f of files) {
      await assertNameFree(tx, workspaceId, f.folderPath, f.name);
      await tx.files.update(f.id, { deletedAt: null, archiveBatch: null, updatedAt: now });
    }
    audit({ action: 'file_folder.restored', resourceType: 'file_folder', resourceName: path, metadata: { path, folders: restored.folders, files: files.length } });
    return { folder: restored.folder, restoredItems: { files: files.length, folders: restored.folders } };
  });
  return { status: 200, body: { data: { folder: folderView(result.folder), restoredItems: result.restoredItems } } };
};

/** PUT /transfers/files/{uploadId}/parts/{partNumber} — the signed transfer URL: raw bytes of one part. */
export const putFileUploadPart: Handler<'putFileUploadPart'> = async ({ params, query, body, ctx }) => {
  const { services } = ctx;
  const { uploadId, partNumber } = params;
  const problem = checkTransfer(services.signingKey, uploadId, partNumber, query.expires, query.signature);
  if (problem) {
    throw forbidden(problem === 'expired' ? 'The signed upload URL has expired.' : 'The upload URL signature is not valid.', { code: 'INVALID_SIGNATURE', reason: problem });
  }
  const session = await services.store.fileUploads.get(uploadId);
  if (!session) throw notFound('Upload session');
  if (session.status !== 'uploading') throw conflict(`The upload session is ${session.status}.`, { code: 'UPLOAD_NOT_ACTIVE', status: session.status });
  if (Date.parse(session.expiresAt) <= Date.now()) throw conflict('The upload session is expired.', { code: 'UPLOAD_NOT_ACTIVE', status: 'expired' });
  if (partNumber > session.partCount) throw invalidField(['path', 'partNumber'], `Part numbers run from 1 to ${session.partCount} for this upload.`);
  const sent = body.headers['content-type'];
  if (!sent || essence(sent) !== essence(session.contentType)) {
    throw new ApiError('UNSUPPORTED_MEDIA_TYPE', `Send the bytes with Content-Type ${session.contentType}, as the upload declared.`);
  }
  const expected = partNumber < session.partCount ? session.partSize : session.size - (session.partCount - 1) * session.partSize;
  const declared = body.headers['content-length'];
  if (declared !== undefined && Number(declared) !== expected) {
    throw invalidField(['headers', 'content-length'], `Part ${partNumber} must be exactly ${expected} bytes; ${declared} were declared.`);
  }
  try {
    await services.blobs.writeUploadPart(uploadId, (partNumber - 1) * session.partSize, expected, body);
  } catch (err) {
    if (err instanceof BlobSizeError) {
      throw invalidField(['body'], err.kind === 'too_many_bytes' ? `More bytes were sent than the ${err.expected} this part holds.` : err.message);
    }
    throw err;
  }
  releaseTransferBuffers(expected);
  // Recording a part is bookkeeping of an upload whose creation and completion are audited.
  await services.store.transaction((tx) => tx.fileUploads.recordPart(uploadId, partNumber, expected));
  return { status: 200, body: undefined, headers: { ETag: `"${uploadId}-${partNumber}"` } };
};

/** GET /shared/files/{token} — a shared file's content, without a key, while its share is active. */
export const getSharedFile: Handler<'getSharedFile'> = async ({ params, headers, ctx }) => {
  const { store, blobs } = ctx.services;
  const share = await store.fileShares.byTokenHash(hashShareToken(params.token));
  // An inactive share is indistinguishable from one that never existed.
  if (!share || !share.isActive) throw notFound('Shared file');
  const file = await store.files.get(share.fileId);
  if (!file || file.deletedAt) throw notFound('Shared file');
  if (share.authType === 'password') {
    const password = headers['x-share-password'];
    if (typeof password !== 'string' || !share.passwordHash || !checkSharePassword(password, share.passwordHash)) {
      throw new ApiError('UNAUTHORIZED', 'This shared file needs its password in the X-Share-Password header.', undefined, {
        'WWW-Authenticate': 'SharePassword realm="shared-file", header="X-Share-Password"',
      });
    }
  } else if (share.authType !== 'public') {
    throw forbidden('This shared file is limited to signed-in addresses, which this server cannot check for a link.', { code: 'SHARE_SIGN_IN_REQUIRED' });
  }
  const served = serveContent(blobs, { blobKey: file.blobKey, size: file.size, contentType: file.contentType, name: file.name }, headers.range);
  return { status: served.status as 200 | 206, body: new StreamBody(served.stream), headers: served.headers };
};
