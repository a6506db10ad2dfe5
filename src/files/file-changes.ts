// Changes to workspace files and their versions: create, rename, archive, restore, write a new version, revert
// to or delete an old one. Each is one change inside the caller's transaction, with its one audit event.
import type { Repositories } from '../store/index.ts';
import type { StoredFile } from '../store/files.ts';
import type { Workspace } from '../store/workspaces.ts';
import type { FileLimits } from '../config.ts';
import type { Audit } from '../domain/changes.ts';
import { DomainError, domainNotFound } from '../domain/errors.ts';
import type { BlobInfo } from './blob-store.ts';
import { fileRevision } from './views.ts';
import { activeFiles, actorOf, appendVersion, archiveFiles, assertNameFree, assertStorageFits, ensureFolderChain, insertNewFile, loadFile } from './service.ts';

const nowIso = () => new Date().toISOString();

/** Refuses a write based on an older revision than the file's current one (409 naming the current). */
export function assertRevision(file: StoredFile, expected: string | undefined): void {
  if (expected !== undefined && expected !== fileRevision(file)) {
    throw new DomainError('conflict', 'The file changed since that revision; read it again and retry.', { code: 'REVISION_MISMATCH', revision: fileRevision(file) });
  }
}

/** Records already-written bytes as a new file (version 1), making its folder if missing. */
export async function createFile(
  tx: Repositories,
  audit: Audit,
  input: { workspace: Workspace; limits: FileLimits; actorId: string; folderPath: string; name: string; contentType: string; blob: BlobInfo },
): Promise<StoredFile> {
  const { workspace, folderPath, name, blob } = input;
  const now = nowIso();
  const foldersCreated = await ensureFolderChain(tx, workspace.id, folderPath, now);
  await assertNameFree(tx, workspace.id, folderPath, name);
  await assertStorageFits(tx, workspace, input.limits, blob.size);
  const created = await insertNewFile(tx, { workspaceId: workspace.id, folderPath, name, contentType: input.contentType, blob, actor: await actorOf(tx, input.actorId), source: 'api', now });
  audit({ action: 'file.created', resourceType: 'file', resourceId: created.id, resourceName: name, metadata: { size: blob.size, folderPath, foldersCreated } });
  return created;
}

export async function renameFile(tx: Repositories, audit: Audit, workspaceId: string, fileId: string, name: string): Promise<StoredFile> {
  const current = await loadFile(tx, workspaceId, fileId);
  if (current.name === name) return current;
  await assertNameFree(tx, workspaceId, current.folderPath, name, current.id);
  const updatedAt = nowIso();
  await tx.files.update(current.id, { name, updatedAt });
  audit({ action: 'file.renamed', resourceType: 'file', resourceId: current.id, resourceName: name, metadata: { from: current.name, to: name } });
  return { ...current, name, updatedAt };
}

export async function archiveFile(tx: Repositories, audit: Audit, workspaceId: string, fileId: string): Promise<void> {
  const file = await loadFile(tx, workspaceId, fileId);
  await archiveFiles(tx, [file], nowIso(), null);
  audit({ action: 'file.deleted', resourceType: 'file', resourceId: file.id, resourceName: file.name, metadata: { size: file.size } });
}

/** Archives several active files at once (404 if any is missing); returns how many. */
export async function archiveManyFiles(tx: Repositories, audit: Audit, workspaceId: string, fileIds: readonly string[]): Promise<number> {
  const files = await activeFiles(tx, workspaceId, fileIds, 'fileIds');
  await archiveFiles(tx, files, nowIso(), null);
  audit({ action: 'file.bulk_deleted', resourceType: 'file', metadata: { count: files.length, fileIds: files.map((f) => f.id) } });
  return files.length;
}

/** Brings an archived file back; at the root if its folder is gone (the folder is not recreated). */
export async function restoreFile(tx: Repositories, audit: Audit, workspaceId: string, fileId: string): Promise<StoredFile> {
  const current = await loadFile(tx, workspaceId, fileId, { archived: 'also' });
  if (!current.deletedAt) return current;
  const folderPath = current.folderPath === '/' || (await tx.fileFolders.getActive(workspaceId, current.folderPath)) ? current.folderPath : '/';
  await assertNameFree(tx, workspaceId, folderPath, current.name);
  const updatedAt = nowIso();
  await tx.files.update(current.id, { deletedAt: null, archiveBatch: null, folderPath, updatedAt });
  audit({ action: 'file.restored', resourceType: 'file', resourceId: current.id, resourceName: current.name, metadata: { folderPath } });
  return { ...current, deletedAt: null, archiveBatch: null, folderPath, updatedAt };
}

/**
 * Makes already-written bytes the file's new version (audited as `action`). The content `before` was derived
 * from must still be current: a write that slipped in between wins, this one is refused.
 */
export async function writeVersion(
  tx: Repositories,
  audit: Audit,
  input: { workspace: Workspace; limits: FileLimits; actorId: string; before: StoredFile; blob: BlobInfo; action: string },
): Promise<StoredFile> {
  const { workspace, before, blob } = input;
  const current = await loadFile(tx, workspace.id, before.id);
  if (current.blobKey !== before.blobKey || current.currentVersion !== before.currentVersion) {
    throw new DomainError('conflict', 'The file changed while this write was prepared; retry.', { code: 'REVISION_MISMATCH', revision: fileRevision(current) });
  }
  await assertStorageFits(tx, workspace, input.limits, blob.size);
  const updated = await appendVersion(tx, current, { blob, source: 'api', actor: await actorOf(tx, input.actorId), now: nowIso() });
  audit({ action: input.action, resourceType: 'file', resourceId: current.id, resourceName: current.name, metadata: { version: updated.currentVersion, size: blob.size } });
  return updated;
}

export async function deleteVersion(tx: Repositories, audit: Audit, workspaceId: string, fileId: string, version: number): Promise<void> {
  const file = await loadFile(tx, workspaceId, fileId);
  if (file.currentVersion === version) throw new DomainError('conflict', 'The current version cannot be deleted; revert to another version first.', { code: 'CURRENT_VERSION' });
  if (!(await tx.files.deleteVersion(file.id, version))) throw domainNotFound('File version');
  audit({ action: 'file.version_deleted', resourceType: 'file', resourceId: file.id, resourceName: file.name, metadata: { version } });
}

/** Makes an old version's content current again, as a new version; nothing changes if it already is current. */
export async function revertToVersion(
  tx: Repositories,
  audit: Audit,
  input: { workspace: Workspace; limits: FileLimits; actorId: string; fileId: string; version: number; expectedCurrentVersion?: number; expectedRevision?: string },
) {
  const { workspace } = input;
  const file = await loadFile(tx, workspace.id, input.fileId);
  if (input.expectedCurrentVersion !== undefined && input.expectedCurrentVersion !== file.currentVersion) {
    throw new DomainError('conflict', `The current version is ${file.currentVersion}, not ${input.expectedCurrentVersion}.`, { code: 'VERSION_MISMATCH', currentVersion: file.currentVersion });
  }
  assertRevision(file, input.expectedRevision);
  const target = await tx.files.getVersion(file.id, input.version);
  if (!target) throw domainNotFound('File version');
  if (target.version === file.currentVersion) return { reverted: false, file, version: target };
  await assertStorageFits(tx, workspace, input.limits, target.size);
  const updated = await appendVersion(tx, file, {
    blob: { key: target.blobKey, size: target.size, sha256: target.blobKey }, contentType: target.contentType, source: 'revert',
    actor: await actorOf(tx, input.actorId), restoredFrom: target.version, now: nowIso(),
  });
  audit({ action: 'file.version_reverted', resourceType: 'file', resourceId: file.id, resourceName: file.name, metadata: { from: target.version, version: updated.currentVersion } });
  return { reverted: true, file: updated, version: (await tx.files.getVersion(file.id, updated.currentVersion))! };
}
