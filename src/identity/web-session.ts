// Browser sessions of users signed in on this server's sign-in page: a signed cookie naming the user, bound to
// the user's current password so setting a new password ends every session. No HTTP here.
import { createHash } from 'node:crypto';
import type { Store } from '../store/index.ts';
import type { User } from '../store/users.ts';
import { signToken, verifyToken } from './signed-tokens.ts';
import { hashPassword, verifyPassword } from './passwords.ts';
import { IdentityError } from './admin.ts';
import { API_KEY_SCOPES, type Principal } from './principal.ts';
import { personalAccountId } from '../store/billing-accounts.ts';

export const SESSION_COOKIE = 'owa_session';

const passwordVersion = (hash: string) => createHash('sha256').update(hash).digest('base64url').slice(0, 16);

export function issueSession(key: Buffer, userId: string, passwordHash: string, ttlMs: number, nowMs = Date.now()): string {
  return signToken(key, 'session', { u: userId, pv: passwordVersion(passwordHash) }, nowMs + ttlMs);
}

/** The signed-in user, or null for a missing, forged, expired or superseded session. */
export async function sessionUser(store: Store, key: Buffer, cookie: string | undefined): Promise<User | null> {
  const t = verifyToken<{ u: string; pv: string }>(key, 'session', cookie);
  if (!t || typeof t.u !== 'string') return null;
  const hash = await store.webAuth.passwordHash(t.u);
  if (!hash || passwordVersion(hash) !== t.pv) return null;
  return (await store.users.get(t.u)) ?? null;
}

/**
 * The signed-in user as an API caller (the web console): acts like the user's own personal key, with both
 * scopes and the user's roles, so the one policy decides what a session may do. Null when not signed in.
 */
export async function sessionPrincipal(store: Store, key: Buffer, cookie: string | undefined): Promise<Principal | null> {
  const user = await sessionUser(store, key, cookie);
  if (!user) return null;
  const plan = (await store.billingAccounts.get(personalAccountId(user.id)))?.plan ?? 'free';
  return { userId: user.id, kind: 'web_session', credentialId: 'web-session', workspaceId: null, scopes: API_KEY_SCOPES, expiresAt: null, plan, subject: `user:${user.id}` };
}

/** Checks an e-mail and password; null when either is wrong (the same answer, in about the same time). */
export async function checkCredentials(store: Store, email: string, password: string): Promise<{ user: User; passwordHash: string } | null> {
  const user = await store.users.getByEmail(email.trim());
  const hash = user ? await store.webAuth.passwordHash(user.id) : undefined;
  const ok = await verifyPassword(password, hash);
  return ok && user && hash ? { user, passwordHash: hash } : null;
}

export const MIN_PASSWORD_LENGTH = 12;

/** Sets or resets a user's sign-in password (the admin command). */
export async function setUserPassword(store: Store, userId: string, password: string): Promise<void> {
  if (password.length < MIN_PASSWORD_LENGTH || password.length > 1024) throw new IdentityError(`A password needs ${MIN_PASSWORD_LENGTH} to 1024 characters`);
  if (!(await store.users.get(userId))) throw new IdentityError(`No user ${userId}`);
  const hash = await hashPassword(password);
  await store.transaction((tx) => tx.webAuth.setPassword(userId, hash, new Date().toISOString()));
}
