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
  /** While `completing`: until when its completer's lease runs (src/workers/lease.ts); null otherwise. */
  leaseUntil: string | null;
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
  lease_until?: string | null;
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
  leaseUntil: r.lease_until ?? null,
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

  /**
   * uploading → completing, leased to `owner` until `until` (src/workers/lease.ts): only one completion goes
   * ahead, and a completer that dies lets go of the session when the lease runs out. False when not `uploading`.
   */
  async claimCompletion(id: string, owner: string, until: string, now: string): Promise<boolean> {
    const r = await this.db.run(
      "UPDATE file_upload_sessions SET status = 'completing', lease_owner = ?, lease_until = ?, updated_at = ? WHERE id = ? AND status = 'uploading'",
      [owner, until, now, id],
    );
    return r.changes === 1;
  }

  /** Extends a held completion lease; false when the lease was lost (it ran out and the session was handed back). */
  async renewCompletion(id: string, owner: string, until: string, now: string): Promise<boolean> {
    const r = await this.db.run(
      "UPDATE file_upload_sessions SET lease_until = ? WHERE id = ? AND status = 'completing' AND lease_owner = ? AND lease_until >= ?",
      [until, id, owner, now],
    );
    return r.changes === 1;
  }

  /** True while `owner` still holds the session's completion, unexpired (checked where the file is recorded). */
  async holdsCompletion(id: string, owner: string, now: string): Promise<boolean> {
    const held = await this.db.get("SELECT 1 AS held FROM file_upload_sessions WHERE id = ? AND status = 'completing' AND lease_owner = ? AND lease_until >= ?", [id, owner, now]);
    return held !== undefined;
  }

  /** Sessions `completing` whose completer's lease ran out by `now` (a session of an older version has no lease). */
  async abandonedCompletions(now: string): Promise<UploadSessionRecord[]> {
    const rows = await this.db.all<Row>("SELECT * FROM file_upload_sessions WHERE status = 'completing' AND (lease_until IS NULL OR lease_until < ?) ORDER BY id", [now]);
    return rows.map(toSession);
  }

  /** An abandoned completion → `status` (uploading or failed), only if its lease is still expired at `now`. */
  async handBack(id: string, status: 'uploading' | 'failed', now: string, error: string | null): Promise<boolean> {
    const r = await this.db.run(
      `UPDATE file_upload_sessions SET status = ?, error = COALESCE(?, error), lease_owner = NULL, lease_until = NULL, updated_at = ?
        WHERE id = ? AND status = 'completing' AND (lease_until IS NULL OR lease_until < ?)`,
      [status, error, now, id, now],
    );
    return r.changes === 1;
  }

  /** Finished sessions older than `cutoff` (their rows are no longer needed). */
  async deleteFinishedBefore(cutoff: string): Promise<number> {
    return (
      await this.db.run("DELETE FROM file_upload_sessions WHERE status IN ('completed', 'aborted', 'expired', 'failed') AND updated_at < ?", [cutoff])
    ).changes;
  }
}
