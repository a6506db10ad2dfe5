// The public URL links in answers are built on (webUrl, upload and download URLs, share links, chat URLs, the
// OAuth metadata) and whether it is https (Secure cookies). BASE_URL, when set, is it, whatever a proxy
// forwards. Without BASE_URL, a request that came through a proxy TRUST_PROXY trusts is answered with the scheme
// and host that proxy forwarded (X-Forwarded-Proto, X-Forwarded-Host or Host); any other request gets the
// listening address, never a Host header a client chose.
import type { Request } from 'express';
import type { Config } from '../config.ts';

/** A host name or address with an optional port: what a Host or X-Forwarded-Host header may contribute to a URL. */
const HOST = /^(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,62}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,62}[A-Za-z0-9])?)*|\[[0-9A-Fa-f:.]+\])(?::\d{1,5})?$/;

type UrlSettings = Pick<Config, 'baseUrl' | 'baseUrlConfigured' | 'trustProxy'>;

/** True when the peer that sent `req` is a proxy TRUST_PROXY trusts (its forwarded headers count). */
export function fromTrustedProxy(req: Request, config: Pick<Config, 'trustProxy'>): boolean {
  if (config.trustProxy === false) return false;
  const trusts = req.app.get('trust proxy fn') as ((address: string, hop: number) => boolean) | undefined;
  return Boolean(trusts && req.socket.remoteAddress && trusts(req.socket.remoteAddress, 0));
}

export function publicBaseUrl(req: Request, config: UrlSettings): string {
  if (config.baseUrlConfigured || !fromTrustedProxy(req, config)) return config.baseUrl;
  // Express reads X-Forwarded-Proto and X-Forwarded-Host (else Host) here because the peer is trusted.
  const host = req.host;
  if (!host || !HOST.test(host)) return config.baseUrl;
  return `${req.protocol === 'https' ? 'https' : 'http'}://${host}`;
}

/** Cookies get the Secure attribute when the public URL the browser uses is https. */
export function isSecureRequest(req: Request, config: UrlSettings): boolean {
  return publicBaseUrl(req, config).startsWith('https:');
}
