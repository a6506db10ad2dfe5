// Reading and writing cookies for the browser-facing pages (no dependency: the format needed is small).
import type { Request, Response } from 'express';

export function readCookie(req: Request, name: string): string | undefined {
  const header = req.headers.cookie;
  if (!header) return undefined;
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if (eq < 0) continue;
    if (part.slice(0, eq).trim() !== name) continue;
    const raw = part.slice(eq + 1).trim();
    try {
      return decodeURIComponent(raw.startsWith('"') && raw.endsWith('"') ? raw.slice(1, -1) : raw);
    } catch {
      return undefined;
    }
  }
  return undefined;
}

export interface CookieOptions {
  maxAgeMs: number;
  path?: string;
  /** Set when the server is reached over https (BASE_URL). */
  secure: boolean;
  sameSite?: 'Lax' | 'Strict';
}

export function setCookie(res: Response, name: string, value: string, o: CookieOptions): void {
  const parts = [`${name}=${encodeURIComponent(value)}`, `Path=${o.path ?? '/'}`, `Max-Age=${Math.floor(o.maxAgeMs / 1000)}`, 'HttpOnly', `SameSite=${o.sameSite ?? 'Lax'}`];
  if (o.secure) parts.push('Secure');
  res.append('Set-Cookie', parts.join('; '));
}

export function clearCookie(res: Response, name: string, secure: boolean, path = '/'): void {
  setCookie(res, name, '', { maxAgeMs: 0, secure, path });
}
