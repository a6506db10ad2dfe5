// Durability and capacity of runs: time limits (sync limit, plan cap on async runs), the usage limit, the
// single-worker queue with cancellation, what happens to runs a crashed process left (leases, attempts), and
// graceful shutdown.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../src/config.ts';
import { createServices, startServer, type RunningServer } from '../src/server.ts';
import { createLogger } from '../src/http/logging.ts';
import { bootstrapIfEmpty } from '../src/identity/admin.ts';
import { openSqliteStore } from '../src/store/index.ts';
import { personalAccountId } from '../src/store/billing-accounts.ts';
import { startTestServer, type TestServer } from './support/server.ts';
import { apiBlock, buildWorkflow, link } from './support/api-workflow.ts';
import { GateServer } from './support/gate-server.ts';
import { waitUntil } from './support/wait.ts';

const LIMITS = { RATE_LIMIT_FREE_SYNC: '50000', RATE_LIMIT_FREE_ASYNC: '50000', RATE_LIMIT_FREE_API: '100000', RATE_LIMIT_PRO_SYNC: '50000' };

async function post(base: { request: TestServer['request'] }, pathname: string, body?: unknown, key?: string) {
  const r = await base.request(pathname, body === undefined ? { method: 'POST', key } : { method: 'POST', key, headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  return { status: r.status, body: (await r.json()) as any };
}

async function runStatus(base: { request: TestServer['request'] }, wf: string, run: string): Promise<any> {
  return ((await (await base.request(`/api/v2/workflows/${wf}/runs/${run}?includeOutput=true`)).json()) as any).data;
}

async function waitFor(base: { request: TestServer['request'] }, wf: string, run: string, statuses: string[]): Promise<any> {
  return waitUntil(`run ${run} to be ${statuses.join(' or ')}`, async () => ((data) => (statuses.includes(data.status) ? data : null))(await runStatus(base, wf, run)));
}

// Runs that must outlast a limit wait at a gate the test never opens while it looks (test/support/gate-server.ts):
// an answer that comes while the gate is shut cannot have waited for the run, whatever the machine's speed.
let gate: GateServer;
beforeAll(async () => {
  gate = await new GateServer().start();
});
afterAll(async () => {
  await gate?.stop();
});

describe('limits and the queue (one worker)', () => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startTestServer({ ...LIMITS, RUN_WORKERS: '1', SYNC_RUN_TIMEOUT_MS: '300', USAGE_LIMIT_USD_PRO: '0', EGRESS_ALLOW_CIDRS: '127.0.0.1/32' });
  });
  afterAll(async () => {
    await s?.stop();
  });

  it('a sync run past the server limit fails with TIMEOUT instead of hanging', async () => {
    const start = apiBlock('start_trigger', 'Start');
    const held = gate.block('Held', 'sync-limit');
    const wf = await buildWorkflow(s, 'Sleepy', [start, held], [link(start, held)]);
    const r = await post(s, `/api/v2/workflows/${wf.id}/execute`);
    expect(r.body.data).toMatchObject({ status: 'failed', error: { code: 'TIMEOUT' } });
    // The run reached the gate, and the answer came while it was still shut.
    expect(gate.arrived.get('sync-limit')).toBe(1);
  });

  it('caps executionTimeoutSeconds at the plan policy', async () => {
    // A server of its own: a 1 s plan cap would also end the runs the queue test below holds on purpose.
    const capped = await startTestServer({ ...LIMITS, ASYNC_RUN_MAX_SECONDS_FREE: '1', EGRESS_ALLOW_CIDRS: '127.0.0.1/32' });
    try {
      const start = apiBlock('start_trigger', 'Start');
      const held = gate.block('Held', 'capped');
      const wf = await buildWorkflow(capped, 'Capped', [start, held], [link(start, held)]);
      const run = (await post(capped, `/api/v2/workflows/${wf.id}/execute`, { async: true, executionTimeoutSeconds: 600 })).body.data.runId;
      // The plan allows 1 s however long the caller asked for: the run held at the gate times out.
      const ended = await waitFor(capped, wf.id, run, ['failed', 'completed']);
      expect(ended.error).toMatchObject({ code: 'TIMEOUT' });
      expect(ended.durationMs).toBeGreaterThanOrEqual(1000);
      expect(gate.arrived.get('capped')).toBe(1);
    } finally {
      await capped.stop();
    }
  });

  it('cancels queued and running runs; terminal runs stay', async () => {
    const start = apiBlock('start_trigger', 'Start');
    const held = gate.block('Held', 'queue');
    const wf = await buildWorkflow(s, 'Queue', [start, held], [link(start, held)]);
    const quick = await buildWorkflow(s, 'Quick', [apiBlock('start_trigger', 'Start')], []);
    const first = (await post(s, `/api/v2/workflows/${wf.id}/execute`, { async: true })).body.data.runId;
    await waitFor(s, wf.id, first, ['running']);
    // One worker, busy: the next run waits in the queue.
    const second = await post(s, `/api/v2/workflows/${wf.id}/execute`, { async: true });
    expect(second.body.data.queuePosition).toBe(0);
    const third = (await post(s, `/api/v2/workflows/${wf.id}/execute`, { async: true })).body.data.runId;
    expect((await runStatus(s, wf.id, third)).status).toBe('queued');
    const listed = ((await (await s.request(`/api/v2/workflows/${wf.id}/runs?status=pending`)).json()) as any).data;
    expect(listed.map((r: any) => r.runId).sort()).toEqual([second.body.data.runId, third].sort());
    const cancelled = await post(s, `/api/v2/workflows/${wf.id}/runs/${third}/cancel`);
    expect(cancelled.body.data).toMatchObject({ success: true, reason: 'queue_cancelled', durablyRecorded: true });
    // Cancelling the running first run (held at the gate) stops it there, and the worker moves on to the second.
    expect((await post(s, `/api/v2/workflows/${wf.id}/runs/${first}/cancel`)).body.data).toMatchObject({ success: true, locallyAborted: true });
    expect(await runStatus(s, wf.id, first)).toMatchObject({ status: 'cancelled', error: { code: 'CANCELLED' } });
    // Cancelling the second while it runs stops it there too.
    await waitFor(s, wf.id, second.body.data.runId, ['running']);
    const stop = await post(s, `/api/v2/workflows/${wf.id}/runs/${second.body.data.runId}/cancel`);
    expect(stop.body.data).toMatchObject({ success: true, locallyAborted: true });
    expect(await runStatus(s, wf.id, second.body.data.runId)).toMatchObject({ status: 'cancelled', error: { code: 'CANCELLED' } });
    // The cancelled queued run was never picked up: a run queued after it has been run by the one worker since.
    const later = (await post(s, `/api/v2/workflows/${quick.id}/execute`, { async: true })).body.data.runId;
    await waitFor(s, quick.id, later, ['completed']);
    expect((await runStatus(s, wf.id, third)).status).toBe('cancelled');
    const log = ((await (await s.request(`/api/v2/logs/${third}`)).json()) as any).data;
    expect(log.status).toBe('cancelled');
  });

  it('a billing account over its monthly usage limit gets USAGE_LIMIT_EXCEEDED', async () => {
    const owner = await s.newUser('pro-owner@example.com');
    const ws = await s.newWorkspace('Pro space', owner.userId);
    await s.services.store.transaction((tx) => tx.billingAccounts.setPlan(personalAccountId(owner.userId), 'pro', new Date().toISOString()));
    const start = apiBlock('start_trigger', 'Start');
    const wf = await buildWorkflow(s, 'Metered', [start], [], { key: owner.key, workspaceId: ws });
    const r = await post(s, `/api/v2/workflows/${wf.id}/execute`, {}, owner.key);
    expect(r.body.data).toMatchObject({ status: 'failed', error: { code: 'USAGE_LIMIT_EXCEEDED' } });
  });
});

async function startOn(dataDir: string, env: Record<string, string> = {}): Promise<RunningServer & { key: string; request: TestServer['request'] }> {
  const config = loadConfig({ PORT: '0', HOST: '127.0.0.1', DATA_DIR: dataDir, LOG_LEVEL: 'silent', NODE_ENV: 'test', BOOTSTRAP_API_KEY: 'sk-owa-durability-test-key-000000000000', ...LIMITS, ...env });
  const services = await createServices(config, createLogger('silent'));
  await bootstrapIfEmpty(services.store, { apiKey: config.bootstrapApiKey });
  const server = await startServer(services);
  const key = config.bootstrapApiKey!;
  return {
    ...server,
    key,
    request: (pathname, init = {}) => {
      const headers = new Headers(init.headers);
      headers.set('X-API-Key', key);
      return fetch(server.url + pathname, { ...init, headers });
    },
  };
}

describe('restart and shutdown', () => {
  const dirs: string[] = [];
  const tempDir = () => {
    const d = fs.mkdtempSync(path.join(os.tmpdir(), 'owa-runs-'));
    dirs.push(d);
    return d;
  };
  afterAll(() => {
    for (const d of dirs) fs.rmSync(d, { recursive: true, force: true });
  });

  it('after a crash: an async run left running is executed again, a sync one and one out of attempts fail, queued runs run, paused runs resume', async () => {
    const dir = tempDir();
    const first = await startOn(dir);
    const asTest = { ...first, workspaceId: '' } as unknown as TestServer;
    const workspaceId = (((await (await first.request('/api/v2/workspaces')).json()) as any).data[0]).id;
    const start = apiBlock('start_trigger', 'Start');
    const ask = apiBlock('human_in_the_loop', 'Ask', { message: 'ok?' });
    const reply = apiBlock('response', 'Reply', { data: '{"ok": <ask.approved>}' });
    const approval = await buildWorkflow(asTest, 'Approval', [start, ask, reply], [link(start, ask), link(ask, reply)], { workspaceId });
    const paused = (await post(first, `/api/v2/workflows/${approval.id}/execute`)).body.data;
    expect(paused.status).toBe('paused');
    const template = (await post(first, `/api/v2/workflows/${approval.id}/execute`, { run: { source: 'manual' } })).body.data.runId;
    await first.close();

    // What a process killed mid-run leaves behind: runs still "running" under a lease nobody renews (expired a
    // second ago), and one queued that no worker took.
    const store = await openSqliteStore(path.join(dir, 'workspace.sqlite'));
    const base = (await store.workflowRuns.get(template))!;
    const baseLog = (await store.executionLogs.get(template))!;
    const at = new Date().toISOString();
    const expired = new Date(Date.now() - 1000).toISOString();
    const left = [
      { id: 'crashed-run', status: 'running', mode: 'async', attempts: 1 },
      { id: 'crashed-sync-run', status: 'running', mode: 'sync', attempts: 1 },
      { id: 'worn-out-run', status: 'running', mode: 'async', attempts: 3 },
      { id: 'waiting-run', status: 'queued', mode: 'async', attempts: 0 },
    ] as const;
    await store.transaction(async (tx) => {
      for (const { id, status, mode, attempts } of left) {
        const running = status === 'running';
        await tx.workflowRuns.insert({
          ...base, id, key: id, status, mode, source: 'deployment', checkpoint: null, pause: null, output: null, error: null, endedAt: null, durationMs: null, queuedAt: at,
          startedAt: running ? at : null, leaseOwner: running ? 'a-process-that-died' : null, leaseUntil: running ? expired : null, attempts,
        });
        await tx.executionLogs.insert({ ...baseLog, runId: id, status: running ? 'running' : 'pending', endedAt: null });
      }
    });
    await store.close();

    const second = await startOn(dir);
    try {
      // The async run goes on (its second attempt) and pauses at the human step like any other.
      const again = await waitFor(second, approval.id, 'crashed-run', ['paused', 'failed']);
      expect(again).toMatchObject({ status: 'paused', attempt: 2 });
      // A sync run's client is gone: it fails with the interruption error.
      const crashed = await waitFor(second, approval.id, 'crashed-sync-run', ['failed']);
      expect(crashed).toMatchObject({ status: 'failed', error: { code: 'EXECUTION_FAILED' } });
      expect(crashed.error.message).toMatch(/interrupted/);
      expect(((await (await second.request('/api/v2/logs/crashed-sync-run')).json()) as any).data).toMatchObject({ status: 'failed', level: 'error' });
      // An async run out of attempts (RUN_MAX_ATTEMPTS, 3 by default) fails with a reason naming them.
      const worn = await waitFor(second, approval.id, 'worn-out-run', ['failed']);
      expect(worn.error.message).toMatch(/interrupted 3 times/);
      // The queued run is taken by the new process's workers and pauses at the human step like any other.
      expect((await waitFor(second, approval.id, 'waiting-run', ['paused'])).paused.contextId).toBe(approval.ids.Ask);
      const resumed = await post(second, `/api/v2/workflows/${approval.id}/runs/${paused.runId}/resume`, { contextId: approval.ids.Ask, input: {} });
      expect(resumed.body.data).toMatchObject({ status: 'completed', output: { ok: true } });
    } finally {
      await second.close();
    }
  });

  it('graceful shutdown stops taking work, returns async runs still going to the queue and fails sync runs it cuts off', async () => {
    const dir = tempDir();
    const server = await startOn(dir, { SHUTDOWN_TIMEOUT_MS: '200', EGRESS_ALLOW_CIDRS: '127.0.0.1/32' });
    const workspaceId = (((await (await server.request('/api/v2/workspaces')).json()) as any).data[0]).id;
    const start = apiBlock('start_trigger', 'Start');
    const held = gate.block('Held', 'shutdown');
    const wf = await buildWorkflow({ ...server } as unknown as TestServer, 'Long', [start, held], [link(start, held)], { workspaceId });
    const runId = (await post(server, `/api/v2/workflows/${wf.id}/execute`, { async: true })).body.data.runId;
    await waitUntil('the async run to reach the gate', () => gate.arrived.get('shutdown') === 1 && gate.holding('shutdown'));
    // A sync run waits at the gate too, its request open.
    const sync = server.request(`/api/v2/workflows/${wf.id}/execute`, { method: 'POST' }).then(
      (r) => r.status,
      () => 'cut off',
    );
    await waitUntil('the sync run to reach the gate', () => gate.arrived.get('shutdown') === 2);
    expect((await runStatus(server, wf.id, runId)).status).toBe('running');
    // The close ends while the runs are still held at the gate: it did not wait for them.
    await server.close();
    await sync;
    const db = new DatabaseSync(path.join(dir, 'workspace.sqlite'));
    try {
      const rows = db.prepare('SELECT run_key AS id, mode, status, error, attempts, lease_owner AS owner FROM workflow_runs WHERE workflow_id = ?').all(wf.id) as { id: string; mode: string; status: string; error: string | null; attempts: number; owner: string | null }[];
      const asyncRow = rows.find((r) => r.id === runId)!;
      expect(asyncRow).toMatchObject({ status: 'queued', error: null, attempts: 0, owner: null });
      const syncRow = rows.find((r) => r.mode === 'sync')!;
      expect(syncRow.status).toBe('failed');
      expect(JSON.parse(syncRow.error!).message).toMatch(/shut down/);
      const log = db.prepare('SELECT status FROM execution_logs WHERE run_id = (SELECT id FROM workflow_runs WHERE run_key = ?)').get(runId) as { status: string };
      expect(log.status).toBe('pending');
    } finally {
      db.close();
    }
  });
});
