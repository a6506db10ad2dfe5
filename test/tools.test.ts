// Custom tools and the tool registry: CRUD with function-schema checks, executeTool of custom tools (sandboxed,
// parameters as inputs, errors and timeouts) and of the HTTP tool (egress policy), usage records, the catalog,
// agent blocks calling registry tools, and the real `sim custom-tools` / `sim tools` commands.
import http from 'node:http';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import { DatabaseSync } from 'node:sqlite';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from './support/server.ts';
import { runCli } from './support/cli.ts';
import { apiBlock, buildWorkflow, link } from './support/api-workflow.ts';
import { startFakeLlm, type FakeLlm } from './support/fake-llm.ts';
import { createApiKey } from '../src/identity/admin.ts';

let s: TestServer;
let llm: FakeLlm;
let target: http.Server;
let targetUrl: string;
let env: { endpoint: string; apiKey: string; workspace: string };
const cli = (args: string[], stdin?: string) => runCli(['--output', 'json', ...args], env, stdin);
const ws = () => s.workspaceId;

const ADD_SCHEMA = {
  type: 'function',
  function: { name: 'add', description: 'Adds two numbers', parameters: { type: 'object', properties: { a: { type: 'number' }, b: { type: 'number' } }, required: ['a', 'b'] } },
};

beforeAll(async () => {
  llm = await startFakeLlm();
  target = http.createServer((req, res) => {
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify({ path: req.url, method: req.method }));
  });
  await new Promise<void>((r) => target.listen(0, '127.0.0.1', () => r()));
  targetUrl = `http://127.0.0.1:${(target.address() as AddressInfo).port}`;
  s = await startTestServer({ AGENT_API_BASE_URL: llm.url, RATE_LIMIT_FREE_SYNC: '1000', EGRESS_ALLOW_CIDRS: '127.0.0.1/32', SANDBOX_POOL_SIZE: '1' });
  env = { endpoint: s.url, apiKey: s.key, workspace: s.workspaceId };
});
afterAll(async () => {
  await s.stop();
  await llm.close();
  await new Promise((r) => target.close(r));
});

const createTool = (body: Record<string, unknown>, key?: string) => s.call('POST', '/api/v2/custom-tools', { workspaceId: ws(), ...body }, key);
const execute = (toolId: string, body: Record<string, unknown>, key?: string) => s.call('POST', `/api/v2/tools/${toolId}/execute`, { workspaceId: ws(), ...body }, key);

describe('custom tools', () => {
  it('CLI: create, list, get, update, delete', async () => {
    const made = await cli(['custom-tools', 'create', '--title', 'CLI adder', '--schema', '@-', '--code', 'return a + b'], JSON.stringify(ADD_SCHEMA));
    expect(made.code, made.stderr + made.stdout).toBe(0);
    const id = made.json.data?.id ?? made.json.id;
    const listed = await cli(['custom-tools', 'list']);
    expect(listed.stdout).toContain('CLI adder');
    const got = await cli(['custom-tools', 'get', id]);
    expect(got.stdout).toContain('return a + b');
    const upd = await cli(['custom-tools', 'update', id, '--code', 'return a * b']);
    expect(upd.code, upd.stderr + upd.stdout).toBe(0);
    const run = await execute(`custom_${id}`, { input: { a: 6, b: 7 } });
    expect(run.body.data).toMatchObject({ toolId: `custom_${id}`, status: 'succeeded', output: 42, error: null });
    const del = await cli(['custom-tools', 'delete', id, '--yes']);
    expect(del.code, del.stderr + del.stdout).toBe(0);
    expect((await s.call('GET', `/api/v2/custom-tools/${id}?workspaceId=${ws()}`)).status).toBe(404);
    expect((await execute(`custom_${id}`, { input: { a: 1, b: 2 } })).status).toBe(404);
  });

  it('refuses schemas that are not function declarations (400) and duplicate titles (409)', async () => {
    const bad = [
      { type: 'object', function: ADD_SCHEMA.function },
      { type: 'function', function: { name: 'has space', parameters: { type: 'object', properties: {} } } },
      { type: 'function', function: { name: 'f', parameters: { type: 'string', properties: {} } } },
      { type: 'function', function: { name: 'f', parameters: { type: 'object', properties: { a: { type: 'nonsense' } } } } },
      { type: 'function', function: { name: 'f', parameters: { type: 'object', properties: {}, required: ['missing'] } } },
    ];
    for (const schema of bad) {
      const r = await createTool({ title: 'bad ' + Math.random(), schema, code: 'return 1' });
      expect(r.status, JSON.stringify(schema)).toBe(400);
      expect(r.body.error.code).toBe('BAD_REQUEST');
    }
    expect((await createTool({ title: 'Unique tool', schema: ADD_SCHEMA, code: 'return 1' })).status).toBe(200);
    const dup = await createTool({ title: 'Unique tool', schema: ADD_SCHEMA, code: 'return 2' });
    expect(dup.status).toBe(409);
    const other = (await createTool({ title: 'Other tool', schema: ADD_SCHEMA, code: 'return 2' })).body.data.id;
    expect((await s.call('PATCH', `/api/v2/custom-tools/${other}`, { workspaceId: ws(), title: 'Unique tool' })).status).toBe(409);
    expect((await s.call('PATCH', `/api/v2/custom-tools/${other}`, { workspaceId: ws() })).status).toBe(400);
    expect((await s.call('PATCH', `/api/v2/custom-tools/${other}`, { workspaceId: ws(), schema: { type: 'function' } })).status).toBe(400);
  });

  it('executeTool: code that throws or times out fails clearly; bad input is a 400', async () => {
    const thrower = (await createTool({ title: 'Thrower', schema: ADD_SCHEMA, code: 'throw new Error("boom " + a)' })).body.data.id;
    const r = await execute(`custom_${thrower}`, { input: { a: 1, b: 2 } });
    expect(r.status).toBe(200);
    expect(r.body.data.status).toBe('failed');
    expect(r.body.data.error.message).toContain('boom 1');
    const looper = (await createTool({ title: 'Looper', schema: ADD_SCHEMA, code: 'while (true) {}' })).body.data.id;
    const t = await execute(`custom_${looper}`, { input: { a: 1, b: 2 }, timeoutSeconds: 1 });
    expect(t.body.data.status).toBe('failed');
    expect(t.body.data.error.message).toMatch(/within 1000 ms/);
    const invalid = await execute(`custom_${thrower}`, { input: { a: 'one' } });
    expect(invalid.status).toBe(400);
    expect(invalid.body.error.message).toMatch(/schema/);
    expect(JSON.stringify(invalid.body.error.details)).toContain('input');
    // the sandbox is still usable afterwards
    const adder = (await createTool({ title: 'Adder', schema: ADD_SCHEMA, code: 'return params.a + b' })).body.data.id;
    expect((await execute(`custom_${adder}`, { input: { a: 2, b: 3 } })).body.data.output).toBe(5);
  });

  it('every declared parameter is a variable: an optional one left out is undefined, not a ReferenceError', async () => {
    const schema = {
      type: 'function',
      function: { name: 'greet', parameters: { type: 'object', properties: { name: { type: 'string' }, greeting: { type: 'string' } }, required: ['name'] } },
    };
    const greeter = (await createTool({ title: 'Greeter', schema, code: 'return (greeting ?? "Hello") + ", " + name + (typeof greeting)' })).body.data.id;
    const without = await execute(`custom_${greeter}`, { input: { name: 'Ada' } });
    expect(without.body.data, JSON.stringify(without.body)).toMatchObject({ status: 'succeeded', output: 'Hello, Adaundefined', error: null });
    expect((await execute(`custom_${greeter}`, { input: { name: 'Ada', greeting: 'Hi' } })).body.data.output).toBe('Hi, Adastring');
    const viaCli = await cli(['tools', 'execute', `custom_${greeter}`, '--input', JSON.stringify({ name: 'Bob' })]);
    expect(viaCli.code, viaCli.stderr + viaCli.stdout).toBe(0);
    expect(viaCli.stdout).toContain('Hello, Bobundefined');
  });
});

describe('tool catalog and the HTTP tool', () => {
  it('lists built-in and custom tools with their schemas', async () => {
    const list = await s.call('GET', `/api/v2/tools?workspaceId=${ws()}&limit=100`);
    expect(list.status).toBe(200);
    const ids = list.body.data.map((t: any) => t.id);
    expect(ids).toContain('http_request');
    expect(ids.some((id: string) => id.startsWith('custom_'))).toBe(true);
    const http = await s.call('GET', `/api/v2/tools/http_request?workspaceId=${ws()}`);
    expect(http.body.data.params.url).toMatchObject({ type: 'string', required: true });
    expect(http.body.data.outputs.status.type).toBe('number');
    const searched = await s.call('GET', `/api/v2/tools?workspaceId=${ws()}&search=http`);
    expect(searched.body.data.map((t: any) => t.id)).toEqual(['http_request']);
    expect((await s.call('GET', `/api/v2/tools/nope?workspaceId=${ws()}`)).status).toBe(404);
    const cliList = await cli(['tools', 'list']);
    expect(cliList.code, cliList.stderr).toBe(0);
    expect(cliList.stdout).toContain('http_request');
  });

  it('executes the HTTP tool under the egress policy, through the CLI too', async () => {
    const r = await execute('http_request', { input: { url: `${targetUrl}/hello`, params: { x: 1 } } });
    expect(r.body.data).toMatchObject({ status: 'succeeded', output: { status: 200, data: { path: '/hello?x=1', method: 'GET' } } });
    const blocked = await execute('http_request', { input: { url: 'http://10.1.2.3/' } });
    expect(blocked.body.data.status).toBe('failed');
    expect(blocked.body.data.error.message).toMatch(/not allowed/);
    const viaCli = await cli(['tools', 'execute', 'http_request', '--input', JSON.stringify({ url: `${targetUrl}/cli`, method: 'POST', body: { a: 1 } })]);
    expect(viaCli.code, viaCli.stderr + viaCli.stdout).toBe(0);
    expect(viaCli.stdout).toContain('/cli');
    expect((await execute('http_request', { input: { method: 'GET' } })).status).toBe(400);
  });

  it('records usage for every execution; workspace keys cannot execute', async () => {
    const db = new DatabaseSync(path.join(s.dataDir, 'workspace.sqlite'));
    try {
      const n = (db.prepare("SELECT COUNT(*) AS n FROM usage_records WHERE category = 'api-tool'").get() as { n: number }).n;
      expect(n).toBeGreaterThanOrEqual(5);
    } finally {
      db.close();
    }
    const wsKey = await createApiKey(s.services.store, { kind: 'workspace', userId: s.userId, workspaceId: ws() });
    expect((await execute('http_request', { input: { url: targetUrl } }, wsKey.key)).status).toBe(403);
    expect((await s.call('GET', `/api/v2/tools?workspaceId=${ws()}`, undefined, wsKey.key)).status).toBe(200);
  });
});

describe('agent blocks call registry tools', () => {
  it('the model calls a custom tool and the HTTP tool, sees the results, and answers', async () => {
    const adder = (await createTool({ title: 'Agent adder', schema: ADD_SCHEMA, code: 'return a + b' })).body.data.id;
    const start = apiBlock('start_trigger', 'Start');
    const agent = apiBlock('agent', 'Agent', {
      userPrompt: 'What is 2 + 40?',
      tools: [{ type: 'custom-tool', customToolId: adder, usageControl: 'auto' }, { toolId: 'http_request', params: { url: `${targetUrl}/preset` } }, { toolId: 'http_request', usageControl: 'none' }],
    });
    const wf = await buildWorkflow(s, 'Tool agent', [start, agent], [link(start, agent)]);
    llm.requests.length = 0;
    llm.reply = (body) => {
      const last = body.messages.at(-1);
      if (last.role === 'user') {
        return {
          tool_calls: [
            { id: 'c1', type: 'function', function: { name: `custom_${adder}`, arguments: JSON.stringify({ a: 2, b: 40 }) } },
            { id: 'c2', type: 'function', function: { name: 'http_request', arguments: '{}' } },
          ],
        };
      }
      return { content: `The answer is ${body.messages.find((m: any) => m.tool_call_id === 'c1').content}` };
    };
    const r = await s.call('POST', `/api/v2/workflows/${wf.id}/execute`, {});
    expect(r.body.data.status, r.text).toBe('completed');
    expect(r.body.data.output.content).toBe('The answer is 42');
    const first = llm.requests[0];
    expect(first.tools.map((t: any) => t.function.name)).toEqual([`custom_${adder}`, 'http_request']);
    // the preset url is hidden from the model
    expect(first.tools[1].function.parameters.properties.url).toBeUndefined();
    const second = llm.requests[1];
    const httpResult = JSON.parse(second.messages.find((m: any) => m.tool_call_id === 'c2').content);
    expect(httpResult.data.path).toBe('/preset');
    expect(r.body.data.output.toolCalls.map((c: any) => c.status)).toEqual(['succeeded', 'succeeded']);
  });

  it('an agent naming a tool that does not exist fails clearly', async () => {
    const start = apiBlock('start_trigger', 'Start');
    const agent = apiBlock('agent', 'Agent', { userPrompt: 'hi', tools: [{ type: 'custom-tool', customToolId: 'gone' }] });
    const wf = await buildWorkflow(s, 'Missing tool agent', [start, agent], [link(start, agent)]);
    const r = await s.call('POST', `/api/v2/workflows/${wf.id}/execute`, {});
    expect(r.text).toContain('Unknown tool: custom_gone');
  });
});
