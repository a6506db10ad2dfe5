// Idempotency-Key across real server processes (`npm start`): keys and their answers survive a restart, and a
// process killed (SIGKILL) after the request's change committed but before its answer was stored never makes a
// second run: the retry after the restart is answered from the run. The kill comes from the test-only fault hook
// IDEMPOTENCY_TEST_CRASH_BEFORE_STORE=<operationId> (honoured only with NODE_ENV=test).
import { afterAll, describe, expect, it } from 'vitest';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { PATIENCE_MS } from './support/wait.ts';
import { exited, spawnServer, type SpawnedServer } from './support/children.ts';

const KEY = 'sk-owa-idempotency-test-key-0123456789';
const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) fs.rmSync(d, { recursive: true, force: true });
});

type Proc = SpawnedServer;

function startServer(dataDir: string, extra: Record<string, string> = {}): Promise<Proc> {
  return spawnServer({ PATH: process.env.PATH ?? '', DATA_DIR: dataDir, PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'info', NODE_ENV: 'test', BOOTSTRAP_API_KEY: KEY, ...extra });
}

async function stop(p: Proc): Promise<void> {
  const done = exited(p.child);
  p.child.kill('SIGTERM');
  await done;
}

async function api(p: Proc, method: string, pathname: string, body?: unknown, headers: Record<string, string> = {}) {
  const r = await fetch(p.url + pathname, {
    method,
    headers: { 'X-API-Key': KEY, 'content-type': 'application/json', ...headers },
    body: body === undefined ? undefined : JSON.stringify(body),
    signal: AbortSignal.timeout(PATIENCE_MS),
  });
  const text = await r.text();
  return { status: r.status, headers: r.headers, body: text ? JSON.parse(text) : undefined };
}

const startId = 'c0000000-0000-4000-8000-000000000001';
const outId = 'c0000000-0000-4000-8000-000000000002';
const block = (id: string, type: string, name: string, subBlocks: Record<string, unknown>, y: number) => ({
  id,
  type,
  name,
  position: { x: 0, y },
  enabled: true,
  subBlocks: Object.fromEntries(Object.entries(subBlocks).map(([k, value]) => [k, { id: k, type: 'short-input', value }])),
  outputs: {},
  data: {},
});

async function echoWorkflow(p: Proc): Promise<{ workspaceId: string; workflowId: string }> {
  const workspaceId = (await api(p, 'GET', '/api/v2/workspaces')).body.data[0].id;
  const wf = (await api(p, 'POST', '/api/v2/workflows', { workspaceId, name: 'Echo' })).body.data;
  const state = {
    blocks: {
      [startId]: block(startId, 'start_trigger', 'Start', { inputFormat: [{ name: 'n', type: 'number' }] }, 0),
      [outId]: block(outId, 'response', 'Out', { data: '{"v": <start.n>}' }, 100),
    },
    edges: [{ id: 'c0000000-0000-4000-8000-000000000003', source: startId, target: outId, sourceHandle: 'source', targetHandle: 'target' }],
  };
  expect((await api(p, 'PUT', `/api/v2/workflows/${wf.id}/state`, state)).status).toBe(200);
  expect((await api(p, 'POST', `/api/v2/workflows/${wf.id}/deploy`, {})).status).toBe(200);
  return { workspaceId, workflowId: wf.id };
}

/** Sends a request the server is expected to die on (the fault hook): the connection drops, the process exits. */
async function crashOn(p: Proc, method: string, pathname: string, body: unknown, headers: Record<string, string>): Promise<void> {
  const died = exited(p.child);
  const e = await api(p, method, pathname, body, headers).then((r) => r, (err) => err);
  expect(e).toBeInstanceOf(Error);
  expect(await died).toBe('SIGKILL');
}

describe('Idempotency-Key across restarts and crashes', () => {
  it('a crash between processing and storing the answer never makes a second run; keys survive restarts', async () => {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'owa-idem-'));
    dirs.push(dataDir);
    const crashOnExecute = { IDEMPOTENCY_TEST_CRASH_BEFORE_STORE: 'executeWorkflow' };

    // 1. An async execute: the run is accepted (and linked to the key), then the process dies before the 202 is stored.
    let p = await startServer(dataDir, crashOnExecute);
    const { workspaceId, workflowId } = await echoWorkflow(p);
    const execute = `/api/v2/workflows/${workflowId}/execute`;
    await crashOn(p, 'POST', execute, { async: true, input: { n: 7 } }, { 'Idempotency-Key': 'async-1' });

    p = await startServer(dataDir, crashOnExecute);
    try {
      const runsAfterCrash = (await api(p, 'GET', `/api/v2/workflows/${workflowId}/runs`)).body.data;
      expect(runsAfterCrash).toHaveLength(1);
      const retry = await api(p, 'POST', execute, { async: true, input: { n: 7 } }, { 'Idempotency-Key': 'async-1' });
      expect(retry.status).toBe(202);
      expect(retry.headers.get('idempotent-replayed')).toBe('true');
      expect(retry.body.data.runId).toBe(runsAfterCrash[0].runId);
      expect(retry.body.data.statusUrl).toContain(`/runs/${runsAfterCrash[0].runId}`);
      expect((await api(p, 'GET', `/api/v2/workflows/${workflowId}/runs`)).body.data).toHaveLength(1);

      // 2. A synchronous execute: the run finished, the process died before storing its result.
      await crashOn(p, 'POST', execute, { input: { n: 8 } }, { 'Idempotency-Key': 'sync-1' });
    } finally {
      if (p.child.exitCode === null && p.child.signalCode === null) await stop(p);
    }

    p = await startServer(dataDir);
    try {
      const runs = (await api(p, 'GET', `/api/v2/workflows/${workflowId}/runs`)).body.data;
      expect(runs).toHaveLength(2);
      const retry = await api(p, 'POST', execute, { input: { n: 8 } }, { 'Idempotency-Key': 'sync-1' });
      expect(retry.status).toBe(200);
      expect(retry.headers.get('idempotent-replayed')).toBe('true');
      expect(retry.body.data.status).toBe('completed');
      expect(retry.body.data.output).toEqual({ v: 8 });
      expect(runs.map((r: any) => r.runId)).toContain(retry.body.data.runId);
      // Still no new run, whichever retry comes.
      const again = await api(p, 'POST', execute, { input: { n: 8 } }, { 'Idempotency-Key': 'sync-1' });
      expect(again.body).toEqual(retry.body);
      expect((await api(p, 'GET', `/api/v2/workflows/${workflowId}/runs`)).body.data).toHaveLength(2);

      // 3. Stored answers survive an orderly restart too: an execute and a create.
      const first = await api(p, 'POST', execute, { input: { n: 9 } }, { 'Idempotency-Key': 'sync-2' });
      expect(first.status).toBe(200);
      const created = await api(p, 'POST', '/api/v2/workflows', { workspaceId, name: 'Kept' }, { 'Idempotency-Key': 'create-1' });
      expect(created.status).toBe(201);
      await stop(p);
      p = await startServer(dataDir, { IDEMPOTENCY_TEST_CRASH_BEFORE_STORE: 'createWorkflow' });
      const replayed = await api(p, 'POST', execute, { input: { n: 9 } }, { 'Idempotency-Key': 'sync-2' });
      expect(replayed.headers.get('idempotent-replayed')).toBe('true');
      expect(replayed.body).toEqual(first.body);
      const createdAgain = await api(p, 'POST', '/api/v2/workflows', { workspaceId, name: 'Kept' }, { 'Idempotency-Key': 'create-1' });
      expect(createdAgain.status).toBe(201);
      expect(createdAgain.body.data.id).toBe(created.body.data.id);
      expect((await api(p, 'GET', `/api/v2/workflows/${workflowId}/runs`)).body.data).toHaveLength(3);

      // 4. A create whose answer was lost in a crash: created once, and the retry says so instead of creating again.
      await crashOn(p, 'POST', '/api/v2/workflows', { workspaceId, name: 'Lost answer' }, { 'Idempotency-Key': 'create-2' });
    } finally {
      if (p.child.exitCode === null && p.child.signalCode === null) await stop(p);
    }

    p = await startServer(dataDir);
    try {
      const retry = await api(p, 'POST', '/api/v2/workflows', { workspaceId, name: 'Lost answer' }, { 'Idempotency-Key': 'create-2' });
      expect(retry.status).toBe(409);
      expect(retry.body.error.details.code).toBe('IDEMPOTENCY_OUTCOME_UNKNOWN');
      const list = (await api(p, 'GET', `/api/v2/workflows?workspaceId=${workspaceId}`)).body.data;
      expect(list.filter((w: any) => w.name === 'Lost answer')).toHaveLength(1);
    } finally {
      await stop(p);
    }
  });
});
