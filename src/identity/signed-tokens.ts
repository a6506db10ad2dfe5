// Short signed tokens for cookies and form fields: base64url(JSON payload) + "." + HMAC-SHA256 over the purpose
// and the payload, under the server's signing key. A token made for one purpose never verifies for another.
import { createHmac, timingSafeEqual } from 'node:crypto';

function mac(key: Buffer, purpose: string, payload: string): string {
  return createHmac('sha256', key).update(purpose).update('\0').update(payload).digest('base64url');
}

/** Signs `data` for `purpose`, valid until `expiresAtMs`. */
export function signToken(key: Buffer, purpose: string, data: Record<string, unknown>, expiresAtMs: number): string {
  const payload = Buffer.from(JSON.stringify({ ...data, exp: expiresAtMs })).toString('base64url');
  return `${payload}.${mac(key, purpose, payload)}`;
}

/** The token's data when it is authentic, made for `purpose` and not expired; null otherwise. */
export function verifyToken<T extends Record<string, unknown>>(key: Buffer, purpose: string, token: string | undefined, nowMs = Date.now()): (T & { exp: number }) | null {
  if (!token || token.length > 4096) return null;
  const dot = token.indexOf('.');
  if (dot <= 0) return null;
  const payload = token.slice(0, dot);
  const given = Buffer.from(token.slice(dot + 1));
  const expected = Buffer.from(mac(key, purpose, payload));
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) return null;
  try {
    const data = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as T & { exp: number };
    if (typeof data.exp !== 'number' || data.exp <= nowMs) return null;
    return data;
  } catch {
    return null;
  }
}
