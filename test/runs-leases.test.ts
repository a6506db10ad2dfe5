// Run leases across real server processes (`npm start`): a server killed (SIGKILL) while it drains 1,000 queued
// async runs leaves runs `running` under leases nobody renews; the next server reclaims them once the leases
// expire, within one queue poll, and every run ends exactly once (one usage record, one completed log each,
// none lost). A graceful stop (SIGTERM) during a drain fails no async run: the runs still going go back to the
// queue. And, with a second RunService standing in for another process on the same store: a cancel reaches a
// run that process executes (through the cancel request its lease renewal sees), and an outcome written after
// the lease was lost is dropped.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { openSqliteStore } from '../src/store/index.ts';
import { RunService } from '../src/runs/service.ts';
import { createLogger } from '../src/http/logging.ts';
import { PATIENCE_MS, waitUntil } from './support/wait.ts';
import { exited, spawnServer, type SpawnedServer } from './support/children.ts';
import { apiBlock, buildWorkflow, link } from './support/api-workflow.ts';
import { GateServer } from './support/gate-server.ts';
import { startTestServer, type TestServer } from './support/server.ts';

const KEY = 'sk-owa-run-leases-test-key-0123456789';
const LEASE_TTL_MS = 1500;
const POLL_MS = 100;
const QUICK_RUNS = 1000;
const HELD_RUNS = 4;
const ENV = {
  LEASE_TTL_MS: String(LEASE_TTL_MS),
  RUN_QUEUE_POLL_MS: String(POLL_MS),
  RUN_WORKERS: '8',
  EGRESS_ALLOW_CIDRS: '127.0.0.1/32',
  RATE_LIMIT_FREE_SYNC: '50000',
  RATE_LIMIT_FREE_ASYNC: '50000',
  RATE_LIMIT_FREE_API: '100000',
};

const dirs: string[] = [];
let gate: GateServer;
beforeAll(async () => {
  gate = await new GateServer().start();
});
afterAll(async () => {
  await gate?.stop();
  for (const d of dirs) fs.rmSync(d, { recursive: true, force: true });
});

type Proc = SpawnedServer;

function startServer(dataDir: string, extra: Record<string, string> = {}): Promise<Proc> {
  return spawnServer({ PATH: process.env.PATH ?? '', DATA_DIR: dataDir, PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'info', NODE_ENV: 'test', BOOTSTRAP_API_KEY: KEY, ...ENV, ...extra });
}

/** The TestServer surface buildWorkflow needs, for a server in another process. */
function client(p: Proc, workspaceId: string): TestServer {
  const request = (pathname: string, init: RequestInit & { key?: string | null } = {}) => {
    const { key: _key, ...rest } = init;
    const headers = new Headers(rest.headers);
    headers.set('X-API-Key', KEY);
    return fetch(p.url + pathname, { ...rest, headers, signal: AbortSignal.timeout(PATIENCE_MS) });
  };
  return { request, workspaceId } as unknown as TestServer;
}

interface Prepared {
  dir: string;
  quick: string;
  held: string;
  heldRuns: string[];
}

/**
 * A data directory holding two deployed workflows and, queued while no server ran, HELD_RUNS runs that wait at
 * a gate (queued first, so they are surely executing when the server is stopped) and QUICK_RUNS quick runs.
 */
async function prepare(gateName: string): Promise<Prepared> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'owa-leases-'));
  dirs.push(dir);
  const first = await startServer(dir);
  const workspaceId = ((await (await client(first, '').request('/api/v2/workspaces')).json()) as any).data[0].id;
  const c = client(first, workspaceId);
  const quick = await buildWorkflow(c, 'Quick', [apiBlock('start_trigger', 'Start')], []);
  const startBlock = apiBlock('start_trigger', 'Start');
  const wait = gate.block('Wait', gateName);
  const held = await buildWorkflow(c, 'Held', [startBlock, wait], [link(startBlock, wait)]);
  // A template run to copy the queued runs from.
  const template = async (wf: string) => {
    const r = await c.request(`/api/v2/workflows/${wf}/execute`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ async: true }) });
    return ((await r.json()) as any).data.runId as string;
  };
  const quickTemplate = await template(quick.id);
  const done = exited(first.child);
  first.child.kill('SIGTERM');
  await done;

  const store = await openSqliteStore(path.join(dir, 'workspace.sqlite'));
  const heldRuns: string[] = [];
  try {
    const base = (await store.workflowRuns.getByKey(quick.id, quickTemplate))!;
    const baseLog = (await store.executionLogs.get(base.id))!;
    const t0 = Date.now();
    await store.transaction(async (tx) => {
      for (let i = 0; i < HELD_RUNS + QUICK_RUNS; i++) {
        const isHeld = i < HELD_RUNS;
        const id = `${isHeld ? 'held' : 'quick'}-${String(i).padStart(5, '0')}`;
        if (isHeld) heldRuns.push(id);
        const at = new Date(t0 + i).toISOString();
        const workflowId = isHeld ? held.id : quick.id;
        const versionId = isHeld ? (await tx.workflows.get(held.id))!.activeVersionId : base.deploymentVersionId;
        await tx.workflowRuns.insert({
          ...base, id, key: id, workflowId, deploymentVersionId: versionId, status: 'queued', output: null, blockOutputs: null, error: null, costTotal: null,
          blockExecutions: 0, queuedAt: at, startedAt: null, endedAt: null, durationMs: null, updatedAt: at, leaseOwner: null, leaseUntil: null, attempts: 0,
        });
        await tx.executionLogs.insert({ ...baseLog, runId: id, runKey: id, workflowId, deploymentVersionId: versionId, status: 'pending', startedAt: at, endedAt: null, createdAt: at });
      }
    });
  } finally {
    await store.close();
  }
  return { dir, quick: quick.id, held: held.id, heldRuns };
}

function openDb(dir: string): DatabaseSync {
  return new DatabaseSync(path.join(dir, 'workspace.sqlite'), { readOnly: true });
}

/** Held runs executing (claimed, under a lease): queued first, they are taken first and wait at their gate. */
const heldRunning = (db: DatabaseSync) => Number((db.prepare("SELECT COUNT(*) AS n FROM workflow_runs WHERE id LIKE 'held-%' AND status = 'running'").get() as { n: number }).n);

/** Counts of the prepared runs by status. */
function statuses(db: DatabaseSync): Record<string, number> {
  const rows = db.prepare("SELECT status, COUNT(*) AS n FROM workflow_runs WHERE id LIKE 'held-%' OR id LIKE 'quick-%' GROUP BY status").all() as { status: string; n: number }[];
  return Object.fromEntries(rows.map((r) => [r.status, Number(r.n)]));
}

/** Every prepared run completed, with exactly one usage record and a completed log: none lost, none completed twice. */
function expectEachRunEndedOnce(db: DatabaseSync): void {
  expect(statuses(db)).toEqual({ completed: HELD_RUNS + QUICK_RUNS });
  const usage = db
    .prepare(
      `SELECT r.id, (SELECT COUNT(*) FROM usage_records u WHERE u.run_id = r.id) AS n, l.status AS log
       FROM workflow_runs r JOIN execution_logs l ON l.run_id = r.id WHERE r.id LIKE 'held-%' OR r.id LIKE 'quick-%'`,
    )
    .all() as { id: string; n: number; log: string }[];
  expect(usage).toHaveLength(HELD_RUNS + QUICK_RUNS);
  expect(usage.filter((u) => Number(u.n) !== 1)).toEqual([]);
  expect(usage.filter((u) => u.log !== 'completed')).toEqual([]);
}

describe('a server that dies during a drain', () => {
  it('kill -9 mid-drain: the next server reclaims the expired leases within one poll, and every run ends exactly once', async () => {
    const p = await prepare('killed');
    const second = await startServer(p.dir);
    const db = openDb(p.dir);
    try {
      await waitUntil('the held runs executing and the drain under way', () => heldRunning(db) === HELD_RUNS && (statuses(db).completed ?? 0) >= 50, { intervalMs: 5 });
      const died = exited(second.child);
      second.child.kill('SIGKILL');
      await died;
      const left = statuses(db);
      // Killed mid-drain: runs still queued, and runs left running under leases nobody renews.
      expect(left.queued ?? 0, JSON.stringify(left)).toBeGreaterThan(0);
      expect(left.running ?? 0, JSON.stringify(left)).toBeGreaterThanOrEqual(HELD_RUNS);
      const leasesEnd = Math.max(
        ...(db.prepare("SELECT lease_until AS until FROM workflow_runs WHERE status = 'running'").all() as { until: string }[]).map((r) => Date.parse(r.until)),
      );
      expect(leasesEnd - Date.now()).toBeLessThanOrEqual(LEASE_TTL_MS);

      const third = await startServer(p.dir);
      const listening = Date.now();
      try {
        // The held runs are executed again (attempt 2) once their leases expired: by the first poll after that.
        const reclaimedHeld = () => Number((db.prepare("SELECT COUNT(*) AS n FROM workflow_runs WHERE id LIKE 'held-%' AND attempts = 2").get() as { n: number }).n);
        await waitUntil('the held runs reclaimed', () => reclaimedHeld() >= HELD_RUNS, { intervalMs: 5 });
        const reclaimed = Date.now();
        const lateBy = reclaimed - Math.max(leasesEnd, listening);
        expect(lateBy, `reclaimed ${lateBy} ms after the leases expired and the server listened`).toBeLessThan(POLL_MS + 3000);
        gate.release('killed');
        await waitUntil('every run completed', () => (statuses(db).completed ?? 0) === HELD_RUNS + QUICK_RUNS);
        expectEachRunEndedOnce(db);
        const read = await (await client(third, '').request(`/api/v2/workflows/${p.held}/runs/${p.heldRuns[0]}`)).json();
        expect((read as any).data).toMatchObject({ status: 'completed', attempt: 2 });
      } finally {
        const done = exited(third.child);
        third.child.kill('SIGTERM');
        await done;
      }
    } finally {
      db.close();
    }
  });

  it('SIGTERM mid-drain fails no async run: the ones still going return to the queue, and the next server finishes them once', async () => {
    const p = await prepare('stopped');
    const second = await startServer(p.dir, { SHUTDOWN_TIMEOUT_MS: '300' });
    const db = openDb(p.dir);
    try {
      await waitUntil('the held runs executing and the drain under way', () => heldRunning(db) === HELD_RUNS && (statuses(db).completed ?? 0) >= 50, { intervalMs: 5 });
      const done = exited(second.child);
      second.child.kill('SIGTERM');
      expect(await done).toBe(0);
      const left = statuses(db);
      expect(left.queued ?? 0, JSON.stringify(left)).toBeGreaterThan(0);
      expect(left.failed ?? 0).toBe(0);
      expect(left.running ?? 0).toBe(0);
      expect((left.queued ?? 0) + (left.completed ?? 0)).toBe(HELD_RUNS + QUICK_RUNS);
      // The held runs were handed back with their attempt given back: the next execution is their first again.
      const held = db.prepare("SELECT status, attempts, lease_owner AS owner FROM workflow_runs WHERE id LIKE 'held-%'").all() as { status: string; attempts: number; owner: string | null }[];
      expect(held).toEqual(Array.from({ length: HELD_RUNS }, () => ({ status: 'queued', attempts: 0, owner: null })));

      gate.release('stopped');
      const third = await startServer(p.dir);
      try {
        await waitUntil('every run completed', () => (statuses(db).completed ?? 0) === HELD_RUNS + QUICK_RUNS);
        expectEachRunEndedOnce(db);
      } finally {
        const stopped = exited(third.child);
        third.child.kill('SIGTERM');
        await stopped;
      }
    } finally {
      db.close();
    }
  });
});

describe('two RunServices on one store (standing in for two processes)', () => {
  let s: TestServer;
  let other: RunService;
  beforeAll(async () => {
    s = await startTestServer({ ...ENV, LEASE_TTL_MS: '3000' });
    // This process's queue stops; the other one takes the runs from now on.
    await s.services.runs.close(0);
    const local = s.services.runs as unknown as Pick<ConstructorParameters<typeof RunService>[0], 'engine' | 'startEngine'>;
    other = new RunService({
      store: s.services.store,
      engine: local.engine,
      startEngine: local.startEngine,
      config: s.services.config,
      logger: createLogger('silent'),
      leaseOwner: 'other-process',
    });
    await other.start();
  });
  afterAll(async () => {
    await other?.close(0);
    await s?.stop();
  });

  it('cancelling a run another process executes: its holder sees the request at the next renewal and records the cancel', async () => {
    const startBlock = apiBlock('start_trigger', 'Start');
    const wait = gate.block('Wait', 'elsewhere');
    const wf = await buildWorkflow(s, 'Elsewhere', [startBlock, wait], [link(startBlock, wait)]);
    const runId = (await s.ok('POST', `/api/v2/workflows/${wf.id}/execute`, { async: true })).runId;
    await waitUntil('the run at the gate', () => gate.holding('elsewhere'));
    const row = (await s.services.store.workflowRuns.getByKey(wf.id, runId))!;
    expect(row).toMatchObject({ status: 'running', leaseOwner: 'other-process' });
    expect(s.services.runs.isLocal(row.id)).toBe(false);
    const cancel = await s.ok('POST', `/api/v2/workflows/${wf.id}/runs/${runId}/cancel`);
    expect(cancel).toMatchObject({ success: true, durablyRecorded: true, locallyAborted: false, reason: 'recorded' });
    const read = await s.ok('GET', `/api/v2/workflows/${wf.id}/runs/${runId}`);
    expect(read).toMatchObject({ status: 'cancelled', error: { code: 'CANCELLED' } });
    // Recorded by the holder (its outcome, with its log and usage), not forced from outside.
    const db = openDb(s.dataDir);
    try {
      expect(Number((db.prepare('SELECT COUNT(*) AS n FROM usage_records WHERE run_id = ?').get(row.id) as { n: number }).n)).toBe(1);
      expect((db.prepare('SELECT status FROM execution_logs WHERE run_id = ?').get(row.id) as { status: string }).status).toBe('cancelled');
    } finally {
      db.close();
    }
    gate.release('elsewhere');
  });

  it('an outcome written after the lease was lost is dropped', async () => {
    const startBlock = apiBlock('start_trigger', 'Start');
    const wait = gate.block('Wait', 'stolen');
    const wf = await buildWorkflow(s, 'Stolen', [startBlock, wait], [link(startBlock, wait)]);
    const runId = (await s.ok('POST', `/api/v2/workflows/${wf.id}/execute`, { async: true })).runId;
    await waitUntil('the run at the gate', () => gate.holding('stolen'));
    const row = (await s.services.store.workflowRuns.getByKey(wf.id, runId))!;
    // Another process took the run over (as after an expired lease): attempt 2 under its own lease, far from expiry.
    const until = new Date(Date.now() + 3_600_000).toISOString();
    // A reclaim as seen from a clock past the lease's expiry.
    const stolen = await s.services.store.transaction((tx) => tx.workflowRuns.claim({ id: row.id, status: 'running' }, 'thief', until, until));
    expect(stolen).toMatchObject({ leaseOwner: 'thief', attempts: 2 });
    const db = openDb(s.dataDir);
    try {
      gate.release('stolen');
      // The first holder's next renewal finds the lease gone and stops; whatever it finishes is not written.
      await waitUntil('the first holder to let go', () => !other.isLocal(row.id));
      expect(db.prepare('SELECT status, lease_owner AS owner, attempts FROM workflow_runs WHERE id = ?').get(row.id)).toEqual({ status: 'running', owner: 'thief', attempts: 2 });
      expect(Number((db.prepare('SELECT COUNT(*) AS n FROM usage_records WHERE run_id = ?').get(row.id) as { n: number }).n)).toBe(0);
      expect((db.prepare('SELECT status FROM execution_logs WHERE run_id = ?').get(row.id) as { status: string }).status).toBe('running');
      // And the store refuses a finish from the old holder outright.
      const at = new Date().toISOString();
      const outcome = { status: 'completed' as const, output: null, blockOutputs: null, error: null, checkpoint: null, pause: null, resumedCount: 0, costTotal: 0, blockExecutions: 0, endedAt: at, durationMs: 0 };
      expect(await s.services.store.transaction((tx) => tx.workflowRuns.finish(row.id, outcome, { owner: 'other-process', attempt: 1 }))).toBe(false);
      expect(await s.services.store.transaction((tx) => tx.workflowRuns.finish(row.id, outcome, { owner: 'thief', attempt: 2 }))).toBe(true);
    } finally {
      db.close();
    }
  });
});
