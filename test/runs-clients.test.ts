// The real clients against the server: `sim workflows run` (sync, --async, --follow), `sim workflows runs
// list/get/cancel/resume`, `sim logs list/get/stats`, and simstudio-ts-sdk's legacy endpoints.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SimStudioClient } from 'simstudio-ts-sdk';
import { startTestServer, type TestServer } from './support/server.ts';
import { runCli } from './support/cli.ts';
import { apiBlock, buildWorkflow, link, type BuiltWorkflow } from './support/api-workflow.ts';
import { GateServer } from './support/gate-server.ts';
import { waitUntil } from './support/wait.ts';

let s: TestServer;
let double: BuiltWorkflow;
let approval: BuiltWorkflow;
let sleepy: BuiltWorkflow;
// The long run waits at a gate that stays shut, so it is still running when the CLI cancels it, however slow the CLI.
let gate: GateServer;

const cli = (...args: string[]) => runCli(['--output', 'json', ...args], { endpoint: s.url, apiKey: s.key, workspace: s.workspaceId });

beforeAll(async () => {
  gate = await new GateServer().start();
  s = await startTestServer({ RATE_LIMIT_FREE_SYNC: '100', RATE_LIMIT_FREE_ASYNC: '200', RATE_LIMIT_FREE_API: '100000', EGRESS_ALLOW_CIDRS: '127.0.0.1/32' });
  {
    const start = apiBlock('start_trigger', 'Start', { inputFormat: [{ name: 'n', type: 'number' }] });
    const fn = apiBlock('function', 'Double', { code: 'return <start.n> * 2' });
    const out = apiBlock('response', 'Out', { data: '{"v": <double.result>}' });
    double = await buildWorkflow(s, 'CLI double', [start, fn, out], [link(start, fn), link(fn, out)]);
  }
  {
    const start = apiBlock('start_trigger', 'Start');
    const ask = apiBlock('human_in_the_loop', 'Approve', { message: 'ok?', inputFormat: [{ name: 'note', type: 'string' }] });
    const out = apiBlock('response', 'Reply', { data: '{"note": <approve.note>}' });
    approval = await buildWorkflow(s, 'CLI approval', [start, ask, out], [link(start, ask), link(ask, out)]);
  }
  {
    const start = apiBlock('start_trigger', 'Start');
    const held = gate.block('Held', 'sleepy');
    sleepy = await buildWorkflow(s, 'CLI sleepy', [start, held], [link(start, held)]);
  }
});

afterAll(async () => {
  await s?.stop();
  await gate?.stop();
});

describe('sim CLI', () => {
  it('workflows run: sync, --async, --follow', async () => {
    const sync = await cli('workflows', 'run', double.id, '--input', '{"n": 4}', '--select-output', 'double.result');
    expect(sync.code, sync.stderr).toBe(0);
    expect(sync.json).toMatchObject({ workflowId: double.id, status: 'completed', output: { v: 8 }, blockOutputs: { 'double.result': 8 } });

    const queued = await cli('workflows', 'run', double.id, '--async', '--input', '{"n": 1}', '--execution-timeout-seconds', '60');
    expect(queued.code, queued.stderr).toBe(0);
    expect(queued.json.statusUrl).toBe(`${s.services.config.baseUrl}/api/v2/workflows/${double.id}/runs/${queued.json.runId}`);

    const follow = await cli('workflows', 'run', double.id, '--follow', '--input', '{"n": 5}');
    expect(follow.code, follow.stderr).toBe(0);
    expect(follow.json).toMatchObject({ success: true, output: { v: 10 } });

    const bad = await cli('workflows', 'run', double.id, '--execution-timeout-seconds', '60');
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toMatch(/async/);
  });

  it('workflows runs list, get, resume and cancel', async () => {
    const paused = await cli('workflows', 'run', approval.id);
    expect(paused.json.status).toBe('paused');
    const runId = paused.json.runId;
    const list = await cli('workflows', 'runs', 'list', '--workflow', approval.id);
    expect(list.code, list.stderr).toBe(0);
    expect(JSON.stringify(list.json)).toContain(runId);
    const got = await cli('workflows', 'runs', 'get', runId, '--workflow', approval.id);
    expect(got.code, got.stderr).toBe(0);
    expect(got.json).toMatchObject({ runId, status: 'paused', paused: { contextId: approval.ids.Approve } });
    const resumed = await cli('workflows', 'runs', 'resume', runId, '--workflow', approval.id, '--context', approval.ids.Approve!, '--input', '{"note": "fine"}');
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(resumed.json).toMatchObject({ runId, status: 'completed', output: { note: 'fine' } });
    const withOutput = await cli('workflows', 'runs', 'get', runId, '--workflow', approval.id, '--include-output', '--select-output', 'approve.note');
    expect(withOutput.code, withOutput.stderr).toBe(0);
    expect(withOutput.json).toMatchObject({ output: { note: 'fine' }, blockOutputs: { 'approve.note': 'fine' } });

    const long = await cli('workflows', 'run', sleepy.id, '--async');
    await waitUntil('the long run to be running', async () => (await cli('workflows', 'runs', 'get', long.json.runId, '--workflow', sleepy.id)).json.status === 'running');
    const cancel = await cli('workflows', 'runs', 'cancel', long.json.runId, '--workflow', sleepy.id);
    expect(cancel.code, cancel.stderr).toBe(0);
    expect(cancel.json).toMatchObject({ success: true, runId: long.json.runId });
    expect((await cli('workflows', 'runs', 'get', long.json.runId, '--workflow', sleepy.id)).json.status).toBe('cancelled');
  });

  it('logs list, get and stats', async () => {
    const runId = (await cli('workflows', 'run', double.id, '--input', '{"n": 2}')).json.runId;
    const list = await cli('logs', 'list', '--workflow', double.id);
    expect(list.code, list.stderr).toBe(0);
    const rows = Array.isArray(list.json) ? list.json : list.json.data;
    expect(rows.some((r: any) => r.runId === runId && r.workflow?.name === 'CLI double')).toBe(true);
    const got = await cli('logs', 'get', runId);
    expect(got.code, got.stderr).toBe(0);
    expect(got.json).toMatchObject({ runId, status: 'completed', workflow: { name: 'CLI double' }, finalOutput: { v: 4 } });
    expect(got.json.traceSpans).toHaveLength(3);
    const stats = await cli('logs', 'stats');
    expect(stats.code, stats.stderr).toBe(0);
    expect(stats.json.totalRuns).toBeGreaterThan(0);
  });
});

describe('simstudio-ts-sdk', () => {
  it('executes synchronously and asynchronously, polls the job, reads status, usage and rate limits', async () => {
    const client = new SimStudioClient({ apiKey: s.key, baseUrl: s.url });
    expect(await client.validateWorkflow(double.id)).toBe(true);
    expect(await client.getWorkflowStatus(double.id)).toMatchObject({ isDeployed: true, needsRedeployment: false });

    const result: any = await client.executeWorkflow(double.id, { n: 6 });
    expect(result).toMatchObject({ success: true, output: { v: 12 } });
    expect(result.metadata.executionId).toBeTruthy();
    const info = client.getRateLimitInfo()!;
    expect(info.limit).toBe(100);
    // The bucket refills continuously (100 a minute), so on a slow machine it may be full again by now.
    expect(info.remaining).toBeGreaterThanOrEqual(0);
    expect(info.remaining).toBeLessThanOrEqual(info.limit);
    expect(info.reset).toBeGreaterThan(Date.now() / 1000 - 1);

    const queued: any = await client.executeWorkflow(double.id, { n: 7 }, { async: true });
    expect(queued).toMatchObject({ success: true, status: 'queued', links: { status: `${s.services.config.baseUrl}/api/jobs/${queued.taskId}` } });
    expect(client.getRateLimitInfo()!.limit).toBe(200);
    const job: any = await waitUntil('the job to end', async () => ((j: any) => (j.status === 'queued' || j.status === 'processing' || j.status === 'pending' ? null : j))(await client.getJobStatus(queued.taskId)));
    expect(job).toMatchObject({ success: true, taskId: queued.taskId, status: 'completed', output: { v: 14 } });
    // The legacy job is a run like any other.
    const run = (await (await s.request(`/api/v2/workflows/${double.id}/runs/${queued.taskId}`)).json()) as any;
    expect(run.data.status).toBe('completed');

    const usage = await client.getUsageLimits();
    expect(usage).toMatchObject({ success: true, rateLimit: { sync: { limit: 100, isLimited: false }, async: { limit: 200 }, authType: 'api' }, usage: { plan: 'free', limit: 10 } });
    expect(usage.rateLimit.sync.remaining).toBeGreaterThanOrEqual(0);
    expect(usage.rateLimit.sync.remaining).toBeLessThanOrEqual(100);

    const wrapped: any = await client.executeWorkflow(double.id, 3);
    expect(wrapped.success).toBe(false);
    expect(wrapped.error).toMatch(/n/);
    // Legacy errors come in the shape the SDK reads: a readable message and a code.
    await expect(client.executeWorkflow('no-such-workflow', {})).rejects.toMatchObject({ status: 404, code: 'NOT_FOUND', message: 'Workflow not found.' });
    const outsider = new SimStudioClient({ apiKey: 'sk-owa-not-a-key-000000000000', baseUrl: s.url });
    await expect(outsider.getJobStatus(queued.taskId)).rejects.toMatchObject({ status: 401, code: 'UNAUTHORIZED', message: expect.stringMatching(/API key/) });
    const raw = await s.request('/api/jobs/x?bogus=1');
    expect(await raw.json()).toEqual({ error: expect.stringContaining('bogus'), code: 'BAD_REQUEST', details: expect.any(Array) });
  });
});
