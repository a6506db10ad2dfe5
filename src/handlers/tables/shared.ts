// What the Tables handlers share: the workspace of the request, the actor, folder paths on the wire.
import type { RequestContext } from '../../http/context.ts';
import { badRequest } from '../../http/errors.ts';
import { FolderPathError } from '../../domain/folder-paths.ts';
import { FolderTree, FolderTreeError } from '../../domain/folder-tree.ts';
import { ApiError, conflict, notFound } from '../../http/errors.ts';
import { MAX_FOLDERS_PER_TREE } from '../../domain/folder-paths.ts';
import { folderPathFromWire, folderPathToWire } from '../../workflows/folder-wire.ts';
import type { Repositories } from '../../store/index.ts';

export const workspaceOf = (ctx: RequestContext) => ctx.workspace!.workspace;
export const nowIso = () => new Date().toISOString();

export async function actorEmail(repos: Repositories, userId: string): Promise<string> {
  return (await repos.users.get(userId))?.email ?? '';
}

/** A wire folder path (segments percent-encoded) as the canonical stored path; a 400 on the field otherwise. */
export function tableFolderPath(wire: string, path: (string | number)[]): string {
  try {
    return folderPathFromWire(wire);
  } catch (err) {
    if (err instanceof FolderPathError) throw badRequest(`Invalid folder path: ${err.message}.`, [{ code: 'invalid_string', keys: [], path, message: err.message }]);
    throw err;
  }
}

/** The table folder tree (the shared folder-tree rules on the table kind). */
export const tableTree = (repos: Repositories) => new FolderTree(repos.tableFolders);

/** Runs folder-tree work, turning its failures into the Tables answers. */
export async function withTableTree<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    if (!(err instanceof FolderTreeError)) throw err;
    const path = typeof err.details.path === 'string' ? folderPathToWire(err.details.path) : undefined;
    switch (err.reason) {
      case 'TOO_LARGE':
        throw new ApiError('PAYLOAD_TOO_LARGE', `The table folder tree of this workspace has more than ${MAX_FOLDERS_PER_TREE} folders.`, err.details);
      case 'NOT_FOUND':
        throw notFound('Folder');
      case 'NOT_ARCHIVED':
        throw notFound('Archived folder');
      case 'EXISTS':
        throw conflict(`The folder ${path} already exists.`, { path });
      case 'INTO_ITSELF':
        throw conflict('A folder cannot be moved into itself.', { path });
      case 'NOT_EMPTY':
        throw conflict(err.message, err.details);
    }
  }
}
