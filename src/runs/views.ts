// How runs and logs look on the wire (the shapes the CLI reads), and output selectors. No HTTP here.
import type { RunFileRecord } from '../store/run-files.ts';
import type { OperationResults } from '../../generated/handlers.ts';
import type { RunRecord } from '../store/workflow-runs.ts';
import type { ExecutionLogView } from '../store/execution-logs.ts';
import type { CostSummary, PausePoint, RunError, RunResult, TraceSpan, WorkflowState } from '../execution/index.ts';
import { folderPathToWire } from '../workflows/folder-wire.ts';
import { logStatusOf } from './records.ts';

const parse = <T>(text: string | null): T | null => (text === null ? null : (JSON.parse(text) as T));

/** The block names a selector may use: lower case without spaces or dots, as the CLI normalizes them. */
export const selectorName = (name: string) => name.toLowerCase().replace(/\s+/g, '').replace(/\./g, '');

export class SelectorError extends Error {}

export interface Selector {
  /** As sent; the key in blockOutputs. */
  key: string;
  blockId: string;
  path: string[];
}

function split(selector: string): { head: string; path: string[] } {
  const [head = '', ...path] = selector.split('.');
  return { head, path: path.filter((p) => p !== '') };
}

/** Execute's selectors: block names or ids, resolved against the graph before the run starts. */
export function resolveSelectors(selectors: string[], state: WorkflowState): Selector[] {
  const blocks = Object.values(state.blocks ?? {});
  const unknown: string[] = [];
  const out: Selector[] = [];
  for (const key of selectors) {
    const { head, path } = split(key);
    const matches = blocks.filter((b) => b.id === head || selectorName(b.name ?? '') === selectorName(head));
    if (matches.length === 0) unknown.push(key);
    else if (matches.length > 1 && !matches.some((b) => b.id === head)) throw new SelectorError(`The selector ${key} names ${matches.length} blocks; use a block id.`);
    else out.push({ key, blockId: (matches.find((b) => b.id === head) ?? matches[0]!).id, path });
  }
  if (unknown.length) {
    const names = blocks.map((b) => b.name).filter(Boolean).join(', ');
    throw new SelectorError(`Unknown block in selectedOutputs: ${unknown.join(', ')}. Blocks of this workflow: ${names || 'none'}.`);
  }
  return out;
}

/**
 * The recorded run's selectors (comma-separated), by block name or id like execute's: resolved against the graph
 * the run executed (`state`, null when it is gone); blocks with recorded outputs count by id in any case.
 */
export function recordedSelectors(raw: string, state: WorkflowState | null, blockOutputs: Record<string, unknown>): Selector[] {
  const keys = raw
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  const blocks: WorkflowState['blocks'] = { ...(state?.blocks ?? {}) };
  for (const id of Object.keys(blockOutputs)) blocks[id] ??= { id, name: '' } as WorkflowState['blocks'][string];
  return resolveSelectors(keys, { blocks, edges: [] });
}

/** Picks the selected values; unexecuted blocks and absent paths are left out. */
export function pickOutputs(selectors: Selector[], blockOutputs: Record<string, unknown>): Record<string, unknown> {
  const picked: Record<string, unknown> = {};
  for (const s of selectors) {
    if (!(s.blockId in blockOutputs)) continue;
    let value: unknown = blockOutputs[s.blockId];
    let found = true;
    for (const part of s.path) {
      if (value !== null && typeof value === 'object' && part in (value as object)) value = (value as Record<string, unknown>)[part];
      else {
        found = false;
        break;
      }
    }
    if (found) picked[s.key] = value;
  }
  return picked;
}

/** The synchronous answer of execute and resume. */
export function runResultView(result: RunResult, blockOutputs: Record<string, unknown> | null) {
  return {
    runId: result.runId,
    workflowId: result.workflowId,
    status: result.status,
    output: result.output ?? null,
    blockOutputs,
    error: result.error,
    startedAt: result.startedAt,
    endedAt: result.endedAt,
    durationMs: result.durationMs,
  };
}

function pauseView(run: RunRecord) {
  if (run.status !== 'paused') return null;
  const points = parse<PausePoint[]>(run.pause) ?? [];
  const first = points[0];
  return {
    contextId: first?.blockId ?? null,
    pausedAt: first?.pausedAt ?? run.updatedAt,
    resumeAt: null,
    pauseKind: 'human' as const,
    blockedOnBlockId: first?.blockId ?? null,
    automaticResumeWaitingReason: null,
    pausePointCount: points.length,
    resumedCount: run.resumedCount,
  };
}

export const runStartedAt = (run: RunRecord) => run.startedAt ?? run.queuedAt;

/** Where a file a run produced is downloaded from. */
export const runFilePath = (workflowId: string, runId: string, fileId: string) =>
  `/api/v2/workflows/${encodeURIComponent(workflowId)}/runs/${encodeURIComponent(runId)}/files/${encodeURIComponent(fileId)}`;

/** A run file as the run resource lists it (`runKey`: the run id callers see); `base64` only when asked for. */
export function runFileView(f: RunFileRecord, runKey: string, base64: string | null = null) {
  return { id: f.id, name: f.name, size: f.size, type: f.contentType, downloadPath: runFilePath(f.workflowId, runKey, f.id), base64 };
}

export function runView(
  run: RunRecord,
  options: { includeOutput: boolean; blockOutputs: Record<string, unknown> | null; files?: ReturnType<typeof runFileView>[] | null },
) {
  return {
    runId: run.key,
    workflowId: run.workflowId,
    status: run.status,
    trigger: run.trigger,
    startedAt: run.startedAt,
    endedAt: run.status === 'paused' ? null : run.endedAt,
    durationMs: run.durationMs,
    // Shown once the run was executed again after its server stopped under it (src/runs/service.ts).
    ...(run.attempts > 1 ? { attempt: run.attempts } : {}),
    paused: pauseView(run),
    cost: run.costTotal === null ? null : { total: run.costTotal },
    error: parse<RunError>(run.error),
    output: options.includeOutput && run.status === 'completed' ? (parse<unknown>(run.output) ?? null) : null,
    blockOutputs: options.blockOutputs,
    files: options.files && options.files.length > 0 ? options.files : null,
  };
}

export function runSummaryView(run: RunRecord) {
  return {
    runId: run.key,
    workflowId: run.workflowId,
    status: run.status,
    trigger: run.trigger,
    startedAt: runStartedAt(run),
    endedAt: run.status === 'paused' ? null : run.endedAt,
    durationMs: run.durationMs,
    cost: run.costTotal === null ? null : { total: run.costTotal },
  };
}

/** Trace spans as the logs carry them: the engine's spans plus `duration`, tokens as the CLI reads them. */
type SpanView = Omit<TraceSpan, 'children'> & { duration: number; children?: SpanView[] };

function spanView(s: TraceSpan): SpanView {
  const { children, ...rest } = s;
  return children ? { ...rest, duration: s.durationMs, children: children.map(spanView) } : { ...rest, duration: s.durationMs };
}

export function spansView(json: string | null): SpanView[] {
  return (parse<TraceSpan[]>(json) ?? []).map(spanView);
}

type LogListItem = OperationResults['listLogs']['body']['data'][number];

/** The fields every log view shares. */
function logSummary(l: ExecutionLogView) {
  return {
    runId: l.runId,
    workflowId: l.workflowId,
    deploymentVersionId: l.deploymentVersionId,
    status: l.status,
    level: l.level,
    trigger: l.trigger,
    startedAt: l.startedAt,
    endedAt: l.endedAt,
    totalDurationMs: l.durationMs,
    files: null,
  };
}

export function logEntryView(l: ExecutionLogView, detail: { full: boolean; traceSpans: boolean; finalOutput: boolean }): LogListItem {
  const entry: LogListItem = {
    kind: 'workflow',
    ...logSummary(l),
    cost: l.costTotal === null ? null : { total: l.costTotal },
    hasHandledErrors: l.hasHandledErrors,
  };
  if (detail.full) {
    entry.workflow = { id: l.workflowId, name: l.workflowName ?? '', description: l.workflowDescription, deleted: l.workflowName === null || l.workflowArchived };
  }
  if (detail.finalOutput) entry.finalOutput = parse<unknown>(l.finalOutput);
  if (detail.traceSpans) entry.traceSpans = spansView(l.traceSpans);
  return entry;
}

export function logDetailView(l: ExecutionLogView) {
  return {
    ...logSummary(l),
    executedByEmail: l.executedByEmail,
    workflow: {
      id: l.workflowId,
      name: l.workflowName ?? '',
      description: l.workflowDescription,
      folderPath: l.workflowFolderPath === null ? null : folderPathToWire(l.workflowFolderPath),
      ownerEmail: l.workflowOwnerEmail,
      workspaceId: l.workspaceId,
      createdAt: l.workflowCreatedAt,
      updatedAt: l.workflowUpdatedAt,
      deleted: l.workflowName === null || l.workflowArchived,
    },
    workflowState: null,
    traceSpans: spansView(l.traceSpans),
    finalOutput: parse<unknown>(l.finalOutput),
    cost: parse<CostSummary>(l.cost),
    workflowInput: parse<unknown>(l.workflowInput),
    createdAt: l.createdAt,
  };
}

export { logStatusOf };
