// Files handlers: several files at once (unzip an archive, archive, move, download as zip, search content).
import { compileUserPattern, UserPatternError } from '../../domain/safe-regex.ts';
import type { Handler } from '../../../generated/handlers.ts';
import { ApiError, conflict, invalidField } from '../../http/errors.ts';
import { StreamBody } from '../../http/stream-body.ts';
import type { StoredFile } from '../../store/files.ts';
import { folderPathOf, mediaTypeFor, folderDisplayName } from '../../files/names.ts';
import { actorOf, assertStorageFits, ensureFolderChain, insertNewFile, loadFile, requireFolder, activeFiles, moveFiles } from '../../files/service.ts';
import { readPrefix, textKind } from '../../files/text.ts';
import { WorkerOverrun } from '../../content/index.ts';
import { archiveManyFiles } from '../../files/file-changes.ts';
import { zipStream } from '../../files/zip.ts';
import { unzipArchive, type UnzipFailure } from '../../files/unzip.ts';
import { JobWorkerError } from '../../workers/job-worker.ts';
import { MAX_BULK_DOWNLOAD_FILES, MAX_SEARCH_FILE_BYTES, checked, flag, nowIso, workspaceOf } from './shared.ts';
import { assertAccess } from '../../access-control/policy.ts';

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


// ───────────────────────────── several files at once ─────────────────────────────



export const bulkDeleteFiles: Handler<'bulkDeleteFiles'> = async ({ body, ctx }) => {
  const workspaceId = workspaceOf(ctx).id;
  const count = await ctx.mutate((tx, audit) => archiveManyFiles(tx, audit, workspaceId, body.fileIds));
  return { status: 200, body: { data: { deletedItems: { files: count } } } };
};

export const moveFileItems: Handler<'moveFileItems'> = async ({ body, ctx }) => {
  const workspaceId = workspaceOf(ctx).id;
  const target = checked('body', () => folderPathOf(body.targetFolderPath, 'targetFolderPath'));
  const count = await ctx.mutate((tx, audit) => moveFiles(tx, audit, workspaceId, body.fileIds, target));
  return { status: 200, body: { data: { movedItems: { files: count } } } };
};

export const bulkDownloadFiles: Handler<'bulkDownloadFiles'> = async ({ query, ctx }) => {
  const workspaceId = workspaceOf(ctx).id;
  const store = ctx.services.store;
  await assertAccess(store, { workspaceId, userId: ctx.principal.userId }, { kind: 'feature', key: 'disableBulkFileDownload', action: 'Downloading files in bulk' });
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

