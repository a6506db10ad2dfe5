// Many queued runs at once, written straight into the store as copies of a finished template run (the rows the
// API would have written for each async execute), so a drain test or benchmark starts from a full queue.
import type { Store } from '../../src/store/index.ts';

/** Queues `count` copies of the run `templateKey` of `workflowId` in one transaction, ids `<prefix>-00000`…, and wakes the servers. */
export async function queueCopiesOfRun(store: Store, workflowId: string, templateKey: string, count: number, prefix: string): Promise<void> {
  const base = (await store.workflowRuns.getByKey(workflowId, templateKey))!;
  const baseLog = (await store.executionLogs.get(base.id))!;
  const t0 = Date.now();
  await store.transaction(async (tx) => {
    for (let i = 0; i < count; i++) {
      const id = `${prefix}-${String(i).padStart(5, '0')}`;
      const at = new Date(t0 + i).toISOString();
      await tx.workflowRuns.insert({
        ...base, id, key: id, status: 'queued', output: null, blockOutputs: null, error: null, costTotal: null,
        blockExecutions: 0, queuedAt: at, startedAt: null, endedAt: null, durationMs: null, updatedAt: at, leaseOwner: null, leaseUntil: null, attempts: 0,
      });
      await tx.executionLogs.insert({ ...baseLog, runId: id, runKey: id, status: 'pending', startedAt: at, endedAt: null, createdAt: at });
    }
  });
  store.wakes.announce('runs');
}
