// Workflow MCP servers over HTTP (servers, publishing tools) and the serve endpoint through the MCP SDK's own
// client: list tools, call one, a failed run as isError, a public server without a key, and refusals.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { withTestDatabase } from './support/database.ts';
import { startTestServer, type TestServer } from './support/server.ts';
import { apiBlock, buildWorkflow, link, type BuiltWorkflow } from './support/api-workflow.ts';
import { createApiKey, setPersonalKeysAllowed } from '../src/identity/admin.ts';
import { createOAuthClient, issueTokens } from '../src/identity/oauth.ts';

let s: TestServer;
let greet: BuiltWorkflow;
let failing: BuiltWorkflow;
let draftOnly: BuiltWorkflow;

const FAST_LIMITS = { RATE_LIMIT_FREE_SYNC: '50000', RATE_LIMIT_FREE_API: '100000' };

async function connect(url: string, headers: Record<string, string> = {}): Promise<Client> {
  const client = new Client({ name: 'test-client', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers } }));
  return client;
}

const post = (url: string, body: string, headers: Record<string, string> = {}) =>
  fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers }, body });

beforeAll(async () => {
  s = await startTestServer(FAST_LIMITS);
  {
    const start = apiBlock('start_trigger', 'Start', {
      inputFormat: [
        { name: 'name', type: 'string', description: 'Who to greet' },
        { name: 'times', type: 'number' },
        { name: 'docs', type: 'file[]' },
      ],
    });
    const fn = apiBlock('function', 'Greet', { code: 'return "Hello " + <start.name> + "!".repeat(<start.times> || 1)' });
    const out = apiBlock('response', 'Out', { data: '{"greeting": <greet.result>}' });
    greet = await buildWorkflow(s, 'Greet Someone!', [start, fn, out], [link(start, fn), link(fn, out)]);
  }
  {
    const start = apiBlock('start_trigger', 'Start');
    const boom = apiBlock('function', 'Boom', { code: 'throw new Error("boom")' });
    failing = await buildWorkflow(s, 'Always fails', [start, boom], [link(start, boom)]);
  }
  draftOnly = await buildWorkflow(s, 'Not deployed', [apiBlock('start_trigger', 'Start')], [], { deploy: false });
});

afterAll(async () => {
  await s?.stop();
});

describe('workflow MCP servers', () => {
  it('creates a server with tools, lists, gets, updates and deletes it', async () => {
    const created = await s.call('POST', '/api/v2/workflow-mcp-servers', { workspaceId: s.workspaceId, name: 'Team tools', workflowIds: [greet.id, failing.id] });
    expect(created.status, created.text).toBe(201);
    const server = created.body.data;
    expect(server).toMatchObject({ name: 'Team tools', description: null, isPublic: false, mcpServerUrl: `${s.url}/api/mcp/serve/${server.id}` });

    const list = await s.call('GET', `/api/v2/workflow-mcp-servers?workspaceId=${s.workspaceId}`);
    expect(list.status, list.text).toBe(200);
    const item = list.body.data.find((x: any) => x.id === server.id);
    expect(item).toMatchObject({ toolCount: 2, toolNames: ['greet_someone', 'always_fails'] });
    expect(list.body.toolNamesTruncated).toBe(false);

    const tools = await s.call('GET', `/api/v2/workflow-mcp-servers/${server.id}/tools`);
    expect(tools.status, tools.text).toBe(200);
    expect(tools.body).toMatchObject({ nextCursor: null, truncated: false });
    expect(tools.body.data[0]).toMatchObject({ serverId: server.id, workflowId: greet.id, toolName: 'greet_someone', status: 'active', apiEndpoint: `${s.url}/api/v2/workflows/${greet.id}/execute` });

    const patched = await s.call('PATCH', `/api/v2/workflow-mcp-servers/${server.id}`, { description: 'For the team', isPublic: true });
    expect(patched.status, patched.text).toBe(200);
    expect(patched.body.data).toMatchObject({ description: 'For the team', isPublic: true });
    const cleared = await s.call('PATCH', `/api/v2/workflow-mcp-servers/${server.id}`, { description: null });
    expect(cleared.body.data.description).toBeNull();
    expect((await s.call('GET', `/api/v2/workflow-mcp-servers/${server.id}`)).body.data).toMatchObject({ name: 'Team tools', isPublic: true });

    const removed = await s.call('DELETE', `/api/v2/workflow-mcp-servers/${server.id}`);
    expect(removed.body).toEqual({ data: { id: server.id, deleted: true } });
    expect((await s.call('GET', `/api/v2/workflow-mcp-servers/${server.id}`)).status).toBe(404);
    // The workflow's API deployment is untouched.
    expect((await s.call('GET', `/api/v2/workflows/${greet.id}`)).body.data.isDeployed).toBe(true);
  });

  it('refuses an undeployed workflow, a foreign one, duplicates and bad bodies, creating nothing', async () => {
    const before = (await s.call('GET', `/api/v2/workflow-mcp-servers?workspaceId=${s.workspaceId}&limit=100`)).body.data.length;
    const undeployed = await s.call('POST', '/api/v2/workflow-mcp-servers', { workspaceId: s.workspaceId, name: 'x', workflowIds: [greet.id, draftOnly.id] });
    expect(undeployed.status).toBe(400);
    expect(undeployed.body.error.details[0]).toMatchObject({ code: 'not_deployed', path: ['body', 'workflowIds', 1] });
    const other = await s.newWorkspace('Other');
    const foreign = await buildWorkflow(s, 'Foreign', [apiBlock('start_trigger', 'Start')], [], { workspaceId: other });
    expect((await s.call('POST', '/api/v2/workflow-mcp-servers', { workspaceId: s.workspaceId, name: 'x', workflowIds: [foreign.id] })).status).toBe(404);
    const dup = await s.call('POST', '/api/v2/workflow-mcp-servers', { workspaceId: s.workspaceId, name: 'x', workflowIds: [greet.id, greet.id] });
    expect(dup.status).toBe(400);
    const twin = await buildWorkflow(s, 'greet-someone', [apiBlock('start_trigger', 'Start')], []);
    const clash = await s.call('POST', '/api/v2/workflow-mcp-servers', { workspaceId: s.workspaceId, name: 'x', workflowIds: [greet.id, twin.id] });
    expect(clash.status, clash.text).toBe(409);
    expect(clash.body.error.details).toMatchObject({ code: 'duplicate_tool_name', toolName: 'greet_someone' });
    expect((await s.call('POST', '/api/v2/workflow-mcp-servers', { workspaceId: s.workspaceId, name: '' })).status).toBe(400);
    expect((await s.call('POST', '/api/v2/workflow-mcp-servers', { workspaceId: s.workspaceId, name: 'x', extra: 1 })).status).toBe(400);
    const after = (await s.call('GET', `/api/v2/workflow-mcp-servers?workspaceId=${s.workspaceId}&limit=100`)).body.data.length;
    expect(after).toBe(before);
  });

  it('publishes, updates and unpublishes tools; names are normalized and unique per server', async () => {
    const server = (await s.call('POST', '/api/v2/workflow-mcp-servers', { workspaceId: s.workspaceId, name: 'Publish' })).body.data;
    const first = await s.call('POST', `/api/v2/workflow-mcp-servers/${server.id}/tools`, { workflowId: greet.id, toolName: 'Say Hello!', toolDescription: 'Greets' });
    expect(first.status, first.text).toBe(200);
    expect(first.body.data).toMatchObject({ toolName: 'say_hello', toolDescription: 'Greets', updated: false });
    const again = await s.call('POST', `/api/v2/workflow-mcp-servers/${server.id}/tools`, { workflowId: greet.id, toolDescription: 'Greets people' });
    expect(again.body.data).toMatchObject({ id: first.body.data.id, toolName: 'say_hello', toolDescription: 'Greets people', updated: true });
    const clash = await s.call('POST', `/api/v2/workflow-mcp-servers/${server.id}/tools`, { workflowId: failing.id, toolName: 'say-hello' });
    expect(clash.status).toBe(409);
    expect(clash.body.error.details.code).toBe('duplicate_tool_name');
    const notDeployed = await s.call('POST', `/api/v2/workflow-mcp-servers/${server.id}/tools`, { workflowId: draftOnly.id });
    expect(notDeployed.status).toBe(400);
    expect((await s.call('POST', `/api/v2/workflow-mcp-servers/${server.id}/tools`, { workflowId: 'nope' })).status).toBe(404);

    const removed = await s.call('DELETE', `/api/v2/workflow-mcp-servers/${server.id}/tools/${greet.id}`);
    expect(removed.body).toEqual({ data: { id: first.body.data.id, serverId: server.id, workflowId: greet.id, deleted: true } });
    expect((await s.call('DELETE', `/api/v2/workflow-mcp-servers/${server.id}/tools/${greet.id}`)).status).toBe(404);
    expect((await s.call('GET', `/api/v2/workflows/${greet.id}`)).body.data.isDeployed).toBe(true);
  });

  it('refuses workspace keys, read-only members for writes, and hides servers from outsiders', async () => {
    const server = (await s.call('POST', '/api/v2/workflow-mcp-servers', { workspaceId: s.workspaceId, name: 'Guarded' })).body.data;
    const wsKey = (await createApiKey(s.services.store, { kind: 'workspace', userId: s.userId, workspaceId: s.workspaceId })).key;
    expect((await s.call('GET', `/api/v2/workflow-mcp-servers/${server.id}`, undefined, wsKey)).status).toBe(403);
    const reader = await s.newUser('reader-mcp@example.com', { [s.workspaceId]: 'read' });
    expect((await s.call('GET', `/api/v2/workflow-mcp-servers/${server.id}`, undefined, reader.key)).status).toBe(200);
    expect((await s.call('PATCH', `/api/v2/workflow-mcp-servers/${server.id}`, { name: 'x' }, reader.key)).status).toBe(403);
    const outsider = await s.newUser('outsider-mcp@example.com');
    expect((await s.call('GET', `/api/v2/workflow-mcp-servers/${server.id}`, undefined, outsider.key)).status).toBe(404);
  });
});

describe('the serve endpoint through the MCP SDK client', () => {
  let server: any;
  beforeAll(async () => {
    server = (await s.call('POST', '/api/v2/workflow-mcp-servers', { workspaceId: s.workspaceId, name: 'Served', description: 'Tools for the test', workflowIds: [greet.id, failing.id] })).body.data;
    await s.call('POST', `/api/v2/workflow-mcp-servers/${server.id}/tools`, {
      workflowId: greet.id,
      parameterDescriptions: [
        { name: 'times', description: 'How many exclamation marks' },
        { name: 'unknown', description: 'ignored' },
      ],
    });
  });

  it('lists tools with schemas from the Start block and calls one, logged with the mcp trigger', async () => {
    const client = await connect(server.mcpServerUrl, { 'X-API-Key': s.key });
    try {
      expect(client.getServerVersion()).toMatchObject({ name: 'Served', version: '1.0.0' });
      expect(client.getInstructions()).toBe('Tools for the test');
      await client.ping();
      const { tools } = await client.listTools();
      expect(tools.map((t) => t.name)).toEqual(['greet_someone', 'always_fails']);
      expect(tools[0]).toMatchObject({
        description: 'Execute workflow: Greet Someone!',
        inputSchema: {
          type: 'object',
          required: ['name', 'times', 'docs'],
          properties: {
            name: { type: 'string', description: 'Who to greet' },
            times: { type: 'number', description: 'How many exclamation marks' },
            docs: { type: 'array', items: { type: 'object' } },
          },
        },
      });
      const result = await client.callTool({ name: 'greet_someone', arguments: { name: 'Ada', times: 2 } });
      expect(result.isError).toBeFalsy();
      expect(JSON.parse((result.content as any)[0].text)).toEqual({ greeting: 'Hello Ada!!' });

      const logs = await s.call('GET', `/api/v2/logs?workspaceId=${s.workspaceId}&triggers=mcp`);
      expect(logs.status, logs.text).toBe(200);
      expect(logs.body.data.length).toBeGreaterThanOrEqual(1);
      expect(logs.body.data[0]).toMatchObject({ workflowId: greet.id, trigger: 'mcp', status: 'completed' });
    } finally {
      await client.close();
    }
  });

  it('answers a failed run with isError and the run id', async () => {
    const client = await connect(server.mcpServerUrl, { 'X-API-Key': s.key });
    try {
      const result = await client.callTool({ name: 'always_fails', arguments: {} });
      expect(result.isError).toBe(true);
      const body = JSON.parse((result.content as any)[0].text);
      expect(body).toMatchObject({ success: false, error: expect.stringContaining('boom') });
      expect(typeof body.executionId).toBe('string');
      // The run is an ordinary run: readable by its id, with the mcp trigger, its usage recorded.
      const run = await s.call('GET', `/api/v2/workflows/${failing.id}/runs/${body.executionId}`);
      expect(run.status, run.text).toBe(200);
      expect(run.body.data).toMatchObject({ status: 'failed', trigger: 'mcp' });
      const usage = await withTestDatabase(s, (db) => db.read.get<{ n: number }>("SELECT COUNT(*) AS n FROM usage_records WHERE workflow_id = ? AND category = 'workflow_run'", [failing.id]));
      expect(Number(usage!.n)).toBeGreaterThanOrEqual(1);
    } finally {
      await client.close();
    }
  });

  it('refuses unknown and unpublished tools as JSON-RPC errors', async () => {
    const client = await connect(server.mcpServerUrl, { 'X-API-Key': s.key });
    try {
      await expect(client.callTool({ name: 'nope', arguments: {} })).rejects.toThrow(/no tool named/);
      await s.call('DELETE', `/api/v2/workflow-mcp-servers/${server.id}/tools/${failing.id}`);
      await expect(client.callTool({ name: 'always_fails', arguments: {} })).rejects.toThrow(/no tool named/);
      expect((await client.listTools()).tools.map((t) => t.name)).toEqual(['greet_someone']);
    } finally {
      await client.close();
    }
  });

  it('serves a public server without a key, running as its creator', async () => {
    const pub = (await s.call('POST', '/api/v2/workflow-mcp-servers', { workspaceId: s.workspaceId, name: 'Public', isPublic: true, workflowIds: [greet.id] })).body.data;
    const client = await connect(pub.mcpServerUrl);
    try {
      const result = await client.callTool({ name: 'greet_someone', arguments: { name: 'World', times: 1 } });
      expect(JSON.parse((result.content as any)[0].text)).toEqual({ greeting: 'Hello World!' });
      const logs = await s.call('GET', `/api/v2/logs?workspaceId=${s.workspaceId}&triggers=mcp&limit=1`);
      expect(logs.body.data[0]).toMatchObject({ trigger: 'mcp' });
    } finally {
      await client.close();
    }
    // Ending a session still needs a credential.
    expect((await fetch(pub.mcpServerUrl, { method: 'DELETE' })).status).toBe(401);
    expect((await fetch(pub.mcpServerUrl, { method: 'DELETE', headers: { 'X-API-Key': s.key } })).status).toBe(204);
  });

  it('refuses a missing or wrong key, a foreign workspace key and an outsider on a private server', async () => {
    await expect(connect(server.mcpServerUrl)).rejects.toThrow();
    await expect(connect(server.mcpServerUrl, { 'X-API-Key': 'sk-owa-wrong-key-000000000000' })).rejects.toThrow();
    const init = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '1' } } });
    const noKey = await post(server.mcpServerUrl, init);
    expect(noKey.status).toBe(401);
    expect(((await noKey.json()) as any).error.code).toBe('UNAUTHORIZED');
    expect((await post(server.mcpServerUrl, init, { 'X-API-Key': 'sk-owa-wrong-key-000000000000' })).status).toBe(401);
    const other = await s.newWorkspace('Elsewhere');
    const foreignKey = (await createApiKey(s.services.store, { kind: 'workspace', userId: s.userId, workspaceId: other })).key;
    expect((await post(server.mcpServerUrl, init, { 'X-API-Key': foreignKey })).status).toBe(404);
    const outsider = await s.newUser('outsider-serve@example.com');
    expect((await post(server.mcpServerUrl, init, { 'X-API-Key': outsider.key })).status).toBe(404);
    // A workspace key of the server's own workspace is accepted.
    const ownKey = (await createApiKey(s.services.store, { kind: 'workspace', userId: s.userId, workspaceId: s.workspaceId })).key;
    const client = await connect(server.mcpServerUrl, { 'X-API-Key': ownKey });
    expect((await client.listTools()).tools.length).toBeGreaterThan(0);
    await client.close();
    // A read-only member may list but not run tools.
    const reader = await s.newUser('reader-serve@example.com', { [s.workspaceId]: 'read' });
    const readerClient = await connect(server.mcpServerUrl, { 'X-API-Key': reader.key });
    try {
      expect((await readerClient.listTools()).tools.length).toBeGreaterThan(0);
      await expect(readerClient.callTool({ name: 'greet_someone', arguments: { name: 'x', times: 1 } })).rejects.toThrow(/write role/);
    } finally {
      await readerClient.close();
    }
  });

  it('serves a public server the same to every caller, whatever credential it sends', async () => {
    const pub = (await s.call('POST', '/api/v2/workflow-mcp-servers', { workspaceId: s.workspaceId, name: 'Open to all', isPublic: true, workflowIds: [greet.id] })).body.data;
    const other = await s.newWorkspace('Someone else');
    const foreignWorkspaceKey = (await createApiKey(s.services.store, { kind: 'workspace', userId: s.userId, workspaceId: other })).key;
    const outsider = await s.newUser('outsider-public@example.com');
    const callers: Record<string, Record<string, string>> = {
      'no credential': {},
      'a member key': { 'X-API-Key': s.key },
      'a workspace key of another workspace': { 'X-API-Key': foreignWorkspaceKey },
      "an outsider's personal key": { 'X-API-Key': outsider.key },
      'an invalid key': { 'X-API-Key': 'sk-owa-wrong-key-000000000000' },
      'an invalid token': { Authorization: 'Bearer not-a-token' },
    };
    const call = JSON.stringify({ jsonrpc: '2.0', id: 3, method: 'tools/call', params: { name: 'greet_someone', arguments: { name: 'Eve', times: 1 } } });
    for (const [who, headers] of Object.entries(callers)) {
      const list = await post(pub.mcpServerUrl, JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/list' }), headers);
      expect(list.status, who).toBe(200);
      expect(((await list.json()) as any).result.tools.map((t: any) => t.name), who).toEqual(['greet_someone']);
      const called = await post(pub.mcpServerUrl, call, headers);
      expect(called.status, who).toBe(200);
      expect(JSON.parse(((await called.json()) as any).result.content[0].text), who).toEqual({ greeting: 'Hello Eve!' });
      const info = await fetch(pub.mcpServerUrl, { headers });
      expect(info.status, who).toBe(200);
      expect(((await info.json()) as any).name, who).toBe('Open to all');
    }
    // Through the SDK client too, with a key of another workspace.
    const client = await connect(pub.mcpServerUrl, { 'X-API-Key': foreignWorkspaceKey });
    try {
      expect((await client.listTools()).tools.map((t) => t.name)).toEqual(['greet_someone']);
    } finally {
      await client.close();
    }
    // Ending a session needs a valid credential, of any workspace.
    expect((await fetch(pub.mcpServerUrl, { method: 'DELETE', headers: { 'X-API-Key': foreignWorkspaceKey } })).status).toBe(204);
    expect((await fetch(pub.mcpServerUrl, { method: 'DELETE', headers: { 'X-API-Key': outsider.key } })).status).toBe(204);
    expect((await fetch(pub.mcpServerUrl, { method: 'DELETE', headers: { 'X-API-Key': 'sk-owa-wrong-key-000000000000' } })).status).toBe(401);
  });

  it('answers a private server and an unknown id alike without a valid credential, so ids cannot be probed', async () => {
    const unknownUrl = `${s.url}/api/mcp/serve/wfmcp-does-not-exist`;
    const init = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '1' } } });
    // Headers that differ from one request to the next whatever the resource.
    const PER_REQUEST = new Set(['date', 'x-request-id', 'x-ratelimit-remaining', 'x-ratelimit-reset', 'etag', 'content-length', 'keep-alive', 'connection']);
    const shape = async (r: Response) => ({
      status: r.status,
      body: await r.text(),
      headers: [...r.headers.entries()].filter(([k]) => !PER_REQUEST.has(k)).sort(),
    });
    const probes: [string, (url: string) => Promise<Response>][] = [
      ['POST without a key', (url) => post(url, init)],
      ['GET without a key', (url) => fetch(url)],
      ['GET for an SSE stream without a key', (url) => fetch(url, { headers: { accept: 'text/event-stream' } })],
      ['DELETE without a key', (url) => fetch(url, { method: 'DELETE' })],
      ['POST with an invalid key', (url) => post(url, init, { 'X-API-Key': 'sk-owa-wrong-key-000000000000' })],
      ['POST with an invalid token', (url) => post(url, init, { Authorization: 'Bearer not-a-token' })],
      ['POST at the /mcp path without a key', (url) => post(`${url}/mcp`, init)],
    ];
    for (const [what, probe] of probes) {
      const existing = await shape(await probe(server.mcpServerUrl));
      const unknown = await shape(await probe(unknownUrl));
      expect(existing.status, what).toBe(401);
      expect(JSON.parse(existing.body).error.code, what).toBe('UNAUTHORIZED');
      expect(unknown, what).toEqual(existing);
    }
    // A valid credential that cannot see the server gets 404 for both, as for any resource out of reach.
    const outsider = await s.newUser('outsider-probe@example.com');
    const other = await s.newWorkspace('Probing from here');
    const foreignWorkspaceKey = (await createApiKey(s.services.store, { kind: 'workspace', userId: s.userId, workspaceId: other })).key;
    for (const key of [outsider.key, foreignWorkspaceKey]) {
      const existing = await shape(await post(server.mcpServerUrl, init, { 'X-API-Key': key }));
      const unknown = await shape(await post(unknownUrl, init, { 'X-API-Key': key }));
      expect(existing.status).toBe(404);
      expect(unknown).toEqual(existing);
    }
  });

  it('serves the same endpoint at the path ending in /mcp, for clients that need it', async () => {
    const aliasUrl = `${server.mcpServerUrl}/mcp`;
    const client = await connect(aliasUrl, { 'X-API-Key': s.key });
    try {
      expect(client.getServerVersion()).toMatchObject({ name: 'Served', version: '1.0.0' });
      expect((await client.listTools()).tools.map((t) => t.name)).toContain('greet_someone');
      const result = await client.callTool({ name: 'greet_someone', arguments: { name: 'Alias', times: 1 } });
      expect(JSON.parse((result.content as any)[0].text)).toEqual({ greeting: 'Hello Alias!' });
    } finally {
      await client.close();
    }
    const info = await fetch(aliasUrl, { headers: { 'X-API-Key': s.key } });
    expect(info.status).toBe(200);
    expect(await info.json()).toEqual({ name: 'Served', version: '1.0.0', protocolVersion: '2024-11-05', capabilities: { tools: {} } });
    expect((await fetch(aliasUrl, { headers: { accept: 'text/event-stream', 'X-API-Key': s.key } })).status).toBe(405);
    expect((await fetch(aliasUrl, { method: 'DELETE', headers: { 'X-API-Key': s.key } })).status).toBe(204);
    // A public server at the alias needs no key either.
    const pub = (await s.call('POST', '/api/v2/workflow-mcp-servers', { workspaceId: s.workspaceId, name: 'Public alias', isPublic: true, workflowIds: [greet.id] })).body.data;
    const anonymous = await connect(`${pub.mcpServerUrl}/mcp`);
    try {
      expect((await anonymous.listTools()).tools.map((t) => t.name)).toEqual(['greet_someone']);
    } finally {
      await anonymous.close();
    }
  });

  it('refuses malformed JSON-RPC, unknown methods, a missing Accept and SSE streams', async () => {
    const auth = { 'X-API-Key': s.key };
    const broken = await post(server.mcpServerUrl, '{"jsonrpc": "2.0", "id": 1, "method": ', auth);
    expect(broken.status).toBe(400);
    expect(((await broken.json()) as any).error.code).toBe('BAD_REQUEST');
    const notRpc = await post(server.mcpServerUrl, JSON.stringify({ hello: 'world' }), auth);
    expect(notRpc.status).toBe(400);
    const wrongVersion = await post(server.mcpServerUrl, JSON.stringify({ jsonrpc: '1.0', id: 1, method: 'ping' }), auth);
    expect(wrongVersion.status).toBe(400);
    const unknown = await post(server.mcpServerUrl, JSON.stringify({ jsonrpc: '2.0', id: 7, method: 'resources/list' }), auth);
    expect(unknown.status).toBe(404);
    expect(await unknown.json()).toMatchObject({ jsonrpc: '2.0', id: 7, error: { code: -32601 } });
    const ping = await post(server.mcpServerUrl, JSON.stringify({ jsonrpc: '2.0', id: 'p', method: 'ping' }), auth);
    expect(ping.status).toBe(200);
    expect(await ping.json()).toEqual({ jsonrpc: '2.0', id: 'p', result: {} });
    const note = await post(server.mcpServerUrl, JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }), auth);
    expect(note.status).toBe(202);
    const noAccept = await fetch(server.mcpServerUrl, { method: 'POST', headers: { 'content-type': 'application/json', ...auth }, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' }) });
    expect(noAccept.status).toBe(406);
    const sse = await fetch(server.mcpServerUrl, { headers: { accept: 'text/event-stream', ...auth } });
    expect(sse.status).toBe(405);
    expect(sse.headers.get('x-mcp-supported-transport')).toBe('streamable-http');
    const info = await fetch(server.mcpServerUrl, { headers: auth });
    expect(await info.json()).toEqual({ name: 'Served', version: '1.0.0', protocolVersion: '2024-11-05', capabilities: { tools: {} } });
    expect((await fetch(`${s.url}/api/mcp/serve/does-not-exist`, { headers: auth })).status).toBe(404);
  });
});

describe('tool lifecycle, paging, OAuth tokens and rate limits', () => {
  it('hides a tool while its workflow is undeployed and serves it again after a redeploy', async () => {
    const start = apiBlock('start_trigger', 'Start', { inputFormat: [{ name: 'x', type: 'string' }] });
    const out = apiBlock('response', 'Out', { data: '{"x": <start.x>}' });
    const wf = await buildWorkflow(s, 'Comes and goes', [start, out], [link(start, out)]);
    const server = (await s.call('POST', '/api/v2/workflow-mcp-servers', { workspaceId: s.workspaceId, name: 'Lifecycle', workflowIds: [wf.id, greet.id] })).body.data;
    const undeployed = await s.call('DELETE', `/api/v2/workflows/${wf.id}/deploy`);
    expect(undeployed.status, undeployed.text).toBe(200);
    expect(undeployed.body.data.archivedMcpTools).toEqual([{ serverId: server.id, toolName: 'comes_and_goes' }]);
    const tools = (await s.call('GET', `/api/v2/workflow-mcp-servers/${server.id}/tools`)).body.data;
    expect(tools.find((t: any) => t.workflowId === wf.id).status).toBe('inactive');
    const client = await connect(server.mcpServerUrl, { 'X-API-Key': s.key });
    try {
      expect((await client.listTools()).tools.map((t) => t.name)).toEqual(['greet_someone']);
      await expect(client.callTool({ name: 'comes_and_goes', arguments: { x: 'a' } })).rejects.toThrow(/not deployed/);
      expect((await s.call('POST', `/api/v2/workflows/${wf.id}/deploy`, {})).status).toBe(200);
      expect((await client.listTools()).tools.map((t) => t.name)).toEqual(['comes_and_goes', 'greet_someone']);
      const result = await client.callTool({ name: 'comes_and_goes', arguments: { x: 'back' } });
      expect(JSON.parse((result.content as any)[0].text)).toEqual({ x: 'back' });
    } finally {
      await client.close();
    }
  });

  it('pages tools/list with the cursor the last page ended on', async () => {
    const server = (await s.call('POST', '/api/v2/workflow-mcp-servers', { workspaceId: s.workspaceId, name: 'Paged', workflowIds: [greet.id, failing.id] })).body.data;
    const first = (await s.call('GET', `/api/v2/workflow-mcp-servers/${server.id}/tools`)).body.data[0];
    const rpc = await post(server.mcpServerUrl, JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: { cursor: first.id } }), { 'X-API-Key': s.key });
    expect(rpc.status).toBe(200);
    const body = (await rpc.json()) as any;
    expect(body.result.tools.map((t: any) => t.name)).toEqual(['always_fails']);
    expect(body.result.nextCursor).toBeUndefined();
  });

  it('accepts an OAuth access token, and needs api:write to call a tool', async () => {
    const server = (await s.call('POST', '/api/v2/workflow-mcp-servers', { workspaceId: s.workspaceId, name: 'OAuth', workflowIds: [greet.id] })).body.data;
    const app = await createOAuthClient(s.services.store, 'MCP client app');
    const writer = await issueTokens(s.services.store, { clientId: app.id, userId: s.userId, scopes: ['api:write'] });
    const client = await connect(server.mcpServerUrl, { Authorization: `Bearer ${writer.accessToken}` });
    try {
      const result = await client.callTool({ name: 'greet_someone', arguments: { name: 'Token', times: 1 } });
      expect(JSON.parse((result.content as any)[0].text)).toEqual({ greeting: 'Hello Token!' });
    } finally {
      await client.close();
    }
    const reader = await issueTokens(s.services.store, { clientId: app.id, userId: s.userId, scopes: ['api:read'] });
    const readOnly = await connect(server.mcpServerUrl, { Authorization: `Bearer ${reader.accessToken}` });
    try {
      expect((await readOnly.listTools()).tools).toHaveLength(1);
      await expect(readOnly.callTool({ name: 'greet_someone', arguments: { name: 'x', times: 1 } })).rejects.toThrow(/api:write/);
    } finally {
      await readOnly.close();
    }
    await expect(connect(server.mcpServerUrl, { Authorization: 'Bearer owa_at_not-a-token' })).rejects.toThrow();
  });

  it('draws tool calls from the synchronous execution bucket', async () => {
    const limited = await startTestServer({ RATE_LIMIT_FREE_SYNC: '1' });
    try {
      const start = apiBlock('start_trigger', 'Start');
      const wf = await buildWorkflow(limited, 'Limited', [start], []);
      const server = (await limited.call('POST', '/api/v2/workflow-mcp-servers', { workspaceId: limited.workspaceId, name: 'Limited', workflowIds: [wf.id] })).body.data;
      const client = await connect(server.mcpServerUrl, { 'X-API-Key': limited.key });
      try {
        const ok = await client.callTool({ name: 'limited', arguments: {} });
        expect(ok.isError).toBeFalsy();
        await expect(client.callTool({ name: 'limited', arguments: {} })).rejects.toThrow(/Rate limit/);
      } finally {
        await client.close();
      }
    } finally {
      await limited.stop();
    }
  });
});

describe('more refusals and bookkeeping', () => {
  it('answers a run past the synchronous time limit as a retryable timeout error', async () => {
    const slow = await startTestServer({ SYNC_RUN_TIMEOUT_MS: '300' });
    try {
      const start = apiBlock('start_trigger', 'Start');
      const wait = apiBlock('wait', 'Pause', { timeValue: '2', timeUnit: 'seconds' });
      const wf = await buildWorkflow(slow, 'Slow', [start, wait], [link(start, wait)]);
      const server = (await slow.call('POST', '/api/v2/workflow-mcp-servers', { workspaceId: slow.workspaceId, name: 'Slow', workflowIds: [wf.id] })).body.data;
      const r = await post(server.mcpServerUrl, JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'slow', arguments: {} } }), { 'X-API-Key': slow.key });
      const body = (await r.json()) as any;
      expect(body.error.data).toMatchObject({ httpStatus: 408, code: 'TIMEOUT', retryable: true });
    } finally {
      await slow.stop();
    }
  });

  it('answers 404 once the server is deleted, and refuses personal keys where the workspace turned them off', async () => {
    const server = (await s.call('POST', '/api/v2/workflow-mcp-servers', { workspaceId: s.workspaceId, name: 'Short-lived', workflowIds: [greet.id] })).body.data;
    const ping = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' });
    expect((await post(server.mcpServerUrl, ping, { 'X-API-Key': s.key })).status).toBe(200);
    const ws = await s.newWorkspace('No personal keys');
    const wf = await buildWorkflow(s, 'Locked down', [apiBlock('start_trigger', 'Start')], [], { workspaceId: ws });
    const locked = (await s.call('POST', '/api/v2/workflow-mcp-servers', { workspaceId: ws, name: 'Locked', workflowIds: [wf.id] })).body.data;
    await setPersonalKeysAllowed(s.services.store, ws, false);
    const refused = await post(locked.mcpServerUrl, ping, { 'X-API-Key': s.key });
    expect(refused.status).toBe(403);
    expect(((await refused.json()) as any).error.details.code).toBe('PERSONAL_KEYS_DISABLED');
    const wsKey = (await createApiKey(s.services.store, { kind: 'workspace', userId: s.userId, workspaceId: ws })).key;
    expect((await post(locked.mcpServerUrl, ping, { 'X-API-Key': wsKey })).status).toBe(200);

    await s.call('DELETE', `/api/v2/workflow-mcp-servers/${server.id}`);
    expect((await post(server.mcpServerUrl, ping, { 'X-API-Key': s.key })).status).toBe(404);
  });

  it('answers odd messages with 4xx or JSON-RPC errors, never a 500', async () => {
    const server = (await s.call('POST', '/api/v2/workflow-mcp-servers', { workspaceId: s.workspaceId, name: 'Odd', workflowIds: [greet.id] })).body.data;
    const auth = { 'X-API-Key': s.key };
    for (const body of ['[]', '"text"', '42', 'null', JSON.stringify([{ jsonrpc: '2.0', id: 1, method: 'ping' }])]) {
      const r = await post(server.mcpServerUrl, body, auth);
      expect(r.status, body).toBe(400);
    }
    // Params the SDK's request schema refuses come back as its JSON-RPC error (it reports them as -32603).
    const cases = [
      { jsonrpc: '2.0', id: 1, method: 'tools/call' },
      { jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 123 } },
      { jsonrpc: '2.0', id: 3, method: 'tools/call', params: { name: 'greet_someone', arguments: 'nope' } },
    ];
    for (const message of cases) {
      const r = await post(server.mcpServerUrl, JSON.stringify(message), auth);
      expect(r.status, JSON.stringify(message)).toBe(200);
      const body = (await r.json()) as any;
      expect(body.id).toBe(message.id);
      expect([-32602, -32603], JSON.stringify(body)).toContain(body.error.code);
    }
    const wrongType = await fetch(server.mcpServerUrl, { method: 'POST', headers: { 'content-type': 'text/plain', accept: 'application/json, text/event-stream', ...auth }, body: 'hi' });
    expect(wrongType.status).toBe(415);
  });

  it('refuses an unsupported protocol version header as a JSON-RPC error', async () => {
    const server = (await s.call('POST', '/api/v2/workflow-mcp-servers', { workspaceId: s.workspaceId, name: 'Versions' })).body.data;
    const r = await post(server.mcpServerUrl, JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }), { 'X-API-Key': s.key, 'mcp-protocol-version': '1999-01-01' });
    expect(r.status).toBe(400);
    expect(((await r.json()) as any).error.message).toMatch(/protocol version/i);
  });

  it('pages the server list with a cursor and records audit events', async () => {
    const ws = await s.newWorkspace('Paging');
    for (const name of ['a', 'b', 'c']) await s.call('POST', '/api/v2/workflow-mcp-servers', { workspaceId: ws, name });
    const first = await s.call('GET', `/api/v2/workflow-mcp-servers?workspaceId=${ws}&limit=2&sortBy=name&sortOrder=asc`);
    expect(first.body.data.map((x: any) => x.name)).toEqual(['a', 'b']);
    const second = await s.call('GET', `/api/v2/workflow-mcp-servers?workspaceId=${ws}&limit=2&sortBy=name&sortOrder=asc&cursor=${encodeURIComponent(first.body.nextCursor)}`);
    expect(second.body.data.map((x: any) => x.name)).toEqual(['c']);
    expect(second.body.nextCursor).toBeNull();
    const changed = await s.call('GET', `/api/v2/workflow-mcp-servers?workspaceId=${ws}&limit=2&sortBy=createdAt&cursor=${encodeURIComponent(first.body.nextCursor)}`);
    expect(changed.status).toBe(400);
    const actions = (await withTestDatabase(s, (db) => db.read.all<{ action: string }>("SELECT action FROM audit_events WHERE workspace_id = ? AND resource_type = 'workflow_mcp_server'", [ws]))).map((r) => r.action);
    expect(actions).toEqual(['workflow_mcp_server.created', 'workflow_mcp_server.created', 'workflow_mcp_server.created']);
  });
});
