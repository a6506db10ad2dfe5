// Workflow folders: one tree per workspace, addressed by canonical decoded path. Deleting archives.
import type { SqlExecutor, SqlValue } from './database.ts';
import { keyset, limitClause } from './keyset.ts';

export interface WorkflowFolderRecord {
  id: string;
  workspaceId: string;
  path: string;
  parentPath: string;
  name: string;
  locked: boolean;
  createdAt: string;
  updatedAt: string;
  archivedAt: string | null;
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
}

const toRecord = (r: Row): WorkflowFolderRecord => ({
  id: r.id,
  workspaceId: r.workspace_id,
  path: r.path,
  parentPath: r.parent_path,
  name: r.name,
  locked: r.locked === 1,
  createdAt: r.created_at,
  updatedAt: r.updated_at,
  archivedAt: r.archived_at,
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

export class WorkflowFolderRepository {
  private readonly db: SqlExecutor;
  constructor(db: SqlExecutor) {
    this.db = db;
  }

  async countActive(workspaceId: string): Promise<number> {
    const r = await this.db.get<{ n: number }>('SELECT COUNT(*) AS n FROM workflow_folders WHERE workspace_id = ? AND archived_at IS NULL', [workspaceId]);
    return Number(r?.n ?? 0);
  }

  async getActive(workspaceId: string, path: string): Promise<WorkflowFolderRecord | undefined> {
    const r = await this.db.get<Row>('SELECT * FROM workflow_folders WHERE workspace_id = ? AND path = ? AND archived_at IS NULL', [workspaceId, path]);
    return r && toRecord(r);
  }

  async insert(f: WorkflowFolderRecord): Promise<void> {
    await this.db.run(
      `INSERT INTO workflow_folders (id, workspace_id, path, parent_path, name, locked, created_at, updated_at, archived_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      [f.id, f.workspaceId, f.path, f.parentPath, f.name, f.locked ? 1 : 0, f.createdAt, f.updatedAt, f.archivedAt],
    );
  }

  async list(q: FolderListQuery): Promise<WorkflowFolderRecord[]> {
    const page = keyset({ column: FOLDER_SORT_COLUMNS[q.sortBy], idColumn: 'id', order: q.sortOrder, after: q.after, limit: q.limit });
    const params: SqlValue[] = [q.workspaceId];
    let where = 'workspace_id = ? AND archived_at IS NULL';
    if (q.parentPath !== null) {
      where += ' AND parent_path = ?';
      params.push(q.parentPath);
    }
    if (q.search !== null) {
      where += ' AND instr(lower(name), lower(?)) > 0';
      params.push(q.search);
    }
    params.push(...page.whereParams);
    const rows = await this.db.all<Row>(`SELECT * FROM workflow_folders WHERE ${where} AND ${page.where} ORDER BY ${page.orderBy} ${limitClause(q.limit)}`, params);
    return rows.map(toRecord);
  }

  /** Active folders strictly below `path`. */
  async countBelow(workspaceId: string, path: string): Promise<number> {
    const r = await this.db.get<{ n: number }>(
      'SELECT COUNT(*) AS n FROM workflow_folders WHERE workspace_id = ? AND archived_at IS NULL AND substr(path, 1, ?) = ?',
      [workspaceId, path.length + 1, path + '/'],
    );
    return Number(r?.n ?? 0);
  }

  /** Archives the folder and every active folder below it; returns how many. */
  async archiveSubtree(workspaceId: string, path: string, now: string): Promise<number> {
    const r = await this.db.run(
      `UPDATE workflow_folders SET archived_at = ?, updated_at = ? WHERE workspace_id = ? AND archived_at IS NULL AND ${SUBTREE}`,
      [now, now, workspaceId, ...subtreeParams(path)],
    );
    return r.changes;
  }

  /** Moves an active subtree from one path to another (the caller checked the destination is free). */
  async relocateSubtree(workspaceId: string, from: string, to: string, newName: string, newParent: string, now: string): Promise<void> {
    await this.db.run(
      `UPDATE workflow_folders SET path = ? || substr(path, ?), parent_path = CASE WHEN path = ? THEN ? ELSE ? || substr(parent_path, ?) END,
         name = CASE WHEN path = ? THEN ? ELSE name END, updated_at = CASE WHEN path = ? THEN ? ELSE updated_at END
       WHERE workspace_id = ? AND archived_at IS NULL AND ${SUBTREE}`,
      [to, from.length + 1, from, newParent, to, from.length + 1, from, newName, from, now, workspaceId, ...subtreeParams(from)],
    );
  }
}
