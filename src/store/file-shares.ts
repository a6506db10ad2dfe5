// Share links of files: one per file, kept (with its token) when turned off so turning it on again restores it.
import type { SqlExecutor } from './database.ts';

export type ShareAuthType = 'public' | 'password' | 'email' | 'sso';

export interface FileShareRecord {
  id: string;
  fileId: string;
  workspaceId: string;
  token: string;
  isActive: boolean;
  authType: ShareAuthType;
  passwordHash: string | null;
  allowedEmails: string[];
  createdAt: string;
  updatedAt: string;
}

interface Row {
  id: string;
  file_id: string;
  workspace_id: string;
  token: string;
  is_active: number;
  auth_type: ShareAuthType;
  password_hash: string | null;
  allowed_emails: string;
  created_at: string;
  updated_at: string;
}

const toShare = (r: Row): FileShareRecord => ({
  id: r.id,
  fileId: r.file_id,
  workspaceId: r.workspace_id,
  token: r.token,
  isActive: Number(r.is_active) === 1,
  authType: r.auth_type,
  passwordHash: r.password_hash,
  allowedEmails: JSON.parse(r.allowed_emails) as string[],
  createdAt: r.created_at,
  updatedAt: r.updated_at,
});

export class FileShareRepository {
  private readonly db: SqlExecutor;
  constructor(db: SqlExecutor) {
    this.db = db;
  }

  async forFile(fileId: string): Promise<FileShareRecord | undefined> {
    const r = await this.db.get<Row>('SELECT * FROM file_shares WHERE file_id = ?', [fileId]);
    return r && toShare(r);
  }

  async byToken(token: string): Promise<FileShareRecord | undefined> {
    const r = await this.db.get<Row>('SELECT * FROM file_shares WHERE token = ?', [token]);
    return r && toShare(r);
  }

  async upsert(s: FileShareRecord): Promise<void> {
    await this.db.run(
      `INSERT INTO file_shares (id, file_id, workspace_id, token, is_active, auth_type, password_hash, allowed_emails, created_at, updated_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
       ON CONFLICT (file_id) DO UPDATE SET is_active = excluded.is_active, auth_type = excluded.auth_type,
         password_hash = excluded.password_hash, allowed_emails = excluded.allowed_emails, updated_at = excluded.updated_at`,
      [s.id, s.fileId, s.workspaceId, s.token, s.isActive ? 1 : 0, s.authType, s.passwordHash, JSON.stringify(s.allowedEmails), s.createdAt, s.updatedAt],
    );
  }
}
