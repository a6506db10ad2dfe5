// Workflow folder paths on the wire. Clients send and receive each segment percent-encoded (a folder shown as
// "New folder" travels as `/New%20folder`); the store keeps the decoded canonical path from
// src/domain/folder-paths.ts. These two functions are the only crossing between the forms.
import { canonicalFolderPath, FolderPathError } from '../domain/folder-paths.ts';

/** Decodes a wire path into the canonical stored path, or throws FolderPathError saying why it is invalid. */
export function folderPathFromWire(wire: string): string {
  const structural = canonicalFolderPath(wire);
  if (structural === '/') return '/';
  const decoded = structural
    .slice(1)
    .split('/')
    .map((segment) => {
      let name: string;
      try {
        name = decodeURIComponent(segment);
      } catch {
        throw new FolderPathError(`The folder path segment "${segment}" is not valid percent-encoding`);
      }
      if (name.includes('/')) throw new FolderPathError('A folder name may not contain "/"');
      return name;
    });
  // Re-check the decoded form: decoding may reveal ".", "..", control characters or blank names.
  const canonical = canonicalFolderPath('/' + decoded.join('/'));
  if (canonical.split('/').length !== decoded.length + 1) throw new FolderPathError('A folder name may not be blank');
  return canonical;
}

/** Strict percent-encoding: everything outside A-Z a-z 0-9 - _ . ~ is escaped as uppercase hex. */
function encodeSegment(name: string): string {
  return encodeURIComponent(name).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
}

export function folderPathToWire(path: string): string {
  if (path === '/') return '/';
  return '/' + path.slice(1).split('/').map(encodeSegment).join('/');
}
