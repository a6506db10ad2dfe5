// Credentials of a workspace (service-account keys and OAuth tokens, both sealed) and pending OAuth connections.
import type { SqlExecutor, SqlValue } from './database.ts';
import { keyset, limitClause } from './keyset.ts';

export interface CredentialRecord {
  id: string;
  workspaceId: string;
  type: 'oauth' | 'service_account';
  providerId: string;
  displayName: string;
  description: string | null;
  accountId: string | null;
  /** Sealed JSON: the service-account fields, or the OAuth token set. Never leaves the server. */
  sealedSecret: string;
  /** When the OAuth access token expires (null: unknown or not OAuth). */
  accessExpiresAt: string | null;
  createdBy: string | null;
  createdAt: string;
  updatedAt: string;
}

export interface ConnectionStateRecord {
  stateHash: string;
  workspaceId: string;
  userId: string;
  providerId: string;
  displayName: string;
  /** Set for a reconnect: the credential whose tokens are replaced. */
  credentialId: string | null;
  /** Sealed PKCE verifier (and, for providers configured per connection, the client config). */
  sealedVerifier: string;
  redirectUri: string;
  createdAt: string;
  expiresAt: string;
  usedAt: string | null;
}

const toRecord = (r: Record<string, any>): CredentialRecord => ({
  id: r.id,
  workspaceId: r.workspace_id,
  type: r.type,
  providerId: r.provider_id,
  displayName: r.display_name,
  description: r.description,
  accountId: r.account_id,
  sealedSecret: r.sealed_secret,
  accessExpiresAt: r.access_expires_at,
  createdBy: r.created_by,
  createdAt: r.created_at,
  updatedAt: r.updated_at,
});

const SORT_COLUMN = { displayName: 'display_name', createdAt: 'created_at', updatedAt: 'updated_at' } as const;

export class CredentialRepository {
  private readonly db: SqlExecutor;
  constructor(db: SqlExecutor) {
    this.db = db;
  }

  async get(workspaceId: string, id: string): Promise<CredentialRecord | undefined> {
    const r = await this.db.get<Record<string, any>>('SELECT * FROM credentials WHERE workspace_id = ? AND id = ?', [workspaceId, id]);
    return r && toRecord(r);
  }

  async exists(id: string): Promise<boolean> {
    return !!(await this.db.get('SELECT 1 AS x FROM credentials WHERE id = ?', [id]));
  }

  async list(q: { workspaceId: string; type?: string; providerId?: string; search?: string; sortBy: keyof typeof SORT_COLUMN; sortOrder: 'asc' | 'desc'; after: readonly [SqlValue, string] | null; limit: number }): Promise<CredentialRecord[]> {
    const page = keyset({ column: SORT_COLUMN[q.sortBy], idColumn: 'id', order: q.sortOrder, after: q.after, limit: q.limit });
    const rows = await this.db.all<Record<string, any>>(
      `SELECT * FROM credentials WHERE workspace_id = ? AND (CAST(? AS TEXT) IS NULL OR type = ?) AND (CAST(? AS TEXT) IS NULL OR provider_id = ?)
       AND (CAST(? AS TEXT) IS NULL OR ${this.db.dialect.contains('lower(display_name)', 'lower(?)')}) AND ${page.where} ORDER BY ${page.orderBy} ${limitClause(q.limit)}`,
      [q.workspaceId, q.type ?? null, q.type ?? null, q.providerId ?? null, q.providerId ?? null, q.search ?? null, q.search ?? null, ...page.whereParams],
    );
    return rows.map(toRecord);
  }

  async insert(c: CredentialRecord): Promise<void> {
    await this.db.run(
      `INSERT INTO credentials (id, workspace_id, type, provider_id, display_name, description, account_id, sealed_secret, access_expires_at, created_by, created_at, updated_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      [c.id, c.workspaceId, c.type, c.providerId, c.displayName, c.description, c.accountId, c.sealedSecret, c.accessExpiresAt, c.createdBy, c.createdAt, c.updatedAt],
    );
  }

  async update(c: CredentialRecord): Promise<void> {
    await this.db.run(
      'UPDATE credentials SET display_name = ?, description = ?, account_id = ?, sealed_secret = ?, access_expires_at = ?, updated_at = ? WHERE id = ?',
      [c.displayName, c.description, c.accountId, c.sealedSecret, c.accessExpiresAt, c.updatedAt, c.id],
    );
  }

  async delete(id: string): Promise<boolean> {
    return (await this.db.run('DELETE FROM credentials WHERE id = ?', [id])).changes > 0;
  }

  async insertState(s: Omit<ConnectionStateRecord, 'usedAt'>): Promise<void> {
    await this.db.run(
      `INSERT INTO oauth_connection_states (state_hash, workspace_id, user_id, provider_id, display_name, credential_id, sealed_verifier, redirect_uri, created_at, expires_at, used_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, NULL)`,
      [s.stateHash, s.workspaceId, s.userId, s.providerId, s.displayName, s.credentialId, s.sealedVerifier, s.redirectUri, s.createdAt, s.expiresAt],
    );
  }

  async getState(stateHash: string): Promise<ConnectionStateRecord | undefined> {
    const r = await this.db.get<Record<string, any>>('SELECT * FROM oauth_connection_states WHERE state_hash = ?', [stateHash]);
    return r && {
      stateHash: r.state_hash,
      workspaceId: r.workspace_id,
      userId: r.user_id,
      providerId: r.provider_id,
      displayName: r.display_name,
      credentialId: r.credential_id,
      sealedVerifier: r.sealed_verifier,
      redirectUri: r.redirect_uri,
      createdAt: r.created_at,
      expiresAt: r.expires_at,
      usedAt: r.used_at,
    };
  }

  /** Marks a state used; false when it already was (a replayed callback). */
  async useState(stateHash: string, at: string): Promise<boolean> {
    return (await this.db.run('UPDATE oauth_connection_states SET used_at = ? WHERE state_hash = ? AND used_at IS NULL', [at, stateHash])).changes > 0;
  }

  async purgeStates(before: string): Promise<void> {
    await this.db.run('DELETE FROM oauth_connection_states WHERE expires_at < ?', [before]);
  }
}
