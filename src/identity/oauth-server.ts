// The OAuth 2.0 authorization server the CLI signs in with (RFC 6749 authorization code + RFC 7636 PKCE S256,
// loopback redirect per RFC 8252, refresh-token rotation with reuse detection, RFC 7009 revocation). It issues
// the same access and refresh tokens as the admin command (src/identity/oauth.ts). No HTTP here: callers map
// an OAuthProtocolError to the protocol's error response.
import { createHash, randomBytes } from 'node:crypto';
import type { Store } from '../store/index.ts';
import type { Scope } from './principal.ts';
import { bumpCredentialEpoch } from './credentials.ts';
import { hashApiKey, newId } from './keys.ts';
import { ACCESS_TOKEN_PREFIX, DEFAULT_ACCESS_TTL_SECONDS, DEFAULT_REFRESH_TTL_SECONDS, REFRESH_TOKEN_PREFIX, mint, type IssuedTokens } from './oauth.ts';

/** The CLI's public client (seeded by migration 86); dynamic client registration is not offered. */
export const CLI_CLIENT_ID = 'sim-cli';
export const PUBLIC_CLIENTS: ReadonlySet<string> = new Set([CLI_CLIENT_ID]);
export const GRANTABLE_SCOPES: readonly Scope[] = ['offline_access', 'api:read', 'api:write'];
export const CODE_TTL_MS = 2 * 60 * 1000;
const CODE_PREFIX = 'owa_ac_';

export type OAuthErrorCode = 'invalid_request' | 'invalid_client' | 'invalid_grant' | 'unsupported_grant_type' | 'invalid_scope' | 'unsupported_response_type' | 'access_denied';

export class OAuthProtocolError extends Error {
  readonly code: OAuthErrorCode;
  constructor(code: OAuthErrorCode, description: string) {
    super(description);
    this.code = code;
  }
}

/** The metadata document (RFC 8414) for an issuer at `{baseUrl}/api/auth`. */
export function authorizationServerMetadata(baseUrl: string) {
  return {
    issuer: `${baseUrl}/api/auth`,
    authorization_endpoint: `${baseUrl}/api/auth/oauth2/authorize`,
    token_endpoint: `${baseUrl}/api/auth/oauth2/token`,
    revocation_endpoint: `${baseUrl}/api/auth/oauth2/revoke`,
    response_types_supported: ['code'],
    grant_types_supported: ['authorization_code', 'refresh_token'],
    code_challenge_methods_supported: ['S256'],
    token_endpoint_auth_methods_supported: ['none'],
    revocation_endpoint_auth_methods_supported: ['none'],
    scopes_supported: [...GRANTABLE_SCOPES],
  };
}

/** RFC 8252 §7.3: a loopback IP literal (or localhost) over http, any port, with a path. */
export function isLoopbackRedirect(uri: string): boolean {
  let u: URL;
  try {
    u = new URL(uri);
  } catch {
    return false;
  }
  return u.protocol === 'http:' && ['127.0.0.1', '[::1]', 'localhost'].includes(u.hostname) && u.username === '' && u.password === '' && u.hash === '';
}

export interface AuthorizeRequest {
  clientId: string;
  redirectUri: string;
  scopes: Scope[];
  codeChallenge: string;
  state: string | null;
}

/**
 * Checks an authorization request. Errors about the client or the redirect URI must be shown to the user
 * (`redirectable: false`); the rest go back to the client's redirect URI.
 */
export function checkAuthorizeRequest(q: Record<string, unknown>): { ok: true; request: AuthorizeRequest } | { ok: false; redirectable: boolean; error: OAuthProtocolError } {
  const str = (k: string) => (typeof q[k] === 'string' ? (q[k] as string) : undefined);
  const clientId = str('client_id');
  const redirectUri = str('redirect_uri');
  if (!clientId || !PUBLIC_CLIENTS.has(clientId)) return { ok: false, redirectable: false, error: new OAuthProtocolError('invalid_client', 'Unknown client_id.') };
  if (!redirectUri || !isLoopbackRedirect(redirectUri)) {
    return { ok: false, redirectable: false, error: new OAuthProtocolError('invalid_request', 'redirect_uri must be a loopback http address (http://127.0.0.1:<port>/...).') };
  }
  const fail = (code: OAuthErrorCode, d: string) => ({ ok: false as const, redirectable: true, error: new OAuthProtocolError(code, d) });
  if (str('response_type') !== 'code') return fail('unsupported_response_type', 'response_type must be code.');
  const challenge = str('code_challenge');
  if (!challenge || !/^[A-Za-z0-9_-]{43,128}$/.test(challenge)) return fail('invalid_request', 'A PKCE code_challenge is required.');
  if (str('code_challenge_method') !== 'S256') return fail('invalid_request', 'code_challenge_method must be S256.');
  const requested = (str('scope') ?? '').split(' ').filter(Boolean);
  if (requested.length === 0) return fail('invalid_scope', 'Ask for at least api:read.');
  const unknown = requested.filter((s) => !GRANTABLE_SCOPES.includes(s as Scope));
  if (unknown.length) return fail('invalid_scope', `Unknown scope(s): ${unknown.join(' ')}.`);
  if (!requested.includes('api:read') && !requested.includes('api:write')) return fail('invalid_scope', 'Ask for api:read or api:write.');
  const state = str('state') ?? null;
  if (state !== null && state.length > 512) return fail('invalid_request', 'state is too long.');
  return { ok: true, request: { clientId, redirectUri, scopes: [...new Set(requested)] as Scope[], codeChallenge: challenge, state } };
}

const s256 = (verifier: string) => createHash('sha256').update(verifier, 'ascii').digest('base64url');

/** After consent: a one-time code bound to the user, client, redirect URI, scopes and PKCE challenge. */
export async function issueAuthorizationCode(store: Store, userId: string, r: AuthorizeRequest): Promise<string> {
  const code = CODE_PREFIX + randomBytes(32).toString('base64url');
  const now = Date.now();
  await store.transaction((tx) =>
    tx.webAuth.insertCode({
      codeHash: hashApiKey(code),
      clientId: r.clientId,
      userId,
      redirectUri: r.redirectUri,
      scopes: r.scopes,
      codeChallenge: r.codeChallenge,
      createdAt: new Date(now).toISOString(),
      expiresAt: new Date(now + CODE_TTL_MS).toISOString(),
      usedAt: null,
      grantId: null,
    }),
  );
  return code;
}

export interface TokenResponse {
  access_token: string;
  token_type: 'Bearer';
  expires_in: number;
  refresh_token?: string;
  scope: string;
}

const tokenResponse = (t: Omit<IssuedTokens, 'grantId'>, ttl: number): TokenResponse => ({
  access_token: t.accessToken,
  token_type: 'Bearer',
  expires_in: ttl,
  ...(t.refreshToken ? { refresh_token: t.refreshToken } : {}),
  scope: t.scopes.join(' '),
});

/**
 * grant_type=authorization_code. A code works once: presenting it again revokes the login it created
 * (RFC 6749 §4.1.2). The redirect URI and client must be the ones of the request, and the verifier must hash
 * to the challenge.
 */
export async function exchangeCode(
  store: Store,
  f: { clientId: string; code: string; redirectUri: string; codeVerifier: string },
  accessTtlSeconds = DEFAULT_ACCESS_TTL_SECONDS,
): Promise<TokenResponse> {
  const outcome = await store.transaction(async (tx) => {
    const c = await tx.webAuth.getCode(hashApiKey(f.code));
    if (!c) return { error: new OAuthProtocolError('invalid_grant', 'The authorization code is not valid.') };
    if (c.usedAt) {
      if (c.grantId && (await tx.oauth.revokeGrant(c.grantId, new Date().toISOString()))) await bumpCredentialEpoch(tx);
      return { error: new OAuthProtocolError('invalid_grant', 'The authorization code was already used; the login it created has been revoked.') };
    }
    // Any presentation uses the code up, so a failed guess cannot be retried with the same code.
    await tx.webAuth.useCode(c.codeHash, new Date().toISOString());
    if (c.expiresAt <= new Date().toISOString()) return { error: new OAuthProtocolError('invalid_grant', 'The authorization code has expired.') };
    if (c.clientId !== f.clientId) return { error: new OAuthProtocolError('invalid_grant', 'The code was issued to another client.') };
    if (c.redirectUri !== f.redirectUri) return { error: new OAuthProtocolError('invalid_grant', 'redirect_uri does not match the authorization request.') };
    if (!/^[A-Za-z0-9._~-]{43,128}$/.test(f.codeVerifier) || s256(f.codeVerifier) !== c.codeChallenge) {
      return { error: new OAuthProtocolError('invalid_grant', 'The PKCE code_verifier does not match the code_challenge.') };
    }
    const scopes = c.scopes as Scope[];
    const grantId = newId();
    await tx.oauth.insertGrant({ id: grantId, clientId: c.clientId, userId: c.userId, scopes, createdAt: new Date().toISOString(), revokedAt: null });
    await tx.webAuth.setCodeGrant(c.codeHash, grantId);
    const tokens = await mint(tx, grantId, scopes, accessTtlSeconds, DEFAULT_REFRESH_TTL_SECONDS);
    return { tokens: { ...tokens, scopes } };
  });
  if ('error' in outcome) throw outcome.error;
  return tokenResponse(outcome.tokens, accessTtlSeconds);
}

/**
 * grant_type=refresh_token: a new access and refresh token; the old refresh token stops working. Presenting a
 * refresh token that was already rotated ends the whole login (its grant), since one of the two holders is
 * not the legitimate client.
 */
export async function rotateRefreshToken(store: Store, f: { clientId: string; refreshToken: string }, accessTtlSeconds = DEFAULT_ACCESS_TTL_SECONDS): Promise<TokenResponse> {
  const outcome = await store.transaction(async (tx) => {
    const invalid = { error: new OAuthProtocolError('invalid_grant', 'The refresh token is not valid; sign in again.') };
    if (!f.refreshToken.startsWith(REFRESH_TOKEN_PREFIX)) return invalid;
    const t = await tx.oauth.resolveToken(hashApiKey(f.refreshToken), 'refresh');
    if (!t) return invalid;
    const grant = await tx.oauth.getGrant(t.grantId);
    if (!grant || grant.clientId !== f.clientId) return invalid;
    const now = new Date().toISOString();
    if (t.grantRevokedAt) return invalid;
    if (t.revokedAt) {
      await tx.oauth.revokeGrant(t.grantId, now);
      await bumpCredentialEpoch(tx);
      return { error: new OAuthProtocolError('invalid_grant', 'The refresh token was already used; this login has been revoked. Sign in again.') };
    }
    if (t.expiresAt && t.expiresAt <= now) return invalid;
    await tx.oauth.revokeToken(t.id, now);
    const scopes = t.scopes as Scope[];
    const tokens = await mint(tx, t.grantId, scopes, accessTtlSeconds, DEFAULT_REFRESH_TTL_SECONDS);
    return { tokens: { ...tokens, scopes } };
  });
  if ('error' in outcome) throw outcome.error;
  return tokenResponse(outcome.tokens, accessTtlSeconds);
}

/** RFC 7009: ends the login a token belongs to (its whole grant). Unknown tokens are not an error. */
export async function revokeByToken(store: Store, clientId: string, token: string): Promise<void> {
  const kind = token.startsWith(REFRESH_TOKEN_PREFIX) ? 'refresh' : token.startsWith(ACCESS_TOKEN_PREFIX) ? 'access' : null;
  if (!kind) return;
  await store.transaction(async (tx) => {
    const t = await tx.oauth.resolveToken(hashApiKey(token), kind);
    if (!t) return;
    const grant = await tx.oauth.getGrant(t.grantId);
    if (!grant || grant.clientId !== clientId) return;
    if (await tx.oauth.revokeGrant(t.grantId, new Date().toISOString())) await bumpCredentialEpoch(tx);
  });
}
