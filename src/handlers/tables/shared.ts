// What the Tables handlers share: the workspace of the request and folder paths on the wire.
// The folder tree itself and its errors live in src/tables/folders.ts.
import type { RequestContext } from '../../http/context.ts';
import { badRequest } from '../../http/errors.ts';
import { FolderPathError } from '../../domain/folder-paths.ts';
import { folderPathFromWire } from '../../workflows/folder-wire.ts';

export const workspaceOf = (ctx: RequestContext) => ctx.workspace!.workspace;
export const nowIso = () => new Date().toISOString();

/** A wire folder path (segments percent-encoded) as the canonical stored path; a 400 on the field otherwise. */
export function tableFolderPath(wire: string, path: (string | number)[]): string {
  try {
    return folderPathFromWire(wire);
  } catch (err) {
    if (err instanceof FolderPathError) throw badRequest(`Invalid folder path: ${err.message}.`, [{ code: 'invalid_string', keys: [], path, message: err.message }]);
    throw err;
  }
}
