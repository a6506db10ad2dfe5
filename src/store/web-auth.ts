// Persistence of browser sign-in: user password hashes, OAuth authorization codes and CLI pairing requests.
import type { SqlExecutor } from './database.ts';

export interface AuthorizationCode {
  codeHash: string;
  clientId: string;
  userId: string;
  redirectUri: string;
  scopes: string[];
  codeChallenge: string;
  createdAt: string;
  expiresAt: string;
  usedAt: string | null;
  /** The grant the code was exchanged for (revoked if the code is replayed). */
  grantId: string | null;
}

export interface PairingRequest {
  requestHash: string;
  challenge: string;
  pairing: string;
  workspaceId: string | null;
  approvedBy: string | null;
  approvedAt: string | null;
  completedAt: string | null;
  keyId: string | null;
  createdAt: string;
  expiresAt: string;
}

export class WebAuthRepository {
  private readonly db: SqlExecutor;
  constructor(db: SqlExecutor) {
    this.db = db;
  }

  async setPassword(userId: string, hash: string, at: string): Promise<void> {
    await this.db.run(
      'INSERT INTO user_passwords (user_id, hash, updated_at) VALUES (?, ?, ?) ON CONFLICT (user_id) DO UPDATE SET hash = excluded.hash, updated_at = excluded.updated_at',
      [userId, hash, at],
    );
  }

  async passwordHash(userId: string): Promise<string | undefined> {
    return (await this.db.get<{ hash: string }>('SELECT hash FROM user_passwords WHERE user_id = ?', [userId]))?.hash;
  }

  async insertCode(c: AuthorizationCode): Promise<void> {
    await this.db.run(
      `INSERT INTO oauth_codes (code_hash, client_id, user_id, redirect_uri, scopes, code_challenge, created_at, expires_at, used_at, grant_id)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      [c.codeHash, c.clientId, c.userId, c.redirectUri, c.scopes.join(' '), c.codeChallenge, c.createdAt, c.expiresAt, c.usedAt, c.grantId],
    );
  }

  async getCode(codeHash: string): Promise<AuthorizationCode | undefined> {
    const r = await this.db.get<{
      code_hash: string;
      client_id: string;
      user_id: string;
      redirect_uri: string;
      scopes: string;
      code_challenge: string;
      created_at: string;
      expires_at: string;
      used_at: string | null;
      grant_id: string | null;
    }>('SELECT * FROM oauth_codes WHERE code_hash = ?', [codeHash]);
    return (
      r && {
        codeHash: r.code_hash,
        clientId: r.client_id,
        userId: r.user_id,
        redirectUri: r.redirect_uri,
        scopes: r.scopes.split(' ').filter(Boolean),
        codeChallenge: r.code_challenge,
        createdAt: r.created_at,
        expiresAt: r.expires_at,
        usedAt: r.used_at,
        grantId: r.grant_id,
      }
    );
  }

  /** Marks a code used; false when it already was (the caller lost a race or the code is replayed). */
  async useCode(codeHash: string, at: string): Promise<boolean> {
    return (await this.db.run('UPDATE oauth_codes SET used_at = ? WHERE code_hash = ? AND used_at IS NULL', [at, codeHash])).changes > 0;
  }

  async setCodeGrant(codeHash: string, grantId: string): Promise<void> {
    await this.db.run('UPDATE oauth_codes SET grant_id = ? WHERE code_hash = ?', [grantId, codeHash]);
  }

  async putPairing(p: PairingRequest): Promise<boolean> {
    const r = await this.db.run(
      `INSERT INTO cli_auth_requests (request_hash, challenge, pairing, workspace_id, approved_by, approved_at, completed_at, key_id, created_at, expires_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (request_hash) DO NOTHING`,
      [p.requestHash, p.challenge, p.pairing, p.workspaceId, p.approvedBy, p.approvedAt, p.completedAt, p.keyId, p.createdAt, p.expiresAt],
    );
    return r.changes > 0;
  }

  async getPairing(requestHash: string): Promise<PairingRequest | undefined> {
    const r = await this.db.get<Record<string, string | null>>('SELECT * FROM cli_auth_requests WHERE request_hash = ?', [requestHash]);
    return (
      r && {
        requestHash: r.request_hash!,
        challenge: r.challenge!,
        pairing: r.pairing!,
        workspaceId: r.workspace_id ?? null,
        approvedBy: r.approved_by ?? null,
        approvedAt: r.approved_at ?? null,
        completedAt: r.completed_at ?? null,
        keyId: r.key_id ?? null,
        createdAt: r.created_at!,
        expiresAt: r.expires_at!,
      }
    );
  }

  async approvePairing(requestHash: string, userId: string, at: string): Promise<boolean> {
    return (
      await this.db.run('UPDATE cli_auth_requests SET approved_by = ?, approved_at = ? WHERE request_hash = ? AND approved_by IS NULL AND expires_at > ?', [
        userId,
        at,
        requestHash,
        at,
      ])
    ).changes > 0;
  }

  /** Declined in the browser: completed without a key, so the CLI's poll fails instead of waiting. */
  async denyPairing(requestHash: string, at: string): Promise<boolean> {
    return (await this.db.run('UPDATE cli_auth_requests SET completed_at = ? WHERE request_hash = ? AND approved_by IS NULL AND completed_at IS NULL', [at, requestHash]))
      .changes > 0;
  }

  async completePairing(requestHash: string, keyId: string, at: string): Promise<boolean> {
    return (
      await this.db.run('UPDATE cli_auth_requests SET completed_at = ?, key_id = ? WHERE request_hash = ? AND approved_by IS NOT NULL AND completed_at IS NULL', [
        at,
        keyId,
        requestHash,
      ])
    ).changes > 0;
  }
}
