// File names and folder paths as the Files API accepts them. Folder paths reuse the shared canonical form;
// their segments may arrive percent-encoded (the CLI encodes them) and are kept as sent, so a path that was
// listed can be sent back verbatim.
import { lookup } from 'mime-types';
import { canonicalFolderPath, FolderPathError } from '../domain/folder-paths.ts';

export const MAX_FILE_NAME_LENGTH = 255;

export class NameError extends Error {
  readonly field: string;
  constructor(field: string, message: string) {
    super(message);
    this.field = field;
  }
}

/** A file name: non-empty, at most 255 characters, no path separators, control characters or dot segments. */
export function checkFileName(name: string, field = 'name'): string {
  if (name.length === 0 || name.trim().length === 0) throw new NameError(field, 'A file name may not be empty.');
  if (name.length > MAX_FILE_NAME_LENGTH) throw new NameError(field, `A file name may have at most ${MAX_FILE_NAME_LENGTH} characters.`);
  if (/[/\\]/.test(name)) throw new NameError(field, 'A file name may not contain path separators.');
  if (/[\u0000-\u001f\u007f]/.test(name)) throw new NameError(field, 'A file name may not contain control characters.');
  if (name === '.' || name === '..') throw new NameError(field, 'A file name may not be "." or "..".');
  return name;
}

/** The canonical folder path; absent, empty or "/" is the root. Segments that decode to "." or ".." are refused too. */
export function folderPathOf(input: string | undefined, field = 'folderPath'): string {
  if (input === undefined || input === '') return '/';
  try {
    const canonical = canonicalFolderPath(input);
    for (const segment of canonical.split('/').slice(1)) {
      const decoded = safeDecode(segment);
      if (decoded === '.' || decoded === '..') throw new FolderPathError('A folder path may not contain "." or ".." segments');
    }
    return canonical;
  } catch (err) {
    if (err instanceof FolderPathError) throw new NameError(field, `${err.message}.`);
    throw err;
  }
}

export function safeDecode(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
}

/** Display name of a folder: its last segment, decoded. */
export function folderDisplayName(path: string): string {
  return safeDecode(path.slice(path.lastIndexOf('/') + 1));
}

/** Media type for a name when the caller gives none. */
export function mediaTypeFor(name: string): string {
  return lookup(name) || 'application/octet-stream';
}

/** The bare media type (no parameters), lower case, for comparisons. */
export function essence(contentType: string): string {
  return contentType.split(';', 1)[0]!.trim().toLowerCase();
}

/** "report.pdf" in "/a/b" → "files/a/b/report.pdf": the path form clients may use instead of an id. */
export function vfsPath(folderPath: string, name: string): string {
  return `files${folderPath === '/' ? '' : folderPath}/${name}`;
}
