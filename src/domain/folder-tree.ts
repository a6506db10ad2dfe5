// The rules of a workspace folder tree, shared by every resource kind that lives in folders (workflows, files,
// tables, knowledge bases): `mkdir -p` on writes, `mv` semantics on relocation, archive-and-restore by batch,
// and the tree-size limit. It works on one kind's repository inside the caller's transaction and says what went
// wrong with a FolderTreeError; each resource turns that into its own HTTP answer. No HTTP here.
import { randomUUID } from 'node:crypto';
import type { FolderRecord, FolderTreeRepository } from '../store/folders.ts';
import { onUniqueViolation } from '../store/errors.ts';
import { MAX_FOLDERS_PER_TREE, folderName, isWithin, parentFolderPath } from './folder-paths.ts';

export type FolderTreeFailure = 'TOO_LARGE' | 'NOT_FOUND' | 'EXISTS' | 'INTO_ITSELF' | 'NOT_EMPTY' | 'NOT_ARCHIVED';

export class FolderTreeError extends Error {
  readonly reason: FolderTreeFailure;
  readonly details: Record<string, unknown>;
  constructor(reason: FolderTreeFailure, message: string, details: Record<string, unknown> = {}) {
    super(message);
    this.reason = reason;
    this.details = details;
  }
}

export interface RestoreOptions {
  /** When the folder's parent is no longer active: recreate the parent chain, or bring the folder back at the root. */
  archivedParent: 'recreate' | 'root';
  /** When an active folder already holds the path: refuse (EXISTS), or pick a free name next to it. */
  onConflict: 'refuse' | 'rename';
}

export interface RestoreResult {
  /** The restored folder where it now is. */
  folder: FolderRecord;
  /** How many folders came back (the folder and those archived with it). */
  folders: number;
  /** The archive batch that was restored (null for a folder archived without one). */
  batch: string | null;
  /** Where the folder was archived from and where it came back; items below `from` belong below `to`. */
  from: string;
  to: string;
}

/** Rewrites a path within `from` to the same place within `to`. */
export function rebase(path: string, from: string, to: string): string {
  if (from === to || !isWithin(path, from)) return path;
  return to + path.slice(from.length);
}

export class FolderTree {
  readonly repo: FolderTreeRepository;
  private readonly nameOf: (path: string) => string;
  /** `nameOf` turns a canonical path into the folder's display name (the default is its last segment). */
  constructor(repo: FolderTreeRepository, nameOf: (path: string) => string = folderName) {
    this.repo = repo;
    this.nameOf = nameOf;
  }

  /** Refuses to work on a tree that is (or, after `adding` more, would be) over the folder limit. */
  async assertSize(workspaceId: string, adding = 0): Promise<void> {
    const count = await this.repo.countActive(workspaceId);
    if (count + adding > MAX_FOLDERS_PER_TREE) {
      throw new FolderTreeError('TOO_LARGE', `The folder tree of this workspace has more than ${MAX_FOLDERS_PER_TREE} folders.`, {
        folderCount: count,
        limit: MAX_FOLDERS_PER_TREE,
      });
    }
  }

  /** For reads: the path if it is the root or an active folder, else null (a filter that matches nothing). */
  async resolveExisting(workspaceId: string, path: string): Promise<string | null> {
    if (path === '/') return '/';
    return (await this.repo.getActive(workspaceId, path)) ? path : null;
  }

  /** The folder must exist (the root always does). */
  async require(workspaceId: string, path: string): Promise<void> {
    if (path !== '/' && !(await this.repo.getActive(workspaceId, path))) throw new FolderTreeError('NOT_FOUND', 'Folder not found.', { path });
  }

  /** `mkdir -p`: creates the folder and any missing ancestors; returns the folders it created, outermost first. */
  async ensure(workspaceId: string, path: string, now: string): Promise<FolderRecord[]> {
    if (path === '/') return [];
    const missing: string[] = [];
    for (let p = path; p !== '/'; p = parentFolderPath(p)) {
      if (await this.repo.getActive(workspaceId, p)) break;
      missing.unshift(p);
    }
    if (missing.length === 0) return [];
    await this.assertSize(workspaceId, missing.length);
    const created: FolderRecord[] = [];
    for (const p of missing) {
      const folder: FolderRecord = {
        id: randomUUID(),
        workspaceId,
        path: p,
        parentPath: parentFolderPath(p),
        name: this.nameOf(p),
        locked: false,
        createdAt: now,
        updatedAt: now,
        archivedAt: null,
        archiveBatch: null,
      };
      // Another process may create the same folder between the look-up and this write: the unique index answers.
      await onUniqueViolation(this.repo.insert(folder), 'folders', ['workspace_id', 'kind', 'path'], () => new FolderTreeError('EXISTS', `A folder already exists at ${p}.`, { path: p }));
      created.push(folder);
    }
    return created;
  }

  /** Creates exactly `path` (and missing ancestors), refusing a path an active folder already holds. */
  async create(workspaceId: string, path: string, now: string): Promise<{ folder: FolderRecord; created: FolderRecord[] }> {
    if (await this.repo.getActive(workspaceId, path)) throw new FolderTreeError('EXISTS', `A folder already exists at ${path}.`, { path });
    const created = await this.ensure(workspaceId, path, now);
    return { folder: created.at(-1)!, created };
  }

  /**
   * Where a folder moved to `destination` ends up, with `mv` semantics: an existing folder (or the root)
   * receives it under its own name; any other destination is the new path. Refuses a missing source, a move
   * into itself and a taken target. `to === from` means nothing to do.
   */
  async planMove(workspaceId: string, from: string, destination: string): Promise<{ source: FolderRecord; to: string }> {
    const source = await this.repo.getActive(workspaceId, from);
    if (!source) throw new FolderTreeError('NOT_FOUND', 'Folder not found.', { path: from });
    const leaf = from.slice(from.lastIndexOf('/') + 1);
    let to: string;
    if (destination === '/') to = `/${leaf}`;
    else if (destination !== from && (await this.repo.getActive(workspaceId, destination))) to = `${destination}/${leaf}`;
    else to = destination;
    if (to === from) return { source, to };
    if (isWithin(to, from)) throw new FolderTreeError('INTO_ITSELF', 'A folder cannot be moved into itself.', { path: from, destinationPath: to });
    if (await this.repo.getActive(workspaceId, to)) throw new FolderTreeError('EXISTS', `A folder already exists at ${to}.`, { path: to });
    return { source, to };
  }

  /** Moves the subtree at `from` to `to` (planned by planMove), creating the new parent chain. */
  async move(workspaceId: string, from: string, to: string, now: string): Promise<FolderRecord> {
    await this.ensure(workspaceId, parentFolderPath(to), now);
    await this.repo.relocateSubtree(workspaceId, from, to, this.nameOf(to), parentFolderPath(to), now);
    return (await this.repo.getActive(workspaceId, to))!;
  }

  /** The active folder at `path` and how many active folders lie below it; NOT_FOUND when there is none. */
  async inspect(workspaceId: string, path: string): Promise<{ folder: FolderRecord; below: number }> {
    const folder = await this.repo.getActive(workspaceId, path);
    if (!folder) throw new FolderTreeError('NOT_FOUND', 'Folder not found.', { path });
    return { folder, below: await this.repo.countBelow(workspaceId, path) };
  }

  /** Archives the folder and everything below it under a new batch id; returns the batch and the count. */
  async archive(workspaceId: string, path: string, now: string): Promise<{ batch: string; folders: number }> {
    const batch = randomUUID();
    const folders = await this.repo.archiveSubtree(workspaceId, path, now, batch);
    if (folders === 0) throw new FolderTreeError('NOT_FOUND', 'Folder not found.', { path });
    return { batch, folders };
  }

  /**
   * Brings back the folder most recently archived at `path` with the folders archived alongside it. Items of
   * the caller (files, tables) archived in the same batch are the caller's to restore, rebased from `from` to
   * `to` when the folder came back elsewhere.
   */
  async restore(workspaceId: string, path: string, now: string, options: RestoreOptions): Promise<RestoreResult> {
    const archived = await this.repo.latestArchived(workspaceId, path);
    if (!archived) throw new FolderTreeError('NOT_ARCHIVED', `No archived folder at ${path}.`, { path });
    let to = path;
    const parent = parentFolderPath(path);
    if (parent !== '/' && !(await this.repo.getActive(workspaceId, parent))) {
      if (options.archivedParent === 'root') to = path.slice(path.lastIndexOf('/'));
      else await this.ensure(workspaceId, parent, now);
    }
    if (await this.repo.getActive(workspaceId, to)) {
      if (options.onConflict === 'refuse') throw new FolderTreeError('EXISTS', `A folder already exists at ${to}.`, { path: to });
      const base = to;
      for (let n = 2; await this.repo.getActive(workspaceId, to); n++) to = `${base} (${n})`;
    }
    const members = archived.archiveBatch ? await this.repo.inBatch(workspaceId, archived.archiveBatch) : [archived];
    const inside = members.filter((f) => isWithin(f.path, path)).sort((a, b) => a.path.length - b.path.length);
    await this.assertSize(workspaceId, inside.length);
    let restored = 0;
    for (const f of inside) {
      const target = rebase(f.path, path, to);
      if (await this.repo.getActive(workspaceId, target)) continue;
      await this.repo.update(f.id, {
        path: target,
        parentPath: parentFolderPath(target),
        name: this.nameOf(target),
        archivedAt: null,
        archiveBatch: null,
        updatedAt: now,
      });
      restored++;
    }
    return { folder: (await this.repo.getActive(workspaceId, to))!, folders: restored, batch: archived.archiveBatch, from: path, to };
  }
}
