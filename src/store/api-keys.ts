import type { SqlExecutor } from './database.ts';

export type ApiKeyKind = 'personal' | 'workspace';

export interface ApiKeyRecord {
  id: string;
  kind: ApiKeyKind;
  userId: string;
  workspaceId: string | null;
  name: string;
  keyHash: string;
  displaySuffix: string;
  createdAt: string;
  expiresAt: string | null;
  revokedAt: string | null;
}

interface ApiKeyRow {
  id: string;
  kind: ApiKeyKind;
  user_id: string;
  workspace_id: string | null;
  name: string;
  key_hash: string;
  display_suffix: string;
  created_at: string;
  expires_at: string | null;
  revoked_at: string | null;
}

const toRecord = (r: ApiKeyRow): ApiKeyRecord => ({
  id: r.id,
  kind: r.kind,
  userId: r.user_id,
  workspaceId: r.workspace_id,
  name: r.name,
  keyHash: r.key_hash,
  displaySuffix: r.display_suffix,
  createdAt: r.created_at,
  expiresAt: r.expires_at,
  revokedAt: r.revoked_at,
});

export class ApiKeyRepository {
  private readonly db: SqlExecutor;
  constructor(db: SqlExecutor) {
    this.db = db;
  }

  async insert(k: ApiKeyRecord): Promise<void> {
    await this.db.run(
      `INSERT INTO api_keys (id, kind, user_id, workspace_id, name, key_hash, display_suffix, created_at, expires_at, revoked_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      [k.id, k.kind, k.userId, k.workspaceId, k.name, k.keyHash, k.displaySuffix, k.createdAt, k.expiresAt, k.revokedAt],
    );
  }

  async getByHash(hash: string): Promise<ApiKeyRecord | undefined> {
    const r = await this.db.get<ApiKeyRow>('SELECT * FROM api_keys WHERE key_hash = ?', [hash]);
    return r && toRecord(r);
  }

  async get(id: string): Promise<ApiKeyRecord | undefined> {
    const r = await this.db.get<ApiKeyRow>('SELECT * FROM api_keys WHERE id = ?', [id]);
    return r && toRecord(r);
  }

  async listForUser(userId: string): Promise<ApiKeyRecord[]> {
    return (await this.db.all<ApiKeyRow>('SELECT * FROM api_keys WHERE user_id = ? ORDER BY created_at, id', [userId])).map(toRecord);
  }

  /** Every key, oldest first (the admin command's `key list`). */
  async list(): Promise<ApiKeyRecord[]> {
    return (await this.db.all<ApiKeyRow>('SELECT * FROM api_keys ORDER BY created_at, id')).map(toRecord);
  }

  async revoke(id: string, at: string): Promise<boolean> {
    return (await this.db.run('UPDATE api_keys SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL', [at, id])).changes > 0;
  }
}
