// Handlers for the Files operations.
import type { Handler } from '../../generated/handlers.ts';
import { notImplemented } from '../http/errors.ts';

/** DELETE /api/v2/files/uploads/{uploadId} — Abort a file upload */
export const abortFileUpload: Handler<'abortFileUpload'> = async (_input) => {
  throw notImplemented('abortFileUpload');
};

/** POST /api/v2/files/bulk-delete — Delete several files */
export const bulkDeleteFiles: Handler<'bulkDeleteFiles'> = async (_input) => {
  throw notImplemented('bulkDeleteFiles');
};

/** GET /api/v2/files/bulk-download — Download files as a zip */
export const bulkDownloadFiles: Handler<'bulkDownloadFiles'> = async (_input) => {
  throw notImplemented('bulkDownloadFiles');
};

/** POST /api/v2/files/uploads/{uploadId}/complete — Complete a file upload */
export const completeFileUpload: Handler<'completeFileUpload'> = async (_input) => {
  throw notImplemented('completeFileUpload');
};

/** POST /api/v2/files — Create a file */
export const createFile: Handler<'createFile'> = async (_input) => {
  throw notImplemented('createFile');
};

/** POST /api/v2/files/folders — Create a file folder */
export const createFileFolder: Handler<'createFileFolder'> = async (_input) => {
  throw notImplemented('createFileFolder');
};

/** POST /api/v2/files/uploads — Start a file upload */
export const createFileUpload: Handler<'createFileUpload'> = async (_input) => {
  throw notImplemented('createFileUpload');
};

/** POST /api/v2/files/uploads/{uploadId}/parts — Sign multipart upload part URLs */
export const createFileUploadPartUrls: Handler<'createFileUploadPartUrls'> = async (_input) => {
  throw notImplemented('createFileUploadPartUrls');
};

/** DELETE /api/v2/files/{fileId} — Delete a file */
export const deleteFile: Handler<'deleteFile'> = async (_input) => {
  throw notImplemented('deleteFile');
};

/** DELETE /api/v2/files/folders — Delete a file folder */
export const deleteFileFolder: Handler<'deleteFileFolder'> = async (_input) => {
  throw notImplemented('deleteFileFolder');
};

/** DELETE /api/v2/files/{fileId}/versions/{version} — Delete a file version */
export const deleteFileVersion: Handler<'deleteFileVersion'> = async (_input) => {
  throw notImplemented('deleteFileVersion');
};

/** GET /api/v2/files/{fileId} — Download a file */
export const downloadFile: Handler<'downloadFile'> = async (_input) => {
  throw notImplemented('downloadFile');
};

/** GET /api/v2/files/{fileId}/versions/{version}/content — Download a file version */
export const downloadFileVersion: Handler<'downloadFileVersion'> = async (_input) => {
  throw notImplemented('downloadFileVersion');
};

/** PATCH /api/v2/files/{fileId}/content — Edit file content */
export const editFileContent: Handler<'editFileContent'> = async (_input) => {
  throw notImplemented('editFileContent');
};

/** GET /api/v2/files/{fileId}/metadata — Get file metadata */
export const getFile: Handler<'getFile'> = async (_input) => {
  throw notImplemented('getFile');
};

/** GET /api/v2/files/{fileId}/share — Get file share */
export const getFileShare: Handler<'getFileShare'> = async (_input) => {
  throw notImplemented('getFileShare');
};

/** GET /api/v2/files/uploads/{uploadId} — Get a file upload */
export const getFileUpload: Handler<'getFileUpload'> = async (_input) => {
  throw notImplemented('getFileUpload');
};

/** GET /api/v2/files/{fileId}/versions/{version} — Get a file version */
export const getFileVersion: Handler<'getFileVersion'> = async (_input) => {
  throw notImplemented('getFileVersion');
};

/** GET /api/v2/files/folders — List file folders */
export const listFileFolders: Handler<'listFileFolders'> = async (_input) => {
  throw notImplemented('listFileFolders');
};

/** GET /api/v2/files/{fileId}/versions — List file versions */
export const listFileVersions: Handler<'listFileVersions'> = async (_input) => {
  throw notImplemented('listFileVersions');
};

/** GET /api/v2/files — List files */
export const listFiles: Handler<'listFiles'> = async (_input) => {
  throw notImplemented('listFiles');
};

/** POST /api/v2/files/move — Move files */
export const moveFileItems: Handler<'moveFileItems'> = async (_input) => {
  throw notImplemented('moveFileItems');
};

/** GET /api/v2/files/{fileId}/text — Read file text */
export const readFileText: Handler<'readFileText'> = async (_input) => {
  throw notImplemented('readFileText');
};

/** GET /api/v2/files/{fileId}/versions/{version}/text — Read file version text */
export const readFileVersionText: Handler<'readFileVersionText'> = async (_input) => {
  throw notImplemented('readFileVersionText');
};

/** PATCH /api/v2/files/folders — Rename or move a file folder */
export const relocateFileFolder: Handler<'relocateFileFolder'> = async (_input) => {
  throw notImplemented('relocateFileFolder');
};

/** PATCH /api/v2/files/{fileId} — Rename a file */
export const renameFile: Handler<'renameFile'> = async (_input) => {
  throw notImplemented('renameFile');
};

/** POST /api/v2/files/{fileId}/restore — Restore a file */
export const restoreFile: Handler<'restoreFile'> = async (_input) => {
  throw notImplemented('restoreFile');
};

/** POST /api/v2/files/folders/restore — Restore a file folder */
export const restoreFileFolder: Handler<'restoreFileFolder'> = async (_input) => {
  throw notImplemented('restoreFileFolder');
};

/** POST /api/v2/files/{fileId}/versions/{version}/revert — Revert to a file version */
export const revertFileVersion: Handler<'revertFileVersion'> = async (_input) => {
  throw notImplemented('revertFileVersion');
};

/** GET /api/v2/files/search — Search file content */
export const searchFileContent: Handler<'searchFileContent'> = async (_input) => {
  throw notImplemented('searchFileContent');
};

/** POST /api/v2/files/{fileId}/unzip — Unzip a file */
export const unzipFile: Handler<'unzipFile'> = async (_input) => {
  throw notImplemented('unzipFile');
};

/** PUT /api/v2/files/{fileId}/content — Replace file content */
export const updateFileContent: Handler<'updateFileContent'> = async (_input) => {
  throw notImplemented('updateFileContent');
};

/** PATCH /api/v2/files/{fileId}/share — Enable or disable file share */
export const upsertFileShare: Handler<'upsertFileShare'> = async (_input) => {
  throw notImplemented('upsertFileShare');
};
