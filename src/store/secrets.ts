import type { SqlExecutor } from './database.ts';

export interface SecretRecord {
  id: string;
  workspaceId: string;
  scope: 'workspace' | 'personal';
  ownerUserId: string | null;
  name: string;
  /** AES-256-GCM sealed value (see src/secrets/cipher.ts); never leaves the server. */
  ciphertext: string;
  description: string;
  createdBy: string | null;
  createdAt: string;
  updatedAt: string;
}

interface Row {
  id: string;
  workspace_id: string;
  scope: 'workspace' | 'personal';
  owner_user_id: string | null;
  name: string;
  ciphertext: string;
  description: string;
  created_by: string | null;
  created_at: string;
  updated_at: string;
}

const toRecord = (r: Row): SecretRecord => ({
  id: r.id,
  workspaceId: r.workspace_id,
  scope: r.scope,
  ownerUserId: r.owner_user_id,
  name: r.name,
  ciphertext: r.ciphertext,
  description: r.description,
  createdBy: r.created_by,
  createdAt: r.created_at,
  updatedAt: r.updated_at,
});

export class SecretRepository {
  private readonly db: SqlExecutor;
  constructor(db: SqlExecutor) {
    this.db = db;
  }

  /** A personal secret of `userId` shadows the workspace secret of the same name. */
  async resolve(workspaceId: string, userId: string | null, name: string): Promise<SecretRecord | undefined> {
    const r = await this.db.get<Row>(
      `SELECT * FROM secrets WHERE workspace_id = ? AND name = ? AND (scope = 'workspace' OR owner_user_id = ?)
       ORDER BY scope = 'personal' DESC LIMIT 1`,
      [workspaceId, name, userId],
    );
    return r && toRecord(r);
  }

  async get(workspaceId: string, scope: 'workspace' | 'personal', ownerUserId: string | null, name: string): Promise<SecretRecord | undefined> {
    const r = await this.db.get<Row>(
      `SELECT * FROM secrets WHERE workspace_id = ? AND scope = ? AND COALESCE(owner_user_id, '') = ? AND name = ?`,
      [workspaceId, scope, ownerUserId ?? '', name],
    );
    return r && toRecord(r);
  }

  async upsert(s: SecretRecord): Promise<void> {
    await this.db.run(
      `INSERT INTO secrets (id, workspace_id, scope, owner_user_id, name, ciphertext, description, created_by, created_at, updated_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
       ON CONFLICT (workspace_id, scope, COALESCE(owner_user_id, ''), name)
       DO UPDATE SET ciphertext = excluded.ciphertext, description = excluded.description, updated_at = excluded.updated_at`,
      [s.id, s.workspaceId, s.scope, s.ownerUserId, s.name, s.ciphertext, s.description, s.createdBy, s.createdAt, s.updatedAt],
    );
  }

  async delete(id: string): Promise<boolean> {
    return (await this.db.run('DELETE FROM secrets WHERE id = ?', [id])).changes > 0;
  }
}
