// What one run holds while it runs: the workflow's graph indexed for lookups, the run's signal, outputs, trace,
// counters, cost and secrets, and how it reports events and turns failures into run errors. The parts of a run
// (scheduler, containers, block context, checkpoint) all work on this.
import { randomUUID } from 'node:crypto';
import { ExecutionError } from '../errors.ts';
import { Redactor } from '../redact.ts';
import { normalizeName, UnresolvedReference } from '../references.ts';
import type { BlockHandler } from '../blocks.ts';
import type { EngineServices, RunOptions } from '../options.ts';
import type { Block, BlockRef, Checkpoint, CostSummary, Edge, RunEvent, RunResult, SkippedBlock, WorkflowDefinition } from '../types.ts';
import type { Frame } from './frame.ts';

export const now = () => new Date().toISOString();

/** What a run needs of the engine that started it (the Engine class fits it). */
export interface RunHost {
  readonly options: EngineServices;
  readonly handlers: Record<string, BlockHandler>;
  /** Runs a child workflow (child-workflow blocks). */
  execute(workflow: WorkflowDefinition, options: RunOptions): Promise<RunResult>;
}

export class RunState {
  readonly runId: string;
  readonly engine: RunHost;
  readonly workflow: WorkflowDefinition;
  readonly options: RunOptions;
  readonly blocks: Record<string, Block>;
  readonly edges: Edge[];
  readonly byName = new Map<string, string>();
  readonly childrenOf = new Map<string, string[]>();
  readonly variables = new Map<string, { name: string; type: string; value: unknown }>();
  readonly redactor = new Redactor();
  readonly secrets = new Map<string, string>();
  readonly controller = new AbortController();
  readonly signal: AbortSignal;
  readonly depth: number;
  /** The checkpoint a resumed run continues from; null for a fresh run. */
  readonly checkpoint: Checkpoint | null;
  input: unknown;
  triggerId: string | null = null;
  startedAtMs = Date.now();
  startedAt = now();
  root: Frame;
  skipped: SkippedBlock[] = [];
  blockExecutions = 0;
  cost: CostSummary = { total: 0, items: [] };
  response: { data: unknown; status: number; headers: Record<string, string> } | null = null;
  resumedCount = 0;
  private timeoutSignal: AbortSignal | null = null;

  constructor(engine: RunHost, workflow: WorkflowDefinition, options: RunOptions, checkpoint: Checkpoint | null) {
    this.checkpoint = checkpoint;
    this.engine = engine;
    this.workflow = workflow;
    this.options = options;
    this.runId = options.runId ?? randomUUID();
    this.depth = options.depth ?? 0;
    this.blocks = workflow.state?.blocks ?? {};
    this.edges = Array.isArray(workflow.state?.edges) ? workflow.state.edges : [];
    this.input = options.input ?? {};
    const signals = [this.controller.signal];
    if (options.signal) signals.push(options.signal);
    if (options.timeoutMs !== undefined) {
      this.timeoutSignal = AbortSignal.timeout(options.timeoutMs);
      signals.push(this.timeoutSignal);
    }
    this.signal = AbortSignal.any(signals);
    this.root = { outputs: new Map(), parent: null, iteration: [], spans: [], nested: false };
    for (const block of Object.values(this.blocks)) {
      this.byName.set(normalizeName(block.name ?? ''), block.id);
      const parent = block.data?.parentId;
      if (typeof parent === 'string' && this.blocks[parent]) {
        this.childrenOf.set(parent, [...(this.childrenOf.get(parent) ?? []), block.id]);
      }
    }
    for (const v of Object.values(workflow.state?.variables ?? {})) this.variables.set(v.id, { name: v.name, type: v.type, value: v.value });
  }

  emit(event: RunEvent): void {
    if (!this.options.onEvent) return;
    try {
      this.options.onEvent(this.redactor.value(event));
    } catch {
      /* a listener's failure is not the run's */
    }
  }

  ref(block: Block, frame: Frame): BlockRef {
    const ref: BlockRef = { blockId: block.id, blockName: block.name, blockType: block.type };
    if (frame.iteration.length) ref.iteration = [...frame.iteration];
    return ref;
  }

  /** Why the run stopped early, once its signal fired. */
  abortError(): ExecutionError {
    if (this.timeoutSignal?.aborted && !this.options.signal?.aborted) {
      return new ExecutionError('TIMEOUT', `The run did not finish within ${this.options.timeoutMs} ms`);
    }
    const reason = this.controller.signal.reason;
    if (reason instanceof ExecutionError) return reason;
    return new ExecutionError('CANCELLED', 'The run was cancelled');
  }

  toExecutionError(e: unknown): ExecutionError {
    if (this.signal.aborted && !(e instanceof ExecutionError && ['TIMEOUT', 'CANCELLED', 'USAGE_LIMIT_EXCEEDED'].includes(e.code))) {
      const err = this.abortError();
      if (e instanceof ExecutionError && e.blockId) err.setBlock({ id: e.blockId, name: e.blockName!, type: e.blockType! });
      return err;
    }
    if (e instanceof ExecutionError) return e;
    return new ExecutionError('EXECUTION_FAILED', e instanceof Error ? e.message : String(e));
  }

  /** The scope's signal fired: the run's own cancellation/timeout, or a sibling branch's failure. */
  scopeAbortError(signal: AbortSignal): ExecutionError {
    if (this.signal.aborted) return this.abortError();
    const reason = signal.reason;
    const culprit = reason instanceof ExecutionError && reason.blockName ? `"${reason.blockName}"` : 'another branch';
    return new ExecutionError('CANCELLED', `Stopped because ${culprit} failed`);
  }

  toBlockError(e: unknown, block: Block): ExecutionError {
    if (e instanceof ExecutionError) return e;
    if (e instanceof UnresolvedReference) return new ExecutionError('BLOCK_EXECUTION_FAILED', e.message, block);
    return new ExecutionError('BLOCK_EXECUTION_FAILED', e instanceof Error ? e.message : String(e), block);
  }
}
