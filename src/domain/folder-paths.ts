// Canonical folder paths, shared by every folder tree (workflows, files, tables, knowledge bases):
// a leading slash, no trailing slash, single slashes, no "." or ".." segments, trimmed segment names.
// "/" is the root. Anything that cannot be made canonical is rejected with a reason.

export const MAX_FOLDER_PATH_LENGTH = 4096;
export const MAX_FOLDER_NAME_LENGTH = 255;
/** A workspace folder tree larger than this answers 413 on operations that resolve folders. */
export const MAX_FOLDERS_PER_TREE = 10_000;

export class FolderPathError extends Error {}

export function canonicalFolderPath(input: string): string {
  if (typeof input !== 'string') throw new FolderPathError('A folder path must be a string');
  if (input.length > MAX_FOLDER_PATH_LENGTH) throw new FolderPathError(`A folder path may have at most ${MAX_FOLDER_PATH_LENGTH} characters`);
  if (/[\u0000-\u001f\u007f]/.test(input)) throw new FolderPathError('A folder path may not contain control characters');
  if (input.includes('\\')) throw new FolderPathError('A folder path uses forward slashes');
  const segments = input
    .split('/')
    .map((s) => s.trim())
    .filter((s) => s.length > 0);
  for (const s of segments) {
    if (s === '.' || s === '..') throw new FolderPathError('A folder path may not contain "." or ".." segments');
    if (s.length > MAX_FOLDER_NAME_LENGTH) throw new FolderPathError(`A folder name may have at most ${MAX_FOLDER_NAME_LENGTH} characters`);
  }
  return '/' + segments.join('/');
}

export function parentFolderPath(path: string): string {
  const i = path.lastIndexOf('/');
  return i <= 0 ? '/' : path.slice(0, i);
}

export function folderName(path: string): string {
  return path.slice(path.lastIndexOf('/') + 1);
}

/** True when `path` is `ancestor` itself or lies below it. */
export function isWithin(path: string, ancestor: string): boolean {
  return ancestor === '/' || path === ancestor || path.startsWith(ancestor + '/');
}
