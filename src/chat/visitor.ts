// Who may use a hosted chat: the signed auth cookie a visitor gets after the password or an e-mail code, the
// one-time codes themselves, and the sso rule (a signed-in user of this server on the allowed list). No HTTP.
import { createHash, randomInt } from 'node:crypto';
import type { ChatDeployment } from '../store/chat-deployments.ts';
import { signToken, verifyToken } from '../identity/signed-tokens.ts';
import { emailAllowed } from './settings.ts';

export type ChatAuthReason = 'auth_required_password' | 'auth_required_email' | 'auth_required_sso';
export type ChatAccess = { ok: true; email: string | null } | { ok: false; reason: ChatAuthReason };

export const CHAT_COOKIE_TTL_MS = 24 * 3600 * 1000;
export const CODE_TTL_MS = 10 * 60 * 1000;
export const CODE_MAX_ATTEMPTS = 5;

export const chatCookieName = (chat: Pick<ChatDeployment, 'id'>) => `chat_auth_${chat.id}`;

/** Binds a cookie to the chat's current password, so changing the password signs every visitor out. */
const credentialVersion = (chat: ChatDeployment) =>
  createHash('sha256')
    .update(chat.authType === 'password' ? (chat.passwordHash ?? '') : chat.authType)
    .digest('base64url')
    .slice(0, 16);

export function issueChatCookie(key: Buffer, chat: ChatDeployment, email: string | null, nowMs = Date.now()): string {
  return signToken(key, 'chat-auth', { c: chat.id, v: credentialVersion(chat), m: email }, nowMs + CHAT_COOKIE_TTL_MS);
}

/** Decides whether a visitor may use the chat, from its auth cookie and (for sso) the signed-in user's e-mail. */
export function chatAccess(key: Buffer, chat: ChatDeployment, cookie: string | undefined, sessionEmail: string | null): ChatAccess {
  switch (chat.authType) {
    case 'public':
      return { ok: true, email: null };
    case 'sso':
      return sessionEmail && emailAllowed(chat.allowedEmails, sessionEmail) ? { ok: true, email: sessionEmail } : { ok: false, reason: 'auth_required_sso' };
    case 'password':
    case 'email': {
      const reason: ChatAuthReason = chat.authType === 'password' ? 'auth_required_password' : 'auth_required_email';
      const t = verifyToken<{ c: string; v: string; m: string | null }>(key, 'chat-auth', cookie);
      if (!t || t.c !== chat.id || t.v !== credentialVersion(chat)) return { ok: false, reason };
      // An address taken off the list loses access at once.
      if (chat.authType === 'email' && !(t.m && emailAllowed(chat.allowedEmails, t.m))) return { ok: false, reason };
      return { ok: true, email: t.m };
    }
  }
}

export const newCode = () => String(randomInt(0, 1_000_000)).padStart(6, '0');

export const codeHash = (chatId: string, email: string, code: string) =>
  createHash('sha256').update(`${chatId}\0${email.trim().toLowerCase()}\0${code}`).digest('hex');
