// What the browser-facing routes share: error answers in the API's shape, attempt limits per client address,
// HTML escaping and the page frame (one stylesheet, no inline script or style, a strict CSP).
import type { Request, Response } from 'express';
import type { Services } from '../../services.ts';
import { isSecureRequest } from '../public-url.ts';

export function sendError(res: Response, status: number, code: string, message: string, details?: unknown): void {
  res.status(status).type('application/json').send(JSON.stringify({ error: { code, message, ...(details === undefined ? {} : { details }) } }));
}

/** The client's address: the forwarded one when the request came through a trusted proxy (TRUST_PROXY). */
export const clientAddress = (req: Request) => req.ip ?? req.socket.remoteAddress ?? 'unknown';

/**
 * Takes one attempt from the bucket `key` (AUTH_ATTEMPTS_PER_MINUTE). Returns the seconds to wait when the bucket
 * is empty, after answering 429 with Retry-After; null when the attempt may proceed.
 */
export async function limitAttempts(services: Services, res: Response, key: string, capacity = services.config.web.authAttemptsPerMinute): Promise<boolean> {
  const now = Date.now();
  const r = await services.rateLimits.take(key, capacity, now);
  if (r.allowed) return true;
  const seconds = Math.max(1, Math.ceil((r.retryAtMs - now) / 1000));
  res.setHeader('Retry-After', String(seconds));
  sendError(res, 429, 'RATE_LIMITED', `Too many attempts; try again in ${seconds} s.`, { retryAfter: new Date(r.retryAtMs).toISOString() });
  return false;
}

/**
 * Guessing limits count only failures: `blocked` answers 429 (with Retry-After) when any of the buckets is
 * empty, `failed` takes one token from each. A client address gets ten times the budget of one account or chat,
 * so one office behind a NAT does not lock itself out, while one account cannot be guessed at faster.
 */
export function guessLimits(services: Services, keys: { perTarget: string; perAddress: string }) {
  const base = services.config.web.authAttemptsPerMinute;
  const buckets: [string, number][] = [
    [`fail:${keys.perTarget}`, base],
    [`fail:${keys.perAddress}`, base * 10],
  ];
  return {
    async blocked(res: Response): Promise<boolean> {
      const now = Date.now();
      for (const [key, capacity] of buckets) {
        const peek = services.rateLimits.peek ? await services.rateLimits.peek(key, capacity, now) : null;
        if (peek && peek.remaining >= 1) continue;
        if (!peek && (await services.rateLimits.take(key, capacity, now)).allowed) continue;
        const perMs = capacity / 60_000;
        const seconds = Math.max(1, Math.ceil(1 / perMs / 1000));
        res.setHeader('Retry-After', String(seconds));
        sendError(res, 429, 'RATE_LIMITED', `Too many failed attempts; try again in ${seconds} s.`, { retryAfter: new Date(now + seconds * 1000).toISOString() });
        return true;
      }
      return false;
    },
    async failed(): Promise<void> {
      const now = Date.now();
      for (const [key, capacity] of buckets) await services.rateLimits.take(key, capacity, now);
    },
  };
}

export function escapeHtml(s: string): string {
  return s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);
}

/** Cookies are Secure when the public URL this request is answered on is https (BASE_URL, or a trusted proxy's X-Forwarded-Proto). */
export const isSecure = (services: Services, req: Request) => isSecureRequest(req, services.config);

export const PAGE_HEADERS: Record<string, string> = {
  'Content-Security-Policy':
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' https: http: data:; connect-src 'self'; form-action 'self' http://127.0.0.1:* http://localhost:*; frame-ancestors 'none'; base-uri 'none'",
  'X-Content-Type-Options': 'nosniff',
  'Referrer-Policy': 'no-referrer',
  'Cache-Control': 'no-store',
};

/** A whole HTML page around `body` (already escaped), with the shared stylesheet. */
export function htmlPage(res: Response, status: number, o: { title: string; body: string; assets: string; script?: string; module?: boolean; bodyAttrs?: string }): void {
  for (const [k, v] of Object.entries(PAGE_HEADERS)) res.setHeader(k, v);
  res
    .status(status)
    .type('html')
    .send(
      `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(o.title)}</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="${o.assets}/app.css">
</head>
<body${o.bodyAttrs ? ' ' + o.bodyAttrs : ''}>
${o.body}
${o.script ? `<script src="${o.assets}/${o.script}" ${o.module ? 'type="module"' : 'defer'}></script>` : ''}
</body>
</html>
`,
    );
}
