// External MCP servers over HTTP (registration, sealed write-only headers, status and tool discovery), the
// egress policy on their URLs, the MCP tool block in a run, and the registry function agents will use. The
// upstream server is started by the test with the MCP SDK on 127.0.0.1, allowed through the egress config.
import { withTestDatabase } from './support/database.ts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from './support/server.ts';
import { startUpstream, type Upstream } from './support/mcp-upstream.ts';
import { apiBlock, buildWorkflow, link } from './support/api-workflow.ts';
import { createApiKey } from '../src/identity/admin.ts';
import { createOAuthClient, issueTokens } from '../src/identity/oauth.ts';
import { mcpToolId, mcpToolProvider } from '../src/mcp/tool-provider.ts';

let s: TestServer;
let up: Upstream;

beforeAll(async () => {
  up = await startUpstream();
  s = await startTestServer({ EGRESS_ALLOW_CIDRS: '127.0.0.1/32', RATE_LIMIT_FREE_SYNC: '50000', RATE_LIMIT_FREE_API: '100000' });
});

afterAll(async () => {
  await s?.stop();
  await up?.close();
});

const create = (body: Record<string, unknown>, key?: string) => s.call('POST', '/api/v2/mcp-servers', { workspaceId: s.workspaceId, ...body }, key);

describe('external MCP servers', () => {
  it('registers a server, discovers its tools and keeps headers write-only and sealed', async () => {
    const r = await create({ name: 'Upstream', url: up.secureUrl, headers: { 'x-token': up.token }, description: 'The test server' });
    expect(r.status, r.text).toBe(201);
    const server = r.body.data;
    expect(server).toMatchObject({
      name: 'Upstream',
      description: 'The test server',
      transport: 'streamable-http',
      authType: 'headers',
      url: up.secureUrl,
      timeout: 30000,
      retries: 3,
      enabled: true,
      connectionStatus: 'connected',
      lastError: null,
      toolCount: 3,
      hasHeaders: true,
      headerNames: ['x-token'],
      hasOauthClientSecret: false,
    });
    expect(r.text).not.toContain(up.token);
    const row = (await withTestDatabase(s, (db) => db.read.get<{ headers_sealed: string }>('SELECT headers_sealed FROM mcp_servers WHERE id = ?', [server.id])))!;
    expect(row.headers_sealed).not.toContain(up.token);

    const got = await s.call('GET', `/api/v2/mcp-servers/${server.id}?workspaceId=${s.workspaceId}`);
    expect(got.status).toBe(200);
    expect(got.text).not.toContain(up.token);

    const tools = await s.call('GET', `/api/v2/mcp-servers/${server.id}/tools?workspaceId=${s.workspaceId}`);
    expect(tools.status, tools.text).toBe(200);
    expect(tools.body.data.map((t: any) => t.name)).toEqual(['add', 'fail', 'whoami']);
    expect(tools.body.data[0]).toEqual({
      name: 'add',
      description: 'Adds two numbers',
      inputSchema: { type: 'object', properties: { a: { type: 'number' }, b: { type: 'number' } }, required: ['a', 'b'] },
      serverId: server.id,
      serverName: 'Upstream',
    });

    const list = await s.call('GET', `/api/v2/mcp-servers?workspaceId=${s.workspaceId}&search=upstr`);
    expect(list.body.data.map((x: any) => x.id)).toContain(server.id);
    expect((await s.call('GET', `/api/v2/mcp-servers?workspaceId=${s.workspaceId}&search=zzz`)).body.data).toEqual([]);
  });

  it('records an error status when headers are wrong, and recovers on update with refresh', async () => {
    const r = await create({ name: 'Wrong token', url: up.secureUrl, headers: { 'x-token': 'nope' }, retries: 0 });
    expect(r.status, r.text).toBe(201);
    expect(r.body.data).toMatchObject({ connectionStatus: 'error', toolCount: 0 });
    expect(r.body.data.lastError).toMatch(/401|nauthorized/);
    const refused = await s.call('GET', `/api/v2/mcp-servers/${r.body.data.id}/tools?workspaceId=${s.workspaceId}&refresh=true`);
    expect(refused.status).toBe(503);
    expect(refused.body.error.details.code).toBe('MCP_SERVER_UNREACHABLE');

    const fixed = await s.call('PATCH', `/api/v2/mcp-servers/${r.body.data.id}`, { workspaceId: s.workspaceId, headers: { 'x-token': up.token } });
    expect(fixed.status, fixed.text).toBe(200);
    expect(fixed.body.data).toMatchObject({ connectionStatus: 'connected', lastError: null, toolCount: 3, headerNames: ['x-token'] });
    const tools = await s.call('GET', `/api/v2/mcp-servers/${r.body.data.id}/tools?workspaceId=${s.workspaceId}&refresh=true`);
    expect(tools.status).toBe(200);
    expect(tools.body.data).toHaveLength(3);
  });

  it('works with a stateful server that answers in SSE, ending each session it opened', async () => {
    const r = await create({ name: 'Stateful', url: up.statefulUrl, authType: 'none' });
    expect(r.status, r.text).toBe(201);
    expect(r.body.data).toMatchObject({ connectionStatus: 'connected', toolCount: 3 });
    const result = await s.services.mcp.callTool(s.workspaceId, r.body.data.id, 'add', { a: 1, b: 2 });
    expect(result.content).toEqual([{ type: 'text', text: '{"sum":3}' }]);
    expect(up.sessions.opened).toBe(2);
    expect(up.sessions.ended).toBe(2);
  });

  it('probes how to authenticate when authType is not given', async () => {
    const plain = await create({ name: 'Probed', url: up.url });
    expect(plain.body.data).toMatchObject({ authType: 'headers', connectionStatus: 'connected' });
    const oauth = await create({ name: 'Wants OAuth', url: up.oauthUrl, oauthClientId: 'client-1', oauthClientSecret: 'shh-secret' });
    expect(oauth.status, oauth.text).toBe(201);
    expect(oauth.body.data).toMatchObject({ authType: 'oauth', connectionStatus: 'disconnected', oauthClientId: 'client-1', hasOauthClientSecret: true });
    expect(oauth.body.data.lastError).toMatch(/OAuth/);
    expect(oauth.text).not.toContain('shh-secret');
    const row = (await withTestDatabase(s, (db) => db.read.get<{ oauth_client_secret_sealed: string }>('SELECT oauth_client_secret_sealed FROM mcp_servers WHERE id = ?', [oauth.body.data.id])))!;
    expect(row.oauth_client_secret_sealed).not.toContain('shh-secret');
  });

  it('updates fields, refuses a changed URL, and deletes', async () => {
    const server = (await create({ name: 'Plain', url: up.url, authType: 'none' })).body.data;
    expect(server).toMatchObject({ authType: 'none', connectionStatus: 'connected' });
    const renamed = await s.call('PATCH', `/api/v2/mcp-servers/${server.id}`, { workspaceId: s.workspaceId, name: 'Renamed', timeout: 5000, url: up.url, oauthClientSecret: 'client-secret' });
    expect(renamed.status, renamed.text).toBe(200);
    expect(renamed.body.data).toMatchObject({ name: 'Renamed', timeout: 5000, hasOauthClientSecret: true });
    expect(renamed.text).not.toContain('client-secret');
    const moved = await s.call('PATCH', `/api/v2/mcp-servers/${server.id}`, { workspaceId: s.workspaceId, url: 'https://example.com/mcp' });
    expect(moved.status).toBe(400);
    expect((await s.call('GET', `/api/v2/mcp-servers/${server.id}?workspaceId=${s.workspaceId}`)).body.data.url).toBe(up.url);
    const removed = await s.call('DELETE', `/api/v2/mcp-servers/${server.id}?workspaceId=${s.workspaceId}`);
    expect(removed.body).toEqual({ data: { id: server.id, deleted: true } });
    expect((await s.call('GET', `/api/v2/mcp-servers/${server.id}?workspaceId=${s.workspaceId}`)).status).toBe(404);
  });

  it('refuses bad URLs and private addresses the egress policy does not allow, storing nothing', async () => {
    const before = (await s.call('GET', `/api/v2/mcp-servers?workspaceId=${s.workspaceId}&limit=100`)).body.data.length;
    const privateUrl = await create({ name: 'Internal', url: 'http://10.1.2.3/mcp' });
    expect(privateUrl.status).toBe(400);
    expect(privateUrl.body.error.details[0]).toMatchObject({ code: 'egress_blocked', path: ['body', 'url'] });
    expect((await create({ name: 'Metadata', url: 'http://169.254.169.254/latest' })).status).toBe(400);
    expect((await create({ name: 'Env', url: 'https://{{HOST}}/mcp' })).status).toBe(400);
    expect((await create({ name: 'Relative', url: '/mcp' })).status).toBe(400);
    expect((await create({ name: 'Ftp', url: 'ftp://example.com/mcp' })).status).toBe(400);
    expect((await create({ name: 'Bad header', url: up.url, headers: { 'bad header': 'x' } })).status).toBe(400);
    expect((await create({ name: 'Bad transport', url: up.url, transport: 'sse' })).status).toBe(400);
    const after = (await s.call('GET', `/api/v2/mcp-servers?workspaceId=${s.workspaceId}&limit=100`)).body.data.length;
    expect(after).toBe(before);

    // Without the egress allowance, loopback is private too.
    const strict = await startTestServer();
    try {
      const r = await strict.call('POST', '/api/v2/mcp-servers', { workspaceId: strict.workspaceId, name: 'Loopback', url: up.url });
      expect(r.status).toBe(400);
      expect(r.body.error.details[0].code).toBe('egress_blocked');
    } finally {
      await strict.stop();
    }
  });

  it('hides servers of other workspaces and refuses workspace keys for tool discovery', async () => {
    const server = (await create({ name: 'Mine', url: up.url, authType: 'none' })).body.data;
    const other = await s.newWorkspace('Other MCP');
    expect((await s.call('GET', `/api/v2/mcp-servers/${server.id}?workspaceId=${other}`)).status).toBe(404);
    const outsider = await s.newUser('outsider-ext@example.com');
    expect((await s.call('GET', `/api/v2/mcp-servers/${server.id}?workspaceId=${s.workspaceId}`, undefined, outsider.key)).status).toBe(404);
    const wsKey = (await createApiKey(s.services.store, { kind: 'workspace', userId: s.userId, workspaceId: s.workspaceId })).key;
    expect((await s.call('GET', `/api/v2/mcp-servers/${server.id}?workspaceId=${s.workspaceId}`, undefined, wsKey)).status).toBe(200);
    expect((await s.call('GET', `/api/v2/mcp-servers/${server.id}/tools?workspaceId=${s.workspaceId}`, undefined, wsKey)).status).toBe(403);
    const reader = await s.newUser('reader-ext@example.com', { [s.workspaceId]: 'read' });
    expect((await create({ name: 'x', url: up.url }, reader.key)).status).toBe(403);
    // Discovery reaches out to the server, so it needs api:write even though it is a GET.
    const app = await createOAuthClient(s.services.store, 'ext');
    const readToken = (await issueTokens(s.services.store, { clientId: app.id, userId: s.userId, scopes: ['api:read'] })).accessToken;
    const asReader = (p: string) => fetch(s.url + p, { headers: { Authorization: `Bearer ${readToken}` } });
    expect((await asReader(`/api/v2/mcp-servers?workspaceId=${s.workspaceId}`)).status).toBe(200);
    expect((await asReader(`/api/v2/mcp-servers/${server.id}/tools?workspaceId=${s.workspaceId}`)).status).toBe(403);
  });
});

describe('the MCP tool block and the workspace tool registry', () => {
  let serverId: string;
  beforeAll(async () => {
    serverId = (await create({ name: 'For blocks', url: up.secureUrl, headers: { 'x-token': up.token } })).body.data.id;
  });

  it('is in the block catalog', async () => {
    const block = await s.call('GET', `/api/v2/blocks/mcp?workspaceId=${s.workspaceId}`);
    expect(block.status, block.text).toBe(200);
    expect(block.body.data).toMatchObject({ id: 'mcp', name: 'MCP tool' });
  });

  it('calls a tool from a workflow run through the SDK client', async () => {
    const start = apiBlock('start_trigger', 'Start', { inputFormat: [{ name: 'a', type: 'number' }] });
    const tool = apiBlock('mcp', 'Adder', { server: serverId, tool: 'add', arguments: '{"a": <start.a>, "b": 2}' });
    const out = apiBlock('response', 'Out', { data: '{"sum": <adder.result.sum>, "text": <adder.text>}' });
    const wf = await buildWorkflow(s, 'Uses MCP', [start, tool, out], [link(start, tool), link(tool, out)]);
    const r = await s.call('POST', `/api/v2/workflows/${wf.id}/execute`, { input: { a: 40 } });
    expect(r.status, r.text).toBe(200);
    expect(r.body.data).toMatchObject({ status: 'completed', output: { sum: 42, text: '{"sum":42}' } });
    expect(up.calls.at(-1)).toEqual({ name: 'add', args: { a: 40, b: 2 } });
  });

  it('fails the block for a tool error, an unknown server and a disabled server', async () => {
    const run = async (sub: Record<string, unknown>) => {
      const start = apiBlock('start_trigger', 'Start');
      const tool = apiBlock('mcp', 'Tool', sub);
      const wf = await buildWorkflow(s, `MCP ${Math.random()}`, [start, tool], [link(start, tool)]);
      return (await s.call('POST', `/api/v2/workflows/${wf.id}/execute`, { input: {} })).body.data;
    };
    const failed = await run({ server: serverId, tool: 'fail' });
    expect(failed.status).toBe('failed');
    expect(failed.error.message).toMatch(/it went wrong/);
    expect((await run({ server: 'nope', tool: 'add', arguments: '{}' })).error.message).toMatch(/No MCP server/);
    const disabled = (await create({ name: 'Disabled', url: up.url, authType: 'none', enabled: false })).body.data;
    expect(disabled.connectionStatus).toBe('disconnected');
    expect((await run({ server: disabled.id, tool: 'add' })).error.message).toMatch(/disabled/);
  });

  it('lists every tool of the workspace and calls one by server and name', async () => {
    const tools = await s.services.mcp.listWorkspaceTools(s.workspaceId);
    const mine = tools.filter((t) => t.serverId === serverId);
    expect(mine.map((t) => t.name)).toEqual(['add', 'fail', 'whoami']);
    expect(mine[0]).toMatchObject({ serverName: 'For blocks', inputSchema: { type: 'object', required: ['a', 'b'] } });
    const result = await s.services.mcp.callTool(s.workspaceId, serverId, 'whoami', {});
    expect(result.content).toEqual([{ type: 'text', text: up.token }]);
    await expect(s.services.mcp.callTool('another-workspace', serverId, 'add', { a: 1, b: 1 })).rejects.toThrow(/No MCP server/);
  });

  it('offers the same tools as a provider for the agents\' tool registry', async () => {
    const provider = mcpToolProvider(s.services.mcp);
    const id = mcpToolId(serverId, 'add');
    expect(id).toMatch(/^mcp_[0-9a-f]{8}_add$/);
    expect((await provider.list(s.workspaceId)).map((t) => t.id)).toContain(id);
    const tool = (await provider.get(s.workspaceId, id))!;
    expect(tool).toMatchObject({ name: 'For blocks: add', description: 'Adds two numbers', inputSchema: { type: 'object', required: ['a', 'b'] } });
    const controller = new AbortController();
    expect(await tool.execute({ a: 2, b: 3 }, { workspaceId: s.workspaceId, signal: controller.signal })).toEqual({ content: [{ type: 'text', text: '{"sum":5}' }], text: '{"sum":5}', result: { sum: 5 } });
    const failing = (await provider.get(s.workspaceId, mcpToolId(serverId, 'fail')))!;
    await expect(failing.execute({}, { workspaceId: s.workspaceId, signal: controller.signal })).rejects.toThrow(/it went wrong/);
    expect(await provider.get(s.workspaceId, 'http_request')).toBeUndefined();
  });

  it('reaches the catalog and executeTool of the server: the registry has the MCP provider registered', async () => {
    const id = mcpToolId(serverId, 'add');
    const listed = await s.call('GET', `/api/v2/tools?workspaceId=${s.workspaceId}&limit=100`);
    expect(listed.status, listed.text).toBe(200);
    expect(listed.body.data.map((t: { id: string }) => t.id)).toContain(id);
    const ran = await s.call('POST', `/api/v2/tools/${id}/execute`, { workspaceId: s.workspaceId, input: { a: 20, b: 22 } });
    expect(ran.status, ran.text).toBe(200);
    expect(ran.body.data).toMatchObject({ status: 'succeeded', output: { result: { sum: 42 } } });
    const wrong = await s.call('POST', `/api/v2/tools/${id}/execute`, { workspaceId: s.workspaceId, input: { a: 'twenty' } });
    expect(wrong.status, wrong.text).toBe(400);
  });
});
