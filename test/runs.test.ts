// Workflow runs over HTTP: execute (sync, async, streamed), the run resource, cancel, resume, the state rules,
// audit events, run counters and usage, and the execution logs.
import { DatabaseSync } from 'node:sqlite';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer, callWithHeaders } from './support/server.ts';
import { apiBlock, buildWorkflow, link, type BuiltWorkflow } from './support/api-workflow.ts';
import { waitUntil } from './support/wait.ts';

const FAST_LIMITS = { RATE_LIMIT_FREE_SYNC: '50000', RATE_LIMIT_FREE_ASYNC: '60000', RATE_LIMIT_FREE_API: '100000' };

let s: TestServer;
let db: DatabaseSync;
let double: BuiltWorkflow;
let failing: BuiltWorkflow;
let approval: BuiltWorkflow;
let looping: BuiltWorkflow;

function call(method: string, pathname: string, body?: unknown, headers: Record<string, string> = {}, key?: string) {
  return callWithHeaders(s, method, pathname, body, headers, key);
}

const execute = (id: string, body: unknown = {}, headers: Record<string, string> = {}, key?: string) => call('POST', `/api/v2/workflows/${id}/execute`, body, headers, key);
const getRun = (wf: string, run: string, query = '') => call('GET', `/api/v2/workflows/${wf}/runs/${run}${query}`);

async function waitForStatus(wf: string, run: string, statuses: string[]) {
  return waitUntil(`run ${run} to be ${statuses.join(' or ')}`, async () => ((data) => (statuses.includes(data.status) ? data : null))((await getRun(wf, run, '?includeOutput=true')).body.data));
}

const audits = (resourceId: string) =>
  (db.prepare('SELECT action FROM audit_events WHERE resource_id = ? ORDER BY created_at').all(resourceId) as { action: string }[]).map((r) => r.action);
const auditCount = () => (db.prepare('SELECT COUNT(*) AS n FROM audit_events').get() as { n: number }).n;

beforeAll(async () => {
  s = await startTestServer(FAST_LIMITS);
  db = new DatabaseSync(path.join(s.dataDir, 'workspace.sqlite'));
  {
    const start = apiBlock('start_trigger', 'Start', { inputFormat: [{ name: 'n', type: 'number' }] });
    const fn = apiBlock('function', 'Double', { code: 'return <start.n> * 2' });
    const out = apiBlock('response', 'Out', { data: '{"v": <double.result>}' });
    double = await buildWorkflow(s, 'Double it', [start, fn, out], [link(start, fn), link(fn, out)]);
  }
  {
    const start = apiBlock('start_trigger', 'Start');
    const boom = apiBlock('function', 'Boom', { code: 'throw new Error("boom")' });
    failing = await buildWorkflow(s, 'Always fails', [start, boom], [link(start, boom)]);
  }
  {
    const start = apiBlock('start_trigger', 'Start', { inputFormat: [{ name: 'who', type: 'string' }] });
    const ask = apiBlock('human_in_the_loop', 'Approve', { message: 'Check <start.who>', inputFormat: [{ name: 'note', type: 'string', required: true }] });
    const out = apiBlock('response', 'Reply', { data: '{"note": <approve.note>, "ok": <approve.approved>}' });
    approval = await buildWorkflow(s, 'Needs approval', [start, ask, out], [link(start, ask), link(ask, out)]);
  }
  {
    const start = apiBlock('start_trigger', 'Start');
    const loop = apiBlock('loop', 'Repeat', {}, { data: { loopType: 'for', count: 3 } });
    const body = apiBlock('function', 'Step', { code: 'return <loop.index> * 10' }, { data: { parentId: loop.id, extent: 'parent' } });
    const after = apiBlock('response', 'Done', { data: '{"last": <step.result>}' });
    looping = await buildWorkflow(s, 'Loops', [start, loop, body, after], [link(start, loop), link(loop, body, 'loop-start-source'), link(loop, after, 'loop-end-source')]);
  }
});

afterAll(async () => {
  db?.close();
  await s?.stop();
});

describe('execute', () => {
  it('runs synchronously by default, counts the run, records usage, one audit event and a log', async () => {
    const before = (await call('GET', `/api/v2/workflows/${double.id}`)).body.data;
    const r = await execute(double.id, { input: { n: 21 } });
    expect(r.status, r.text).toBe(200);
    expect(r.headers.get('x-ratelimit-limit')).toBe('50000');
    const data = r.body.data;
    expect(data).toMatchObject({ workflowId: double.id, status: 'completed', output: { v: 42 }, blockOutputs: null, error: null });
    expect(data.durationMs).toBeGreaterThanOrEqual(0);
    expect(Date.parse(data.endedAt)).toBeGreaterThanOrEqual(Date.parse(data.startedAt));
    const after = (await call('GET', `/api/v2/workflows/${double.id}`)).body.data;
    expect(after.runCount).toBe(before.runCount + 1);
    expect(after.lastRunAt).not.toBeNull();
    expect(audits(data.runId)).toEqual(['workflow_run.started']);
    const usage = db.prepare('SELECT * FROM usage_records WHERE run_id = ?').all(data.runId) as any[];
    expect(usage).toHaveLength(1);
    expect(usage[0]).toMatchObject({ workspace_id: s.workspaceId, category: 'workflow_run', block_executions: 3 });
    const log = (await call('GET', `/api/v2/logs/${data.runId}`)).body.data;
    expect(log).toMatchObject({ runId: data.runId, status: 'completed', level: 'info', trigger: 'api', workflowInput: { n: 21 }, finalOutput: { v: 42 } });
    expect(log.traceSpans.map((t: any) => t.name)).toEqual(['Start', 'Double', 'Out']);
    expect(log.traceSpans[1]).toMatchObject({ type: 'function', status: 'success', output: { result: 42 } });
  });

  it('a failed run answers 200 with the failing block named', async () => {
    const r = await execute(failing.id);
    expect(r.status).toBe(200);
    expect(r.body.data).toMatchObject({ status: 'failed', error: { code: 'BLOCK_EXECUTION_FAILED', blockId: failing.ids.Boom, blockName: 'Boom', blockType: 'function' } });
    expect(r.body.data.error.message).toContain('boom');
  });

  it('async returns runId and a statusUrl under BASE_URL at once, then the queue runs it', async () => {
    const r = await execute(double.id, { input: { n: 5 }, async: true });
    expect(r.status, r.text).toBe(202);
    const { runId, statusUrl } = r.body.data;
    expect(statusUrl).toBe(`${s.services.config.baseUrl}/api/v2/workflows/${double.id}/runs/${runId}`);
    expect(audits(runId)).toEqual(['workflow_run.started']);
    const done = await waitForStatus(double.id, runId, ['completed', 'failed']);
    expect(done).toMatchObject({ status: 'completed', output: { v: 10 }, trigger: 'api', cost: { total: 0 } });
    const polled = await fetch(statusUrl, { headers: { 'X-API-Key': s.key } });
    expect(((await polled.json()) as any).data.status).toBe('completed');
  });

  it('streams SSE frames as the CLI follows them, and NDJSON otherwise', async () => {
    const sse = await s.request(`/api/v2/workflows/${double.id}/execute`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'text/event-stream' },
      body: JSON.stringify({ input: { n: 1 }, stream: true }),
    });
    expect(sse.headers.get('content-type')).toContain('text/event-stream');
    const frames = (await sse.text()).split('\n\n').filter(Boolean).map((f) => JSON.parse(f.replace(/^data: /, '')));
    expect(frames.map((f) => f.event ?? f)).toEqual(['run_started', 'block_started', 'block_completed', 'block_started', 'block_completed', 'block_started', 'block_completed', 'final', '[DONE]']);
    expect(frames.at(-2).data).toMatchObject({ success: true, status: 'completed', output: { v: 2 } });

    const nd = await s.request(`/api/v2/workflows/${failing.id}/execute`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ stream: true }) });
    expect(nd.headers.get('content-type')).toContain('application/x-ndjson');
    const events = (await nd.text()).trim().split('\n').map((l) => JSON.parse(l));
    expect(events.map((e) => e.type)).toEqual(['run_started', 'block_started', 'block_completed', 'block_started', 'block_failed', 'final']);
    expect(events.at(-1).data).toMatchObject({ success: false, status: 'failed', error: { code: 'BLOCK_EXECUTION_FAILED' } });
  });

  it('needs a deployed, reachable, active workflow', async () => {
    const start = apiBlock('start_trigger', 'Start');
    const draft = await buildWorkflow(s, 'Draft only', [start], [], { deploy: false });
    const r = await execute(draft.id);
    expect(r.status).toBe(400);
    expect(r.body.error.message).toMatch(/not deployed/);
    // The draft runs manually.
    expect((await execute(draft.id, { run: { source: 'manual' } })).body.data.status).toBe('completed');
    expect((await execute('no-such-workflow')).status).toBe(404);
    const stranger = await s.newUser('stranger-runs@example.com');
    expect((await execute(double.id, {}, {}, stranger.key)).status).toBe(404);
    const reader = await s.newUser('reader-runs@example.com', { [s.workspaceId]: 'read' });
    const denied = await execute(double.id, {}, {}, reader.key);
    expect(denied.status).toBe(403);
    expect(denied.body.error.details.code).toBe('INSUFFICIENT_WORKSPACE_ROLE');
  });

  it('X-Run-Id names the run; a reused id is 409', async () => {
    const id = `my-run-${Date.now()}`;
    const first = await execute(double.id, { input: { n: 1 } }, { 'x-run-id': id });
    expect(first.body.data.runId).toBe(id);
    const before = auditCount();
    const again = await execute(double.id, { input: { n: 1 } }, { 'x-run-id': id });
    expect(again.status).toBe(409);
    expect(again.body.error.details.code).toBe('RUN_ID_CONFLICT');
    expect(auditCount()).toBe(before);
    expect((await execute(double.id, {}, { 'x-run-id': 'bad id with spaces' })).status).toBe(400);
  });

  it('rejects bad option combinations and undeclared fields before running anything', async () => {
    const before = auditCount();
    const bad = async (body: unknown) => {
      const r = await execute(double.id, body);
      expect(r.status, JSON.stringify(body)).toBe(400);
      return r.body.error;
    };
    expect((await bad({ executionTimeoutSeconds: 10 })).message).toMatch(/async/);
    await bad({ async: true, executionTimeoutSeconds: 0 });
    await bad({ async: true, executionTimeoutSeconds: 604801 });
    await bad({ async: true, stream: true });
    await bad({ async: true, selectedOutputs: ['double'] });
    await bad({ includeThinking: true });
    await bad({ run: { source: 'manual' }, async: true });
    await bad({ selectedOutputs: ['ghost.result'] });
    await bad({ surprise: 1 });
    expect(auditCount()).toBe(before);
  });

  it('selectedOutputs picks block outputs by name or id, keyed as sent', async () => {
    const r = await execute(double.id, { input: { n: 4 }, selectedOutputs: ['double.result', `${double.ids.Out}.data.v`, 'start.missing'] });
    expect(r.body.data.blockOutputs).toEqual({ 'double.result': 8, [`${double.ids.Out}.data.v`]: 8 });
  });

  it('draws sync executions from the sync bucket and async ones from the async bucket', async () => {
    expect((await execute(double.id, { input: { n: 1 } })).headers.get('x-ratelimit-limit')).toBe('50000');
    expect((await execute(double.id, { input: { n: 1 }, async: true })).headers.get('x-ratelimit-limit')).toBe('60000');
    expect((await call('GET', `/api/v2/workflows/${double.id}/runs`)).headers.get('x-ratelimit-limit')).toBe('100000');
  });
});

describe('runs', () => {
  it('lists runs newest first with status filter and cursor pages', async () => {
    const wf = await buildWorkflow(s, 'Listed', [apiBlock('start_trigger', 'Start')], []);
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) ids.push((await execute(wf.id)).body.data.runId);
    const page1 = await call('GET', `/api/v2/workflows/${wf.id}/runs?limit=2`);
    expect(page1.body.data.map((r: any) => r.runId)).toEqual([ids[2], ids[1]]);
    expect(page1.body.data[0]).toMatchObject({ workflowId: wf.id, status: 'completed', trigger: 'api', cost: { total: 0 } });
    const page2 = await call('GET', `/api/v2/workflows/${wf.id}/runs?limit=2&cursor=${encodeURIComponent(page1.body.nextCursor)}`);
    expect(page2.body).toMatchObject({ data: [{ runId: ids[0] }], nextCursor: null });
    const asc = await call('GET', `/api/v2/workflows/${wf.id}/runs?order=asc`);
    expect(asc.body.data.map((r: any) => r.runId)).toEqual(ids);
    expect((await call('GET', `/api/v2/workflows/${wf.id}/runs?status=failed`)).body.data).toEqual([]);
    expect((await call('GET', `/api/v2/workflows/${wf.id}/runs?limit=2&order=asc&cursor=${encodeURIComponent(page1.body.nextCursor)}`)).status).toBe(400);
    expect((await call('GET', `/api/v2/workflows/${wf.id}/runs?sortBy=startedAt`)).status).toBe(400);
  });

  it('gets a run with includeOutput and id selectors; unknown blocks are refused; other workflows 404', async () => {
    const runId = (await execute(double.id, { input: { n: 3 } })).body.data.runId;
    const plain = await getRun(double.id, runId);
    expect(plain.body.data).toMatchObject({ runId, status: 'completed', output: null, blockOutputs: null, paused: null, files: null });
    const before = auditCount();
    const full = await getRun(double.id, runId, `?includeOutput=true&selectedOutputs=${double.ids.Double}.result,${double.ids.Out}`);
    expect(full.status, full.text).toBe(200);
    expect(full.body.data.output).toEqual({ v: 6 });
    expect(full.body.data.blockOutputs).toEqual({ [`${double.ids.Double}.result`]: 6, [double.ids.Out!]: { data: { v: 6 }, status: 200, headers: {} } });
    expect(auditCount()).toBe(before);
    const ghost = await getRun(double.id, runId, '?selectedOutputs=ghost.result');
    expect(ghost.status).toBe(400);
    expect(ghost.body.error.message).toContain('ghost.result');
    expect((await getRun(failing.id, runId)).status).toBe(404);
    expect((await getRun(double.id, 'nope')).status).toBe(404);
  });

  it('selectedOutputs on a run read takes block names as execute does, and ids, keyed as sent', async () => {
    const runId = (await execute(double.id, { input: { n: 5 } })).body.data.runId;
    const selectors = ['double.result', `${double.ids.Out}.data.v`, 'Out.status', 'start.missing'];
    const byName = await getRun(double.id, runId, `?selectedOutputs=${encodeURIComponent(selectors.join(','))}`);
    expect(byName.status, byName.text).toBe(200);
    expect(byName.body.data.blockOutputs).toEqual({ 'double.result': 10, [`${double.ids.Out}.data.v`]: 10, 'Out.status': 200 });
    // The same selectors give the same values on execute and on the recorded run.
    const executed = await execute(double.id, { input: { n: 5 }, selectedOutputs: selectors });
    expect(executed.body.data.blockOutputs).toEqual(byName.body.data.blockOutputs);
  });

  it('pauses at a human step, shows the pause context, resumes with checked input, and records one audit each', async () => {
    const paused = await execute(approval.id, { input: { who: 'Ada' } });
    expect(paused.body.data).toMatchObject({ status: 'paused' });
    const runId = paused.body.data.runId;
    const run = (await getRun(approval.id, runId)).body.data;
    expect(run.paused).toMatchObject({ contextId: approval.ids.Approve, pauseKind: 'human', blockedOnBlockId: approval.ids.Approve, pausePointCount: 1, resumedCount: 0 });
    expect(JSON.stringify(run)).not.toContain('checkpoint');
    const resume = (body: unknown) => call('POST', `/api/v2/workflows/${approval.id}/runs/${runId}/resume`, body);
    expect((await resume({ contextId: 'elsewhere', input: { note: 'x' } })).status).toBe(400);
    expect((await resume({ contextId: approval.ids.Approve, input: {} })).status).toBe(400);
    expect((await getRun(approval.id, runId)).body.data.status).toBe('paused');
    const done = await resume({ contextId: approval.ids.Approve, input: { note: 'looks good' } });
    expect(done.status, done.text).toBe(200);
    expect(done.body.data).toMatchObject({ runId, status: 'completed', output: { note: 'looks good', ok: true } });
    expect((await resume({ contextId: approval.ids.Approve, input: { note: 'again' } })).status).toBe(409);
    expect(audits(runId)).toEqual(['workflow_run.started', 'workflow_run.resumed']);
    const log = (await call('GET', `/api/v2/logs/${runId}`)).body.data;
    expect(log.status).toBe('completed');
  });

  it('an async paused run is queued again on resume (202) and finishes', async () => {
    const runId = (await execute(approval.id, { input: { who: 'Bo' }, async: true })).body.data.runId;
    await waitForStatus(approval.id, runId, ['paused']);
    const r = await call('POST', `/api/v2/workflows/${approval.id}/runs/${runId}/resume`, { contextId: approval.ids.Approve, input: { note: 'ok' } });
    expect(r.status).toBe(202);
    expect(r.body.data.runId).toBe(runId);
    expect(await waitForStatus(approval.id, runId, ['completed'])).toMatchObject({ output: { note: 'ok', ok: true } });
  });

  it('cancels a paused run; a finished run stays as it is (terminal states never change)', async () => {
    const runId = (await execute(approval.id, { input: { who: 'Cy' } })).body.data.runId;
    const cancel = () => call('POST', `/api/v2/workflows/${approval.id}/runs/${runId}/cancel`);
    const first = await cancel();
    expect(first.body.data).toMatchObject({ success: true, runId, pausedCancelled: true, durablyRecorded: true, reason: 'recorded' });
    expect((await getRun(approval.id, runId)).body.data).toMatchObject({ status: 'cancelled', error: { code: 'CANCELLED' } });
    const second = await cancel();
    expect(second.body.data).toMatchObject({ success: false, reason: 'already_cancelled' });
    expect((await call('POST', `/api/v2/workflows/${approval.id}/runs/${runId}/resume`, { contextId: approval.ids.Approve, input: { note: 'late' } })).status).toBe(409);
    expect(audits(runId)).toEqual(['workflow_run.started', 'workflow_run.cancelled']);

    const done = (await execute(double.id, { input: { n: 1 } })).body.data.runId;
    const noop = await call('POST', `/api/v2/workflows/${double.id}/runs/${done}/cancel`);
    expect(noop.body.data).toMatchObject({ success: false, reason: 'already_completed' });
    expect(audits(done)).toEqual(['workflow_run.started']);
    // The store refuses every move out of a terminal state, whoever asks.
    const at = new Date().toISOString();
    const moves = await s.services.store.transaction(async (tx) => [
      await tx.workflowRuns.transition(done, 'running', 'failed', at),
      await tx.workflowRuns.transition(done, 'paused', 'running', at),
      await tx.workflowRuns.stop(done, 'running', 'failed', '{}', at),
      await tx.workflowRuns.stop(done, 'queued', 'cancelled', '{}', at),
      await tx.workflowRuns.finish(done, { status: 'failed', output: null, blockOutputs: null, error: null, checkpoint: null, pause: null, resumedCount: 0, costTotal: 0, blockExecutions: 0, endedAt: at, durationMs: 0 }, { owner: 'any-process', attempt: 1 }),
    ]);
    expect(moves).toEqual([false, false, false, false, false]);
    expect((await getRun(double.id, done)).body.data.status).toBe('completed');
  });
});

describe('logs', () => {
  it('lists logs with filters and cursor, loop iterations as child spans, and stats', async () => {
    const loopRun = (await execute(looping.id)).body.data;
    expect(loopRun.output).toEqual({ last: 20 });
    const log = (await call('GET', `/api/v2/logs/${loopRun.runId}`)).body.data;
    const loopSpan = log.traceSpans.find((t: any) => t.name === 'Repeat');
    expect(loopSpan.children.map((c: any) => c.type)).toEqual(['loop-iteration', 'loop-iteration', 'loop-iteration']);
    expect(loopSpan.children[2].children[0]).toMatchObject({ name: 'Step', output: { result: 20 } });
    expect(log.workflow).toMatchObject({ id: looping.id, name: 'Loops', workspaceId: s.workspaceId, deleted: false, folderPath: '/' });
    expect(log.executedByEmail).toBeTruthy();

    await execute(failing.id);
    const q = (query: string) => call('GET', `/api/v2/logs?workspaceId=${s.workspaceId}&${query}`);
    const errors = (await q('level=error&details=full')).body.data;
    expect(errors.length).toBeGreaterThan(0);
    expect(errors.every((l: any) => l.level === 'error' && l.status === 'failed' && l.workflow.name === 'Always fails')).toBe(true);
    const mine = (await q(`workflowIds=${looping.id}&includeTraceSpans=true&includeFinalOutput=true`)).body.data;
    expect(mine).toHaveLength(1);
    expect(mine[0]).toMatchObject({ kind: 'workflow', runId: loopRun.runId, finalOutput: { last: 20 }, workflow: { name: 'Loops' } });
    expect(mine[0].traceSpans.length).toBe(log.traceSpans.length);
    expect((await q('search=always')).body.data.every((l: any) => l.workflowId === failing.id)).toBe(true);
    expect((await q('triggers=manual')).body.data.every((l: any) => l.trigger === 'manual')).toBe(true);
    const byStatus = await q('status=paused,cancelled');
    expect(byStatus.status, byStatus.text).toBe(200);
    expect(byStatus.body.data.every((l: any) => ['paused', 'cancelled'].includes(l.status))).toBe(true);
    expect((await q(`startDate=${encodeURIComponent('2000-01-01T00:00:00Z')}&endDate=${encodeURIComponent('2000-01-02T00:00:00Z')}`)).body.data).toEqual([]);
    const p1 = await q('limit=2');
    expect(p1.body.data).toHaveLength(2);
    const p2 = await q(`limit=2&cursor=${encodeURIComponent(p1.body.nextCursor)}`);
    expect(p2.body.data[0].runId).not.toBe(p1.body.data[1].runId);
    expect(Date.parse(p2.body.data[0].startedAt)).toBeLessThanOrEqual(Date.parse(p1.body.data[1].startedAt));
    expect((await q('status=,failed')).status).toBe(400);
    expect((await q('startDate=2026-01-01')).status).toBe(400);
    expect((await call('GET', `/api/v2/logs?workspaceId=${s.workspaceId}&bogus=1`)).status).toBe(400);

    const stats = (await call('GET', `/api/v2/logs/stats?workspaceId=${s.workspaceId}`)).body.data;
    const total = (db.prepare('SELECT COUNT(*) AS n FROM execution_logs').get() as { n: number }).n;
    const failed = (db.prepare("SELECT COUNT(*) AS n FROM execution_logs WHERE level = 'error'").get() as { n: number }).n;
    expect(stats.totalRuns).toBe(total);
    expect(stats.totalErrors).toBe(failed);
    expect(stats.segmentMs).toBe(20 * 60 * 1000);
    expect(stats.aggregateSegments.reduce((n: number, seg: any) => n + seg.totalExecutions, 0)).toBe(total);
    expect(stats.workflows.find((w: any) => w.workflowId === looping.id)).toMatchObject({ workflowName: 'Loops', totalExecutions: 1, totalSuccessful: 1, overallSuccessRate: 100 });
    const empty = (await call('GET', `/api/v2/logs/stats?workspaceId=${s.workspaceId}&segmentCount=5&includeEmpty=true`)).body.data;
    expect(empty.aggregateSegments).toHaveLength(5);
  });

  it('hides logs of workspaces the caller cannot reach', async () => {
    const runId = (await execute(double.id, { input: { n: 1 } })).body.data.runId;
    const stranger = await s.newUser('stranger-logs@example.com');
    expect((await call('GET', `/api/v2/logs/${runId}`, undefined, {}, stranger.key)).status).toBe(404);
    expect((await call('GET', `/api/v2/logs?workspaceId=${s.workspaceId}`, undefined, {}, stranger.key)).status).toBe(404);
  });
});
