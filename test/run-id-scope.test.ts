// Caller-chosen run ids (X-Run-Id) are scoped to the workspace: another workspace's run id behaves exactly as
// an unused one, a reuse inside the workspace is still 409 RUN_ID_CONFLICT, and everything that reads runs by
// id (run reads, cancel, logs, legacy job status, lists) finds the caller's own run.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from './support/server.ts';
import { waitUntil } from './support/wait.ts';

let s: TestServer;
let other: { userId: string; key: string };
let wfA: string;
let wfB: string;

async function deployedWorkflow(workspaceId: string, key: string): Promise<string> {
  const created = await s.call('POST', '/api/v2/workflows', { workspaceId, name: `wf ${Math.random().toString(36).slice(2, 8)}` }, key);
  expect(created.status).toBe(201);
  const id = created.body.data.id;
  expect((await s.call('POST', `/api/v2/workflows/${id}/deploy`, {}, key)).status).toBe(200);
  return id;
}

function execute(workflowId: string, key: string, runId: string, body: unknown = { input: {} }) {
  return s.request(`/api/v2/workflows/${workflowId}/execute`, {
    method: 'POST',
    key,
    body: JSON.stringify(body),
    headers: { 'content-type': 'application/json', 'x-run-id': runId },
  });
}

beforeAll(async () => {
  s = await startTestServer({ RATE_LIMIT_FREE_API: '1000000', RATE_LIMIT_FREE_SYNC: '1000000', RATE_LIMIT_FREE_ASYNC: '1000000' });
  other = await s.newUser('other@example.com');
  const wsB = await s.newWorkspace('other workspace', other.userId);
  wfA = await deployedWorkflow(s.workspaceId, s.key);
  wfB = await deployedWorkflow(wsB, other.key);
});
afterAll(() => s.stop());

describe('X-Run-Id is scoped to the workspace', () => {
  it('another workspace\'s run id is indistinguishable from an unused one', async () => {
    const a = await execute(wfA, s.key, 'shared-run-1');
    expect(a.status).toBe(200);
    expect(((await a.json()) as any).data.runId).toBe('shared-run-1');

    const taken = await execute(wfB, other.key, 'shared-run-1');
    const unused = await execute(wfB, other.key, 'never-used-1');
    expect(taken.status).toBe(200);
    expect(unused.status).toBe(200);
    const takenBody = (await taken.json()) as any;
    const unusedBody = (await unused.json()) as any;
    expect(takenBody.data).toMatchObject({ runId: 'shared-run-1', workflowId: wfB, status: 'completed' });
    expect(unusedBody.data).toMatchObject({ runId: 'never-used-1', workflowId: wfB, status: 'completed' });
    expect(Object.keys(takenBody.data).sort()).toEqual(Object.keys(unusedBody.data).sort());
  });

  it('a reuse inside the same workspace is still 409 RUN_ID_CONFLICT', async () => {
    const again = await execute(wfA, s.key, 'shared-run-1');
    expect(again.status).toBe(409);
    expect(((await again.json()) as any).error.details).toMatchObject({ code: 'RUN_ID_CONFLICT', runId: 'shared-run-1' });
    // Also across workflows of one workspace.
    const wfA2 = await deployedWorkflow(s.workspaceId, s.key);
    expect((await execute(wfA2, s.key, 'shared-run-1')).status).toBe(409);
  });

  it('each workspace reads its own run under the shared id, and never the other\'s', async () => {
    const ownA = await s.call('GET', `/api/v2/workflows/${wfA}/runs/shared-run-1`);
    expect(ownA.status).toBe(200);
    expect(ownA.body.data).toMatchObject({ runId: 'shared-run-1', workflowId: wfA });
    const ownB = await s.call('GET', `/api/v2/workflows/${wfB}/runs/shared-run-1`, undefined, other.key);
    expect(ownB.body.data).toMatchObject({ runId: 'shared-run-1', workflowId: wfB });
    expect((await s.call('GET', `/api/v2/workflows/${wfA}/runs/shared-run-1`, undefined, other.key)).status).toBe(404);

    const logA = await s.call('GET', '/api/v2/logs/shared-run-1');
    expect(logA.status).toBe(200);
    expect(logA.body.data).toMatchObject({ runId: 'shared-run-1', workflowId: wfA });
    const logB = await s.call('GET', '/api/v2/logs/shared-run-1', undefined, other.key);
    expect(logB.body.data).toMatchObject({ runId: 'shared-run-1', workflowId: wfB });

    const listA = await s.call('GET', `/api/v2/logs?workspaceId=${s.workspaceId}&runId=shared-run-1`);
    expect(listA.body.data.map((l: any) => l.workflowId)).toEqual([wfA]);

    const runs = await s.call('GET', `/api/v2/workflows/${wfB}/runs`, undefined, other.key);
    expect(runs.body.data.map((r: any) => r.runId).sort()).toEqual(['never-used-1', 'shared-run-1']);

    const cancel = await s.call('POST', `/api/v2/workflows/${wfB}/runs/shared-run-1/cancel`, undefined, other.key);
    expect(cancel.body.data).toMatchObject({ runId: 'shared-run-1', reason: 'already_completed' });
  });

  it('async runs and legacy job status follow the caller\'s own run', async () => {
    for (const [wf, key] of [
      [wfA, s.key],
      [wfB, other.key],
    ] as const) {
      const queued = await execute(wf, key, 'async-shared', { input: {}, async: true });
      expect(queued.status).toBe(202);
      const body = (await queued.json()) as any;
      expect(body.data.runId).toBe('async-shared');
      expect(body.data.statusUrl).toBe(`${s.services.config.baseUrl}/api/v2/workflows/${wf}/runs/async-shared`);
    }
    for (const [wf, key] of [
      [wfA, s.key],
      [wfB, other.key],
    ] as const) {
      const job = await waitUntil('the shared job to complete', async () => ((j) => (j.status === 'completed' ? j : null))((await s.call('GET', '/api/jobs/async-shared', undefined, key)).body));
      expect(job).toMatchObject({ taskId: 'async-shared', status: 'completed', metadata: { workflowId: wf } });
      const polled = await s.call('GET', `/api/v2/workflows/${wf}/runs/async-shared`, undefined, key);
      expect(polled.body.data).toMatchObject({ runId: 'async-shared', status: 'completed' });
    }
    // A third party sees neither.
    const stranger = await s.newUser('stranger@example.com');
    expect((await s.call('GET', '/api/jobs/async-shared', undefined, stranger.key)).status).toBe(404);
    expect((await s.call('GET', '/api/v2/logs/async-shared', undefined, stranger.key)).status).toBe(404);
  });

  it('a streamed run names its caller-chosen id', async () => {
    const res = await execute(wfB, other.key, 'stream-shared', { input: {}, stream: true });
    expect(res.status).toBe(200);
    expect(res.headers.get('x-run-id')).toBe('stream-shared');
    const text = await res.text();
    expect(text).toContain('"runId":"stream-shared"');
  });
});
