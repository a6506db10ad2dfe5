// Billing status and logs from the usage and storage records: runs and tool executions cost what they recorded,
// scopes by credential kind, the period filters and their bad input, and the real `sim billing` commands.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from './support/server.ts';
import { runCli } from './support/cli.ts';
import { apiBlock, buildWorkflow, link } from './support/api-workflow.ts';
import { createApiKey } from '../src/identity/admin.ts';

let s: TestServer;
let env: { endpoint: string; apiKey: string; workspace: string };
let wfId: string;
let runId: string;

beforeAll(async () => {
  s = await startTestServer({ RATE_LIMIT_FREE_SYNC: '1000', TOOL_EXECUTION_COST_USD: '0.25', USAGE_LIMIT_USD_FREE: '1' });
  env = { endpoint: s.url, apiKey: s.key, workspace: s.workspaceId };
  const start = apiBlock('start_trigger', 'Start');
  const fn = apiBlock('function', 'Fn', { code: 'return 1' });
  wfId = (await buildWorkflow(s, 'Billed', [start, fn], [link(start, fn)])).id;
  runId = (await s.call('POST', `/api/v2/workflows/${wfId}/execute`, {})).body.data.runId;
  const tool = await s.call('POST', '/api/v2/tools/http_request/execute', { workspaceId: s.workspaceId, input: { url: 'http://10.0.0.1/' } });
  expect(tool.status).toBe(200);
});
afterAll(() => s.stop());

describe('billing status', () => {
  it('reports plan, credits used this month and storage against the quota', async () => {
    const r = await s.call('GET', `/api/v2/billing/status?workspaceId=${s.workspaceId}`);
    expect(r.status, r.text).toBe(200);
    expect(r.body.data).toMatchObject({ workspaceId: s.workspaceId, plan: 'free', status: 'active', credits: { used: 0.25, limit: 1, remaining: 0.75 } });
    expect(r.body.data.storage.limitBytes).toBeGreaterThan(0);
    expect(new Date(r.body.data.period.end).getTime()).toBeGreaterThan(Date.now());
    const mine = await s.call('GET', '/api/v2/billing/status');
    expect(mine.body.data.workspaceId).toBeNull();
    expect(mine.body.data.credits.used).toBe(0.25);
  });

  it('limit_exceeded once the recorded cost reaches the limit', async () => {
    for (let i = 0; i < 3; i++) await s.call('POST', '/api/v2/tools/http_request/execute', { workspaceId: s.workspaceId, input: { url: 'http://10.0.0.1/' } });
    const r = await s.call('GET', `/api/v2/billing/status?workspaceId=${s.workspaceId}`);
    expect(r.body.data.status).toBe('limit_exceeded');
    expect(r.body.data.credits.remaining).toBe(0);
  });

  it('a workspace key is pinned to its workspace and sees no credits or storage; others get 404', async () => {
    const wsKey = await createApiKey(s.services.store, { kind: 'workspace', userId: s.userId, workspaceId: s.workspaceId });
    const own = await s.call('GET', '/api/v2/billing/status', undefined, wsKey.key);
    expect(own.body.data).toMatchObject({ workspaceId: s.workspaceId, credits: null, storage: null });
    const other = await s.newWorkspace('Billing other');
    expect((await s.call('GET', `/api/v2/billing/status?workspaceId=${other}`, undefined, wsKey.key)).status).toBe(404);
    const outsider = await s.newUser('billing-outsider@example.com');
    expect((await s.call('GET', `/api/v2/billing/status?workspaceId=${s.workspaceId}`, undefined, outsider.key)).status).toBe(404);
  });

  it('sim billing status', async () => {
    const r = await runCli(['--output', 'json', 'billing', 'status'], env);
    expect(r.code, r.stderr + r.stdout).toBe(0);
    expect(r.stdout).toContain('free');
  });
});

describe('billing logs', () => {
  it('lists runs and tool executions with their cost, newest first, filtered by source', async () => {
    const r = await s.call('GET', `/api/v2/billing/logs?workspaceId=${s.workspaceId}&period=all`);
    expect(r.status, r.text).toBe(200);
    expect(r.body.scope).toBe('user');
    const sources = r.body.data.map((x: any) => x.source);
    expect(sources).toContain('workflow');
    expect(sources).toContain('api-tool');
    const run = r.body.data.find((x: any) => x.source === 'workflow');
    expect(run).toMatchObject({ runId, workflow: { id: wfId, name: 'Billed' }, workspaceId: s.workspaceId });
    const tools = await s.call('GET', `/api/v2/billing/logs?source=api-tool&limit=2`);
    expect(tools.body.data).toHaveLength(2);
    expect(tools.body.data.every((x: any) => x.source === 'api-tool' && x.creditCost === 0.25)).toBe(true);
    const next = await s.call('GET', `/api/v2/billing/logs?source=api-tool&limit=2&cursor=${encodeURIComponent(tools.body.nextCursor)}`);
    expect(next.body.data).toHaveLength(2);
    expect(next.body.data[0].id).not.toBe(tools.body.data[1].id);
  });

  it('custom periods need UTC times with Z, and only with period=custom', async () => {
    const ok = await s.call('GET', `/api/v2/billing/logs?period=custom&startDate=2020-01-01T00%3A00%3A00Z`);
    expect(ok.status, ok.text).toBe(200);
    expect(ok.body.data.length).toBeGreaterThan(0);
    const none = await s.call('GET', `/api/v2/billing/logs?period=custom&startDate=2020-01-01T00%3A00%3A00Z&endDate=2020-02-01T00%3A00%3A00Z`);
    expect(none.body.data).toEqual([]);
    expect((await s.call('GET', `/api/v2/billing/logs?period=7d&startDate=2020-01-01T00%3A00%3A00Z`)).status).toBe(400);
    expect((await s.call('GET', `/api/v2/billing/logs?period=custom&startDate=2020-01-01`)).status).toBe(400);
    expect((await s.call('GET', `/api/v2/billing/logs?period=custom&startDate=2020-01-01T00%3A00%3A00%2B02%3A00`)).status).toBe(400);
    expect((await s.call('GET', `/api/v2/billing/logs?period=custom&startDate=0000-01-01T00%3A00%3A00Z`)).status).toBe(400);
    expect((await s.call('GET', `/api/v2/billing/logs?source=nope`)).status).toBe(400);
  });

  it('personal keys see their own events; a workspace key every member\'s in its workspace', async () => {
    const member = await s.newUser('billing-member@example.com', { [s.workspaceId]: 'write' });
    await s.call('POST', '/api/v2/tools/http_request/execute', { workspaceId: s.workspaceId, input: { url: 'http://10.0.0.1/' } }, member.key);
    const mine = await s.call('GET', '/api/v2/billing/logs?period=all', undefined, member.key);
    expect(mine.body.data).toHaveLength(1);
    const wsKey = await createApiKey(s.services.store, { kind: 'workspace', userId: s.userId, workspaceId: s.workspaceId });
    const all = await s.call('GET', '/api/v2/billing/logs?period=all&limit=100', undefined, wsKey.key);
    expect(all.body.scope).toBe('workspace');
    expect(all.body.data.length).toBeGreaterThan(mine.body.data.length);
  });

  it('sim billing logs', async () => {
    const r = await runCli(['--output', 'json', 'billing', 'logs', '--period', 'all', '--source', 'api-tool'], env);
    expect(r.code, r.stderr + r.stdout).toBe(0);
    expect(r.stdout).toContain('api-tool');
  });
});
