// A run's life, from any trigger (the API's execute, legacy execute, hosted chat, MCP tool calls, table workflow
// groups): accepting it, cancelling it and resuming it. Each takes the transaction and audit context it runs
// under (the API's ctx.mutate, or actingAs() for a trigger without a request) and raises domain errors, so
// every trigger writes the same rows and the same audit trail. Executing a run is ./service.ts. No HTTP here.
import { storableTraceContext } from '../ops/spans.ts';
import { setTimeout as delay } from 'node:timers/promises';
import type { Audit, Mutate } from '../domain/changes.ts';
import { DomainError, invalidInput } from '../domain/errors.ts';
import { validateFields, type PausePoint, type ResumeInput, type RunResult } from '../execution/index.ts';
import { UniqueViolation } from '../store/errors.ts';
import type { Repositories } from '../store/index.ts';
import type { RunMode, RunRecord, RunStatus } from '../store/workflow-runs.ts';
import type { WorkflowRecord } from '../store/workflows.ts';
import { newRunLog, newRunRecord } from './records.ts';
import { CANCELLED_ERROR, type RunService } from './service.ts';
import { moveRun } from './transitions.ts';


/** The caller-chosen run id is taken in the workspace (409). */
export class RunIdConflict extends DomainError {
  constructor(runId: string) {
    super('conflict', `The run id ${runId} is already taken in this workspace; choose another one.`, { code: 'RUN_ID_CONFLICT', runId });
  }
}

/** A deployment run of a workflow without an active deployment (400). */
export class WorkflowNotDeployed extends DomainError {
  constructor() {
    super('invalid', 'The workflow is not deployed. Deploy it first (POST /api/v2/workflows/{workflowId}/deploy), or run the draft with run.source "manual".', [
      { code: 'not_deployed', keys: [], path: ['params', 'workflowId'], message: 'Workflow is not deployed' },
    ]);
  }
}

/** The run is not in a status the asked-for move starts from (409). */
export class RunStatusConflict extends DomainError {
  constructor(message: string, details?: unknown) {
    super('conflict', message, details);
  }
}

export interface RunRequest {
  workflow: WorkflowRecord;
  /** Who pays: the workspace's billing account. */
  billingAccountId: string;
  mode: RunMode;
  source: 'deployment' | 'manual';
  /** What started it: api, manual, chat, mcp, table… */
  trigger: string;
  input: unknown;
  /** The caller-chosen run id (X-Run-Id); null: the generated internal id. */
  runId: string | null;
  triggerBlockId: string | null;
  /** Wall-clock limit stored with the run (async runs). */
  timeoutMs: number | null;
  /** The user the run acts for (secrets, usage); null for none. */
  triggeredBy: string | null;
  /** Where the run reports when it settles (async runs). */
  callback?: { url: string; source: 'run' | 'workflow' } | null;
}

/**
 * The record of a run about to be accepted: queued for async runs, otherwise running and held by this process
 * under a lease. A deployment run needs an active deployment.
 */
export function prepareRun(runs: RunService, req: RunRequest): RunRecord {
  const w = req.workflow;
  let versionId: string | null = null;
  if (req.source === 'deployment') {
    if (!w.isDeployed || !w.activeVersionId) throw new WorkflowNotDeployed();
    versionId = w.activeVersionId;
  }
  const queued = req.mode === 'async';
  return newRunRecord({
    key: req.runId ?? undefined,
    workflowId: w.id,
    workspaceId: w.workspaceId,
    billingAccountId: req.billingAccountId,
    deploymentVersionId: versionId,
    queued,
    mode: req.mode,
    trigger: req.trigger,
    source: req.source,
    triggerBlockId: req.triggerBlockId,
    input: req.input,
    timeoutMs: req.timeoutMs,
    triggeredBy: req.triggeredBy,
    at: new Date().toISOString(),
    lease: queued ? null : runs.newLease(),
    // A queued run executes after this request returned: it keeps the request's trace to continue it then.
    traceContext: storableTraceContext(),
  });
}

/**
 * Writes an accepted run inside the caller's transaction: the run, its callback target, its execution log, the
 * workflow's run count (runs that start now) and one `workflow_run.started` audit event. A run id already taken in
 * the workspace is a RunIdConflict, also when two accepts race for it (the unique (workspace, key) index decides).
 */
export async function acceptRunIn(tx: Repositories, audit: Audit, run: RunRecord, req: RunRequest): Promise<void> {
  const w = req.workflow;
  if (await tx.workflowRuns.keyTaken(run.workspaceId, run.key)) throw new RunIdConflict(run.key);
  try {
    await tx.workflowRuns.insert(run);
  } catch (err) {
    if (err instanceof UniqueViolation && err.table === 'workflow_runs') throw new RunIdConflict(run.key);
    throw err;
  }
  if (req.callback) await tx.runCallbacks.setTarget(run.id, req.callback.url, req.callback.source);
  await tx.executionLogs.insert(newRunLog(run));
  if (run.status === 'running') await tx.workflows.recordRun(w.id, run.queuedAt);
  await audit({
    action: 'workflow_run.started',
    resourceType: 'workflow_run',
    resourceId: run.key,
    resourceName: w.name,
    workspaceId: run.workspaceId,
    metadata: { workflowId: w.id, mode: run.mode, source: run.source, trigger: run.trigger, deploymentVersionId: run.deploymentVersionId },
  });
}

/**
 * Accepts a run in one transaction (see acceptRunIn) and wakes the queue for an async one. `onRecord` sees the
 * record before it is written (an Idempotency-Key records the run with the same transaction). A sync or streamed
 * run comes back running, for the caller to execute with `runs.execute`.
 */
export async function acceptRun(runs: RunService, mutate: Mutate, req: RunRequest, onRecord?: (run: RunRecord) => void): Promise<RunRecord> {
  const run = prepareRun(runs, req);
  onRecord?.(run);
  await mutate((tx, audit) => acceptRunIn(tx, audit, run, req));
  if (run.status === 'queued') runs.notify();
  return run;
}

/** The answer to a cancel, as Cancel a workflow run reports it. */
export interface CancelOutcome {
  success: boolean;
  runId: string;
  redisAvailable: false;
  durablyRecorded: boolean;
  locallyAborted: boolean;
  pausedCancelled: boolean;
  reason: 'queue_cancelled' | 'recorded' | 'already_completed' | 'already_failed' | 'already_cancelled';
}

const CANCEL_ERROR = JSON.stringify(CANCELLED_ERROR);

/** queued | paused | running → cancelled now, with its log; false when the run was not in `from`. */
async function stopAsCancelled(tx: Repositories, id: string, from: RunStatus, at: string): Promise<boolean> {
  if (!(await moveRun(tx, id, { kind: 'stop', from, to: 'cancelled', error: CANCEL_ERROR, at }))) return false;
  await tx.executionLogs.stop(id, 'cancelled', at, CANCELLED_ERROR.message);
  return true;
}

/**
 * Cancels a run, wherever it executes. A queued or paused run is cancelled at once. For a running run a cancel
 * request is recorded; the process holding its lease stops it at its next renewal (this process at once) and
 * records it cancelled with what it produced so far. The answer waits for that, by reading the run, for at most
 * one lease period (LEASE_TTL_MS: three renewals); a run whose holder did not stop by then (or whose lease already
 * expired: its process is gone) is cancelled here, and a late outcome of its holder is dropped.
 */
export async function cancelRun(runs: RunService, mutate: Mutate, run: RunRecord): Promise<CancelOutcome> {
  const base: CancelOutcome = { success: false, runId: run.key, redisAvailable: false, durablyRecorded: false, locallyAborted: false, pausedCancelled: false, reason: 'recorded' };
  const at = new Date().toISOString();
  const asked = await mutate(async (tx, audit) => {
    let current = (await tx.workflowRuns.get(run.id))!;
    const record = () =>
      audit({ action: 'workflow_run.cancelled', resourceType: 'workflow_run', resourceId: current.key, workspaceId: current.workspaceId, metadata: { workflowId: current.workflowId, from: current.status } });
    if ((current.status === 'queued' || current.status === 'paused') && !(await stopAsCancelled(tx, current.id, current.status, at))) {
      // The queue's claims do not wait for this transaction (they lock rows, not the store): a queued run
      // claimed after it was read here is running (or even ended) now, and is cancelled as such below.
      current = (await tx.workflowRuns.get(run.id))!;
      if (current.status === 'queued' || current.status === 'paused') throw new RunStatusConflict('The run changed status while it was being cancelled; read it again.');
    } else if (current.status === 'queued' || current.status === 'paused') {
      await record();
      return { ...base, success: true, durablyRecorded: true, pausedCancelled: current.status === 'paused', reason: current.status === 'queued' ? ('queue_cancelled' as const) : ('recorded' as const) };
    }
    if (current.status === 'running') {
      await tx.workflowRuns.requestCancel(current.id, at);
      await record();
      return 'requested' as const;
    }
    return { ...base, reason: `already_${current.status}` as CancelOutcome['reason'] };
  });
  if (asked !== 'requested') {
    if (asked.success) runs.settled({ trigger: run.trigger, status: 'cancelled', durationMs: null });
    return asked;
  }
  // Executing here: the engine stops at the next block boundary (or kills a sandbox call) and records the run as cancelled.
  if (runs.isLocal(run.id)) {
    await runs.abort(run.id);
    return { ...base, success: true, durablyRecorded: true, locallyAborted: true, reason: 'recorded' };
  }
  const { renewMs, ttlMs } = runs.config.leases;
  const until = Date.now() + ttlMs;
  for (;;) {
    const current = await runs.store.workflowRuns.get(run.id);
    if (!current || current.status !== 'running') {
      const status = current?.status ?? 'cancelled';
      return status === 'cancelled' ? { ...base, success: true, durablyRecorded: true, reason: 'recorded' } : { ...base, reason: `already_${status}` as CancelOutcome['reason'] };
    }
    const holderGone = current.leaseUntil === null || Date.parse(current.leaseUntil) < Date.now();
    if (holderGone || Date.now() >= until) break;
    await delay(Math.min(100, renewMs));
  }
  const forced = await runs.store.transaction((tx) => stopAsCancelled(tx, run.id, 'running', new Date().toISOString()));
  if (forced) runs.settled({ trigger: run.trigger, status: 'cancelled', durationMs: null });
  const ended = forced ? 'cancelled' : ((await runs.store.workflowRuns.get(run.id))?.status ?? 'cancelled');
  return ended === 'cancelled' ? { ...base, success: true, durablyRecorded: true, reason: 'recorded' } : { ...base, reason: `already_${ended}` as CancelOutcome['reason'] };
}

/**
 * Resumes a paused run at one of its pause points with the block's input. An async run goes back to the queue
 * (`queued`); any other run executes here at once and its result comes back.
 */
export async function resumeRun(
  runs: RunService,
  mutate: Mutate,
  run: RunRecord,
  request: { contextId: string; input: unknown; timeoutMs: number },
): Promise<{ queued: true } | { queued: false; result: RunResult }> {
  if (run.status !== 'paused') throw new RunStatusConflict(`The run is ${run.status}, not paused; only a paused run can be resumed.`, { status: run.status });
  const points = (run.pause ? JSON.parse(run.pause) : []) as PausePoint[];
  const point = points.find((p) => p.blockId === request.contextId);
  if (!point) throw invalidInput(['body', 'contextId'], `The run has no pause point ${request.contextId}; its pause points are: ${points.map((p) => p.blockId).join(', ') || 'none'}.`);
  const input = request.input ?? {};
  if (input === null || typeof input !== 'object' || Array.isArray(input)) throw invalidInput(['body', 'input'], 'input must be an object of the paused block\'s fields.');
  const problem = validateFields(point.inputFormat, input as Record<string, unknown>);
  if (problem) throw new DomainError('invalid', `Invalid resume input: ${problem}`, [{ code: 'invalid_input', keys: [], path: ['body', 'input'], message: problem }]);
  const resume: ResumeInput = { blockId: point.blockId, input: input as Record<string, unknown> };
  const queued = run.mode === 'async';
  const at = new Date().toISOString();
  await mutate(async (tx, audit) => {
    const moved = await moveRun(
      tx,
      run.id,
      queued ? { kind: 'transition', from: 'paused', to: 'queued', at, resumeInput: JSON.stringify(resume) } : { kind: 'transition', from: 'paused', to: 'running', at, lease: runs.newLease() },
    );
    if (!moved) throw new RunStatusConflict('The run is no longer paused.');
    await tx.executionLogs.setStatus(run.id, queued ? 'pending' : 'running');
    await audit({ action: 'workflow_run.resumed', resourceType: 'workflow_run', resourceId: run.key, workspaceId: run.workspaceId, metadata: { workflowId: run.workflowId, contextId: point.blockId, queued } });
  });
  if (queued) {
    runs.notify();
    return { queued: true };
  }
  const fresh = (await runs.store.workflowRuns.get(run.id))!;
  return { queued: false, result: await runs.execute(fresh, { timeoutMs: request.timeoutMs, resume }) };
}
