import type { SqlExecutor } from './database.ts';

export interface OAuthClient {
  id: string;
  name: string;
  createdAt: string;
}

export interface OAuthGrant {
  id: string;
  clientId: string;
  userId: string;
  scopes: string[];
  createdAt: string;
  revokedAt: string | null;
}

export interface OAuthToken {
  id: string;
  grantId: string;
  kind: 'access' | 'refresh';
  tokenHash: string;
  scopes: string[];
  createdAt: string;
  expiresAt: string | null;
  revokedAt: string | null;
}

/** A grant that still signs someone in, as its user sees it: the application's name and when it last renewed. */
export interface AuthorizedApp {
  grantId: string;
  clientId: string;
  clientName: string;
  scopes: string[];
  createdAt: string;
  lastRenewedAt: string;
}

/** A token with what it takes to honour it: its grant's user and whether the grant still stands. */
export interface ResolvedToken extends OAuthToken {
  userId: string;
  grantRevokedAt: string | null;
}

interface TokenRow {
  id: string;
  grant_id: string;
  kind: 'access' | 'refresh';
  token_hash: string;
  scopes: string;
  created_at: string;
  expires_at: string | null;
  revoked_at: string | null;
  user_id: string;
  grant_revoked_at: string | null;
}

const split = (s: string) => s.split(' ').filter(Boolean);

export class OAuthRepository {
  private readonly db: SqlExecutor;
  constructor(db: SqlExecutor) {
    this.db = db;
  }

  async insertClient(c: OAuthClient): Promise<void> {
    await this.db.run('INSERT INTO oauth_clients (id, name, created_at) VALUES (?, ?, ?)', [c.id, c.name, c.createdAt]);
  }

  async getClient(id: string): Promise<OAuthClient | undefined> {
    const r = await this.db.get<{ id: string; name: string; created_at: string }>('SELECT * FROM oauth_clients WHERE id = ?', [id]);
    return r && { id: r.id, name: r.name, createdAt: r.created_at };
  }

  async insertGrant(g: OAuthGrant): Promise<void> {
    await this.db.run('INSERT INTO oauth_grants (id, client_id, user_id, scopes, created_at, revoked_at) VALUES (?, ?, ?, ?, ?, ?)', [
      g.id,
      g.clientId,
      g.userId,
      g.scopes.join(' '),
      g.createdAt,
      g.revokedAt,
    ]);
  }

  async getGrant(id: string): Promise<OAuthGrant | undefined> {
    const r = await this.db.get<{ id: string; client_id: string; user_id: string; scopes: string; created_at: string; revoked_at: string | null }>(
      'SELECT * FROM oauth_grants WHERE id = ?',
      [id],
    );
    return r && { id: r.id, clientId: r.client_id, userId: r.user_id, scopes: split(r.scopes), createdAt: r.created_at, revokedAt: r.revoked_at };
  }

  /** The user's grants that still hold a live token (not revoked, not expired), newest first. */
  async listAuthorizedApps(userId: string, now: string): Promise<AuthorizedApp[]> {
    const rows = await this.db.all<{ id: string; client_id: string; client_name: string; scopes: string; created_at: string; last_renewed_at: string }>(
      `SELECT g.id, g.client_id, c.name AS client_name, g.scopes, g.created_at, MAX(t.created_at) AS last_renewed_at
       FROM oauth_grants g JOIN oauth_clients c ON c.id = g.client_id JOIN oauth_tokens t ON t.grant_id = g.id
       WHERE g.user_id = ? AND g.revoked_at IS NULL AND t.revoked_at IS NULL AND (t.expires_at IS NULL OR t.expires_at > ?)
       GROUP BY g.id, c.name ORDER BY g.created_at DESC, g.id`,
      [userId, now],
    );
    return rows.map((r) => ({ grantId: r.id, clientId: r.client_id, clientName: r.client_name, scopes: split(r.scopes), createdAt: r.created_at, lastRenewedAt: r.last_renewed_at }));
  }

  async revokeGrant(id: string, at: string): Promise<boolean> {
    return (await this.db.run('UPDATE oauth_grants SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL', [at, id])).changes > 0;
  }

  /** Revokes every grant a user gave an application: "revoking an application's grant signs out all its logins". */
  async revokeGrantsFor(clientId: string, userId: string, at: string): Promise<number> {
    return (await this.db.run('UPDATE oauth_grants SET revoked_at = ? WHERE client_id = ? AND user_id = ? AND revoked_at IS NULL', [at, clientId, userId]))
      .changes;
  }

  async insertToken(t: OAuthToken): Promise<void> {
    await this.db.run(
      'INSERT INTO oauth_tokens (id, grant_id, kind, token_hash, scopes, created_at, expires_at, revoked_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)',
      [t.id, t.grantId, t.kind, t.tokenHash, t.scopes.join(' '), t.createdAt, t.expiresAt, t.revokedAt],
    );
  }

  async resolveToken(hash: string, kind: 'access' | 'refresh'): Promise<ResolvedToken | undefined> {
    const r = await this.db.get<TokenRow>(
      `SELECT t.*, g.user_id, g.revoked_at AS grant_revoked_at FROM oauth_tokens t JOIN oauth_grants g ON g.id = t.grant_id
       WHERE t.token_hash = ? AND t.kind = ?`,
      [hash, kind],
    );
    return (
      r && {
        id: r.id,
        grantId: r.grant_id,
        kind: r.kind,
        tokenHash: r.token_hash,
        scopes: split(r.scopes),
        createdAt: r.created_at,
        expiresAt: r.expires_at,
        revokedAt: r.revoked_at,
        userId: r.user_id,
        grantRevokedAt: r.grant_revoked_at,
      }
    );
  }

  async revokeToken(id: string, at: string): Promise<boolean> {
    return (await this.db.run('UPDATE oauth_tokens SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL', [at, id])).changes > 0;
  }
}
