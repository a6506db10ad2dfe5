// Each block type against real local services: API requests under the egress policy, the agent against a fake
// OpenAI-compatible provider, child workflows, response shaping, variables and waits.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig, ConfigError } from '../src/config.ts';
import { EgressError, EgressPolicy, Engine, type AgentProvider, type WorkflowDefinition } from '../src/execution/index.ts';
import type { SandboxPool } from '../src/sandbox/pool.ts';
import { block, edge, fn, start, testEngine, workflow } from './support/workflow.ts';

let engine: Engine;
let open: Engine;
let sandbox: SandboxPool;
let server: http.Server;
let base: string;
const seen: { method: string; url: string; headers: http.IncomingHttpHeaders; body: string }[] = [];

beforeAll(async () => {
  server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      seen.push({ method: req.method!, url: req.url!, headers: req.headers, body });
      const url = new URL(req.url!, 'http://x');
      if (url.pathname === '/json') return res.writeHead(200, { 'content-type': 'application/json', 'x-trace': 'abc' }).end(JSON.stringify({ ok: true, q: url.searchParams.get('q') }));
      if (url.pathname === '/echo') return res.writeHead(201, { 'content-type': 'application/json' }).end(JSON.stringify({ method: req.method, body: body ? JSON.parse(body) : null, auth: req.headers.authorization ?? null }));
      if (url.pathname === '/slow') return setTimeout(() => res.end('late'), 1000);
      if (url.pathname === '/missing') return res.writeHead(404).end('no such thing');
      if (url.pathname === '/to-metadata') return res.writeHead(302, { location: 'http://169.254.169.254/latest/meta-data/' }).end();
      if (url.pathname === '/to-json') return res.writeHead(302, { location: '/json?q=redirected' }).end();
      if (url.pathname === '/v1/chat/completions') {
        const request = JSON.parse(body);
        if (request.model === 'broken') return res.writeHead(400, { 'content-type': 'application/json' }).end(JSON.stringify({ error: { message: 'unknown model' } }));
        return res.writeHead(200, { 'content-type': 'application/json' }).end(
          JSON.stringify({
            model: request.model,
            choices: [{ message: { role: 'assistant', content: `echo: ${request.messages.at(-1).content} (${request.messages.length} messages)` } }],
            usage: { prompt_tokens: 12, completion_tokens: 5, total_tokens: 17 },
          }),
        );
      }
      res.writeHead(200).end('plain text');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  ({ engine, sandbox } = await testEngine());
  const agent: AgentProvider = { baseUrl: `${base}/v1`, apiKey: 'sk-fake', model: 'tiny-model', timeoutMs: 2000, inputCostPerMTok: 1_000_000, outputCostPerMTok: 2_000_000 };
  open = new Engine({ ...engine.options, egress: new EgressPolicy({ allowPrivate: false, allowCidrs: ['127.0.0.1/32'] }), agent });
});

afterAll(async () => {
  await sandbox.close();
  server.close();
});

const one = (b: ReturnType<typeof block>) => workflow([start(), b], [edge('start', b.id)]);

describe('API request block', () => {
  it('sends method, query, headers and JSON body, and parses a JSON answer', async () => {
    const r = await open.execute(
      workflow([start(), block('api', 'Call', { url: `${base}/echo`, method: 'POST', params: [{ cells: { Key: 'q', Value: '<start.q>' } }], headers: [{ cells: { Key: 'Authorization', Value: 'Bearer {{TOKEN}}' } }], body: '{"name": <start.name>, "n": 2}' })], [edge('start', 'call')]),
      { input: { q: 'find me', name: 'Ada' }, secrets: { TOKEN: 'tok-abc-123' } },
    );
    expect(r.error).toBeNull();
    expect(r.output).toMatchObject({ status: 201, data: { method: 'POST', body: { name: 'Ada', n: 2 }, auth: 'Bearer [REDACTED]' } });
    const last = seen.at(-1)!;
    expect(last.url).toBe('/echo?q=find+me');
    expect(last.headers.authorization).toBe('Bearer tok-abc-123');
    expect(last.headers['content-type']).toBe('application/json');
    const get = await open.execute(one(block('api', 'Get', { url: `${base}/json`, params: { q: 'x' } })));
    expect(get.output).toMatchObject({ status: 200, data: { ok: true, q: 'x' }, headers: { 'x-trace': 'abc' } });
    const text = await open.execute(one(block('api', 'Text', { url: `${base}/plain` })));
    expect((text.output as { data: unknown }).data).toBe('plain text');
  });

  it('refuses loopback, private and link-local targets by default', async () => {
    for (const url of [`${base}/json`, 'http://localhost:9/x', 'http://10.0.0.1/', 'http://192.168.1.1/', 'http://169.254.169.254/latest/meta-data/', 'http://[::1]:9/']) {
      const r = await engine.execute(one(block('api', 'Call', { url })));
      expect(r.error, url).toMatchObject({ code: 'BLOCK_EXECUTION_FAILED', blockId: 'call', message: expect.stringMatching(/not allowed/) });
    }
  });

  it('checks every redirect hop against the policy', async () => {
    const blocked = await open.execute(one(block('api', 'Call', { url: `${base}/to-metadata` })));
    expect(blocked.error!.message).toMatch(/169\.254\.169\.254 is not allowed/);
    const followed = await open.execute(one(block('api', 'Call', { url: `${base}/to-json` })));
    expect(followed.output).toMatchObject({ status: 200, data: { q: 'redirected' } });
  });

  it('times out with TIMEOUT and fails on error statuses (an error path can take over)', async () => {
    const slow = await open.execute(one(block('api', 'Call', { url: `${base}/slow`, timeout: 100 })));
    expect(slow.error).toMatchObject({ code: 'TIMEOUT', blockId: 'call' });
    const missing = await open.execute(workflow([start(), block('api', 'Call', { url: `${base}/missing` }), fn('Handle', 'return "handled " + <call.error>')], [edge('start', 'call'), edge('call', 'handle', 'error')]));
    expect((missing.output as { result: string }).result).toMatch(/handled .*status 404/);
    const bad = await open.execute(one(block('api', 'Call', { url: 'ftp://example.com/' })));
    expect(bad.error!.message).toMatch(/Only http and https/);
  });
});

describe('egress policy', () => {
  it('classifies addresses, including IPv4-mapped IPv6, and honours the allow-list', () => {
    const strict = new EgressPolicy({ allowPrivate: false, allowCidrs: [] });
    for (const a of ['127.0.0.1', '10.9.8.7', '172.16.0.1', '192.168.0.1', '169.254.169.254', '100.64.0.1', '0.0.0.0', '::1', 'fe80::1', 'fd00::1', '::ffff:127.0.0.1', '::ffff:a00:1']) {
      expect(strict.allowsAddress(a), a).toBe(false);
    }
    for (const a of ['93.184.216.34', '8.8.8.8', '2606:4700::1111']) expect(strict.allowsAddress(a), a).toBe(true);
    const some = new EgressPolicy({ allowPrivate: false, allowCidrs: ['10.1.0.0/16', '127.0.0.1'] });
    expect([some.allowsAddress('10.1.2.3'), some.allowsAddress('10.2.0.1'), some.allowsAddress('127.0.0.1'), some.allowsAddress('127.0.0.2')]).toEqual([true, false, true, false]);
    expect(new EgressPolicy({ allowPrivate: true, allowCidrs: [] }).allowsAddress('10.0.0.1')).toBe(true);
  });

  it('refuses names that resolve to private addresses before connecting', async () => {
    const strict = new EgressPolicy({ allowPrivate: false, allowCidrs: [] });
    await expect(strict.request({ url: 'http://localhost:1/', timeoutMs: 1000 })).rejects.toMatchObject({ code: 'EGRESS_BLOCKED' });
    await expect(strict.request({ url: 'file:///etc/passwd', timeoutMs: 1000 })).rejects.toBeInstanceOf(EgressError);
  });

  it('is configured from the environment, rejecting bad values', () => {
    const c = loadConfig({ EGRESS_ALLOW_CIDRS: '127.0.0.1/32, 10.0.0.0/8', SANDBOX_POOL_SIZE: '3', AGENT_API_BASE_URL: 'http://127.0.0.1:9/v1/', AGENT_MODEL: 'm' });
    expect(c.egress).toMatchObject({ allowPrivate: false, allowCidrs: ['127.0.0.1/32', '10.0.0.0/8'] });
    expect(c.sandbox).toMatchObject({ poolSize: 3, timeoutMs: 10_000, memoryMb: 128 });
    expect(c.agent).toMatchObject({ baseUrl: 'http://127.0.0.1:9/v1', model: 'm', apiKey: null });
    expect(loadConfig({}).agent).toBeNull();
    expect(() => loadConfig({ EGRESS_ALLOW_CIDRS: 'example.com' })).toThrow(ConfigError);
    expect(() => loadConfig({ EGRESS_ALLOW_CIDRS: '10.0.0.0/99' })).toThrow(ConfigError);
    expect(() => loadConfig({ AGENT_API_BASE_URL: 'not a url' })).toThrow(ConfigError);
  });
});

describe('agent block', () => {
  it('calls the OpenAI-compatible provider and records tokens and cost', async () => {
    const r = await open.execute(workflow([start(), block('agent', 'Writer', { systemPrompt: 'Be brief', userPrompt: 'Hello <start.who>', temperature: 0.2 })], [edge('start', 'writer')]), { input: { who: 'Ada' } });
    expect(r.error).toBeNull();
    expect(r.output).toEqual({ content: 'echo: Hello Ada (2 messages)', model: 'tiny-model', tokens: { prompt: 12, completion: 5, total: 17 }, toolCalls: [] });
    const sent = JSON.parse(seen.at(-1)!.body);
    expect(sent).toMatchObject({ model: 'tiny-model', temperature: 0.2, messages: [{ role: 'system', content: 'Be brief' }, { role: 'user', content: 'Hello Ada' }] });
    expect(seen.at(-1)!.headers.authorization).toBe('Bearer sk-fake');
    expect(r.cost).toEqual({ total: 22, items: [{ category: 'model', description: 'tiny-model', cost: 22, inputTokens: 12, outputTokens: 5 }] });
    expect(r.traceSpans[1]!.tokens).toEqual({ input: 12, output: 5, total: 17 });
  });

  it('fails clearly without a provider, and with the provider\'s own error', async () => {
    const none = await engine.execute(one(block('agent', 'Writer', { userPrompt: 'hi' })));
    expect(none.error).toMatchObject({ code: 'BLOCK_EXECUTION_FAILED', blockType: 'agent', message: expect.stringMatching(/No agent provider is configured: set AGENT_API_BASE_URL/) });
    const broken = await open.execute(one(block('agent', 'Writer', { userPrompt: 'hi', model: 'broken' })));
    expect(broken.error!.message).toBe('The agent provider answered 400: unknown model');
  });
});

describe('child workflow block', () => {
  const child: WorkflowDefinition = workflow([start([{ name: 'n', type: 'number', required: true }]), block('response', 'Out', { data: '{"squared": <start.n>}' }), fn('Square', 'return <start.n> ** 2')], [edge('start', 'square'), edge('square', 'out')], [], 'child');
  child.state.blocks.out!.subBlocks.data!.value = '{"squared": <square.result>}';
  const failing = workflow([start(), fn('Break', 'throw new Error("inner trouble")')], [edge('start', 'break')], [], 'failing');
  const recursive = workflow([start(), block('workflow', 'Again', { workflowId: 'recursive' })], [edge('start', 'again')], [], 'recursive');
  const library: Record<string, WorkflowDefinition> = { child, failing, recursive };
  const resolveWorkflow = async (id: string) => library[id] ?? null;

  it('runs the child with input and returns its output and trace', async () => {
    const r = await engine.execute(workflow([start(), block('workflow', 'Sub', { workflowId: 'child', input: '{"n": <start.x>}' })], [edge('start', 'sub')]), { input: { x: 7 }, resolveWorkflow });
    expect(r.error).toBeNull();
    expect(r.output).toMatchObject({ success: true, childWorkflowName: 'child', result: { squared: 49 } });
    expect(r.traceSpans[1]!.children!.map((s) => s.name)).toEqual(['Start', 'Square', 'Out']);
  });

  it('CHILD_WORKFLOW_FAILED when the child fails, is missing, gets bad input or nests too deep', async () => {
    const run = (workflowId: string, input = '{}') => engine.execute(workflow([start(), block('workflow', 'Sub', { workflowId, input })], [edge('start', 'sub')]), { resolveWorkflow });
    expect((await run('failing')).error).toMatchObject({ code: 'CHILD_WORKFLOW_FAILED', blockId: 'sub', blockType: 'workflow', message: expect.stringMatching(/"failing" failed in block "Break": The function failed: inner trouble/) });
    expect((await run('nope')).error).toMatchObject({ code: 'CHILD_WORKFLOW_FAILED', message: expect.stringMatching(/does not exist/) });
    expect((await run('child', '{"n": "seven"}')).error!.message).toMatch(/"n" must be a number/);
    const deep = await run('recursive');
    expect(deep.error).toMatchObject({ code: 'CHILD_WORKFLOW_FAILED', message: expect.stringMatching(/nested deeper than the limit of 2/) });
    const noResolver = await engine.execute(workflow([start(), block('workflow', 'Sub', { workflowId: 'child' })], [edge('start', 'sub')]));
    expect(noResolver.error!.code).toBe('CHILD_WORKFLOW_FAILED');
  });
});

describe('response, variables and wait blocks', () => {
  it('response shapes the run output with status and headers', async () => {
    const r = await engine.execute(
      workflow([start(), fn('Calc', 'return { total: 3 }'), block('response', 'Reply', { data: '{"total": <calc.result.total>, "msg": "Total is <calc.result.total>"}', status: '202', headers: [{ cells: { Key: 'X-Kind', Value: 'calc' } }] })], [edge('start', 'calc'), edge('calc', 'reply')]),
    );
    expect(r.output).toEqual({ total: 3, msg: 'Total is 3' });
    expect(r.response).toEqual({ status: 202, headers: { 'X-Kind': 'calc' } });
    const bad = await engine.execute(one(block('response', 'Reply', { data: '{"a": 1}', status: '999' })));
    expect(bad.error!.message).toMatch(/status must be a whole number from 100 to 599/);
    const broken = await engine.execute(one(block('response', 'Reply', { data: '{"a": }' })));
    expect(broken.error!.message).toMatch(/not valid JSON/);
  });

  it('variables block sets typed workflow variables read later by reference', async () => {
    const vars = [
      { name: 'count', type: 'number' as const, value: 1 },
      { name: 'tags', type: 'array' as const, value: [] },
      { name: 'label', type: 'string' as const, value: '' },
    ];
    const r = await engine.execute(
      workflow(
        [start(), block('variables', 'Set', { variables: [{ variableName: 'count', value: '<start.n>' }, { variableName: 'tags', value: '["a","b"]' }, { variableName: 'label', value: 'n=<start.n>' }] }), fn('Read', 'return [<variable.count> + 1, <variable.tags>.length, <variable.label>]')],
        [edge('start', 'set'), edge('set', 'read')],
        vars,
      ),
      { input: { n: '41' } },
    );
    expect(r.error).toBeNull();
    expect(r.blockOutputs.set).toEqual({ assignments: { count: 41, tags: ['a', 'b'], label: 'n=41' } });
    expect((r.output as { result: unknown }).result).toEqual([42, 2, 'n=41']);
    const wrong = await engine.execute(workflow([start(), block('variables', 'Set', { variables: [{ variableName: 'count', value: 'many' }] })], [edge('start', 'set')], vars));
    expect(wrong.error!.message).toMatch(/Variable "count" is a number/);
    const unknown = await engine.execute(workflow([start(), block('variables', 'Set', { variables: [{ variableName: 'ghost', value: '1' }] })], [edge('start', 'set')], vars));
    expect(unknown.error!.message).toMatch(/No workflow variable named "ghost"/);
  });

  it('wait pauses for its duration and rejects a bad one', async () => {
    const t = Date.now();
    const r = await engine.execute(one(block('wait', 'Nap', { timeValue: '0.08', timeUnit: 'seconds' })));
    expect(Date.now() - t).toBeGreaterThanOrEqual(75);
    expect(r.output).toEqual({ waitDuration: 80 });
    expect((await engine.execute(one(block('wait', 'Nap', { timeValue: 'soon' })))).error!.message).toMatch(/wait duration must be a number/);
  });
});
