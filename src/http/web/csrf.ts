// CSRF protection for the sign-in, consent and approval forms: a random value in an http-only cookie and a
// signed token derived from it in the form (double submit, signed), plus an Origin check when the browser
// sends one. Cookies are SameSite=Lax as well.
import { randomBytes } from 'node:crypto';
import type { Request, Response } from 'express';
import type { Services } from '../../services.ts';
import { signToken, verifyToken } from '../../identity/signed-tokens.ts';
import { readCookie, setCookie } from './cookies.ts';
import { isSecure } from './common.ts';
import { publicBaseUrl } from '../public-url.ts';

const COOKIE = 'owa_csrf';
const TTL_MS = 2 * 3600 * 1000;

/** The token to put in a form's hidden `csrf` field (sets the cookie it is bound to when missing). */
export function csrfToken(services: Services, req: Request, res: Response): string {
  let nonce = readCookie(req, COOKIE);
  if (!nonce || !/^[A-Za-z0-9_-]{22,64}$/.test(nonce)) {
    nonce = randomBytes(18).toString('base64url');
    setCookie(res, COOKIE, nonce, { maxAgeMs: TTL_MS, secure: isSecure(services, req) });
  }
  return signToken(services.signingKey, 'csrf', { n: nonce }, Date.now() + TTL_MS);
}

/** True when the posted form carries a token bound to this browser's cookie and comes from our own origin. */
export function csrfValid(services: Services, req: Request): boolean {
  const origin = req.get('origin');
  if (origin && origin !== 'null' && origin !== new URL(publicBaseUrl(req, services.config)).origin) return false;
  const nonce = readCookie(req, COOKIE);
  const field = (req.body as Record<string, unknown> | undefined)?.csrf;
  const t = verifyToken<{ n: string }>(services.signingKey, 'csrf', typeof field === 'string' ? field : undefined);
  return Boolean(t && nonce && t.n === nonce);
}

/** The header the web console sends its token in on API writes made with the session cookie. */
export const CSRF_HEADER = 'x-csrf-token';

/** csrfValid for a script's request: the token comes in the X-CSRF-Token header instead of a form field. */
export function csrfHeaderValid(services: Services, req: Request): boolean {
  const origin = req.get('origin');
  if (origin && origin !== new URL(services.config.baseUrl).origin) return false;
  const nonce = readCookie(req, COOKIE);
  const t = verifyToken<{ n: string }>(services.signingKey, 'csrf', req.get(CSRF_HEADER));
  return Boolean(t && nonce && t.n === nonce);
}
