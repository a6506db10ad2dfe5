// The run queue's claims (issues 20 and 24), on whichever engine TEST_DATABASE selects: claimers take disjoint
// runs (on Postgres, two stores with their own connection pools stand in for two servers, claiming at once
// with SKIP LOCKED), a claim takes a batch oldest first under one lease, an outcome written after the lease
// was lost is refused, and on Postgres the queue's row-locked transactions do not wait for the global write
// lock another transaction holds. The server's own queue is stopped, so the tests alone claim.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openWorkerStore, type Store } from '../src/store/index.ts';
import type { RunOutcome } from '../src/store/workflow-runs.ts';
import { apiBlock, buildWorkflow } from './support/api-workflow.ts';
import { queueCopiesOfRun } from './support/queued-runs.ts';
import { startTestServer, type TestServer } from './support/server.ts';
import { waitUntil } from './support/wait.ts';

let s: TestServer;
let store: Store;
let workflowId: string;
let template: string;
let batch = 0;
const postgres = () => store.connection?.engine === 'postgres';
const lease = () => new Date(Date.now() + 3_600_000).toISOString();
const now = () => new Date().toISOString();

beforeAll(async () => {
  s = await startTestServer();
  store = s.services.store;
  const wf = await buildWorkflow(s, 'Claimed', [apiBlock('start_trigger', 'Start')], []);
  workflowId = wf.id;
  template = (await s.ok('POST', `/api/v2/workflows/${wf.id}/execute`, { async: true })).runId;
  await waitUntil('the template run to complete', async () => (await store.workflowRuns.getByKey(workflowId, template))?.status === 'completed');
  // From here on only the tests claim.
  await s.services.runs.close(0);
});
afterAll(async () => {
  await s?.stop();
});

/** `count` queued runs (copies of the template); their internal ids, oldest first. */
async function queue(count: number): Promise<string[]> {
  const prefix = `claims${++batch}`;
  await queueCopiesOfRun(store, workflowId, template, count, prefix);
  return Array.from({ length: count }, (_, i) => `${prefix}-${String(i).padStart(5, '0')}`);
}

const claim = (on: Store, owner: string, limit: number) => on.transaction((tx) => tx.workflowRuns.claimQueued(owner, lease(), now(), limit), { rowLocked: true, retryOnSerializationFailure: 3 });

describe('claiming queued runs', () => {
  it('a batch claim takes the oldest runs, in order, each under the lease with its first attempt', async () => {
    const ids = await queue(7);
    const first = await claim(store, 'batcher', 5);
    expect(first.map((r) => r.id)).toEqual(ids.slice(0, 5));
    for (const r of first) expect(r).toMatchObject({ status: 'running', leaseOwner: 'batcher', attempts: 1 });
    const rest = await claim(store, 'batcher', 5);
    expect(rest.map((r) => r.id)).toEqual(ids.slice(5));
    expect(await claim(store, 'batcher', 5)).toEqual([]);
  });

  it('two claimers taking runs at once never get the same run, and together get every run once', async () => {
    const ids = await queue(200);
    // On Postgres a second store with its own pool: another server's claims, concurrent with these.
    const other = store.connection ? openWorkerStore(store.connection) : store;
    try {
      const taken = new Map<string, string>();
      const claimer = async (on: Store, owner: string) => {
        for (;;) {
          const runs = await claim(on, owner, 4);
          if (runs.length === 0) return;
          for (const r of runs) {
            expect(taken.get(r.id), `${r.id} claimed twice`).toBeUndefined();
            taken.set(r.id, owner);
          }
        }
      };
      await Promise.all([claimer(store, 'a'), claimer(other, 'b'), claimer(store, 'c'), claimer(other, 'd')]);
      expect([...taken.keys()].sort()).toEqual(ids);
      // Each run is held by the claimer that got it, attempt 1: no claim overwrote another.
      for (const id of ids.slice(0, 20)) expect(await store.workflowRuns.get(id)).toMatchObject({ status: 'running', leaseOwner: taken.get(id), attempts: 1 });
      if (postgres()) expect(new Set(taken.values()).size).toBeGreaterThan(1);
    } finally {
      if (other !== store) await other.close();
    }
  });

  it('an outcome written after the lease was lost is refused; the new holder writes it once', async () => {
    const [id] = await queue(1);
    const [mine] = await claim(store, 'first', 1);
    expect(mine!.id).toBe(id);
    // Its lease expired (as seen from a clock past it) and another process reclaimed it: attempt 2.
    const later = new Date(Date.now() + 7_200_000).toISOString();
    const stolen = await store.transaction((tx) => tx.workflowRuns.claim({ id: id!, status: 'running' }, 'second', lease(), later), { rowLocked: true });
    expect(stolen).toMatchObject({ leaseOwner: 'second', attempts: 2 });
    const at = now();
    const outcome: RunOutcome = { status: 'completed', output: null, blockOutputs: null, error: null, checkpoint: null, pause: null, resumedCount: 0, costTotal: 0, blockExecutions: 0, endedAt: at, durationMs: 0 };
    const finish = (owner: string, attempt: number) => store.transaction((tx) => tx.workflowRuns.finish(id!, outcome, { owner, attempt }), { rowLocked: true });
    const renew = (owner: string, attempt: number) => store.transaction((tx) => tx.workflowRuns.renewLease(id!, { owner, attempt }, lease()), { rowLocked: true });
    expect(await renew('first', 1)).toEqual({ held: false });
    expect(await finish('first', 1)).toBe(false);
    expect(await renew('second', 2)).toEqual({ held: true, cancelRequested: false });
    expect(await finish('second', 2)).toBe(true);
    expect(await finish('second', 2)).toBe(false);
    expect(await store.workflowRuns.get(id!)).toMatchObject({ status: 'completed', leaseOwner: null });
  });

  it.skipIf(process.env.TEST_DATABASE !== 'postgres')('on Postgres, claims and outcomes do not wait for the global write lock another transaction holds', async () => {
    const [id] = await queue(1);
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    let holding!: () => void;
    const holds = new Promise<void>((r) => (holding = r));
    // An ordinary write transaction (it takes the write lock first) that stays open until released.
    const writer = store.transaction(async (tx) => {
      await tx.workflowRuns.exists(id!);
      holding();
      await held;
    });
    await holds;
    try {
      const [run] = await claim(store, 'lock-free', 1);
      expect(run!.id).toBe(id);
      expect(await store.transaction((tx) => tx.workflowRuns.renewLease(id!, { owner: 'lock-free', attempt: 1 }, lease()), { rowLocked: true })).toMatchObject({ held: true });
    } finally {
      release();
      await writer;
    }
  });
});
