// The workflow executor: runs a workflow graph as a DAG. A block starts once every edge into it is resolved and at
// least one was taken; a block whose incoming edges were all left untaken is skipped, and its own outgoing edges
// with it, so skipping flows down untaken branches. Independent branches run concurrently. Loops and parallels
// run their child blocks (data.parentId) as a nested graph per iteration or branch. No HTTP here: a caller hands
// in a graph, input and options, and gets a RunResult, with RunEvents along the way.
import { randomUUID } from 'node:crypto';
import type { SandboxPool } from '../sandbox/pool.ts';
import type { Config } from '../config.ts';
import type { EgressPolicy } from './egress.ts';
import { ExecutionError, ResumeError } from './errors.ts';
import { Redactor } from './redact.ts';
import {
  UnresolvedReference,
  collectSecretNames,
  parsePath,
  resolveCode,
  resolveJson,
  resolveValue,
  walkPath,
  type ReferenceSource,
} from './references.ts';
import { BLOCK_HANDLERS, CONTAINER_TYPES, TRIGGER_TYPES, validateFields, type BlockContext, type BlockHandler, type BlockResult } from './blocks.ts';
import type {
  Block,
  BlockRef,
  Checkpoint,
  CostSummary,
  Edge,
  PausePoint,
  RunError,
  RunEvent,
  RunResult,
  SkippedBlock,
  TraceSpan,
  WorkflowDefinition,
} from './types.ts';

/** The OpenAI-compatible provider agent blocks call (base URL, key, default model, timeout, USD per million
 * tokens); configured by AGENT_API_* (see src/config.ts). */
export type AgentProvider = NonNullable<Config['agent']>;

export interface ExecutionLimits {
  /** Most iterations any loop may run (a `for` count above it, or a while loop still true at it, fails). */
  maxLoopIterations: number;
  /** Most branches of one parallel running at the same time. */
  parallelConcurrency: number;
  /** Deepest nesting of child workflows. */
  maxChildDepth: number;
  /** Default and maximum wall-clock time of one function block call (ms). */
  functionTimeoutMs: number;
  /** Default timeout of an API request block (ms). */
  apiTimeoutMs: number;
}

export interface EngineOptions {
  sandbox: SandboxPool;
  egress: EgressPolicy;
  /** null: agent blocks fail with a message saying no provider is configured. */
  agent: AgentProvider | null;
  limits: ExecutionLimits;
  /** Block implementations by type id; defaults to BLOCK_HANDLERS (override or add types here). */
  handlers?: Record<string, BlockHandler>;
}

/**
 * Secret values by name (`{{NAME}}`): a map, or a function asked once per name per run. A function may answer
 * `{ value, redact: false }` for a secret its owner marked unredacted (kept out of the redactor).
 */
export type SecretsProvider =
  | Record<string, string>
  | ((name: string) => string | { value: string; redact: boolean } | undefined | Promise<string | { value: string; redact: boolean } | undefined>);

/**
 * Workspace resources a run's blocks may use, supplied by whoever starts the run (the run service). Every member
 * is optional: a block that needs a missing one fails with a message saying so.
 */
export interface RunResources {
  /** The skills an agent block names (ids, names or editor objects), with the ones that do not exist. */
  skills?(refs: unknown[]): Promise<{ found: { name: string; description: string; content: string }[]; missing: string[] }>;
  /** The tools an agent block lists (tool-input entries), as functions the model may call. */
  tools?(entries: unknown[], signal: AbortSignal): Promise<{ found: AgentTool[]; missing: string[] }>;
  /** The sandbox pool of a built sandbox a function block names (id or name); throws with a clear message otherwise. */
  sandboxPool?(ref: string): Promise<SandboxPool>;
  /** A fresh access token of an OAuth credential of the run's workspace (API blocks naming a credential). */
  accessToken?(credentialId: string): Promise<string>;
  /** Keeps a file a block produced (a function's returned file, a binary API response) with the run. */
  storeFile?(file: { name: string; contentType: string; data: Buffer; blockId: string }): Promise<RunFileRef>;
}

/** What replaces a produced file's content in block outputs: where to download it. */
export interface RunFileRef {
  id: string;
  name: string;
  size: number;
  type: string;
  downloadPath: string;
}

/** A tool as an agent sees it: an OpenAI function declaration and a way to call it. */
export interface AgentTool {
  /** Function name given to the model (unique within one agent call). */
  name: string;
  description: string;
  /** JSON Schema of the arguments the model fills in. */
  parameters: Record<string, unknown>;
  call(args: Record<string, unknown>): Promise<{ status: 'succeeded' | 'failed'; output: unknown; error: { message: string } | null }>;
}

export interface RunOptions {
  /** Workspace resources (skills, tools) for agent and function blocks; passed on to child workflows. */
  resources?: RunResources;
  /** Defaults to a random UUID. */
  runId?: string;
  /** The run's input, checked against the trigger block's input fields. */
  input?: unknown;
  /** Aborting it cancels the run (status 'cancelled', code CANCELLED). */
  signal?: AbortSignal;
  /** Wall-clock limit of the whole run; past it the run fails with TIMEOUT. */
  timeoutMs?: number;
  onEvent?: (event: RunEvent) => void;
  secrets?: SecretsProvider;
  /** Loads another workflow for child-workflow blocks (the deployed version); null when it does not exist. */
  resolveWorkflow?: (workflowId: string) => Promise<WorkflowDefinition | null>;
  /** Asked before the run starts: a message means the caller is over its usage limit (USAGE_LIMIT_EXCEEDED). */
  checkUsage?: () => string | null | Promise<string | null>;
  /** Most block executions this run may perform (loop iterations count each time); past it USAGE_LIMIT_EXCEEDED. */
  maxBlockExecutions?: number;
  /** Which trigger block starts the run when the workflow has several. */
  triggerBlockId?: string;
  /** Child-workflow nesting depth (0 for a top-level run); set by the engine. */
  depth?: number;
  /** Calls a tool of a registered MCP server (MCP tool blocks); absent: those blocks fail saying so. */
  mcp?: McpToolCaller;
}

/** What an MCP tool call answers: the tool's content, optional structured result, and whether it failed. */
export interface McpToolCallResult {
  content: unknown[];
  structuredContent?: Record<string, unknown>;
  isError?: boolean;
}
export type McpToolCaller = (serverId: string, toolName: string, args: Record<string, unknown>, signal: AbortSignal) => Promise<McpToolCallResult>;

export interface ResumeInput {
  /** The paused block to resume; defaults to the first pause point. */
  blockId?: string;
  /** What the reviewer submitted, checked against the block's input fields. */
  input?: Record<string, unknown>;
  /** Defaults to true. */
  approved?: boolean;
}

/** One level of block outputs: the run, a loop iteration or a parallel branch. Lookups fall back to outer levels. */
interface Frame {
  outputs: Map<string, unknown>;
  parent: Frame | null;
  loop?: { index: number; currentItem: unknown; items: unknown[] | null };
  parallel?: { index: number; currentItem: unknown; items: unknown[] | null };
  iteration: number[];
  spans: TraceSpan[];
  /** Inside a loop or parallel (pausing is only possible at the top level). */
  nested: boolean;
}

interface NodeOutcome {
  output: unknown;
  handles: ((edge: Edge) => boolean) | null;
  pause?: PausePoint;
}

interface ScopeState {
  status: Map<string, 'pending' | 'running' | 'done' | 'skipped' | 'paused'>;
  edges: Map<string, boolean>;
  completed: string[];
}

interface ScopeOutcome {
  lastOutput: unknown;
  paused: PausePoint[];
  state: ScopeState;
}

const CONTAINER_START_HANDLES = new Set(['loop-start-source', 'parallel-start-source']);

export const normalizeName = (name: string): string => name.toLowerCase().replace(/\s+/g, '');

const now = () => new Date().toISOString();

/** The engine: holds the shared services (sandbox pool, egress policy, agent provider) and runs workflows. */
export class Engine {
  readonly options: EngineOptions;
  readonly handlers: Record<string, BlockHandler>;

  constructor(options: EngineOptions) {
    this.options = options;
    this.handlers = options.handlers ?? BLOCK_HANDLERS;
  }

  /** Runs a workflow from its trigger block. Never throws for run failures: they are in the result. */
  async execute(workflow: WorkflowDefinition, options: RunOptions = {}): Promise<RunResult> {
    const run = new Run(this, workflow, options, null);
    return run.start(null);
  }

  /**
   * Continues a paused run from its checkpoint with the reviewer's input. Throws ResumeError (the run stays
   * paused) when the input does not fit or the block is not paused.
   */
  async resume(workflow: WorkflowDefinition, checkpoint: Checkpoint, resume: ResumeInput, options: RunOptions = {}): Promise<RunResult> {
    if (checkpoint?.version !== 1) throw new ResumeError('Unknown checkpoint format');
    const point = resume.blockId ? checkpoint.pause.find((p) => p.blockId === resume.blockId) : checkpoint.pause[0];
    if (!point) throw new ResumeError(resume.blockId ? `Block ${resume.blockId} is not paused in this run` : 'The run has no pause point');
    const input = resume.input ?? {};
    const problem = validateFields(point.inputFormat, input);
    if (problem) throw new ResumeError(`Invalid resume input: ${problem}`);
    const run = new Run(this, workflow, { ...options, runId: checkpoint.runId }, checkpoint);
    return run.start({ point, input, approved: resume.approved ?? true });
  }
}

/** One run of one workflow. */
class Run {
  readonly runId: string;
  readonly engine: Engine;
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

  private readonly checkpoint: Checkpoint | null;

  constructor(engine: Engine, workflow: WorkflowDefinition, options: RunOptions, checkpoint: Checkpoint | null) {
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

  async start(resumeWith: { point: PausePoint; input: Record<string, unknown>; approved: boolean } | null): Promise<RunResult> {
    const topNodes = Object.values(this.blocks)
      .filter((b) => !(typeof b.data?.parentId === 'string' && this.blocks[b.data.parentId]))
      .map((b) => b.id);
    let outcome: ScopeOutcome | null = null;
    let error: ExecutionError | null = null;
    try {
      if (this.checkpoint) {
        this.restore(this.checkpoint);
        await this.fetchSecretNames(this.checkpoint.secretNames ?? []);
      }
      this.emit({ type: 'run_started', runId: this.runId, at: now(), workflowId: this.workflow.id, resumed: resumeWith !== null });
      if (!resumeWith) {
        const usage = await this.options.checkUsage?.();
        if (usage) throw new ExecutionError('USAGE_LIMIT_EXCEEDED', usage);
        this.validateGraph();
      }
      let restore: ScopeState | undefined;
      let resumed: { id: string; outcome: NodeOutcome } | undefined;
      if (this.checkpoint && resumeWith) {
        const cp = this.checkpoint;
        restore = {
          status: new Map(Object.entries(cp.nodes)),
          edges: new Map(Object.entries(cp.edges)),
          completed: [...cp.completed],
        };
        const block = this.blocks[resumeWith.point.blockId];
        if (!block) throw new ExecutionError('EXECUTION_FAILED', `The paused block ${resumeWith.point.blockId} is no longer in the workflow`);
        const output = { ...resumeWith.input, approved: resumeWith.approved, input: resumeWith.input, resumedAt: now() };
        resumed = { id: block.id, outcome: { output, handles: null } };
        this.resumedCount++;
        this.emit({ type: 'block_completed', runId: this.runId, at: now(), ...this.ref(block, this.root), output, durationMs: 0 });
      }
      outcome = await this.runScope(topNodes, this.triggerId ? [this.triggerId] : [], this.root, this.signal, restore, resumed);
    } catch (e) {
      error = this.toExecutionError(e);
    }
    return this.finish(outcome, error);
  }

  private restore(cp: Checkpoint): void {
    this.startedAt = cp.startedAt;
    this.startedAtMs = Date.parse(cp.startedAt);
    this.input = cp.input;
    for (const [id, value] of Object.entries(cp.variables)) {
      const v = this.variables.get(id);
      if (v) v.value = value;
    }
    for (const [id, output] of Object.entries(cp.outputs)) this.root.outputs.set(id, output);
    this.root.spans = [...cp.traceSpans];
    this.skipped = [...cp.skipped];
    this.blockExecutions = cp.blockExecutions;
    this.cost = structuredClone(cp.cost);
    this.response = cp.response;
    this.resumedCount = cp.resumedCount;
    this.triggerId = this.findTrigger();
  }

  private findTrigger(): string | null {
    const wanted = this.options.triggerBlockId;
    if (wanted) return this.blocks[wanted] && TRIGGER_TYPES.has(this.blocks[wanted]!.type) ? wanted : null;
    const triggers = Object.values(this.blocks).filter((b) => TRIGGER_TYPES.has(b.type) && b.enabled !== false);
    return triggers[0]?.id ?? null;
  }

  /** Problems that make the whole graph unrunnable: EXECUTION_FAILED before any block runs. */
  private validateGraph(): void {
    this.triggerId = this.findTrigger();
    if (!this.triggerId) {
      throw new ExecutionError(
        'EXECUTION_FAILED',
        this.options.triggerBlockId ? `Block ${this.options.triggerBlockId} is not a trigger block of this workflow` : 'The workflow has no enabled start block',
      );
    }
    for (const block of Object.values(this.blocks)) {
      if (block.enabled === false) continue;
      if (!this.engine.handlers[block.type] && !CONTAINER_TYPES.has(block.type)) {
        throw new ExecutionError('EXECUTION_FAILED', `Block "${block.name}" has type "${block.type}", which this server cannot run`, block);
      }
    }
  }

  private toExecutionError(e: unknown): ExecutionError {
    if (this.signal.aborted && !(e instanceof ExecutionError && ['TIMEOUT', 'CANCELLED', 'USAGE_LIMIT_EXCEEDED'].includes(e.code))) {
      const err = this.abortError();
      if (e instanceof ExecutionError && e.blockId) err.setBlock({ id: e.blockId, name: e.blockName!, type: e.blockType! });
      return err;
    }
    if (e instanceof ExecutionError) return e;
    return new ExecutionError('EXECUTION_FAILED', e instanceof Error ? e.message : String(e));
  }

  private finish(outcome: ScopeOutcome | null, error: ExecutionError | null): RunResult {
    const endedAt = now();
    const paused = !error && outcome && outcome.paused.length > 0 ? outcome.paused : null;
    const status: RunResult['status'] = error ? (error.code === 'CANCELLED' ? 'cancelled' : 'failed') : paused ? 'paused' : 'completed';
    const blockOutputs = Object.fromEntries(this.root.outputs);
    const output = this.response ? this.response.data : outcome ? outcome.lastOutput : null;
    let checkpoint: Checkpoint | null = null;
    if (paused && outcome) {
      const nodes: Checkpoint['nodes'] = {};
      for (const [id, s] of outcome.state.status) if (s === 'done' || s === 'skipped' || s === 'paused') nodes[id] = s;
      const variables: Record<string, unknown> = {};
      for (const [id, v] of this.variables) variables[id] = v.value;
      checkpoint = {
        version: 1,
        runId: this.runId,
        workflowId: this.workflow.id,
        startedAt: this.startedAt,
        input: this.input,
        variables,
        outputs: blockOutputs,
        nodes,
        edges: Object.fromEntries(outcome.state.edges),
        completed: outcome.state.completed,
        pause: paused,
        traceSpans: this.redactor.value(this.root.spans),
        skipped: this.skipped,
        blockExecutions: this.blockExecutions,
        cost: this.cost,
        response: this.response,
        resumedCount: this.resumedCount,
        secretNames: [...this.secrets.keys()],
      };
    }
    const r = this.redactor;
    const result: RunResult = {
      runId: this.runId,
      workflowId: this.workflow.id,
      status,
      output: r.value(output ?? null),
      response: this.response ? { status: this.response.status, headers: r.value(this.response.headers) } : null,
      blockOutputs: r.value(blockOutputs),
      error: error ? r.value(error.toRunError()) : null,
      startedAt: this.startedAt,
      endedAt,
      durationMs: Date.now() - this.startedAtMs,
      traceSpans: r.value(this.root.spans),
      skipped: this.skipped,
      blockExecutions: this.blockExecutions,
      cost: this.cost,
      pause: paused,
      checkpoint,
    };
    if (paused) this.emit({ type: 'run_paused', runId: this.runId, at: endedAt, pause: paused });
    this.emit({ type: 'run_finished', runId: this.runId, at: endedAt, result });
    return result;
  }

  // ---- references --------------------------------------------------------------------------------------------

  /** References as `block` (the block whose inputs they are in) resolves them in `frame`. */
  source(frame: Frame, block: Block): ReferenceSource {
    return {
      secrets: this.secrets,
      knows: (root) => ['start', 'variable', 'loop', 'parallel'].includes(root) || this.byName.has(root),
      lookup: (body) => this.lookup(body, frame, block),
    };
  }

  /** The value of `<body>`; an unresolvable one fails naming the reference and the block it is in. */
  private lookup(body: string, frame: Frame, from: Block): unknown {
    const fail = (why: string): never => {
      throw new UnresolvedReference(`Block "${from.name}" references <${body}>, but ${why}`);
    };
    let path: (string | number)[];
    try {
      path = parsePath(body);
    } catch {
      return fail('that is not a well-formed reference (expected <block.path> with non-empty segments)');
    }
    const root = String(path[0]).toLowerCase();
    const walk = (value: unknown, rest: (string | number)[], what: string) => {
      const r = walkPath(value, rest);
      if (!r.found) fail(`${what} has no "${rest.join('.')}"`);
      return r.value;
    };
    if (root === 'variable') {
      const name = normalizeName(String(path[1] ?? ''));
      const variable = [...this.variables.values()].find((v) => normalizeName(v.name) === name);
      if (!variable) return fail(`no workflow variable named "${path[1]}" exists`);
      return walk(variable.value, path.slice(2), `variable "${variable.name}"`);
    }
    if (root === 'loop' || root === 'parallel') {
      let f: Frame | null = frame;
      while (f && !f[root]) f = f.parent;
      const ctx = f?.[root];
      if (!ctx) return fail(`it is used outside a ${root}`);
      return walk(ctx, path.slice(1), root);
    }
    let id = this.byName.get(root);
    if (!id && root === 'start') id = this.triggerId ?? undefined;
    if (!id) return fail(`no block named "${path[0]}" exists`);
    const block = this.blocks[id]!;
    for (let f: Frame | null = frame; f; f = f.parent) {
      if (f.outputs.has(id)) return walk(f.outputs.get(id), path.slice(1), `the output of "${block.name}"`);
    }
    return fail(`block "${block.name}" has not run`);
  }

  // ---- scheduling --------------------------------------------------------------------------------------------

  /**
   * Runs a set of sibling blocks (the top level, one loop iteration or one parallel branch) until nothing more
   * can start. Rejects with the first unhandled block failure, after the other branches of the scope stop.
   */
  private runScope(
    nodes: string[],
    entries: string[],
    frame: Frame,
    parentSignal: AbortSignal,
    restore?: ScopeState,
    resumed?: { id: string; outcome: NodeOutcome },
  ): Promise<ScopeOutcome> {
    const nodeSet = new Set(nodes);
    const incoming = new Map<string, Edge[]>();
    const outgoing = new Map<string, Edge[]>();
    for (const e of this.edges) {
      if (!nodeSet.has(e.source) || !nodeSet.has(e.target)) continue;
      incoming.set(e.target, [...(incoming.get(e.target) ?? []), e]);
      outgoing.set(e.source, [...(outgoing.get(e.source) ?? []), e]);
    }
    const state: ScopeState = restore ?? { status: new Map(), edges: new Map(), completed: [] };
    for (const id of nodes) if (!state.status.has(id)) state.status.set(id, 'pending');
    const scopeController = new AbortController();
    const signal = AbortSignal.any([parentSignal, scopeController.signal]);
    const paused: PausePoint[] = restore ? (this.checkpoint?.pause ?? []).filter((p) => p.blockId !== resumed?.id) : [];

    return new Promise<ScopeOutcome>((resolve, reject) => {
      let running = 0;
      let failure: ExecutionError | null = null;
      let lastOutput: unknown = null;
      if (restore) {
        const last = state.completed.at(-1);
        if (last !== undefined) lastOutput = frame.outputs.get(last);
      }

      const settleIfIdle = () => {
        if (running > 0) return;
        if (failure) return reject(failure);
        if (paused.length === 0) {
          for (const [id, s] of state.status) if (s === 'pending') skip(id, 'unreachable');
        }
        resolve({ lastOutput, paused, state });
      };

      const skip = (id: string, reason: SkippedBlock['reason']) => {
        if (state.status.get(id) !== 'pending') return;
        state.status.set(id, 'skipped');
        const block = this.blocks[id]!;
        this.skipped.push({ blockId: id, blockName: block.name, blockType: block.type, reason });
        this.skipChildren(id, reason);
        this.emit({ type: 'block_skipped', runId: this.runId, at: now(), ...this.ref(block, frame), reason });
        resolveEdges(id, () => false);
      };

      const resolveEdges = (id: string, taken: (edge: Edge) => boolean) => {
        const out = outgoing.get(id) ?? [];
        for (const e of out) state.edges.set(e.id, taken(e));
        for (const e of out) check(e.target);
      };

      const check = (id: string) => {
        if (state.status.get(id) !== 'pending') return;
        const ins = incoming.get(id) ?? [];
        if (ins.some((e) => !state.edges.has(e.id))) return;
        if (ins.some((e) => state.edges.get(e.id))) launch(id);
        else skip(id, 'untaken-path');
      };

      const complete = (id: string, outcome: NodeOutcome) => {
        if (outcome.pause) {
          state.status.set(id, 'paused');
          paused.push(outcome.pause);
          return;
        }
        state.status.set(id, 'done');
        state.completed.push(id);
        frame.outputs.set(id, outcome.output);
        lastOutput = outcome.output;
        resolveEdges(id, outcome.handles ?? ((e) => e.sourceHandle !== 'error'));
      };

      const launch = (id: string) => {
        const block = this.blocks[id]!;
        if (block.enabled === false) {
          state.status.set(id, 'pending');
          return skip(id, 'disabled');
        }
        if (failure) return;
        state.status.set(id, 'running');
        running++;
        this.executeNode(block, frame, signal, (outgoing.get(id) ?? []).some((e) => e.sourceHandle === 'error')).then(
          (outcome) => {
            running--;
            if (!failure) complete(id, outcome);
            settleIfIdle();
          },
          (e: unknown) => {
            running--;
            if (!failure) {
              failure = e instanceof ExecutionError ? e : this.toExecutionError(e);
              scopeController.abort(failure);
            }
            settleIfIdle();
          },
        );
      };

      if (resumed) complete(resumed.id, resumed.outcome);
      else if (!restore) {
        for (const id of nodes) {
          if (entries.includes(id)) launch(id);
          else if (!(incoming.get(id)?.length)) skip(id, 'unreachable');
        }
      }
      settleIfIdle();
    });
  }

  /** A skipped container skips everything inside it. */
  private skipChildren(containerId: string, reason: SkippedBlock['reason']): void {
    for (const child of this.childrenOf.get(containerId) ?? []) {
      const block = this.blocks[child]!;
      this.skipped.push({ blockId: child, blockName: block.name, blockType: block.type, reason });
      this.skipChildren(child, reason);
    }
  }

  /** One block (or container) with its span, events, retries and error path. */
  private async executeNode(block: Block, frame: Frame, signal: AbortSignal, hasErrorPath: boolean): Promise<NodeOutcome> {
    const retry = block.retry?.enabled ? block.retry : null;
    const maxTries = retry ? Math.max(1, Math.min(10, Math.floor(retry.maxTries ?? 1))) : 1;
    for (let attempt = 1; ; attempt++) {
      if (signal.aborted) throw this.scopeAbortError(signal);
      const span = this.openSpan(block, frame);
      const ref = this.ref(block, frame);
      this.emit({ type: 'block_started', runId: this.runId, at: span.startTime, ...ref });
      const started = performance.now();
      try {
        this.blockExecutions++;
        const limit = this.options.maxBlockExecutions;
        if (limit !== undefined && this.blockExecutions > limit) {
          throw new ExecutionError('USAGE_LIMIT_EXCEEDED', `The run exceeded its limit of ${limit} block executions`);
        }
        const result = await this.runBlock(block, frame, signal, span);
        const durationMs = performance.now() - started;
        this.closeSpan(span, 'success', result.output, durationMs);
        if (result.pause) {
          if (frame.nested) throw new ExecutionError('BLOCK_EXECUTION_FAILED', 'A human-in-the-loop block cannot pause inside a loop or parallel');
          const pause: PausePoint = { blockId: block.id, blockName: block.name, pausedAt: now(), ...result.pause };
          return { output: null, handles: null, pause };
        }
        this.emit({ type: 'block_completed', runId: this.runId, at: now(), ...ref, output: result.output, durationMs });
        const selected = result.handles ? new Set(result.handles) : null;
        return {
          output: result.output,
          handles: selected ? (e) => e.sourceHandle !== 'error' && selected.has(e.sourceHandle ?? 'source') : null,
        };
      } catch (e) {
        const durationMs = performance.now() - started;
        const error = (signal.aborted ? this.scopeAbortError(signal) : this.toBlockError(e, block)).setBlock(block);
        const finalAttempt = attempt >= maxTries || signal.aborted || error.code === 'USAGE_LIMIT_EXCEEDED';
        const handled = finalAttempt && hasErrorPath && !signal.aborted && error.code !== 'USAGE_LIMIT_EXCEEDED';
        this.closeSpan(span, 'error', undefined, durationMs, error, handled);
        if (!finalAttempt) {
          this.emit({ type: 'block_retry', runId: this.runId, at: now(), ...ref, attempt, error: error.message });
          await sleep(Math.max(0, retry?.waitBetweenTriesMs ?? 0), signal).catch(() => undefined);
          continue;
        }
        this.emit({ type: 'block_failed', runId: this.runId, at: now(), ...ref, error: error.toRunError(), handled, durationMs });
        if (handled) {
          return { output: { error: error.message, code: error.code }, handles: (edge) => edge.sourceHandle === 'error' };
        }
        throw error;
      }
    }
  }

  /** The scope's signal fired: the run's own cancellation/timeout, or a sibling branch's failure. */
  private scopeAbortError(signal: AbortSignal): ExecutionError {
    if (this.signal.aborted) return this.abortError();
    const reason = signal.reason;
    const culprit = reason instanceof ExecutionError && reason.blockName ? `"${reason.blockName}"` : 'another branch';
    return new ExecutionError('CANCELLED', `Stopped because ${culprit} failed`);
  }

  private toBlockError(e: unknown, block: Block): ExecutionError {
    if (e instanceof ExecutionError) return e;
    if (e instanceof UnresolvedReference) return new ExecutionError('BLOCK_EXECUTION_FAILED', e.message, block);
    return new ExecutionError('BLOCK_EXECUTION_FAILED', e instanceof Error ? e.message : String(e), block);
  }

  private openSpan(block: Block, frame: Frame): TraceSpan {
    const start = Date.now();
    const span: TraceSpan = {
      id: randomUUID(),
      name: block.name,
      type: block.type,
      blockId: block.id,
      status: 'success',
      startTime: new Date(start).toISOString(),
      endTime: '',
      durationMs: 0,
      relativeStartMs: start - this.startedAtMs,
    };
    frame.spans.push(span);
    return span;
  }

  private closeSpan(span: TraceSpan, status: 'success' | 'error', output: unknown, durationMs: number, error?: ExecutionError, handled?: boolean): void {
    span.status = status;
    span.durationMs = Math.round(durationMs * 1000) / 1000;
    span.endTime = new Date(Date.parse(span.startTime) + Math.round(durationMs)).toISOString();
    if (output !== undefined) span.output = this.redactor.value(output);
    if (error) {
      span.errorMessage = this.redactor.text(error.message);
      span.errorType = error.code;
      if (handled) span.errorHandled = true;
    }
    if (span.input !== undefined) span.input = this.redactor.value(span.input);
  }

  private async runBlock(block: Block, frame: Frame, signal: AbortSignal, span: TraceSpan): Promise<BlockResult> {
    await this.fetchSecrets(block);
    if (block.type === 'loop') return this.runLoop(block, frame, signal, span);
    if (block.type === 'parallel') return this.runParallel(block, frame, signal, span);
    const handler = this.engine.handlers[block.type];
    if (!handler) throw new ExecutionError('EXECUTION_FAILED', `Block type "${block.type}" cannot run on this server`, block);
    const ctx = this.blockContext(block, frame, signal, span);
    const result = await handler(ctx);
    if (result.tokens && result.model) {
      const { input, output } = result.tokens;
      const agent = this.engine.options.agent;
      const cost = agent ? (input * agent.inputCostPerMTok + output * agent.outputCostPerMTok) / 1e6 : 0;
      this.cost.items.push({ category: 'model', description: result.model, cost, inputTokens: input, outputTokens: output });
      this.cost.total += cost;
      span.tokens = { input, output, total: input + output };
    }
    if (result.children) span.children = result.children;
    return result;
  }

  /** Fetches the secrets a block's inputs name, once per run, and registers their values for redaction. */
  private async fetchSecrets(block: Block): Promise<void> {
    const names = collectSecretNames(Object.values(block.subBlocks ?? {}).map((s) => s?.value));
    for (const key of ['collection', 'whileCondition', 'doWhileCondition'] as const) collectSecretNames(block.data?.[key], names);
    await this.fetchSecretNames(names);
  }

  private async fetchSecretNames(names: Iterable<string>): Promise<void> {
    for (const name of names) {
      if (this.secrets.has(name)) continue;
      const provider = this.options.secrets;
      const found = typeof provider === 'function' ? await provider(name) : provider && Object.hasOwn(provider, name) ? provider[name] : undefined;
      const entry = typeof found === 'string' ? { value: found, redact: true } : found;
      if (entry && typeof entry.value === 'string') {
        this.secrets.set(name, entry.value);
        if (entry.redact) this.redactor.add(entry.value);
      }
    }
  }

  private blockContext(block: Block, frame: Frame, signal: AbortSignal, span: TraceSpan): BlockContext {
    const source = this.source(frame, block);
    const engine = this.engine;
    return {
      block,
      runId: this.runId,
      workflowId: this.workflow.id,
      runInput: this.input,
      signal,
      depth: this.depth,
      limits: engine.options.limits,
      sandbox: engine.options.sandbox,
      egress: engine.options.egress,
      agent: engine.options.agent,
      resources: this.options.resources,
      raw: (id) => block.subBlocks?.[id]?.value,
      resolve: (value) => resolveValue(value, source),
      resolveJson: (value, what) => (typeof value === 'string' ? resolveJson(value, source, what) : resolveValue(value, source)),
      resolveCode: (code, kind) => resolveCode(code, source, kind),
      setTraceInput: (value) => {
        span.input = value;
      },
      setVariable: (name, compute) => {
        const key = normalizeName(name);
        const variable = [...this.variables.values()].find((v) => normalizeName(v.name) === key);
        if (!variable) throw new ExecutionError('BLOCK_EXECUTION_FAILED', `No workflow variable named "${name}"`, block);
        variable.value = compute(variable);
        return variable;
      },
      setResponse: (response) => {
        this.response = response;
      },
      edgeTargets: (handle) =>
        this.edges
          .filter((e) => e.source === block.id && e.sourceHandle === handle)
          .map((e) => this.blocks[e.target])
          .filter((b): b is Block => b !== undefined),
      runChild: (workflow, input) =>
        engine.execute(workflow, {
          input,
          signal,
          secrets: this.options.secrets,
          resources: this.options.resources,
          resolveWorkflow: this.options.resolveWorkflow,
          mcp: this.options.mcp,
          depth: this.depth + 1,
          maxBlockExecutions: this.options.maxBlockExecutions,
        }),
      resolveWorkflow: this.options.resolveWorkflow,
      mcp: this.options.mcp,
      addChildCost: (cost) => {
        this.cost.total += cost.total;
        this.cost.items.push(...cost.items);
      },
    };
  }

  // ---- containers --------------------------------------------------------------------------------------------

  /** Entry blocks of a container: targets of its start edges, else children nothing inside points to. */
  private containerScope(container: Block): { nodes: string[]; entries: string[] } {
    const nodes = this.childrenOf.get(container.id) ?? [];
    const set = new Set(nodes);
    const fromContainer = this.edges.filter((e) => e.source === container.id && set.has(e.target));
    let entries = fromContainer.filter((e) => !e.sourceHandle || CONTAINER_START_HANDLES.has(e.sourceHandle) || e.sourceHandle === 'source').map((e) => e.target);
    if (entries.length === 0) {
      const targeted = new Set(this.edges.filter((e) => set.has(e.source) && set.has(e.target)).map((e) => e.target));
      entries = nodes.filter((id) => !targeted.has(id));
    }
    return { nodes, entries };
  }

  /** A loop's or parallel's collection: an array, an object (its entries), JSON text or a reference. */
  private collection(block: Block, frame: Frame): unknown[] {
    let raw = block.data?.collection;
    if (typeof raw === 'string') {
      const text = raw.trim();
      raw = text === '' ? [] : resolveJson(text, this.source(frame, block), `The collection of "${block.name}"`);
    }
    if (Array.isArray(raw)) return raw;
    if (raw && typeof raw === 'object') return Object.entries(raw);
    if (raw === undefined || raw === null) return [];
    throw new ExecutionError('BLOCK_EXECUTION_FAILED', `The collection of "${block.name}" is not a list or an object`, block);
  }

  private async runIteration(container: Block, frame: Frame, signal: AbortSignal, child: Partial<Frame>, label: string, type: string, index: number): Promise<unknown> {
    const { nodes, entries } = this.containerScope(container);
    const started = Date.now();
    const span: TraceSpan = {
      id: randomUUID(),
      name: `${label} ${index + 1}`,
      type,
      status: 'success',
      startTime: new Date(started).toISOString(),
      endTime: '',
      durationMs: 0,
      relativeStartMs: started - this.startedAtMs,
      children: [],
    };
    frame.spans.push(span);
    const inner: Frame = { outputs: new Map(), parent: frame, iteration: [...frame.iteration, index], spans: span.children!, nested: true, ...child };
    try {
      const outcome = await this.runScope(nodes, entries, inner, signal);
      // After the container, `<child.x>` reads the last iteration's output.
      for (const [id, output] of inner.outputs) frame.outputs.set(id, output);
      return outcome.lastOutput;
    } catch (e) {
      span.status = 'error';
      throw e;
    } finally {
      span.durationMs = Date.now() - started;
      span.endTime = new Date().toISOString();
    }
  }

  private async runLoop(block: Block, frame: Frame, signal: AbortSignal, span: TraceSpan): Promise<BlockResult> {
    const data = block.data ?? {};
    const loopType = data.loopType ?? 'for';
    const cap = this.engine.options.limits.maxLoopIterations;
    span.children = [];
    const spanFrame: Frame = { ...frame, spans: span.children };
    const results: unknown[] = [];
    const source = (index: number, item: unknown, items: unknown[] | null) => this.source({ ...frame, loop: { index, currentItem: item, items } }, block);
    const test = async (expression: string | undefined, index: number, what: string): Promise<boolean> => {
      if (!expression || expression.trim() === '') throw new ExecutionError('BLOCK_EXECUTION_FAILED', `The loop "${block.name}" has no ${what} condition`, block);
      const { code, refs } = resolveCode(expression, source(index, results.at(-1), null), 'expression');
      const r = await this.engine.options.sandbox.run({ code: `return Boolean(${code}\n)`, refs, signal, timeoutMs: this.engine.options.limits.functionTimeoutMs });
      return r.value === true;
    };
    const iterate = (index: number, item: unknown, items: unknown[] | null) =>
      this.runIteration(block, spanFrame, signal, { loop: { index, currentItem: item, items } }, 'Iteration', 'loop-iteration', index);

    if (loopType === 'for') {
      const count = Number(data.count ?? 5);
      if (!Number.isInteger(count) || count < 0) throw new ExecutionError('BLOCK_EXECUTION_FAILED', `The loop "${block.name}" has an invalid count: ${data.count}`, block);
      if (count > cap) throw new ExecutionError('BLOCK_EXECUTION_FAILED', `The loop "${block.name}" asks for ${count} iterations; the limit is ${cap}`, block);
      span.input = { loopType, count };
      for (let i = 0; i < count; i++) results.push(await iterate(i, i, null));
    } else if (loopType === 'forEach') {
      const items = this.collection(block, frame);
      if (items.length > cap) throw new ExecutionError('BLOCK_EXECUTION_FAILED', `The loop "${block.name}" has ${items.length} items; the limit is ${cap}`, block);
      span.input = { loopType, items };
      for (let i = 0; i < items.length; i++) results.push(await iterate(i, items[i], items));
    } else if (loopType === 'while' || loopType === 'doWhile') {
      const expression = loopType === 'while' ? data.whileCondition : (data.doWhileCondition ?? data.whileCondition);
      span.input = { loopType, condition: expression };
      for (let i = 0; ; i++) {
        if (loopType === 'while' && !(await test(expression, i, 'while'))) break;
        if (i >= cap) throw new ExecutionError('BLOCK_EXECUTION_FAILED', `The loop "${block.name}" reached its limit of ${cap} iterations`, block);
        results.push(await iterate(i, i, null));
        if (loopType === 'doWhile' && !(await test(expression, i + 1, 'do-while'))) break;
      }
    } else {
      throw new ExecutionError('BLOCK_EXECUTION_FAILED', `Unknown loop type "${String(loopType)}"`, block);
    }
    return { output: { results } };
  }

  private async runParallel(block: Block, frame: Frame, signal: AbortSignal, span: TraceSpan): Promise<BlockResult> {
    const data = block.data ?? {};
    const cap = this.engine.options.limits.maxLoopIterations;
    let items: unknown[] | null = null;
    let count: number;
    if ((data.parallelType ?? 'count') === 'collection') {
      items = this.collection(block, frame);
      count = items.length;
    } else {
      count = Number(data.count ?? 5);
      if (!Number.isInteger(count) || count < 0) throw new ExecutionError('BLOCK_EXECUTION_FAILED', `The parallel "${block.name}" has an invalid count: ${data.count}`, block);
    }
    if (count > cap) throw new ExecutionError('BLOCK_EXECUTION_FAILED', `The parallel "${block.name}" asks for ${count} branches; the limit is ${cap}`, block);
    span.input = items ? { parallelType: 'collection', items } : { parallelType: 'count', count };
    span.children = [];
    const spanFrame: Frame = { ...frame, spans: span.children };
    const limit = Math.max(1, Math.min(this.engine.options.limits.parallelConcurrency, typeof data.batchSize === 'number' && data.batchSize > 0 ? data.batchSize : Infinity));
    const results: unknown[] = new Array(count).fill(null);
    const controller = new AbortController();
    const branchSignal = AbortSignal.any([signal, controller.signal]);
    let next = 0;
    let firstError: unknown = null;
    const worker = async () => {
      while (next < count && firstError === null) {
        const i = next++;
        const item = items ? items[i] : i;
        try {
          results[i] = await this.runIteration(block, spanFrame, branchSignal, { parallel: { index: i, currentItem: item, items } }, 'Branch', 'parallel-branch', i);
        } catch (e) {
          // The first failure is the cause; the branches it stops fail after it with CANCELLED.
          if (firstError === null) {
            firstError = e;
            controller.abort(e);
          }
          return;
        }
      }
    };
    await Promise.all(Array.from({ length: Math.min(limit, count) }, worker));
    if (firstError !== null) throw firstError;
    span.children.sort((a, b) => Number(a.name.split(' ')[1]) - Number(b.name.split(' ')[1]));
    return { output: { results } };
  }
}

/** Resolves after ms, or rejects when the signal fires. */
export function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason);
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal.reason);
    };
    signal.addEventListener('abort', onAbort, { once: true });
  });
}

export type { RunError };
