// Resumable upload sessions and the parts received for them.
import type { SqlExecutor } from './database.ts';
import { limitClause } from './keyset.ts';

export type UploadStatus = 'uploading' | 'completing' | 'finalizing' | 'completed' | 'failed' | 'aborting' | 'aborted' | 'expired';

export interface UploadSessionRecord {
  id: string;
  workspaceId: string;
  userId: string;
  name: string;
  contentType: string;
  size: number;
  folderPath: string;
  partSize: number;
  partCount: number;
  /** False: one signed PUT carries the whole file. */
  multipart: boolean;
  status: UploadStatus;
  error: string | null;
  fileId: string | null;
  expiresAt: string;
  createdAt: string;
  updatedAt: string;
}

interface Row {
  id: string;
  workspace_id: string;
  user_id: string;
  name: string;
  content_type: string;
  size: number;
  folder_path: string;
  part_size: number;
  part_count: number;
  multipart: number;
  status: UploadStatus;
  error: string | null;
  file_id: string | null;
  expires_at: string;
  created_at: string;
  updated_at: string;
}

const toSession = (r: Row): UploadSessionRecord => ({
  id: r.id,
  workspaceId: r.workspace_id,
  userId: r.user_id,
  name: r.name,
  contentType: r.content_type,
  size: Number(r.size),
  folderPath: r.folder_path,
  partSize: Number(r.part_size),
  partCount: Number(r.part_count),
  multipart: Number(r.multipart) === 1,
  status: r.status,
  error: r.error,
  fileId: r.file_id,
  expiresAt: r.expires_at,
  createdAt: r.created_at,
  updatedAt: r.updated_at,
});

export class FileUploadRepository {
  private readonly db: SqlExecutor;
  constructor(db: SqlExecutor) {
    this.db = db;
  }

  async insert(s: UploadSessionRecord): Promise<void> {
    await this.db.run(
      `INSERT INTO file_upload_sessions (id, workspace_id, user_id, name, content_type, size, folder_path, part_size, part_count, multipart,
         status, error, file_id, expires_at, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      [s.id, s.workspaceId, s.userId, s.name, s.contentType, s.size, s.folderPath, s.partSize, s.partCount, s.multipart ? 1 : 0, s.status,
        s.error, s.fileId, s.expiresAt, s.createdAt, s.updatedAt],
    );
  }

  async get(id: string): Promise<UploadSessionRecord | undefined> {
    const r = await this.db.get<Row>('SELECT * FROM file_upload_sessions WHERE id = ?', [id]);
    return r && toSession(r);
  }

  async setStatus(id: string, status: UploadStatus, now: string, extra: { error?: string | null; fileId?: string | null } = {}): Promise<void> {
    await this.db.run(
      'UPDATE file_upload_sessions SET status = ?, updated_at = ?, error = COALESCE(?, error), file_id = COALESCE(?, file_id) WHERE id = ?',
      [status, now, extra.error ?? null, extra.fileId ?? null, id],
    );
  }

  /** Bytes promised by sessions still receiving data, so concurrent uploads cannot overrun the quota together. */
  async reservedBytes(workspaceId: string, now: string): Promise<number> {
    const r = await this.db.get<{ total: number | null }>(
      "SELECT SUM(size) AS total FROM file_upload_sessions WHERE workspace_id = ? AND status = 'uploading' AND expires_at > ?",
      [workspaceId, now],
    );
    return Number(r?.total ?? 0);
  }

  async recordPart(sessionId: string, partNumber: number, size: number): Promise<void> {
    await this.db.run(
      'INSERT INTO file_upload_parts (session_id, part_number, size) VALUES (?, ?, ?) ON CONFLICT (session_id, part_number) DO UPDATE SET size = excluded.size',
      [sessionId, partNumber, size],
    );
  }

  async parts(sessionId: string): Promise<{ partNumber: number; size: number }[]> {
    const rows = await this.db.all<{ part_number: number; size: number }>(
      'SELECT part_number, size FROM file_upload_parts WHERE session_id = ? ORDER BY part_number',
      [sessionId],
    );
    return rows.map((r) => ({ partNumber: Number(r.part_number), size: Number(r.size) }));
  }

  /** Sessions past their expiry that never finished. */
  async expiredUnfinished(now: string, limit: number): Promise<UploadSessionRecord[]> {
    const rows = await this.db.all<Row>(
      `SELECT * FROM file_upload_sessions WHERE status IN ('uploading', 'completing') AND expires_at < ? ${limitClause(limit)}`,
      [now],
    );
    return rows.map(toSession);
  }

  /** Sessions a process left mid-completion (only meaningful at start, before this process completes any). */
  async completing(): Promise<UploadSessionRecord[]> {
    const rows = await this.db.all<Row>("SELECT * FROM file_upload_sessions WHERE status = 'completing' ORDER BY id");
    return rows.map(toSession);
  }

  /** Finished sessions older than `cutoff` (their rows are no longer needed). */
  async deleteFinishedBefore(cutoff: string): Promise<number> {
    return (
      await this.db.run("DELETE FROM file_upload_sessions WHERE status IN ('completed', 'aborted', 'expired', 'failed') AND updated_at < ?", [cutoff])
    ).changes;
  }
}
