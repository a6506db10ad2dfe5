// OAuth 2.0 access and refresh tokens. For now an operator issues them with the admin command; the browser
// login flow will call the same functions. Tokens are random, shown once, and stored only as hashes.
import { randomBytes } from 'node:crypto';
import type { Store, Repositories } from '../store/index.ts';
import type { AuthorizedApp, OAuthClient } from '../store/oauth.ts';
import { bumpCredentialEpoch } from './credentials.ts';
import { hashApiKey, newId } from './keys.ts';
import { IdentityError } from './admin.ts';
import type { Scope } from './principal.ts';

export const ACCESS_TOKEN_PREFIX = 'owa_at_';
export const REFRESH_TOKEN_PREFIX = 'owa_rt_';
const ALL_SCOPES: readonly Scope[] = ['api:read', 'api:write', 'offline_access'];
export const DEFAULT_ACCESS_TTL_SECONDS = 3600;
export const DEFAULT_REFRESH_TTL_SECONDS = 30 * 24 * 3600;

export function parseScopes(input: string): Scope[] {
  const scopes = [...new Set(input.split(/[\s,]+/).filter(Boolean))];
  if (scopes.length === 0) throw new IdentityError('At least one scope is required');
  for (const s of scopes) {
    if (!ALL_SCOPES.includes(s as Scope)) throw new IdentityError(`Unknown scope "${s}"; use ${ALL_SCOPES.join(', ')}`);
  }
  if (!scopes.includes('api:read') && !scopes.includes('api:write')) throw new IdentityError('Grant api:read or api:write');
  return scopes as Scope[];
}

export interface IssuedTokens {
  grantId: string;
  accessToken: string;
  accessTokenId: string;
  expiresAt: string;
  refreshToken: string | null;
  refreshTokenId: string | null;
  refreshExpiresAt: string | null;
  scopes: Scope[];
}

export async function createOAuthClient(store: Store, name: string): Promise<OAuthClient> {
  if (!name.trim()) throw new IdentityError('An application needs a name');
  const client: OAuthClient = { id: newId(), name: name.trim(), createdAt: new Date().toISOString() };
  await store.transaction((tx) => tx.oauth.insertClient(client));
  return client;
}

export async function mint(
  tx: Repositories,
  grantId: string,
  scopes: Scope[],
  accessTtlSeconds: number,
  refreshTtlSeconds: number,
): Promise<Omit<IssuedTokens, 'grantId' | 'scopes'>> {
  const now = Date.now();
  const accessToken = ACCESS_TOKEN_PREFIX + randomBytes(32).toString('base64url');
  const accessTokenId = newId();
  const expiresAt = new Date(now + accessTtlSeconds * 1000).toISOString();
  await tx.oauth.insertToken({
    id: accessTokenId,
    grantId,
    kind: 'access',
    tokenHash: hashApiKey(accessToken),
    scopes,
    createdAt: new Date(now).toISOString(),
    expiresAt,
    revokedAt: null,
  });
  if (!scopes.includes('offline_access')) return { accessToken, accessTokenId, expiresAt, refreshToken: null, refreshTokenId: null, refreshExpiresAt: null };
  const refreshToken = REFRESH_TOKEN_PREFIX + randomBytes(32).toString('base64url');
  const refreshTokenId = newId();
  const refreshExpiresAt = new Date(now + refreshTtlSeconds * 1000).toISOString();
  await tx.oauth.insertToken({
    id: refreshTokenId,
    grantId,
    kind: 'refresh',
    tokenHash: hashApiKey(refreshToken),
    scopes,
    createdAt: new Date(now).toISOString(),
    expiresAt: refreshExpiresAt,
    revokedAt: null,
  });
  return { accessToken, accessTokenId, expiresAt, refreshToken, refreshTokenId, refreshExpiresAt };
}

/** A user's consent to an application, and its first tokens (a refresh token too when offline_access is granted). */
export async function issueTokens(
  store: Store,
  input: { clientId: string; userId: string; scopes: Scope[]; accessTtlSeconds?: number; refreshTtlSeconds?: number },
): Promise<IssuedTokens> {
  const ttl = input.accessTtlSeconds ?? DEFAULT_ACCESS_TTL_SECONDS;
  if (!Number.isFinite(ttl) || ttl === 0) throw new IdentityError('The access token lifetime must be a number of seconds');
  return store.transaction(async (tx) => {
    if (!(await tx.oauth.getClient(input.clientId))) throw new IdentityError(`No application ${input.clientId}`);
    if (!(await tx.users.get(input.userId))) throw new IdentityError(`No user ${input.userId}`);
    const grantId = newId();
    await tx.oauth.insertGrant({ id: grantId, clientId: input.clientId, userId: input.userId, scopes: input.scopes, createdAt: new Date().toISOString(), revokedAt: null });
    const tokens = await mint(tx, grantId, input.scopes, ttl, input.refreshTtlSeconds ?? DEFAULT_REFRESH_TTL_SECONDS);
    return { grantId, scopes: input.scopes, ...tokens };
  });
}

/** Trades a refresh token for a new access token and a new refresh token; the old refresh token stops working. */
export async function refreshTokens(store: Store, refreshToken: string, accessTtlSeconds = DEFAULT_ACCESS_TTL_SECONDS): Promise<IssuedTokens> {
  return store.transaction(async (tx) => {
    const t = await tx.oauth.resolveToken(hashApiKey(refreshToken), 'refresh');
    const now = new Date().toISOString();
    if (!t || t.revokedAt || t.grantRevokedAt || (t.expiresAt && t.expiresAt <= now)) {
      throw new IdentityError('The refresh token is unknown, expired or revoked');
    }
    await tx.oauth.revokeToken(t.id, now);
    const scopes = t.scopes as Scope[];
    const tokens = await mint(tx, t.grantId, scopes, accessTtlSeconds, DEFAULT_REFRESH_TTL_SECONDS);
    return { grantId: t.grantId, scopes, ...tokens };
  });
}

export async function revokeOAuthToken(store: Store, tokenId: string): Promise<void> {
  await store.transaction(async (tx) => {
    if (!(await tx.oauth.revokeToken(tokenId, new Date().toISOString()))) throw new IdentityError(`No active token ${tokenId}`);
    await bumpCredentialEpoch(tx);
  });
}

/** The applications (the CLI's logins among them) a user has authorized and that can still act for them. */
export function authorizedApps(store: Store, userId: string): Promise<AuthorizedApp[]> {
  return store.oauth.listAuthorizedApps(userId, new Date().toISOString());
}

/**
 * Ends every token of the grant, access and refresh alike. With `owner`, only a grant that user gave (the sign-in
 * pages revoke on the signed-in user's behalf; another user's grant is "no active grant", as if it did not exist).
 */
export async function revokeOAuthGrant(store: Store, grantId: string, owner?: { userId: string }): Promise<void> {
  await store.transaction(async (tx) => {
    if (owner && (await tx.oauth.getGrant(grantId))?.userId !== owner.userId) throw new IdentityError(`No active grant ${grantId}`);
    if (!(await tx.oauth.revokeGrant(grantId, new Date().toISOString()))) throw new IdentityError(`No active grant ${grantId}`);
    await bumpCredentialEpoch(tx);
  });
}

/** Revokes all of a user's grants to one application. */
export async function revokeApplication(store: Store, clientId: string, userId: string): Promise<number> {
  return store.transaction(async (tx) => {
    const n = await tx.oauth.revokeGrantsFor(clientId, userId, new Date().toISOString());
    if (n === 0) throw new IdentityError(`User ${userId} has no active grant to application ${clientId}`);
    await bumpCredentialEpoch(tx);
    return n;
  });
}
