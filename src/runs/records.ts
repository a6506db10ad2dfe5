// The record a run starts with. Execute, hosted chat and table groups all create runs; they differ only in who
// starts them and how, so the rest of the fresh record (nothing resumed, no output, no cost yet) is written once,
// and so is the execution log entry that opens with it.
import { randomUUID } from 'node:crypto';
import type { RunMode, RunRecord } from '../store/workflow-runs.ts';
import type { ExecutionLogRecord, LogStatus } from '../store/execution-logs.ts';

/** A run's status as its execution log names it (a queued run's log is `pending`). */
export const logStatusOf = (status: RunRecord['status']): LogStatus => (status === 'queued' ? 'pending' : status);

export interface NewRun {
  /** The caller-visible key (X-Run-Id); the internal id when none was chosen. */
  key?: string;
  workflowId: string;
  workspaceId: string;
  billingAccountId: string;
  deploymentVersionId: string | null;
  /** Queued for the workers (async) or running in the request (sync, stream). */
  queued: boolean;
  mode: RunMode;
  trigger: string;
  source: RunRecord['source'];
  triggerBlockId: string | null;
  input: unknown;
  timeoutMs: number | null;
  triggeredBy: string | null;
  /** ISO time the run is created. */
  at: string;
  /** A run that starts running at once (sync, stream) is held by the accepting process under this lease. */
  lease?: { owner: string; until: string } | null;
  /** The trace context to continue when the run executes (src/ops/spans.ts). */
  traceContext?: string | null;
}

export function newRunRecord(n: NewRun): RunRecord {
  const id = randomUUID();
  return {
    id,
    key: n.key ?? id,
    workflowId: n.workflowId,
    workspaceId: n.workspaceId,
    billingAccountId: n.billingAccountId,
    deploymentVersionId: n.deploymentVersionId,
    status: n.queued ? 'queued' : 'running',
    mode: n.mode,
    trigger: n.trigger,
    source: n.source,
    triggerBlockId: n.triggerBlockId,
    input: JSON.stringify(n.input ?? {}),
    timeoutMs: n.timeoutMs,
    triggeredBy: n.triggeredBy,
    resumeInput: null,
    checkpoint: null,
    pause: null,
    resumedCount: 0,
    output: null,
    blockOutputs: null,
    error: null,
    costTotal: null,
    blockExecutions: 0,
    queuedAt: n.at,
    startedAt: n.queued ? null : n.at,
    endedAt: null,
    durationMs: null,
    updatedAt: n.at,
    leaseOwner: n.queued ? null : (n.lease?.owner ?? null),
    leaseUntil: n.queued ? null : (n.lease?.until ?? null),
    attempts: n.queued ? 0 : 1,
    cancelRequestedAt: null,
    traceContext: n.traceContext ?? null,
  };
}

/** The execution log entry a new run opens with: everything in it follows from the run record. */
export function newRunLog(run: RunRecord): ExecutionLogRecord {
  return {
    runId: run.id,
    runKey: run.key,
    workspaceId: run.workspaceId,
    workflowId: run.workflowId,
    deploymentVersionId: run.deploymentVersionId,
    trigger: run.trigger,
    level: 'info',
    status: run.status === 'queued' ? 'pending' : 'running',
    startedAt: run.queuedAt,
    endedAt: null,
    durationMs: null,
    costTotal: null,
    cost: null,
    hasHandledErrors: false,
    errorMessage: null,
    models: null,
    executedBy: run.triggeredBy,
    workflowInput: run.input,
    finalOutput: null,
    traceSpans: null,
    createdAt: run.queuedAt,
  };
}
