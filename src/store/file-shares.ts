// Share links of files: one per file, kept (with its token) when turned off so turning it on again restores it.
// The token is a bearer secret, so the row holds only its SHA-256 (to find the share by an incoming token) and
// the token sealed under the secrets key (to show the link again to workspace members); sealing happens in
// src/files, the store never sees the plain token except once for rows migration 45 has not sealed yet.
import type { SqlExecutor } from './database.ts';

export type ShareAuthType = 'public' | 'password' | 'email' | 'sso';

export interface FileShareRecord {
  id: string;
  fileId: string;
  workspaceId: string;
  /** SHA-256 (hex) of the token. */
  tokenHash: string;
  /** The token sealed under the secrets key (see src/files/share-tokens.ts). */
  tokenSealed: string;
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
  token_hash: string;
  token_sealed: string;
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
  tokenHash: r.token_hash,
  tokenSealed: r.token_sealed,
  isActive: Number(r.is_active) === 1,
  authType: r.auth_type,
  passwordHash: r.password_hash,
  allowedEmails: JSON.parse(r.allowed_emails) as string[],
  createdAt: r.created_at,
  updatedAt: r.updated_at,
});

// Rows still waiting for their token to be sealed are invisible until then.
const SEALED = 'token_hash IS NOT NULL AND token_sealed IS NOT NULL';

export class FileShareRepository {
  private readonly db: SqlExecutor;
  constructor(db: SqlExecutor) {
    this.db = db;
  }

  async forFile(fileId: string): Promise<FileShareRecord | undefined> {
    const r = await this.db.get<Row>(`SELECT * FROM file_shares WHERE file_id = ? AND ${SEALED}`, [fileId]);
    return r && toShare(r);
  }

  async byTokenHash(tokenHash: string): Promise<FileShareRecord | undefined> {
    const r = await this.db.get<Row>(`SELECT * FROM file_shares WHERE token_hash = ? AND ${SEALED}`, [tokenHash]);
    return r && toShare(r);
  }

  async upsert(s: FileShareRecord): Promise<void> {
    await this.db.run(
      `INSERT INTO file_shares (id, file_id, workspace_id, token_hash, token_sealed, is_active, auth_type, password_hash, allowed_emails, created_at, updated_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
       ON CONFLICT (file_id) DO UPDATE SET is_active = excluded.is_active, auth_type = excluded.auth_type,
         password_hash = excluded.password_hash, allowed_emails = excluded.allowed_emails, updated_at = excluded.updated_at`,
      [s.id, s.fileId, s.workspaceId, s.tokenHash, s.tokenSealed, s.isActive ? 1 : 0, s.authType, s.passwordHash, JSON.stringify(s.allowedEmails), s.createdAt, s.updatedAt],
    );
  }

  /** Shares whose token is still stored in plain (created before migration 45). */
  async unsealed(): Promise<{ id: string; plainToken: string }[]> {
    const rows = await this.db.all<{ id: string; plain_token: string }>('SELECT id, plain_token FROM file_shares WHERE plain_token IS NOT NULL');
    return rows.map((r) => ({ id: r.id, plainToken: r.plain_token }));
  }

  /** Replaces a plain token by its hash and sealed form. */
  async seal(id: string, tokenHash: string, tokenSealed: string): Promise<void> {
    await this.db.run('UPDATE file_shares SET token_hash = ?, token_sealed = ?, plain_token = NULL WHERE id = ?', [tokenHash, tokenSealed, id]);
  }
}
