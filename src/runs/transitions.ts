// The one way a run's status changes after it was created. Every path that ends a run (the executor's outcome,
// reclaiming a run whose process died, cancelling from the API or a table, resuming) calls moveRun inside its own transaction, so
// whatever must happen with a settled run happens in that same transaction: today, the completion callback's
// delivery row goes into the outbox (src/callbacks/outbox.ts). A crash can then never keep the status change
// and lose the delivery, or the other way round. No HTTP here.
import type { Repositories } from '../store/index.ts';
import type { RunHolder, RunOutcome, RunStatus } from '../store/workflow-runs.ts';
import { enqueueCallback } from '../callbacks/outbox.ts';

export type RunMove =
  /** running → the engine's outcome (completed, failed, cancelled or paused), only while `holder` holds the run's lease. */
  | { kind: 'finish'; outcome: RunOutcome; holder: RunHolder }
  /** `from` → cancelled or failed without running (cancel, a reclaimed run that will not run again), with this error (JSON). */
  | { kind: 'stop'; from: RunStatus; to: 'cancelled' | 'failed'; error: string; at: string }
  /** Any other conditional move (resume: paused → queued | running; a table's cancel: queued | paused → cancelled). */
  | { kind: 'transition'; from: RunStatus; to: RunStatus; at: string; resumeInput?: string | null; lease?: { owner: string; until: string } };

/** Settled: a status a completion callback reports. */
export const SETTLED_STATUSES: ReadonlySet<RunStatus> = new Set(['completed', 'failed', 'cancelled', 'paused']);

/** Applies the move if the run is still where it expects; true when it moved. Call inside a transaction. */
export async function moveRun(tx: Repositories, runId: string, move: RunMove): Promise<boolean> {
  let moved: boolean;
  let to: RunStatus;
  let at: string;
  if (move.kind === 'finish') {
    moved = await tx.workflowRuns.finish(runId, move.outcome, move.holder);
    to = move.outcome.status;
    at = move.outcome.endedAt;
  } else if (move.kind === 'stop') {
    moved = await tx.workflowRuns.stop(runId, move.from, move.to, move.error, move.at);
    to = move.to;
    at = move.at;
  } else {
    moved = await tx.workflowRuns.transition(runId, move.from, move.to, move.at, {
      ...(move.resumeInput !== undefined ? { resumeInput: move.resumeInput } : {}),
      ...(move.lease ? { lease: move.lease } : {}),
    });
    to = move.to;
    at = move.at;
  }
  if (moved && SETTLED_STATUSES.has(to)) await enqueueCallback(tx, runId, at);
  return moved;
}
