// Outbound HTTP for workflow blocks (API request block, fetch inside function blocks) under an egress policy:
// private, loopback, link-local and other non-public addresses are refused unless configured otherwise. The check
// runs on the addresses a hostname resolves to, inside the connection's own DNS lookup, so the address checked is
// the address connected to (no rebinding window), and it runs again for every redirect hop.
import dns from 'node:dns';
import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import type { SandboxPoolOptions } from '../sandbox/pool.ts';
import { SpanKind, inSpan, tracingEnabled, withTraceHeaders } from '../ops/spans.ts';

export interface EgressOptions {
  /** Allow every address, private ones included. */
  allowPrivate: boolean;
  /** CIDR ranges (or single addresses) allowed even though they are private, e.g. 127.0.0.1/32. */
  allowCidrs: string[];
  maxRedirects?: number;
  /** Largest response body read (bytes). */
  maxResponseBytes?: number;
}

export interface HttpRequest {
  url: string;
  method?: string;
  headers?: Record<string, string>;
  body?: string | Buffer | null;
  timeoutMs: number;
  signal?: AbortSignal;
  /** false: a redirect is answered as it came, not followed (completion callbacks). */
  followRedirects?: boolean;
}

export interface HttpResponse {
  status: number;
  statusText: string;
  /** The final URL after redirects. */
  url: string;
  headers: Record<string, string>;
  body: Buffer;
}

export type EgressErrorCode = 'EGRESS_BLOCKED' | 'INVALID_URL' | 'TIMEOUT' | 'CANCELLED' | 'TOO_LARGE' | 'NETWORK';

export class EgressError extends Error {
  readonly code: EgressErrorCode;
  constructor(code: EgressErrorCode, message: string) {
    super(message);
    this.code = code;
  }
}

/** Address ranges that are not the public internet. */
const BLOCKED_V4: [string, number][] = [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.0.2.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['198.51.100.0', 24],
  ['203.0.113.0', 24],
  ['224.0.0.0', 4],
  ['240.0.0.0', 4],
];
const BLOCKED_V6: [string, number][] = [
  ['::', 128],
  ['::1', 128],
  ['64:ff9b::', 96],
  ['100::', 64],
  ['2001:db8::', 32],
  ['fc00::', 7],
  ['fe80::', 10],
  ['fec0::', 10],
  ['ff00::', 8],
];

/** `::ffff:10.0.0.1` and `::ffff:a00:1` are IPv4 addresses in disguise. */
function unmapIPv4(address: string): string {
  const lower = address.toLowerCase();
  const dotted = /^(?:0*:)*:?ffff:(\d+\.\d+\.\d+\.\d+)$/.exec(lower) ?? /^::(\d+\.\d+\.\d+\.\d+)$/.exec(lower);
  if (dotted) return dotted[1]!;
  const hex = /^(?:0*:)*:?ffff:([0-9a-f]{1,4}):([0-9a-f]{1,4})$/.exec(lower);
  if (hex) {
    const hi = parseInt(hex[1]!, 16);
    const lo = parseInt(hex[2]!, 16);
    return `${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}`;
  }
  return address;
}

function addRanges(list: net.BlockList, entries: string[]): void {
  for (const entry of entries) {
    const [address, bits] = entry.trim().split('/');
    const family = net.isIP(address ?? '');
    if (!family) throw new Error(`Not an IP address or CIDR range: "${entry}"`);
    const type = family === 4 ? 'ipv4' : 'ipv6';
    const prefix = bits === undefined ? (family === 4 ? 32 : 128) : Number(bits);
    list.addSubnet(address!, prefix, type);
  }
}

export class EgressPolicy {
  private readonly blocked = new net.BlockList();
  private readonly allowed = new net.BlockList();
  readonly options: Required<EgressOptions>;

  constructor(options: EgressOptions) {
    this.options = { maxRedirects: 5, maxResponseBytes: 10 * 1024 * 1024, ...options };
    for (const [a, p] of BLOCKED_V4) this.blocked.addSubnet(a, p, 'ipv4');
    for (const [a, p] of BLOCKED_V6) this.blocked.addSubnet(a, p, 'ipv6');
    addRanges(this.allowed, options.allowCidrs);
  }

  /** Whether a connection to this IP address is allowed. */
  allowsAddress(address: string): boolean {
    const plain = unmapIPv4(address);
    const type = net.isIP(plain) === 4 ? 'ipv4' : 'ipv6';
    if (this.options.allowPrivate || this.allowed.check(plain, type)) return true;
    return !this.blocked.check(plain, type);
  }

  /** A DNS lookup for http(s).request that refuses disallowed addresses before any connection is made. */
  private readonly lookup = (hostname: string, options: dns.LookupOptions, callback: (...args: unknown[]) => void): void => {
    dns.lookup(hostname, { all: true, family: options.family ?? 0 }, (err, addresses) => {
      if (err) return callback(err);
      const refused = addresses.find((a) => !this.allowsAddress(a.address));
      if (refused) return callback(new EgressError('EGRESS_BLOCKED', `Egress to ${hostname} (${refused.address}) is not allowed: it is a private, loopback or link-local address`));
      if (options.all) return callback(null, addresses);
      callback(null, addresses[0]!.address, addresses[0]!.family);
    });
  };

  /** `fetch` for the sandbox pool: each call from untrusted code goes through this policy in the parent process. */
  sandboxFetch(timeoutMs: number): NonNullable<SandboxPoolOptions['fetch']> {
    return async (request, signal) => {
      const res = await this.request({ ...request, timeoutMs, signal });
      return { status: res.status, statusText: res.statusText, url: res.url, headers: res.headers, body: res.body.toString('utf8') };
    };
  }

  /**
   * Sends one request, following redirects, each hop checked against the policy. Traced as one client span
   * (redirects included) whose traceparent the server receives.
   */
  request(req: HttpRequest): Promise<HttpResponse> {
    if (!tracingEnabled()) return this.send(req);
    let target: URL | null = null;
    try {
      target = new URL(req.url);
    } catch {
      /* send() reports it */
    }
    const method = (req.method ?? 'GET').toUpperCase();
    const attributes = { 'http.request.method': method, ...(target ? { 'server.address': target.hostname, 'server.port': Number(target.port) || (target.protocol === 'https:' ? 443 : 80), 'url.scheme': target.protocol.slice(0, -1) } : {}) };
    return inSpan(method, { kind: SpanKind.CLIENT, attributes }, async (span) => {
      const res = await this.send({ ...req, headers: withTraceHeaders(req.headers ?? {}) });
      span?.setAttribute('http.response.status_code', res.status);
      if (res.status >= 500) span?.setStatus({ code: 2 });
      return res;
    });
  }

  private async send(req: HttpRequest): Promise<HttpResponse> {
    const timeout = AbortSignal.timeout(req.timeoutMs);
    const signal = req.signal ? AbortSignal.any([req.signal, timeout]) : timeout;
    let url = this.parse(req.url);
    let method = (req.method ?? 'GET').toUpperCase();
    let body = req.body ?? null;
    let headers = { ...(req.headers ?? {}) };
    for (let hop = 0; ; hop++) {
      const response = await this.once(url, method, headers, body, signal, req, timeout);
      const location = response.headers['location'];
      if (![301, 302, 303, 307, 308].includes(response.status) || !location || req.followRedirects === false) return response;
      if (hop >= this.options.maxRedirects) throw new EgressError('NETWORK', `Too many redirects (more than ${this.options.maxRedirects})`);
      const next = this.parse(new URL(location, url).href);
      if (next.origin !== url.origin) {
        // Credentials are for the origin they were given to.
        headers = Object.fromEntries(Object.entries(headers).filter(([k]) => !['authorization', 'cookie', 'proxy-authorization'].includes(k.toLowerCase())));
      }
      if (response.status === 303 || ((response.status === 301 || response.status === 302) && method === 'POST')) {
        method = 'GET';
        body = null;
        headers = Object.fromEntries(Object.entries(headers).filter(([k]) => !['content-type', 'content-length'].includes(k.toLowerCase())));
      }
      url = next;
    }
  }

  private parse(raw: string): URL {
    let url: URL;
    try {
      url = new URL(raw);
    } catch {
      throw new EgressError('INVALID_URL', `Not a valid URL: "${raw}"`);
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new EgressError('INVALID_URL', `Only http and https URLs are allowed, got "${url.protocol}"`);
    const host = url.hostname.replace(/^\[|\]$/g, '');
    // Literal addresses skip DNS, so the lookup hook never sees them: check here.
    if (net.isIP(host) && !this.allowsAddress(host)) {
      throw new EgressError('EGRESS_BLOCKED', `Egress to ${host} is not allowed: it is a private, loopback or link-local address`);
    }
    return url;
  }

  private once(
    url: URL,
    method: string,
    headers: Record<string, string>,
    body: string | Buffer | null,
    signal: AbortSignal,
    req: HttpRequest,
    timeout: AbortSignal,
  ): Promise<HttpResponse> {
    const client = url.protocol === 'https:' ? https : http;
    const limit = this.options.maxResponseBytes;
    return new Promise((resolve, reject) => {
      if (signal.aborted) return reject(this.abortError(req, timeout));
      const request = client.request(url, { method, headers, lookup: this.lookup as never, signal }, (response) => {
        const chunks: Buffer[] = [];
        let size = 0;
        response.on('data', (chunk: Buffer) => {
          size += chunk.length;
          if (size > limit) {
            request.destroy(new EgressError('TOO_LARGE', `The response is larger than ${limit} bytes`));
            return;
          }
          chunks.push(chunk);
        });
        response.on('end', () => {
          const out: Record<string, string> = {};
          for (const [k, v] of Object.entries(response.headers)) if (v !== undefined) out[k] = Array.isArray(v) ? v.join(', ') : v;
          resolve({ status: response.statusCode ?? 0, statusText: response.statusMessage ?? '', url: url.href, headers: out, body: Buffer.concat(chunks) });
        });
        response.on('error', (e) => reject(this.wrap(e, req, timeout)));
      });
      request.on('error', (e) => reject(this.wrap(e, req, timeout)));
      if (body !== null && method !== 'GET' && method !== 'HEAD') request.end(body);
      else request.end();
    });
  }

  private abortError(req: HttpRequest, timeout: AbortSignal): EgressError {
    if (timeout.aborted && !req.signal?.aborted) return new EgressError('TIMEOUT', `The request did not complete within ${req.timeoutMs} ms`);
    return new EgressError('CANCELLED', 'The request was cancelled');
  }

  private wrap(e: unknown, req: HttpRequest, timeout: AbortSignal): EgressError {
    if (e instanceof EgressError) return e;
    const err = e as NodeJS.ErrnoException;
    if (err?.name === 'AbortError' || err?.code === 'ABORT_ERR') return this.abortError(req, timeout);
    return new EgressError('NETWORK', `Request failed: ${err?.message ?? String(e)}`);
  }
}
