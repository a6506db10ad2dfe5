// Folder resolution for workflows: wire paths become canonical stored paths, writes create missing folders
// (like `mkdir -p`), reads resolve against active folders only, and an oversized tree is refused.
import { randomUUID } from 'node:crypto';
import type { Repositories } from '../store/index.ts';
import { FolderPathError, MAX_FOLDERS_PER_TREE, folderName, parentFolderPath } from '../domain/folder-paths.ts';
import type { WorkflowFolderRecord } from '../store/workflow-folders.ts';
import { folderPathFromWire } from './folder-wire.ts';

export type WorkflowErrorCode = 'BAD_REQUEST' | 'NOT_FOUND' | 'CONFLICT' | 'PAYLOAD_TOO_LARGE' | 'LOCKED';

/** A rule of the workflow domain was broken; the HTTP layer turns the code into its status. */
export class WorkflowError extends Error {
  readonly code: WorkflowErrorCode;
  readonly details: unknown;
  constructor(code: WorkflowErrorCode, message: string, details?: unknown) {
    super(message);
    this.code = code;
    this.details = details;
  }
}

/** Parses a wire path, naming the field in the 400 when it is not a valid folder path. */
export function parseFolderPath(wire: string, field: (string | number)[]): string {
  try {
    return folderPathFromWire(wire);
  } catch (err) {
    if (err instanceof FolderPathError) {
      throw new WorkflowError('BAD_REQUEST', `Invalid folder path: ${err.message}.`, [{ code: 'invalid_string', keys: [], path: field, message: err.message }]);
    }
    throw err;
  }
}

/** Refuses to work on a folder tree larger than the limit (413). */
export async function assertTreeSize(repos: Repositories, workspaceId: string, adding = 0): Promise<void> {
  const count = await repos.workflowFolders.countActive(workspaceId);
  if (count + adding > MAX_FOLDERS_PER_TREE) {
    throw new WorkflowError('PAYLOAD_TOO_LARGE', `The workflow folder tree of this workspace has more than ${MAX_FOLDERS_PER_TREE} folders.`, {
      folderCount: count,
      limit: MAX_FOLDERS_PER_TREE,
    });
  }
}

/** For reads: the canonical path if it is the root or an active folder, else null (matches nothing). */
export async function resolveExistingFolder(repos: Repositories, workspaceId: string, canonical: string): Promise<string | null> {
  await assertTreeSize(repos, workspaceId);
  if (canonical === '/') return '/';
  return (await repos.workflowFolders.getActive(workspaceId, canonical)) ? canonical : null;
}

/** For writes: makes sure the folder and every folder above it exist; returns the folders it created. */
export async function ensureFolder(tx: Repositories, workspaceId: string, canonical: string, now: string): Promise<WorkflowFolderRecord[]> {
  await assertTreeSize(tx, workspaceId);
  if (canonical === '/') return [];
  const missing: string[] = [];
  for (let p = canonical; p !== '/'; p = parentFolderPath(p)) {
    if (await tx.workflowFolders.getActive(workspaceId, p)) break;
    missing.unshift(p);
  }
  if (missing.length > 0) await assertTreeSize(tx, workspaceId, missing.length);
  const created: WorkflowFolderRecord[] = [];
  for (const path of missing) {
    const folder: WorkflowFolderRecord = {
      id: randomUUID(),
      workspaceId,
      path,
      parentPath: parentFolderPath(path),
      name: folderName(path),
      locked: false,
      createdAt: now,
      updatedAt: now,
      archivedAt: null,
    };
    await tx.workflowFolders.insert(folder);
    created.push(folder);
  }
  return created;
}
