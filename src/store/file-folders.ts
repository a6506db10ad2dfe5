// File folders. Paths are canonical (see src/domain/folder-paths.ts); at most one active folder holds a path.
// Archived folders keep the path they had, so a restore can find them by it.
import type { SqlExecutor, SqlValue } from './database.ts';
import { likeLiteral } from './files.ts';

export interface FileFolderRecord {
  id: string;
  workspaceId: string;
  path: string;
  parentPath: string;
  name: string;
  createdAt: string;
  updatedAt: string;
  deletedAt: string | null;
  archiveBatch: string | null;
}

interface Row {
  id: string;
  workspace_id: string;
  path: string;
  parent_path: string;
  name: string;
  created_at: string;
  updated_at: string;
  deleted_at: string | null;
  archive_batch: string | null;
}

const toFolder = (r: Row): FileFolderRecord => ({
  id: r.id,
  workspaceId: r.workspace_id,
  path: r.path,
  parentPath: r.parent_path,
  name: r.name,
  createdAt: r.created_at,
  updatedAt: r.updated_at,
  deletedAt: r.deleted_at,
  archiveBatch: r.archive_batch,
});

export class FileFolderRepository {
  private readonly db: SqlExecutor;
  constructor(db: SqlExecutor) {
    this.db = db;
  }

  async insert(f: FileFolderRecord): Promise<void> {
    await this.db.run(
      `INSERT INTO file_folders (id, workspace_id, path, parent_path, name, created_at, updated_at, deleted_at, archive_batch)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      [f.id, f.workspaceId, f.path, f.parentPath, f.name, f.createdAt, f.updatedAt, f.deletedAt, f.archiveBatch],
    );
  }

  async active(workspaceId: string, path: string): Promise<FileFolderRecord | undefined> {
    const r = await this.db.get<Row>('SELECT * FROM file_folders WHERE workspace_id = ? AND path = ? AND deleted_at IS NULL', [workspaceId, path]);
    return r && toFolder(r);
  }

  /** The most recently archived folder at `path`. */
  async latestArchived(workspaceId: string, path: string): Promise<FileFolderRecord | undefined> {
    const r = await this.db.get<Row>(
      'SELECT * FROM file_folders WHERE workspace_id = ? AND path = ? AND deleted_at IS NOT NULL ORDER BY deleted_at DESC LIMIT 1',
      [workspaceId, path],
    );
    return r && toFolder(r);
  }

  async countActive(workspaceId: string): Promise<number> {
    const r = await this.db.get<{ n: number }>('SELECT COUNT(*) AS n FROM file_folders WHERE workspace_id = ? AND deleted_at IS NULL', [workspaceId]);
    return Number(r?.n ?? 0);
  }

  /** Active or archived folders strictly below `path` (or all of them under the root). */
  async under(workspaceId: string, path: string, archived: boolean): Promise<FileFolderRecord[]> {
    const state = archived ? 'NOT NULL' : 'NULL';
    const rows =
      path === '/'
        ? await this.db.all<Row>(`SELECT * FROM file_folders WHERE workspace_id = ? AND deleted_at IS ${state}`, [workspaceId])
        : await this.db.all<Row>(
            `SELECT * FROM file_folders WHERE workspace_id = ? AND deleted_at IS ${state} AND path LIKE ? ESCAPE '\\'`,
            [workspaceId, `${likeLiteral(path)}/%`],
          );
    return rows.map(toFolder);
  }

  async list(workspaceId: string, archived: boolean): Promise<FileFolderRecord[]> {
    const rows = await this.db.all<Row>(`SELECT * FROM file_folders WHERE workspace_id = ? AND deleted_at IS ${archived ? 'NOT NULL' : 'NULL'}`, [
      workspaceId,
    ]);
    return rows.map(toFolder);
  }

  async inBatch(workspaceId: string, batch: string): Promise<FileFolderRecord[]> {
    const rows = await this.db.all<Row>('SELECT * FROM file_folders WHERE workspace_id = ? AND archive_batch = ?', [workspaceId, batch]);
    return rows.map(toFolder);
  }

  async update(id: string, fields: Partial<Pick<FileFolderRecord, 'path' | 'parentPath' | 'name' | 'updatedAt' | 'deletedAt' | 'archiveBatch'>>): Promise<void> {
    const columns: Record<string, string> = {
      path: 'path', parentPath: 'parent_path', name: 'name', updatedAt: 'updated_at', deletedAt: 'deleted_at', archiveBatch: 'archive_batch',
    };
    const entries = Object.entries(fields).filter(([, v]) => v !== undefined);
    if (entries.length === 0) return;
    await this.db.run(`UPDATE file_folders SET ${entries.map(([k]) => `${columns[k]} = ?`).join(', ')} WHERE id = ?`, [
      ...entries.map(([, v]) => v as SqlValue),
      id,
    ]);
  }

  async purgeArchivedBefore(cutoff: string): Promise<number> {
    return (await this.db.run('DELETE FROM file_folders WHERE deleted_at IS NOT NULL AND deleted_at < ?', [cutoff])).changes;
  }
}
