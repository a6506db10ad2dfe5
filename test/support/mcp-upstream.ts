// A small external MCP server for tests, built with the official SDK on 127.0.0.1: tools `add`, `fail` and
// `whoami` (echoes a header). Requests to /secure/mcp need the header `x-token: <token>`.
import http from 'node:http';
import { randomUUID } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { CallToolRequestSchema, ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js';

export interface Upstream {
  url: string;
  secureUrl: string;
  /** An endpoint that publishes OAuth protected-resource metadata (RFC 9728). */
  oauthUrl: string;
  token: string;
  /** A stateful endpoint: it hands out session ids (and expects a DELETE at the end). */
  statefulUrl: string;
  /** Sessions the stateful endpoint opened and the ones clients ended with DELETE. */
  sessions: { opened: number; ended: number };
  /** Tool calls received, in order. */
  calls: { name: string; args: unknown }[];
  close(): Promise<void>;
}

const TOOLS = [
  {
    name: 'add',
    description: 'Adds two numbers',
    inputSchema: { type: 'object' as const, properties: { a: { type: 'number' }, b: { type: 'number' } }, required: ['a', 'b'] },
  },
  { name: 'fail', description: 'Always reports an error', inputSchema: { type: 'object' as const } },
  { name: 'whoami', description: 'Echoes the x-token header', inputSchema: { type: 'object' as const } },
];

export async function startUpstream(token = 'upstream-secret-token'): Promise<Upstream> {
  const calls: Upstream['calls'] = [];
  const sessions = { opened: 0, ended: 0 };
  const live = new Map<string, StreamableHTTPServerTransport>();
  let port = 0;
  const httpServer = http.createServer(async (req, res) => {
    const secure = req.url?.startsWith('/secure/');
    if (secure && req.headers['x-token'] !== token) {
      res.writeHead(401, { 'content-type': 'application/json' }).end(JSON.stringify({ error: 'unauthorized' }));
      return;
    }
    if (req.method === 'GET' && req.url === '/.well-known/oauth-protected-resource/oauth/mcp') {
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ resource: `http://127.0.0.1:${port}/oauth/mcp`, authorization_servers: [] }));
      return;
    }
    if (req.url === '/stateful/mcp') {
      const id = req.headers['mcp-session-id'];
      const existing = typeof id === 'string' ? live.get(id) : undefined;
      if (req.method === 'DELETE') {
        if (existing) {
          sessions.ended++;
          live.delete(id as string);
          await existing.handleRequest(req, res);
        } else res.writeHead(404).end();
        return;
      }
      if (req.method !== 'POST') {
        res.writeHead(405).end();
        return;
      }
      const chunks: Buffer[] = [];
      for await (const c of req) chunks.push(c as Buffer);
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
      if (existing) {
        await existing.handleRequest(req, res, body);
        return;
      }
      const transport = new StreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
        onsessioninitialized: (sid) => {
          sessions.opened++;
          live.set(sid, transport);
        },
      });
      await toolServer().connect(transport);
      await transport.handleRequest(req, res, body);
      return;
    }
    if (req.method !== 'POST') {
      res.writeHead(405).end();
      return;
    }
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
    const server = toolServer(req.headers['x-token']);
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
    await server.connect(transport);
    res.on('close', () => void server.close());
    await transport.handleRequest(req, res, body);
  });
  function toolServer(token?: string | string[]): Server {
    const server = new Server({ name: 'upstream', version: '0.0.1' }, { capabilities: { tools: {} } });
    server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools: TOOLS }));
    server.setRequestHandler(CallToolRequestSchema, async (request) => {
      const { name, arguments: args = {} } = request.params;
      calls.push({ name, args });
      if (name === 'add') {
        const { a, b } = args as { a: number; b: number };
        return { content: [{ type: 'text', text: JSON.stringify({ sum: a + b }) }] };
      }
      if (name === 'fail') return { content: [{ type: 'text', text: 'it went wrong' }], isError: true };
      if (name === 'whoami') return { content: [{ type: 'text', text: String(token ?? 'nobody') }] };
      throw new Error(`Tool ${name} not found`);
    });
    return server;
  }
  await new Promise<void>((resolve) => httpServer.listen(0, '127.0.0.1', resolve));
  port = (httpServer.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    secureUrl: `http://127.0.0.1:${port}/secure/mcp`,
    oauthUrl: `http://127.0.0.1:${port}/oauth/mcp`,
    statefulUrl: `http://127.0.0.1:${port}/stateful/mcp`,
    sessions,
    token,
    calls,
    close: () =>
      new Promise((resolve) => {
        httpServer.closeAllConnections();
        httpServer.close(() => resolve());
      }),
  };
}
