// Built-in tools: the HTTP request tool (under the egress policy). Other built-ins register the same way.
import { EgressError, type EgressPolicy } from '../execution/egress.ts';
import type { Tool, ToolProvider } from './registry.ts';

export function httpRequestTool(egress: EgressPolicy, defaultTimeoutMs: number): Tool {
  return {
    id: 'http_request',
    name: 'HTTP Request',
    description: 'Sends an HTTP request to a public URL and returns the status, headers and body (parsed when JSON).',
    version: '1.0.0',
    hostedApiKey: 'none',
    inputSchema: {
      type: 'object',
      required: ['url'],
      additionalProperties: false,
      properties: {
        url: { type: 'string', minLength: 1, description: 'Absolute http(s) URL.' },
        method: { type: 'string', enum: ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'HEAD', 'OPTIONS'], default: 'GET', description: 'HTTP method.' },
        headers: { type: 'object', additionalProperties: { type: 'string' }, description: 'Request headers.' },
        params: { type: 'object', additionalProperties: { type: ['string', 'number', 'boolean'] }, description: 'Query parameters added to the URL.' },
        body: { description: 'Request body: text as is, anything else sent as JSON.' },
      },
    },
    outputs: {
      status: { type: 'number', description: 'HTTP status code.' },
      headers: { type: 'json', description: 'Response headers.' },
      data: { type: 'any', description: 'Response body, parsed when it is JSON.' },
    },
    async execute(input, call) {
      let url: URL;
      try {
        url = new URL(String(input.url));
      } catch {
        throw new Error(`Not a valid URL: "${String(input.url)}"`);
      }
      for (const [k, v] of Object.entries((input.params ?? {}) as Record<string, unknown>)) url.searchParams.append(k, String(v));
      const method = String(input.method ?? 'GET').toUpperCase();
      const headers = { ...((input.headers ?? {}) as Record<string, string>) };
      // A credential named with the call (executeTool's credentialId) authenticates the request with a fresh token.
      if (call.credentialId && call.accessToken && !Object.keys(headers).some((h) => h.toLowerCase() === 'authorization')) {
        headers.Authorization = `Bearer ${await call.accessToken(call.credentialId)}`;
      }
      let body: string | null = null;
      if (input.body !== undefined && input.body !== null && method !== 'GET' && method !== 'HEAD') {
        body = typeof input.body === 'string' ? input.body : JSON.stringify(input.body);
        if (typeof input.body !== 'string' && !Object.keys(headers).some((h) => h.toLowerCase() === 'content-type')) headers['Content-Type'] = 'application/json';
      }
      try {
        const res = await egress.request({ url: url.href, method, headers, body, timeoutMs: Math.min(call.timeoutMs, defaultTimeoutMs), signal: call.signal });
        const raw = res.body.toString('utf8');
        let data: unknown = raw;
        if (/\bjson\b/i.test(res.headers['content-type'] ?? '')) {
          try {
            data = JSON.parse(raw);
          } catch {
            /* keep the text */
          }
        }
        return { status: res.status, headers: res.headers, data };
      } catch (e) {
        if (e instanceof EgressError) throw new Error(e.message);
        throw e;
      }
    },
  };
}

/** A provider of fixed tools, the same in every workspace. */
export function staticToolProvider(name: string, tools: Tool[]): ToolProvider {
  return {
    name,
    list: async () => tools,
    get: async (_workspaceId, toolId) => tools.find((t) => t.id === toolId || t.id === toolId.split('@')[0]),
  };
}
