// Workspace files and their versions. A file row carries its current content (blob key, size, type); every
// content change appends a version row pointing at an immutable blob.
import type { SqlExecutor, SqlValue } from './database.ts';
import type { SqlDialect } from './dialect.ts';
import { keyset, limitClause } from './keyset.ts';
import { onUniqueViolation } from './errors.ts';
import { DomainError } from '../domain/errors.ts';

/**
 * The answer when a file name is taken in a folder: the 409 of the name check in src/files/service.ts, for a write
 * that lost a race to another process (the unique index files_active_name decides; which file holds the name is
 * not known at that point, so `fileId` is absent).
 */
export const fileNameTaken = (name: string, folderPath: string) =>
  new DomainError('conflict', `A file named "${name}" already exists in ${folderPath}.`, { code: 'NAME_CONFLICT' });
const NAME_INDEX = ['files', ['workspace_id', 'folder_path', 'name']] as const;

export interface StoredFile {
  id: string;
  workspaceId: string;
  folderPath: string;
  name: string;
  contentType: string;
  size: number;
  blobKey: string;
  currentVersion: number;
  uploadedBy: string;
  uploadedByEmail: string;
  uploadedAt: string;
  updatedAt: string;
  deletedAt: string | null;
  archiveBatch: string | null;
}

export type VersionSource = 'upload' | 'user' | 'api' | 'copilot' | 'workflow' | 'collab' | 'revert' | 'unknown';

export interface FileVersionRecord {
  fileId: string;
  version: number;
  blobKey: string;
  size: number;
  contentType: string;
  source: VersionSource;
  authorId: string | null;
  authorEmail: string | null;
  restoredFromVersion: number | null;
  createdAt: string;
  updatedAt: string;
  supersededAt: string | null;
}

interface FileRow {
  id: string;
  workspace_id: string;
  folder_path: string;
  name: string;
  content_type: string;
  size: number;
  blob_key: string;
  current_version: number;
  uploaded_by: string;
  uploaded_by_email: string;
  uploaded_at: string;
  updated_at: string;
  deleted_at: string | null;
  archive_batch: string | null;
}

interface VersionRow {
  file_id: string;
  version: number;
  blob_key: string;
  size: number;
  content_type: string;
  source: VersionSource;
  author_id: string | null;
  author_email: string | null;
  restored_from_version: number | null;
  created_at: string;
  updated_at: string;
  superseded_at: string | null;
}

const toFile = (r: FileRow): StoredFile => ({
  id: r.id,
  workspaceId: r.workspace_id,
  folderPath: r.folder_path,
  name: r.name,
  contentType: r.content_type,
  size: Number(r.size),
  blobKey: r.blob_key,
  currentVersion: Number(r.current_version),
  uploadedBy: r.uploaded_by,
  uploadedByEmail: r.uploaded_by_email,
  uploadedAt: r.uploaded_at,
  updatedAt: r.updated_at,
  deletedAt: r.deleted_at,
  archiveBatch: r.archive_batch,
});

const toVersion = (r: VersionRow): FileVersionRecord => ({
  fileId: r.file_id,
  version: Number(r.version),
  blobKey: r.blob_key,
  size: Number(r.size),
  contentType: r.content_type,
  source: r.source,
  authorId: r.author_id,
  authorEmail: r.author_email,
  restoredFromVersion: r.restored_from_version === null ? null : Number(r.restored_from_version),
  createdAt: r.created_at,
  updatedAt: r.updated_at,
  supersededAt: r.superseded_at,
});

export const FILE_SORT_COLUMNS = { name: 'name', size: 'size', uploadedAt: 'uploaded_at', updatedAt: 'updated_at' } as const;

export interface FileListQuery {
  workspaceId: string;
  archived: boolean;
  /** Exact folder, or the folder and everything below it when `recursive`. */
  folderPath: string | null;
  recursive: boolean;
  search: string | null;
  sortBy: keyof typeof FILE_SORT_COLUMNS;
  sortOrder: 'asc' | 'desc';
  after: readonly [SqlValue, string] | null;
  limit: number;
}

/**
 * A condition: `folder_path` is `?` or a folder below it. Case-sensitive on every engine, as folder paths compare
 * (SQLite's LIKE ignores ASCII case and Postgres's does not, so a LIKE prefix matched /docs under /Docs on SQLite
 * alone). Takes two parameters, from folderAndBelow().
 */
const FOLDER_AND_BELOW = (d: SqlDialect) => `(folder_path = ? OR ${d.startsWith('folder_path', '?')})`;
const folderAndBelow = (folderPath: string): SqlValue[] => [folderPath, `${folderPath}/`];

export class FileRepository {
  private readonly db: SqlExecutor;
  constructor(db: SqlExecutor) {
    this.db = db;
  }

  async insert(f: StoredFile): Promise<void> {
    await onUniqueViolation(this.insertRow(f), ...NAME_INDEX, () => fileNameTaken(f.name, f.folderPath));
  }

  private async insertRow(f: StoredFile): Promise<void> {
    await this.db.run(
      `INSERT INTO files (id, workspace_id, folder_path, name, content_type, size, blob_key, current_version, uploaded_by,
         uploaded_by_email, uploaded_at, updated_at, deleted_at, archive_batch) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      [f.id, f.workspaceId, f.folderPath, f.name, f.contentType, f.size, f.blobKey, f.currentVersion, f.uploadedBy, f.uploadedByEmail,
        f.uploadedAt, f.updatedAt, f.deletedAt, f.archiveBatch],
    );
  }

  async get(id: string): Promise<StoredFile | undefined> {
    const r = await this.db.get<FileRow>('SELECT * FROM files WHERE id = ?', [id]);
    return r && toFile(r);
  }

  async getMany(workspaceId: string, ids: readonly string[]): Promise<StoredFile[]> {
    const out: StoredFile[] = [];
    for (let i = 0; i < ids.length; i += 500) {
      const chunk = ids.slice(i, i + 500);
      const rows = await this.db.all<FileRow>(
        `SELECT * FROM files WHERE workspace_id = ? AND id IN (${chunk.map(() => '?').join(', ')})`,
        [workspaceId, ...chunk],
      );
      out.push(...rows.map(toFile));
    }
    return out;
  }

  async activeByName(workspaceId: string, folderPath: string, name: string): Promise<StoredFile | undefined> {
    const r = await this.db.get<FileRow>(
      'SELECT * FROM files WHERE workspace_id = ? AND folder_path = ? AND name = ? AND deleted_at IS NULL',
      [workspaceId, folderPath, name],
    );
    return r && toFile(r);
  }

  async list(q: FileListQuery): Promise<StoredFile[]> {
    const page = keyset({ column: FILE_SORT_COLUMNS[q.sortBy], idColumn: 'id', order: q.sortOrder, after: q.after, limit: q.limit });
    const params: SqlValue[] = [q.workspaceId];
    let where = `workspace_id = ? AND deleted_at IS ${q.archived ? 'NOT NULL' : 'NULL'}`;
    if (q.folderPath !== null) {
      if (q.recursive && q.folderPath !== '/') {
        where += ` AND ${FOLDER_AND_BELOW(this.db.dialect)}`;
        params.push(...folderAndBelow(q.folderPath));
      } else if (!q.recursive) {
        where += ' AND folder_path = ?';
        params.push(q.folderPath);
      }
    }
    if (q.search) {
      // Whatever the case, on every engine (SQLite's LIKE ignored ASCII case only; Postgres's none).
      const d = this.db.dialect;
      where += ` AND ${d.contains(d.fold('name'), d.fold('?'))}`;
      params.push(q.search);
    }
    params.push(...page.whereParams);
    const rows = await this.db.all<FileRow>(`SELECT * FROM files WHERE ${where} AND ${page.where} ORDER BY ${page.orderBy} ${limitClause(q.limit)}`, params);
    return rows.map(toFile);
  }

  /** Active files in a folder and every folder below it. */
  async activeUnder(workspaceId: string, folderPath: string): Promise<StoredFile[]> {
    const rows = await this.db.all<FileRow>(
      folderPath === '/'
        ? 'SELECT * FROM files WHERE workspace_id = ? AND deleted_at IS NULL ORDER BY folder_path, name'
        : `SELECT * FROM files WHERE workspace_id = ? AND deleted_at IS NULL AND ${FOLDER_AND_BELOW(this.db.dialect)} ORDER BY folder_path, name`,
      folderPath === '/' ? [workspaceId] : [workspaceId, ...folderAndBelow(folderPath)],
    );
    return rows.map(toFile);
  }

  async archivedInBatch(workspaceId: string, batch: string): Promise<StoredFile[]> {
    const rows = await this.db.all<FileRow>('SELECT * FROM files WHERE workspace_id = ? AND archive_batch = ?', [workspaceId, batch]);
    return rows.map(toFile);
  }

  async update(id: string, fields: Partial<Pick<StoredFile, 'folderPath' | 'name' | 'contentType' | 'size' | 'blobKey' | 'currentVersion' | 'updatedAt' | 'deletedAt' | 'archiveBatch'>>): Promise<void> {
    const columns: Record<string, string> = {
      folderPath: 'folder_path', name: 'name', contentType: 'content_type', size: 'size', blobKey: 'blob_key',
      currentVersion: 'current_version', updatedAt: 'updated_at', deletedAt: 'deleted_at', archiveBatch: 'archive_batch',
    };
    const entries = Object.entries(fields).filter(([, v]) => v !== undefined);
    if (entries.length === 0) return;
    const write = () => this.db.run(`UPDATE files SET ${entries.map(([k]) => `${columns[k]} = ?`).join(', ')} WHERE id = ?`, [...entries.map(([, v]) => v as SqlValue), id]);
    if (fields.name === undefined && fields.folderPath === undefined && !('deletedAt' in fields)) {
      await write();
      return;
    }
    // The name and folder the row will have, read before the write (after a failed statement some engines
    // accept no further reads in the transaction).
    const current = fields.name === undefined || fields.folderPath === undefined ? await this.get(id) : undefined;
    const name = fields.name ?? current?.name ?? '';
    const folderPath = fields.folderPath ?? current?.folderPath ?? '/';
    await onUniqueViolation(write(), ...NAME_INDEX, () => fileNameTaken(name, folderPath));
  }

  /** Rewrites the folder of every file under `from` (inclusive) to sit under `to`. */
  async moveFolderPrefix(workspaceId: string, from: string, to: string, now: string): Promise<number> {
    const r = await this.db.run(
      `UPDATE files SET folder_path = ? || substr(folder_path, ?), updated_at = ?
       WHERE workspace_id = ? AND deleted_at IS NULL AND ${FOLDER_AND_BELOW(this.db.dialect)}`,
      [to, from.length + 1, now, workspaceId, ...folderAndBelow(from)],
    );
    return r.changes;
  }

  async delete(id: string): Promise<void> {
    await this.db.run('DELETE FROM files WHERE id = ?', [id]);
  }

  /** Bytes a workspace stores: every version of every file, active or archived, until purged. */
  async storageBytes(workspaceId: string): Promise<number> {
    const r = await this.db.get<{ total: number | null }>(
      'SELECT SUM(v.size) AS total FROM file_versions v JOIN files f ON f.id = v.file_id WHERE f.workspace_id = ?',
      [workspaceId],
    );
    return Number(r?.total ?? 0);
  }

  async archivedBefore(cutoff: string, limit: number): Promise<StoredFile[]> {
    const rows = await this.db.all<FileRow>(`SELECT * FROM files WHERE deleted_at IS NOT NULL AND deleted_at < ? ${limitClause(limit)}`, [cutoff]);
    return rows.map(toFile);
  }

  // ── versions ──

  async insertVersion(v: FileVersionRecord): Promise<void> {
    await this.db.run(
      `INSERT INTO file_versions (file_id, version, blob_key, size, content_type, source, author_id, author_email,
         restored_from_version, created_at, updated_at, superseded_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      [v.fileId, v.version, v.blobKey, v.size, v.contentType, v.source, v.authorId, v.authorEmail, v.restoredFromVersion, v.createdAt,
        v.updatedAt, v.supersededAt],
    );
  }

  async supersedeVersion(fileId: string, version: number, now: string): Promise<void> {
    await this.db.run('UPDATE file_versions SET superseded_at = ?, updated_at = ? WHERE file_id = ? AND version = ?', [now, now, fileId, version]);
  }

  async getVersion(fileId: string, version: number): Promise<FileVersionRecord | undefined> {
    const r = await this.db.get<VersionRow>('SELECT * FROM file_versions WHERE file_id = ? AND version = ?', [fileId, version]);
    return r && toVersion(r);
  }

  async latestVersionNumber(fileId: string): Promise<number> {
    const r = await this.db.get<{ v: number | null }>('SELECT MAX(version) AS v FROM file_versions WHERE file_id = ?', [fileId]);
    return Number(r?.v ?? 0);
  }

  async listVersions(fileId: string, order: 'asc' | 'desc', after: readonly [SqlValue, string] | null, limit: number): Promise<FileVersionRecord[]> {
    const dir = order === 'asc' ? 'ASC' : 'DESC';
    const params: SqlValue[] = [fileId];
    let where = 'file_id = ?';
    if (after) {
      where += ` AND version ${order === 'asc' ? '>' : '<'} ?`;
      params.push(Number(after[0]));
    }
    const rows = await this.db.all<VersionRow>(`SELECT * FROM file_versions WHERE ${where} ORDER BY version ${dir} ${limitClause(limit)}`, params);
    return rows.map(toVersion);
  }

  async deleteVersion(fileId: string, version: number): Promise<boolean> {
    return (await this.db.run('DELETE FROM file_versions WHERE file_id = ? AND version = ?', [fileId, version])).changes > 0;
  }

  /** Every blob key a version or an unfinished upload still needs. */
  async referencedBlobKeys(): Promise<Set<string>> {
    const rows = await this.db.all<{ blob_key: string }>('SELECT DISTINCT blob_key FROM file_versions UNION SELECT blob_key FROM files');
    return new Set(rows.map((r) => r.blob_key));
  }
}
