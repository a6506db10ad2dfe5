// Folder trees: one table, `folders`, holds every workspace folder tree, one tree per (workspace, kind).
// Workflows, files, tables and knowledge bases each get a repository bound to their kind, so the SQL of a tree
// (subtree moves, archiving, restore batches, keyset listing) exists once. Paths are canonical (see
// src/domain/folder-paths.ts, each kind chooses how it encodes segments); at most one active folder holds a
// path. Archived folders keep the path they had, so a restore can find them by it.
import type { SqlExecutor, SqlValue } from './database.ts';
import { keyset, limitClause } from './keyset.ts';

export type FolderKind = 'workflow' | 'file' | 'table' | 'knowledge_base';

export interface FolderRecord {
  id: string;
  workspaceId: string;
  path: string;
  parentPath: string;
  name: string;
  locked: boolean;
  createdAt: string;
  updatedAt: string;
  archivedAt: string | null;
  /** Everything archived by one delete shares a batch id, so a restore brings back exactly that. */
  archiveBatch: string | null;
}

interface Row {
  id: string;
  workspace_id: string;
  path: string;
  parent_path: string;
  name: string;
  locked: number;
  created_at: string;
  updated_at: string;
  archived_at: string | null;
  archive_batch: string | null;
}

const toRecord = (r: Row): FolderRecord => ({
  id: r.id,
  workspaceId: r.workspace_id,
  path: r.path,
  parentPath: r.parent_path,
  name: r.name,
  locked: r.locked === 1,
  createdAt: r.created_at,
  updatedAt: r.updated_at,
  archivedAt: r.archived_at,
  archiveBatch: r.archive_batch,
});

export const FOLDER_SORT_COLUMNS = { name: 'name', createdAt: 'created_at', updatedAt: 'updated_at' } as const;

export interface FolderListQuery {
  workspaceId: string;
  parentPath: string | null;
  search: string | null;
  sortBy: keyof typeof FOLDER_SORT_COLUMNS;
  sortOrder: 'asc' | 'desc';
  after: readonly [SqlValue, string] | null;
  limit: number;
}

const SUBTREE = '(path = ? OR substr(path, 1, ?) = ?)';
const subtreeParams = (path: string): SqlValue[] => [path, path.length + 1, path + '/'];
const BELOW = 'substr(path, 1, ?) = ?';
const belowParams = (path: string): SqlValue[] => [path.length + 1, path + '/'];

const UPDATABLE: Record<string, string> = {
  path: 'path',
  parentPath: 'parent_path',
  name: 'name',
  locked: 'locked',
  updatedAt: 'updated_at',
  archivedAt: 'archived_at',
  archiveBatch: 'archive_batch',
};

/** The folders of one kind. Every statement is scoped to `kind` and a workspace. */
export class FolderTreeRepository {
  private readonly db: SqlExecutor;
  readonly kind: FolderKind;
  constructor(db: SqlExecutor, kind: FolderKind) {
    this.db = db;
    this.kind = kind;
  }

  async insert(f: FolderRecord): Promise<void> {
    await this.db.run(
      `INSERT INTO folders (id, workspace_id, kind, path, parent_path, name, locked, created_at, updated_at, archived_at, archive_batch)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      [f.id, f.workspaceId, this.kind, f.path, f.parentPath, f.name, f.locked ? 1 : 0, f.createdAt, f.updatedAt, f.archivedAt, f.archiveBatch],
    );
  }

  async getActive(workspaceId: string, path: string): Promise<FolderRecord | undefined> {
    const r = await this.db.get<Row>('SELECT * FROM folders WHERE workspace_id = ? AND kind = ? AND path = ? AND archived_at IS NULL', [
      workspaceId,
      this.kind,
      path,
    ]);
    return r && toRecord(r);
  }

  /** The most recently archived folder at `path`. */
  async latestArchived(workspaceId: string, path: string): Promise<FolderRecord | undefined> {
    const r = await this.db.get<Row>(
      'SELECT * FROM folders WHERE workspace_id = ? AND kind = ? AND path = ? AND archived_at IS NOT NULL ORDER BY archived_at DESC LIMIT 1',
      [workspaceId, this.kind, path],
    );
    return r && toRecord(r);
  }

  async countActive(workspaceId: string): Promise<number> {
    const r = await this.db.get<{ n: number }>('SELECT COUNT(*) AS n FROM folders WHERE workspace_id = ? AND kind = ? AND archived_at IS NULL', [
      workspaceId,
      this.kind,
    ]);
    return Number(r?.n ?? 0);
  }

  /** Active folders strictly below `path`. */
  async countBelow(workspaceId: string, path: string): Promise<number> {
    if (path === '/') return this.countActive(workspaceId);
    const r = await this.db.get<{ n: number }>(
      `SELECT COUNT(*) AS n FROM folders WHERE workspace_id = ? AND kind = ? AND archived_at IS NULL AND ${BELOW}`,
      [workspaceId, this.kind, ...belowParams(path)],
    );
    return Number(r?.n ?? 0);
  }

  /** One keyset page of active folders, optionally children of one parent and filtered by name. */
  async list(q: FolderListQuery): Promise<FolderRecord[]> {
    const page = keyset({ column: FOLDER_SORT_COLUMNS[q.sortBy], idColumn: 'id', order: q.sortOrder, after: q.after, limit: q.limit });
    const params: SqlValue[] = [q.workspaceId, this.kind];
    let where = 'workspace_id = ? AND kind = ? AND archived_at IS NULL';
    if (q.parentPath !== null) {
      where += ' AND parent_path = ?';
      params.push(q.parentPath);
    }
    if (q.search !== null) {
      where += ` AND ${this.db.dialect.contains('lower(name)', 'lower(?)')}`;
      params.push(q.search);
    }
    params.push(...page.whereParams);
    const rows = await this.db.all<Row>(`SELECT * FROM folders WHERE ${where} AND ${page.where} ORDER BY ${page.orderBy} ${limitClause(q.limit)}`, params);
    return rows.map(toRecord);
  }

  /** Every active (or every archived) folder of the workspace. */
  async all(workspaceId: string, archived: boolean): Promise<FolderRecord[]> {
    const rows = await this.db.all<Row>(`SELECT * FROM folders WHERE workspace_id = ? AND kind = ? AND archived_at IS ${archived ? 'NOT NULL' : 'NULL'}`, [
      workspaceId,
      this.kind,
    ]);
    return rows.map(toRecord);
  }

  /** Active or archived folders strictly below `path` (or all of them under the root). */
  async under(workspaceId: string, path: string, archived: boolean): Promise<FolderRecord[]> {
    if (path === '/') return this.all(workspaceId, archived);
    const rows = await this.db.all<Row>(
      `SELECT * FROM folders WHERE workspace_id = ? AND kind = ? AND archived_at IS ${archived ? 'NOT NULL' : 'NULL'} AND ${BELOW}`,
      [workspaceId, this.kind, ...belowParams(path)],
    );
    return rows.map(toRecord);
  }

  async inBatch(workspaceId: string, batch: string): Promise<FolderRecord[]> {
    const rows = await this.db.all<Row>('SELECT * FROM folders WHERE workspace_id = ? AND kind = ? AND archive_batch = ?', [workspaceId, this.kind, batch]);
    return rows.map(toRecord);
  }

  async update(id: string, fields: Partial<Pick<FolderRecord, 'path' | 'parentPath' | 'name' | 'locked' | 'updatedAt' | 'archivedAt' | 'archiveBatch'>>): Promise<void> {
    const entries = Object.entries(fields).filter(([, v]) => v !== undefined);
    if (entries.length === 0) return;
    await this.db.run(`UPDATE folders SET ${entries.map(([k]) => `${UPDATABLE[k]} = ?`).join(', ')} WHERE id = ? AND kind = ?`, [
      ...entries.map(([, v]) => (typeof v === 'boolean' ? (v ? 1 : 0) : (v as SqlValue))),
      id,
      this.kind,
    ]);
  }

  /** Archives the folder and every active folder below it under one batch id; returns how many. */
  async archiveSubtree(workspaceId: string, path: string, now: string, batch: string | null = null): Promise<number> {
    const r = await this.db.run(
      `UPDATE folders SET archived_at = ?, updated_at = ?, archive_batch = ? WHERE workspace_id = ? AND kind = ? AND archived_at IS NULL AND ${SUBTREE}`,
      [now, now, batch, workspaceId, this.kind, ...subtreeParams(path)],
    );
    return r.changes;
  }

  /** Moves an active subtree from one path to another (the caller checked the destination is free). */
  async relocateSubtree(workspaceId: string, from: string, to: string, newName: string, newParent: string, now: string): Promise<number> {
    const r = await this.db.run(
      `UPDATE folders SET path = ? || substr(path, ?), parent_path = CASE WHEN path = ? THEN ? ELSE ? || substr(parent_path, ?) END,
         name = CASE WHEN path = ? THEN ? ELSE name END, updated_at = ?
       WHERE workspace_id = ? AND kind = ? AND archived_at IS NULL AND ${SUBTREE}`,
      [to, from.length + 1, from, newParent, to, from.length + 1, from, newName, now, workspaceId, this.kind, ...subtreeParams(from)],
    );
    return r.changes;
  }

  /** Removes folders archived before `cutoff` for good. */
  async purgeArchivedBefore(cutoff: string): Promise<number> {
    return (await this.db.run('DELETE FROM folders WHERE kind = ? AND archived_at IS NOT NULL AND archived_at < ?', [this.kind, cutoff])).changes;
  }
}
