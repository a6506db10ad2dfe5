import type { SqlExecutor, SqlValue } from './database.ts';
import { keyset, limitClause } from './keyset.ts';

export type SecretScope = 'workspace' | 'personal';

export interface SecretRecord {
  id: string;
  /** The owning workspace of a workspace secret; null for a personal secret (it follows its owner everywhere). */
  workspaceId: string | null;
  scope: SecretScope;
  ownerUserId: string | null;
  name: string;
  /** AES-256-GCM sealed value (see src/secrets/cipher.ts); never leaves the server. */
  ciphertext: string;
  /** The workspace id bound into the seal's context ('' for personal secrets set since migration 70). */
  sealWorkspaceId: string;
  description: string;
  /** A workspace secret whose value may appear in logs, model content and the list. */
  unredacted: boolean;
  createdBy: string | null;
  createdAt: string;
  updatedAt: string;
}

interface Row {
  id: string;
  workspace_id: string | null;
  scope: SecretScope;
  owner_user_id: string | null;
  name: string;
  ciphertext: string;
  seal_workspace_id: string;
  description: string;
  unredacted: number;
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
  sealWorkspaceId: r.seal_workspace_id,
  description: r.description,
  unredacted: r.unredacted === 1,
  createdBy: r.created_by,
  createdAt: r.created_at,
  updatedAt: r.updated_at,
});

export interface SecretListQuery {
  workspaceId: string;
  /** The caller, whose personal secrets are listed. */
  userId: string;
  scope?: SecretScope;
  search?: string;
  sortBy: 'name' | 'createdAt' | 'updatedAt';
  sortOrder: 'asc' | 'desc';
  after: readonly [SqlValue, string] | null;
  limit: number;
}

const SORT_COLUMN = { name: 'name', createdAt: 'created_at', updatedAt: 'updated_at' } as const;

export class SecretRepository {
  private readonly db: SqlExecutor;
  constructor(db: SqlExecutor) {
    this.db = db;
  }

  /** A personal secret of `userId` shadows the workspace secret of the same name. */
  async resolve(workspaceId: string, userId: string | null, name: string): Promise<SecretRecord | undefined> {
    const r = await this.db.get<Row>(
      `SELECT * FROM secrets WHERE name = ? AND ((scope = 'workspace' AND workspace_id = ?) OR (scope = 'personal' AND owner_user_id = ?))
       ORDER BY scope = 'personal' DESC LIMIT 1`,
      [name, workspaceId, userId],
    );
    return r && toRecord(r);
  }

  /** A workspace secret by (workspaceId, name), or a personal one by (ownerUserId, name). */
  async get(workspaceId: string | null, scope: SecretScope, ownerUserId: string | null, name: string): Promise<SecretRecord | undefined> {
    const r =
      scope === 'workspace'
        ? await this.db.get<Row>(`SELECT * FROM secrets WHERE scope = 'workspace' AND workspace_id = ? AND name = ?`, [workspaceId, name])
        : await this.db.get<Row>(`SELECT * FROM secrets WHERE scope = 'personal' AND owner_user_id = ? AND name = ?`, [ownerUserId, name]);
    return r && toRecord(r);
  }

  /** The caller's view in one workspace: its workspace secrets and the caller's personal ones. */
  async list(q: SecretListQuery): Promise<SecretRecord[]> {
    const where: string[] = [];
    const args: SqlValue[] = [];
    const scopes: string[] = [];
    if (q.scope !== 'personal') {
      scopes.push(`(scope = 'workspace' AND workspace_id = ?)`);
      args.push(q.workspaceId);
    }
    if (q.scope !== 'workspace') {
      scopes.push(`(scope = 'personal' AND owner_user_id = ?)`);
      args.push(q.userId);
    }
    where.push(`(${scopes.join(' OR ')})`);
    if (q.search) {
      where.push(this.db.dialect.contains('lower(name)', 'lower(?)'));
      args.push(q.search);
    }
    const page = keyset({ column: SORT_COLUMN[q.sortBy], idColumn: 'id', order: q.sortOrder, after: q.after, limit: q.limit });
    const rows = await this.db.all<Row>(
      `SELECT * FROM secrets WHERE ${where.join(' AND ')} AND ${page.where} ORDER BY ${page.orderBy} ${limitClause(q.limit)}`,
      [...args, ...page.whereParams],
    );
    return rows.map(toRecord);
  }

  async upsert(s: SecretRecord): Promise<void> {
    await this.db.run(
      `INSERT INTO secrets (id, workspace_id, scope, owner_user_id, name, ciphertext, seal_workspace_id, description, unredacted, created_by, created_at, updated_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
       ON CONFLICT (id) DO UPDATE SET ciphertext = excluded.ciphertext, seal_workspace_id = excluded.seal_workspace_id,
         description = excluded.description, unredacted = excluded.unredacted, updated_at = excluded.updated_at`,
      [s.id, s.workspaceId, s.scope, s.ownerUserId, s.name, s.ciphertext, s.sealWorkspaceId, s.description, s.unredacted ? 1 : 0, s.createdBy, s.createdAt, s.updatedAt],
    );
  }

  async delete(id: string): Promise<boolean> {
    return (await this.db.run('DELETE FROM secrets WHERE id = ?', [id])).changes > 0;
  }
}
