// The wire shapes of files, folders, versions, shares and upload sessions.
import type { StoredFile, FileVersionRecord } from '../store/files.ts';
import type { FolderRecord as FileFolderRecord } from '../store/folders.ts';
import type { FileShareRecord } from '../store/file-shares.ts';
import type { UploadSessionRecord } from '../store/file-uploads.ts';
import { folderDisplayName } from './names.ts';
import { parentFolderPath } from '../domain/folder-paths.ts';

export const fileWebUrl = (baseUrl: string, f: StoredFile) => `${baseUrl}/workspace/${f.workspaceId}/files/${f.id}`;
export const fileKey = (f: StoredFile) => `workspace/${f.workspaceId}/${f.id}`;
/** Names the current content: changes with every version and with the bytes themselves. */
export const fileRevision = (f: StoredFile) => `${f.currentVersion}-${f.blobKey.slice(0, 16)}`;

export function fileView(baseUrl: string, f: StoredFile) {
  return {
    id: f.id,
    webUrl: fileWebUrl(baseUrl, f),
    name: f.name,
    size: f.size,
    type: f.contentType,
    key: fileKey(f),
    folderPath: f.folderPath,
    uploadedByEmail: f.uploadedByEmail,
    uploadedAt: f.uploadedAt,
    updatedAt: f.updatedAt,
    deletedAt: f.deletedAt,
  };
}

export function folderView(f: FileFolderRecord) {
  return { name: folderDisplayName(f.path), path: f.path, parentPath: parentFolderPath(f.path), createdAt: f.createdAt, updatedAt: f.updatedAt };
}

export function versionView(v: FileVersionRecord, currentVersion: number) {
  return {
    fileId: v.fileId,
    version: v.version,
    isCurrent: v.version === currentVersion,
    size: v.size,
    contentType: v.contentType,
    source: v.source,
    authors: v.authorId ? [{ id: v.authorId, email: v.authorEmail }] : [],
    restoredFromVersion: v.restoredFromVersion,
    createdAt: v.createdAt,
    updatedAt: v.updatedAt,
    supersededAt: v.supersededAt,
  };
}

export const shareUrl = (baseUrl: string, token: string) => `${baseUrl}/shared/files/${token}`;

/** `token` is the share's plain token, opened from its sealed copy by the caller. */
export function shareView(baseUrl: string, s: FileShareRecord, token: string) {
  return {
    id: s.id,
    token,
    url: shareUrl(baseUrl, token),
    isActive: s.isActive,
    resourceType: 'file' as const,
    resourceId: s.fileId,
    authType: s.authType,
    hasPassword: s.passwordHash !== null,
    allowedEmails: s.allowedEmails,
  };
}

export function sessionView(baseUrl: string, s: UploadSessionRecord, file: StoredFile | null, now = Date.now()) {
  const expired = s.status === 'uploading' && Date.parse(s.expiresAt) <= now;
  return {
    id: s.id,
    status: expired ? ('expired' as const) : s.status,
    name: s.name,
    contentType: s.contentType,
    size: s.size,
    expiresAt: s.expiresAt,
    error: s.error,
    file: file ? fileView(baseUrl, file) : null,
  };
}
