// Talking to external MCP servers with the official SDK client over Streamable HTTP, every request (and
// redirect hop) going through the egress policy: a private address is refused unless the policy allows it.
import dns from 'node:dns/promises';
import net from 'node:net';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { FetchLike } from '@modelcontextprotocol/sdk/shared/transport.js';
import { EgressError, type EgressPolicy } from '../execution/egress.ts';
import type { McpToolDescriptor } from '../store/mcp-servers.ts';

export const CLIENT_INFO = { name: 'open-workspace-automation', version: '1.0.0' };

export interface McpEndpoint {
  url: string;
  headers: Record<string, string>;
  timeoutMs: number;
  /** Extra attempts after a failed connection (not after a tool's own error). */
  retries: number;
}

export class McpClientError extends Error {
  readonly code: 'EGRESS_BLOCKED' | 'INVALID_URL' | 'TIMEOUT' | 'UNREACHABLE' | 'PROTOCOL';
  constructor(code: McpClientError['code'], message: string) {
    super(message);
    this.code = code;
  }
}

/** Why a registration URL is refused, or null: absolute http(s), no `{{ENV}}` references, an allowed address. */
export async function urlProblem(egress: EgressPolicy, raw: string): Promise<{ code: 'INVALID_URL' | 'EGRESS_BLOCKED'; message: string } | null> {
  if (/\{\{[^}]*\}\}/.test(raw)) return { code: 'INVALID_URL', message: 'The URL may not contain {{ENV}} references.' };
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return { code: 'INVALID_URL', message: 'The URL must be absolute.' };
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return { code: 'INVALID_URL', message: 'The URL must use http or https.' };
  const host = url.hostname.replace(/^\[|\]$/g, '');
  let addresses: string[];
  if (net.isIP(host)) addresses = [host];
  else {
    try {
      addresses = (await dns.lookup(host, { all: true })).map((a) => a.address);
    } catch {
      // An unresolvable name is not a private address; connecting will report it.
      return null;
    }
  }
  const refused = addresses.find((a) => !egress.allowsAddress(a));
  return refused
    ? { code: 'EGRESS_BLOCKED', message: `${host} resolves to ${refused}, a private, loopback or link-local address the egress policy does not allow.` }
    : null;
}

function headerRecord(init: RequestInit["headers"]): Record<string, string> {
  const out: Record<string, string> = {};
  new Headers(init).forEach((v, k) => (out[k] = v));
  return out;
}

/**
 * `fetch` for the SDK transport on top of the egress policy. Responses are read whole (JSON, or an SSE stream
 * that ends with the reply), so the standalone server-to-client stream (a GET) is declined with 405, which the
 * SDK treats as "not offered"; tool calls never need it.
 */
export function egressFetch(egress: EgressPolicy, timeoutMs: number): FetchLike {
  return async (input, init = {}) => {
    const method = (init.method ?? 'GET').toUpperCase();
    if (method === 'GET') return new Response(null, { status: 405 });
    const body = typeof init.body === 'string' ? init.body : init.body == null ? null : String(init.body);
    const res = await egress.request({ url: String(input), method, headers: headerRecord(init.headers), body, timeoutMs, signal: init.signal ?? undefined });
    const empty = [101, 204, 205, 304].includes(res.status);
    return new Response(empty ? null : new Uint8Array(res.body), { status: res.status, statusText: res.statusText, headers: res.headers });
  };
}

function describe(err: unknown): McpClientError {
  if (err instanceof McpClientError) return err;
  const cause = (err as { cause?: unknown })?.cause;
  const egress = err instanceof EgressError ? err : cause instanceof EgressError ? cause : null;
  if (egress) {
    if (egress.code === 'EGRESS_BLOCKED') return new McpClientError('EGRESS_BLOCKED', egress.message);
    if (egress.code === 'TIMEOUT') return new McpClientError('TIMEOUT', egress.message);
    if (egress.code === 'INVALID_URL') return new McpClientError('INVALID_URL', egress.message);
    return new McpClientError('UNREACHABLE', egress.message);
  }
  const message = err instanceof Error ? err.message : String(err);
  return new McpClientError('PROTOCOL', message.slice(0, 1000));
}

/** Connects (retrying a failed connection up to `retries` times), runs `fn`, and always closes the client. */
export async function withMcpClient<T>(egress: EgressPolicy, endpoint: McpEndpoint, fn: (client: Client) => Promise<T>): Promise<T> {
  // The MCP SDK (with zod, several MB of heap) is loaded with the first call to an MCP server, not at start.
  const [{ Client }, { StreamableHTTPClientTransport }] = await Promise.all([
    import('@modelcontextprotocol/sdk/client/index.js'),
    import('@modelcontextprotocol/sdk/client/streamableHttp.js'),
  ]);
  let lastError: McpClientError | null = null;
  for (let attempt = 0; attempt <= endpoint.retries; attempt++) {
    const client = new Client(CLIENT_INFO);
    const transport = new StreamableHTTPClientTransport(new URL(endpoint.url), {
      fetch: egressFetch(egress, endpoint.timeoutMs),
      requestInit: { headers: endpoint.headers },
    });
    try {
      await client.connect(transport, { timeout: endpoint.timeoutMs });
    } catch (err) {
      lastError = describe(err);
      await client.close().catch(() => undefined);
      if (lastError.code === 'EGRESS_BLOCKED' || lastError.code === 'INVALID_URL') break;
      continue;
    }
    try {
      return await fn(client);
    } catch (err) {
      throw describe(err);
    } finally {
      // A server that handed out a session id is told the session is over (a DELETE; nothing when stateless).
      if (transport.sessionId) await transport.terminateSession().catch(() => undefined);
      await client.close().catch(() => undefined);
    }
  }
  throw lastError ?? new McpClientError('UNREACHABLE', 'The MCP server could not be reached.');
}

/** Every tool the server offers (following `nextCursor`), in the registry's shape. */
export async function discoverTools(egress: EgressPolicy, endpoint: McpEndpoint): Promise<McpToolDescriptor[]> {
  return withMcpClient(egress, endpoint, async (client) => {
    const tools: McpToolDescriptor[] = [];
    let cursor: string | undefined;
    for (let page = 0; page < 50; page++) {
      const result = await client.listTools(cursor ? { cursor } : {}, { timeout: endpoint.timeoutMs });
      for (const t of result.tools) {
        const schema = t.inputSchema ?? { type: 'object' };
        tools.push({
          name: t.name,
          ...(t.description ? { description: t.description } : {}),
          inputSchema: {
            type: 'object',
            ...(schema.properties ? { properties: schema.properties as Record<string, unknown> } : {}),
            ...(schema.required ? { required: schema.required } : {}),
          },
        });
      }
      cursor = result.nextCursor;
      if (!cursor) break;
    }
    return tools;
  });
}

export async function callTool(egress: EgressPolicy, endpoint: McpEndpoint, name: string, args: Record<string, unknown>, signal?: AbortSignal): Promise<CallToolResult> {
  return withMcpClient(egress, endpoint, async (client) => {
    const result = await client.callTool({ name, arguments: args }, undefined, { timeout: endpoint.timeoutMs, signal });
    return result as CallToolResult;
  });
}

/** Whether the server publishes OAuth protected-resource metadata (RFC 9728): then it wants OAuth. */
export async function advertisesOAuth(egress: EgressPolicy, raw: string, timeoutMs: number): Promise<boolean> {
  const url = new URL(raw);
  const path = url.pathname === '/' ? '' : url.pathname;
  for (const candidate of [`${url.origin}/.well-known/oauth-protected-resource${path}`, `${url.origin}/.well-known/oauth-protected-resource`]) {
    try {
      const res = await egress.request({ url: candidate, method: 'GET', headers: { accept: 'application/json' }, timeoutMs });
      if (res.status === 200 && /json/i.test(res.headers['content-type'] ?? '')) {
        const meta = JSON.parse(res.body.toString('utf8')) as { resource?: unknown };
        if (typeof meta.resource === 'string') return true;
      }
    } catch {
      /* not reachable or not JSON: no OAuth metadata */
    }
  }
  return false;
}
