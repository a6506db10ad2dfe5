// Folder resolution for workflows: wire paths become canonical stored paths, writes create missing folders
// (like `mkdir -p`), reads resolve against active folders only, and an oversized tree is refused.
import type { Repositories } from '../store/index.ts';
import { FolderPathError, MAX_FOLDERS_PER_TREE } from '../domain/folder-paths.ts';
import { FolderTree, FolderTreeError } from '../domain/folder-tree.ts';
import type { FolderRecord } from '../store/folders.ts';
import { DomainError } from '../domain/errors.ts';
import { folderPathFromWire, folderPathToWire } from './folder-wire.ts';

/** A rule of the workflow domain was broken; src/http/errors.ts (toApiError) turns its kind into a status. */
export class WorkflowError extends DomainError {}

/** Parses a wire path, naming the field in the 400 when it is not a valid folder path. */
export function parseFolderPath(wire: string, field: (string | number)[]): string {
  try {
    return folderPathFromWire(wire);
  } catch (err) {
    if (err instanceof FolderPathError) {
      throw new WorkflowError('invalid', `Invalid folder path: ${err.message}.`, [{ code: 'invalid_string', keys: [], path: field, message: err.message }]);
    }
    throw err;
  }
}

/** The workflow folder tree of a workspace (the shared folder-tree rules on the workflow kind). */
export const workflowTree = (repos: Repositories) => new FolderTree(repos.workflowFolders);

/** Maps a folder-tree failure to the workflow domain's error. */
export function workflowFolderError(err: FolderTreeError): WorkflowError {
  switch (err.reason) {
    case 'TOO_LARGE':
      return new WorkflowError('too_large', `The workflow folder tree of this workspace has more than ${MAX_FOLDERS_PER_TREE} folders.`, err.details);
    case 'NOT_FOUND':
    case 'NOT_ARCHIVED':
      return new WorkflowError('not_found', 'Folder not found.');
    case 'EXISTS':
      return new WorkflowError('conflict', `The folder ${folderPathToWire(String(err.details.path))} already exists.`, { path: folderPathToWire(String(err.details.path)) });
    case 'INTO_ITSELF':
      return new WorkflowError('conflict', 'A folder cannot be moved into itself.', {
        path: folderPathToWire(String(err.details.path)),
        destinationPath: folderPathToWire(String(err.details.destinationPath)),
      });
    case 'NOT_EMPTY':
      return new WorkflowError('conflict', err.message, err.details);
  }
}

async function inTree<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    throw err instanceof FolderTreeError ? workflowFolderError(err) : err;
  }
}

/** Refuses to work on a folder tree larger than the limit (413). */
export async function assertTreeSize(repos: Repositories, workspaceId: string, adding = 0): Promise<void> {
  await inTree(() => workflowTree(repos).assertSize(workspaceId, adding));
}

/** For reads: the canonical path if it is the root or an active folder, else null (matches nothing). */
export async function resolveExistingFolder(repos: Repositories, workspaceId: string, canonical: string): Promise<string | null> {
  await assertTreeSize(repos, workspaceId);
  return workflowTree(repos).resolveExisting(workspaceId, canonical);
}

/** For writes: makes sure the folder and every folder above it exist; returns the folders it created. */
export async function ensureFolder(tx: Repositories, workspaceId: string, canonical: string, now: string): Promise<FolderRecord[]> {
  await assertTreeSize(tx, workspaceId);
  return inTree(() => workflowTree(tx).ensure(workspaceId, canonical, now));
}

/** Runs folder-tree work, turning its failures into workflow errors. */
export const withWorkflowTree = inTree;
