// The completion-callback outbox: when a run with a callback URL settles, one delivery row is written in the
// transaction that settles it, carrying the body to send (the run as Get a workflow run shows it, output
// included) fixed at that moment, so every retry sends the same bytes. The worker (./worker.ts) sends it.
import { randomUUID } from 'node:crypto';
import type { Repositories } from '../store/index.ts';
import { runFileView, runView } from '../runs/views.ts';

/** The event a delivery reports, from the status its run settled in: run.completed, run.failed, run.cancelled, run.paused. */
export const eventOf = (status: string) => `run.${status}`;

/** Writes the delivery for a run that just settled, when the run reports to a callback URL. Inside the settling transaction. */
export async function enqueueCallback(tx: Repositories, runId: string, at: string): Promise<void> {
  const target = await tx.runCallbacks.target(runId);
  if (!target) return;
  const run = await tx.workflowRuns.get(runId);
  if (!run) return;
  const files = (await tx.runFiles.forRun(run.id)).map((f) => runFileView(f, run.key));
  const body = { data: runView(run, { includeOutput: true, blockOutputs: null, files }) };
  await tx.runCallbacks.insertDelivery({
    id: randomUUID(),
    runId: run.id,
    workspaceId: run.workspaceId,
    url: target.url,
    event: eventOf(run.status),
    payload: JSON.stringify(body),
    status: 'pending',
    attempts: 0,
    nextAttemptAt: at,
    attemptStartedAt: null,
    createdAt: at,
    deliveredAt: null,
    lastError: null,
  });
}
