// The shapes the engine reads (a workflow's graph, as GET /workflows/{id}/state serves it; the block, edge and
// variable types are the workflow module's own) and writes (run results, events, trace spans, checkpoints).

import type { components } from '../../generated/types.ts';
import type { Block as DraftBlock, BlockData, Edge, SubBlockValue, Variable } from '../workflows/state.ts';

export type { BlockData, Edge, SubBlockValue, Variable };

/** A block as the engine reads it: the draft block without its layout, plus per-block error handling. */
export interface Block extends Pick<DraftBlock, 'id' | 'type' | 'name' | 'subBlocks' | 'enabled' | 'data'> {
  outputs?: Record<string, unknown>;
  retry?: { enabled?: boolean; maxTries?: number; waitBetweenTriesMs?: number };
  errorEnabled?: boolean;
  [key: string]: unknown;
}

export interface WorkflowState {
  blocks: Record<string, Block>;
  edges: Edge[];
  loops?: Record<string, unknown>;
  parallels?: Record<string, unknown>;
  variables?: Record<string, Variable>;
}

export interface WorkflowDefinition {
  id: string;
  name?: string;
  state: WorkflowState;
}

/** Why a run (or its failing block) stopped: the spec's RunErrorCode. */
export type ErrorCode = components['schemas']['RunErrorCode'];

/** The error of a run, exactly as the API's run envelope carries it (the spec's RunError). */
export type RunError = components['schemas']['RunError'];

export type RunStatus = 'completed' | 'failed' | 'cancelled' | 'paused';

/** One block execution (or loop iteration / parallel branch) in the trace; the logs' traceSpans shape. */
export interface TraceSpan {
  id: string;
  name: string;
  /** Block type, or 'loop-iteration' / 'parallel-branch' for the grouping spans. */
  type: string;
  blockId?: string;
  status: 'success' | 'error';
  startTime: string;
  endTime: string;
  durationMs: number;
  /** Milliseconds since the run started. */
  relativeStartMs: number;
  input?: unknown;
  output?: unknown;
  errorMessage?: string;
  errorType?: ErrorCode;
  /** The block failed but its error path took over. */
  errorHandled?: boolean;
  tokens?: { input: number; output: number; total: number };
  children?: TraceSpan[];
}

export interface SkippedBlock {
  blockId: string;
  blockName: string;
  blockType: string;
  reason: 'disabled' | 'untaken-path' | 'unreachable';
}

export interface PausePoint {
  blockId: string;
  blockName: string;
  pausedAt: string;
  message: string;
  /** Fields the reviewer is asked for (the block's inputFormat). */
  inputFormat: InputField[];
}

export interface InputField {
  name: string;
  type: 'string' | 'number' | 'boolean' | 'object' | 'array' | 'any';
  required?: boolean;
  description?: string;
}

export interface CostSummary {
  total: number;
  items: { category: 'model'; description: string; cost: number; inputTokens: number; outputTokens: number }[];
}

export interface RunResult {
  runId: string;
  workflowId: string;
  status: RunStatus;
  /** The response block's data when one ran, else the output of the last block that completed. */
  output: unknown;
  /** HTTP status and headers a response block asked for. */
  response: { status: number; headers: Record<string, string> } | null;
  /** Output of every block that ran, by block id (top-level: a loop's children hold their last iteration). */
  blockOutputs: Record<string, unknown>;
  error: RunError | null;
  startedAt: string;
  endedAt: string;
  durationMs: number;
  traceSpans: TraceSpan[];
  skipped: SkippedBlock[];
  /** Block executions counted (loop iterations count each time). */
  blockExecutions: number;
  cost: CostSummary;
  /** Set when status is 'paused'. */
  pause: PausePoint[] | null;
  /** Set when status is 'paused': pass it back to `resume`. JSON-serializable. */
  checkpoint: Checkpoint | null;
}

/** Everything needed to continue a paused run in another process; JSON-serializable. */
export interface Checkpoint {
  version: 1;
  runId: string;
  workflowId: string;
  startedAt: string;
  input: unknown;
  /** Current value of each workflow variable, by variable id. */
  variables: Record<string, unknown>;
  /** Outputs of the top-level blocks (and container children) completed so far. */
  outputs: Record<string, unknown>;
  /** Top-level scheduling state. */
  nodes: Record<string, 'done' | 'skipped' | 'paused'>;
  /** Resolved top-level edges: true taken, false not taken. */
  edges: Record<string, boolean>;
  /** Top-level blocks in completion order (the last one gives the output when no response block ran). */
  completed: string[];
  pause: PausePoint[];
  traceSpans: TraceSpan[];
  skipped: SkippedBlock[];
  blockExecutions: number;
  cost: CostSummary;
  response: { data: unknown; status: number; headers: Record<string, string> } | null;
  resumedCount: number;
  /** Names (never values) of the secrets used so far, fetched again on resume so their values stay redacted. */
  secretNames: string[];
}

interface EventBase {
  runId: string;
  at: string;
}

export interface BlockRef {
  blockId: string;
  blockName: string;
  blockType: string;
  /** Loop iteration / parallel branch indexes from the outermost container inwards, when inside one. */
  iteration?: number[];
}

/** What the engine reports while it runs (for NDJSON streaming and progress). Secret values are redacted. */
export type RunEvent =
  | (EventBase & { type: 'run_started'; workflowId: string; resumed: boolean })
  | (EventBase & BlockRef & { type: 'block_started' })
  | (EventBase & BlockRef & { type: 'block_completed'; output: unknown; durationMs: number })
  | (EventBase & BlockRef & { type: 'block_failed'; error: RunError; handled: boolean; durationMs: number })
  | (EventBase & BlockRef & { type: 'block_skipped'; reason: SkippedBlock['reason'] })
  | (EventBase & BlockRef & { type: 'block_retry'; attempt: number; error: string })
  | (EventBase & { type: 'run_paused'; pause: PausePoint[] })
  | (EventBase & { type: 'run_finished'; result: RunResult });
