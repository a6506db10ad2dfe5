// The rules of workspace files that several operations share: folders that must exist, names that must be
// free, the storage quota, and how a file and its versions are recorded. Works on repositories inside the
// caller's transaction; failures are DomainErrors (src/domain/errors.ts), no HTTP here.
import type { LeaseSettings } from '../config.ts';
import { randomBytes } from 'node:crypto';
import type { Repositories, Store } from '../store/index.ts';
import type { Audit, Mutate } from '../domain/changes.ts';
import type { StoredFile, VersionSource } from '../store/files.ts';
import type { UploadSessionRecord } from '../store/file-uploads.ts';
import type { Workspace } from '../store/workspaces.ts';
import type { FileLimits } from '../config.ts';
import type { BlobInfo, BlobStore } from './blob-store.ts';
import { completeUpload } from './uploads.ts';
import { planLimits } from '../billing/plans.ts';
import { DomainError, domainNotFound, invalidInput } from '../domain/errors.ts';
import { MAX_FOLDERS_PER_TREE } from '../domain/folder-paths.ts';
import { FolderTree, FolderTreeError } from '../domain/folder-tree.ts';
import { folderDisplayName } from './names.ts';

export const newFileId = () => `wf_${randomBytes(18).toString('base64url')}`;
export const newUploadId = () => `upl_${randomBytes(18).toString('base64url')}`;

/**
 * A new upload session (not yet stored): one signed PUT up to the configured part size, multipart above it.
 * Files, knowledge documents and table imports all start their uploads here.
 */
export function newUploadSession(
  of: { workspaceId: string; userId: string; name: string; contentType: string; size: number; folderPath?: string },
  limits: Pick<FileLimits, 'uploadPartSize' | 'uploadSessionTtlMs'>,
  now = new Date(),
): UploadSessionRecord {
  const multipart = of.size > limits.uploadPartSize;
  return {
    id: newUploadId(),
    workspaceId: of.workspaceId,
    userId: of.userId,
    name: of.name,
    contentType: of.contentType,
    size: of.size,
    folderPath: of.folderPath ?? '/',
    partSize: multipart ? limits.uploadPartSize : Math.max(of.size, 1),
    partCount: multipart ? Math.ceil(of.size / limits.uploadPartSize) : 1,
    multipart,
    status: 'uploading',
    error: null,
    fileId: null,
    expiresAt: new Date(now.getTime() + limits.uploadSessionTtlMs).toISOString(),
    createdAt: now.toISOString(),
    updatedAt: now.toISOString(),
    leaseUntil: null,
  };
}

export interface Actor {
  id: string;
  email: string;
}

export async function actorOf(repos: Repositories, userId: string): Promise<Actor> {
  const user = await repos.users.get(userId);
  return { id: userId, email: user?.email ?? '' };
}

/** The file folder tree of a workspace (the shared folder-tree rules on the file kind; segments stay encoded). */
export const fileTree = (repos: Repositories) => new FolderTree(repos.fileFolders, folderDisplayName);

/** Maps a folder-tree failure to the answer file operations give. */
export function fileFolderError(err: FolderTreeError): DomainError {
  const path = String(err.details.path ?? '');
  switch (err.reason) {
    case 'TOO_LARGE':
      return new DomainError('too_large', `A workspace file tree may hold at most ${MAX_FOLDERS_PER_TREE} folders.`);
    case 'NOT_FOUND':
      return domainNotFound('Folder');
    case 'NOT_ARCHIVED':
      return domainNotFound('Archived folder');
    case 'EXISTS':
      return new DomainError('conflict', `A folder already exists at ${path}.`, { code: 'NAME_CONFLICT', path });
    case 'INTO_ITSELF':
      return invalidInput(['body', 'destinationPath'], 'A folder cannot be moved inside itself.');
    case 'NOT_EMPTY':
      return new DomainError('conflict', err.message, { code: 'FOLDER_NOT_EMPTY', ...err.details });
  }
}

/** Runs folder-tree work, turning its failures into the file operations' errors. */
export async function withFileTree<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    throw err instanceof FolderTreeError ? fileFolderError(err) : err;
  }
}

/**
 * The folder must exist (the root always does). With `toWriteInto`, a missing folder's answer says how to make it,
 * for the writes that do not make folders themselves.
 */
export async function requireFolder(repos: Repositories, workspaceId: string, path: string, options: { toWriteInto?: boolean } = {}): Promise<void> {
  try {
    await fileTree(repos).require(workspaceId, path);
  } catch (err) {
    if (!(err instanceof FolderTreeError)) throw err;
    if (options.toWriteInto && err.reason === 'NOT_FOUND') {
      throw new DomainError('not_found', `No folder at ${path}. Create it first with POST /api/v2/files/folders {"path": "${path}"} (\`sim files mkdir\`).`, { path });
    }
    throw fileFolderError(err);
  }
}

export async function assertTreeSize(repos: Repositories, workspaceId: string, adding = 0): Promise<void> {
  await withFileTree(() => fileTree(repos).assertSize(workspaceId, adding));
}

/** Creates `path` and any missing ancestors; returns how many folders were created. */
export async function ensureFolderChain(repos: Repositories, workspaceId: string, path: string, now: string): Promise<number> {
  return (await withFileTree(() => fileTree(repos).ensure(workspaceId, path, now))).length;
}

export async function assertNameFree(repos: Repositories, workspaceId: string, folderPath: string, name: string, exceptFileId?: string): Promise<void> {
  const existing = await repos.files.activeByName(workspaceId, folderPath, name);
  if (existing && existing.id !== exceptFileId) {
    throw new DomainError('conflict', `A file named "${name}" already exists in ${folderPath}.`, { code: 'NAME_CONFLICT', fileId: existing.id });
  }
}

/** Refuses a file over the plan's size limit, or bytes the workspace's quota has no room for. */
export async function assertStorageFits(
  repos: Repositories,
  workspace: Workspace,
  limits: FileLimits,
  fileSize: number,
  addedBytes = fileSize,
): Promise<void> {
  const plan = planLimits(workspace.plan, limits);
  if (fileSize > plan.maxFileBytes) {
    throw new DomainError('too_large', `A file may be at most ${plan.maxFileBytes} bytes on the ${workspace.plan} plan.`, {
      code: 'FILE_TOO_LARGE',
      limit: plan.maxFileBytes,
    });
  }
  const now = new Date().toISOString();
  const used = (await repos.files.storageBytes(workspace.id)) + (await repos.fileUploads.reservedBytes(workspace.id, now));
  if (used + addedBytes > plan.storageBytes) {
    throw new DomainError('too_large', `The workspace's storage quota (${plan.storageBytes} bytes on the ${workspace.plan} plan) has no room for ${addedBytes} more bytes.`, {
      code: 'STORAGE_QUOTA_EXCEEDED',
      quota: plan.storageBytes,
      used,
    });
  }
}

/** Records a new file as version 1 of its content. */
export async function insertNewFile(
  repos: Repositories,
  input: { workspaceId: string; folderPath: string; name: string; contentType: string; blob: BlobInfo; actor: Actor; source: VersionSource; now: string },
): Promise<StoredFile> {
  const file: StoredFile = {
    id: newFileId(),
    workspaceId: input.workspaceId,
    folderPath: input.folderPath,
    name: input.name,
    contentType: input.contentType,
    size: input.blob.size,
    blobKey: input.blob.key,
    currentVersion: 1,
    uploadedBy: input.actor.id,
    uploadedByEmail: input.actor.email,
    uploadedAt: input.now,
    updatedAt: input.now,
    deletedAt: null,
    archiveBatch: null,
  };
  await repos.files.insert(file);
  await repos.files.insertVersion({
    fileId: file.id,
    version: 1,
    blobKey: file.blobKey,
    size: file.size,
    contentType: file.contentType,
    source: input.source,
    authorId: input.actor.id,
    authorEmail: input.actor.email,
    restoredFromVersion: null,
    createdAt: input.now,
    updatedAt: input.now,
    supersededAt: null,
  });
  return file;
}

/** Makes `blob` the file's content as a new version; the previous version is marked superseded. */
export async function appendVersion(
  repos: Repositories,
  file: StoredFile,
  input: { blob: BlobInfo; contentType?: string; source: VersionSource; actor: Actor; restoredFrom?: number; now: string },
): Promise<StoredFile> {
  const version = (await repos.files.latestVersionNumber(file.id)) + 1;
  const contentType = input.contentType ?? file.contentType;
  await repos.files.supersedeVersion(file.id, file.currentVersion, input.now);
  await repos.files.insertVersion({
    fileId: file.id,
    version,
    blobKey: input.blob.key,
    size: input.blob.size,
    contentType,
    source: input.source,
    authorId: input.actor.id,
    authorEmail: input.actor.email,
    restoredFromVersion: input.restoredFrom ?? null,
    createdAt: input.now,
    updatedAt: input.now,
    supersededAt: null,
  });
  const fields = { size: input.blob.size, blobKey: input.blob.key, contentType, currentVersion: version, updatedAt: input.now };
  await repos.files.update(file.id, fields);
  return { ...file, ...fields };
}

/** A file of this workspace by id, active unless `archived` is allowed; otherwise a 404 that reveals nothing. */
export async function loadFile(repos: Repositories, workspaceId: string, fileId: string, options: { archived?: 'only' | 'also' } = {}): Promise<StoredFile> {
  const file = await repos.files.get(fileId);
  if (!file || file.workspaceId !== workspaceId) throw domainNotFound('File');
  if (file.deletedAt && !options.archived) throw domainNotFound('File');
  if (!file.deletedAt && options.archived === 'only') throw domainNotFound('Archived file');
  return file;
}

/**
 * Opens an upload session for a new file. The name must be free and the quota must have room now; a missing
 * folder is made only when the upload completes, so an abandoned session leaves no empty folder behind.
 */
export async function openFileUpload(tx: Repositories, audit: Audit, workspace: Workspace, limits: FileLimits, session: UploadSessionRecord): Promise<void> {
  await assertNameFree(tx, workspace.id, session.folderPath, session.name);
  await assertStorageFits(tx, workspace, limits, session.size);
  await tx.fileUploads.insert(session);
  audit({ action: 'file_upload.created', resourceType: 'file_upload', resourceId: session.id, resourceName: session.name, metadata: { size: session.size, folderPath: session.folderPath, multipart: session.multipart } });
}

/** Completes a workspace file upload (./uploads.ts): its bytes become version 1 of a new file in the session's folder. */
export async function completeFileUploadSession(io: { store: Store; blobs: BlobStore; mutate: Mutate; leases: LeaseSettings }, sessionId: string): Promise<void> {
  await completeUpload(
    io,
    sessionId,
    async (tx, audit, blob, session) => {
      const now = new Date().toISOString();
      const foldersCreated = await ensureFolderChain(tx, session.workspaceId, session.folderPath, now);
      await assertNameFree(tx, session.workspaceId, session.folderPath, session.name);
      const actor = await actorOf(tx, session.userId);
      const file = await insertNewFile(tx, {
        workspaceId: session.workspaceId, folderPath: session.folderPath, name: session.name, contentType: session.contentType, blob, actor, source: 'upload', now,
      });
      await tx.fileUploads.setStatus(session.id, 'completed', now, { fileId: file.id });
      audit({ action: 'file.uploaded', resourceType: 'file', resourceId: file.id, resourceName: file.name, metadata: { size: file.size, uploadId: session.id, folderPath: file.folderPath, foldersCreated } });
    },
    'The file could not be registered.',
  );
}

/** Archives files (soft delete); `batch` ties them to the folder delete that archived them, for its restore. */
export async function archiveFiles(tx: Repositories, files: StoredFile[], now: string, batch: string | null): Promise<void> {
  for (const f of files) await tx.files.update(f.id, { deletedAt: now, archiveBatch: batch, updatedAt: now });
}

/** The active files of the workspace with these ids; any missing one is a 404 listing the first 50 missing. */
export async function activeFiles(repos: Repositories, workspaceId: string, ids: readonly string[], field: string): Promise<StoredFile[]> {
  const unique = [...new Set(ids)];
  const found = (await repos.files.getMany(workspaceId, unique)).filter((f) => !f.deletedAt);
  if (found.length !== unique.length) {
    const have = new Set(found.map((f) => f.id));
    const missing = unique.filter((id) => !have.has(id));
    throw new DomainError('not_found', `${missing.length} of the files were not found.`, { field, missing: missing.slice(0, 50) });
  }
  return found;
}

/** Moves files into an existing folder; names must stay unique there (409). Returns how many moved. */
export async function moveFiles(tx: Repositories, audit: Audit, workspaceId: string, fileIds: readonly string[], target: string): Promise<number> {
  await requireFolder(tx, workspaceId, target, { toWriteInto: true });
  const files = await activeFiles(tx, workspaceId, fileIds, 'fileIds');
  const moving = new Set(files.map((f) => f.id));
  const names = new Set<string>();
  for (const f of files) {
    if (names.has(f.name)) throw new DomainError('conflict', `Two of the files are named "${f.name}"; they cannot share a folder.`, { code: 'NAME_CONFLICT', name: f.name });
    names.add(f.name);
    const there = await tx.files.activeByName(workspaceId, target, f.name);
    if (there && !moving.has(there.id)) throw new DomainError('conflict', `A file named "${f.name}" already exists in ${target}.`, { code: 'NAME_CONFLICT', name: f.name });
  }
  const now = new Date().toISOString();
  // Park the files first so swapping names between folders cannot trip the uniqueness index midway.
  for (const f of files) await tx.files.update(f.id, { folderPath: `\u0000moving/${f.id}` });
  for (const f of files) await tx.files.update(f.id, { folderPath: target, updatedAt: now });
  audit({ action: 'file.moved', resourceType: 'file', metadata: { count: files.length, targetFolderPath: target, fileIds: files.map((f) => f.id) } });
  return files.length;
}
