// Runs workflows for the API: executes a run inline (sync and streamed runs) or through the durable queue
// (async runs), writes each outcome, its execution log and its usage in one transaction, and keeps the
// queue's worker pool. No HTTP here. Every status change is a conditional UPDATE in the store, so a run that
// reached a terminal status is never overwritten, even by a worker that finishes late.
//
// A running run is held under a lease (src/workers/lease.ts): the process executing it renews the lease while
// the engine works, sees a cancel asked for by any process at each renewal, and writes the outcome only while
// it still holds the lease. There is no start-up sweep; what happens to a run whose process died is this policy,
// applied by whichever process's worker finds its lease expired:
// - an async run goes back to execution, up to RUN_MAX_ATTEMPTS executions in all (the run read shows the
//   attempt); after that it fails with an error naming the attempts;
// - a sync or streamed run fails with the interruption error (the client that waited for it is gone);
// - a run whose cancel was asked for is cancelled.
// A graceful stop (close) never fails an async run: the queue stops claiming, runs in flight get the shutdown
// grace, and async runs still going are handed back to the queue with their attempt given back.
import { memberCreditProblem } from '../organizations/usage.ts';
import type { SecretVault } from '../secrets/vault.ts';
import { resolveSkills } from '../resources/skills.ts';
import type { ToolRegistry } from '../tools/registry.ts';
import { agentTools } from '../tools/agent.ts';
import type { BlobStore } from '../files/blob-store.ts';
import { Readable } from 'node:stream';
import { randomUUID } from 'node:crypto';
import { runFilePath } from './views.ts';
import { sandboxPoolFor, type SandboxBuilder } from '../sandboxes/index.ts';
import type { WorkspaceCredentials } from '../credentials/service.ts';
import type { RunResources } from '../execution/index.ts';
import type { McpRegistry } from '../mcp/registry.ts';
import type { Logger } from 'pino';
import type { Config } from '../config.ts';
import type { Repositories, Store } from '../store/index.ts';
import type { RunRecord } from '../store/workflow-runs.ts';
import { sortableId } from '../domain/ids.ts';
import { failSpan, hasActiveSpan, inSpan, storedTraceContext, tracingEnabled } from '../ops/spans.ts';
import { moveRun } from './transitions.ts';
import { logStatusOf } from './records.ts';
import { LeaseKeeper, PROCESS_OWNER, leaseUntil } from '../workers/lease.ts';
import { accessRefusal, assertAccess } from '../access-control/policy.ts';
import type { RunHolder } from '../store/workflow-runs.ts';
import type { UsageRecord } from '../store/usage.ts';
import type { Engine, RunEvent, RunOptions, RunResult, RunError, TraceSpan, WorkflowDefinition, Checkpoint, ResumeInput } from '../execution/index.ts';

/** The error a run gets when the process running it stopped before it finished. */
export const INTERRUPTED_ERROR: RunError = {
  code: 'EXECUTION_FAILED',
  message: 'The run was interrupted: the server stopped while it was running. Start it again.',
};

const SHUTDOWN_ERROR: RunError = {
  code: 'EXECUTION_FAILED',
  message: 'The run was interrupted: the server shut down before it finished. Start it again.',
};

/** The error of an async run whose process died under it `attempts` times. */
export const attemptsExhaustedError = (attempts: number): RunError => ({
  code: 'EXECUTION_FAILED',
  message: `The run was interrupted ${attempts} time${attempts === 1 ? '' : 's'}: the server running it stopped each time before it finished (RUN_MAX_ATTEMPTS is ${attempts}). Start it again.`,
});

export const CANCELLED_ERROR: RunError = { code: 'CANCELLED', message: 'The run was cancelled.' };

interface ActiveRun {
  mode: RunRecord['mode'];
  controller: AbortController;
  done: Promise<void>;
  /** Aborted because the server is shutting down (recorded as failed, not cancelled). */
  shutdown: boolean;
  /** Aborted because the server is shutting down gracefully: an async run goes back to the queue. */
  release: boolean;
  /** Blocks that have started and not yet ended (a table cell's `runningBlockIds`). */
  runningBlocks: Set<string>;
}

export interface ExecuteOptions {
  onEvent?: (event: RunEvent) => void;
  timeoutMs?: number;
  resume?: ResumeInput;
}

const json = (v: unknown): string | null => (v === undefined ? null : JSON.stringify(v));

/**
 * How the queue's own writes (claims, lease renewals, outcomes) run: each statement is conditional on the run's
 * status and lease holder, so on Postgres they need no global write lock (row locks alone); a deadlock between two
 * of them on rows is retried.
 */
const QUEUE_WRITE = { rowLocked: true, retryOnSerializationFailure: 3 } as const;

/** Outcomes written in one transaction at most (a group commit). */
const MAX_OUTCOMES_PER_COMMIT = 64;

interface PendingOutcome {
  run: RunRecord;
  result: RunResult;
  resumed: boolean;
  holder: RunHolder;
  resolve: (moved: boolean) => void;
  reject: (err: unknown) => void;
}

const now = () => new Date().toISOString();


function hasHandledErrors(spans: TraceSpan[]): boolean {
  return spans.some((s) => s.errorHandled === true || (s.children ? hasHandledErrors(s.children) : false));
}

/** A result for a run the engine could not even start (its workflow version disappeared, a bad checkpoint…). */
function failedResult(run: RunRecord, error: RunError, startedAt: string): RunResult {
  const endedAt = now();
  return {
    runId: run.key,
    workflowId: run.workflowId,
    status: 'failed',
    output: null,
    response: null,
    blockOutputs: {},
    error,
    startedAt,
    endedAt,
    durationMs: Math.max(0, Date.parse(endedAt) - Date.parse(startedAt)),
    traceSpans: [],
    skipped: [],
    blockExecutions: 0,
    cost: { total: 0, items: [] },
    pause: null,
    checkpoint: null,
  };
}

/** A run outcome as observers see it: bounded fields only (no ids). */
export interface SettledRun {
  trigger: string;
  status: string;
  /** How long this execution took (ms); null when the run was settled without executing here (a cancel). */
  durationMs: number | null;
}

/** Runs that ended while the service shut down: settled on their own, handed back to the queue, or cut off with their requests. */
export interface ShutdownTally {
  finished: number;
  returnedToQueue: number;
  interrupted: number;
}

export class RunService {
  readonly store: Store;
  private readonly engine: Engine;
  readonly config: Config;
  private readonly logger: Logger;
  private readonly active = new Map<string, ActiveRun>();
  private readonly versions = new Map<string, WorkflowDefinition>();
  private readonly waiters = new Set<() => void>();
  private loops: Promise<void>[] = [];
  private stopping = false;
  /** How the runs that ended while shutting down ended, for the server's final log line. */
  private shutdownTally: ShutdownTally = { finished: 0, returnedToQueue: 0, interrupted: 0 };

  private readonly startEngine: () => Promise<void>;
  private engineStarted: Promise<void> | null = null;

  private readonly secrets: SecretVault | null;
  private readonly mcp: McpRegistry | null;

  private readonly tools: ToolRegistry | null;
  private readonly blobs: BlobStore | null;
  private readonly sandboxes: SandboxBuilder | null;
  private readonly workspaceCredentials: WorkspaceCredentials | null;
  private readonly settledObservers = new Set<(run: SettledRun) => void>();
  private readonly owner: string;
  /** Outcomes waiting for the next group commit, and the writer committing them (null when idle). */
  private readonly outcomes: PendingOutcome[] = [];
  private writingOutcomes: Promise<void> | null = null;
  constructor(deps: {
    store: Store;
    engine: Engine;
    config: Config;
    logger: Logger;
    startEngine?: () => Promise<void>;
    secrets?: SecretVault;
    tools?: ToolRegistry;
    blobs?: BlobStore;
    sandboxes?: SandboxBuilder;
    workspaceCredentials?: WorkspaceCredentials;
    mcp?: McpRegistry;
    /** Who holds the runs executed here (tests stand in for a second process with another owner). */
    leaseOwner?: string;
  }) {
    this.owner = deps.leaseOwner ?? PROCESS_OWNER;
    this.workspaceCredentials = deps.workspaceCredentials ?? null;
    this.sandboxes = deps.sandboxes ?? null;
    this.tools = deps.tools ?? null;
    this.blobs = deps.blobs ?? null;
    this.secrets = deps.secrets ?? null;
    this.mcp = deps.mcp ?? null;
    this.startEngine = deps.startEngine ?? (async () => undefined);
    this.store = deps.store;
    this.engine = deps.engine;
    this.config = deps.config;
    this.logger = deps.logger;
  }

  /** Starts the queue's workers (runs a dead process left running are reclaimed by them once their lease expires). */
  async start(): Promise<void> {
    this.stopping = false;
    // Runs queued through another server sharing the database wake this one's idle workers at once.
    this.stopListening ??= this.store.wakes.on('runs', () => this.wakeAll());
    this.loops.push(this.queueLoop());
  }

  /** How many runs are executing in this process right now. */
  get activeCount(): number {
    return this.active.size;
  }

  /**
   * Stops taking queue work, lets executing runs finish for up to `graceMs`, then stops the rest: async runs go
   * back to the queue (never failed by a graceful stop), sync and streamed runs, whose requests are being cut
   * off, fail with an interruption error. Queued runs stay queued for the next claim. Resolves with how the runs
   * that ended meanwhile ended.
   */
  async close(graceMs: number): Promise<ShutdownTally> {
    this.stopping = true;
    this.stopListening?.();
    this.stopListening = null;
    this.shutdownTally = { finished: 0, returnedToQueue: 0, interrupted: 0 };
    this.wakeAll();
    const settled = () => Promise.all([...this.loops, ...[...this.active.values()].map((a) => a.done)]);
    await Promise.race([settled(), new Promise((r) => setTimeout(r, graceMs).unref())]);
    for (const a of this.active.values()) {
      if (a.mode === 'async') a.release = true;
      else a.shutdown = true;
      a.controller.abort();
    }
    await Promise.race([settled(), new Promise((r) => setTimeout(r, 5000).unref())]);
    this.loops = [];
    return { ...this.shutdownTally };
  }

  /** Wakes idle workers, here and on the other servers sharing the database: a run was queued (and committed). */
  notify(): void {
    this.wakeAll();
    this.store.wakes.announce('runs');
  }

  /**
   * Announces a run outcome this process recorded: executed here, cancelled here, or reclaimed from an expired
   * lease and settled here. Observers (metrics, the completion-callback worker) hear each outcome once.
   */
  settled(run: SettledRun): void {
    this.announce(run);
  }

  /** Observes each run outcome this process records (metrics, callbacks); returns the function that stops observing. */
  observeSettled(observer: (run: SettledRun) => void): () => void {
    this.settledObservers.add(observer);
    return () => this.settledObservers.delete(observer);
  }

  private announce(run: SettledRun): void {
    for (const observer of this.settledObservers) {
      try {
        observer(run);
      } catch (err) {
        this.logger.error({ err }, 'a run outcome observer failed');
      }
    }
  }

  /** Blocks of a run executing here that have started and not yet ended; empty for any other run. */
  runningBlockIds(runId: string): string[] {
    return [...(this.active.get(runId)?.runningBlocks ?? [])];
  }

  /** True when the run executes in this process (so cancelling can stop it here). */
  isLocal(runId: string): boolean {
    return this.active.has(runId);
  }

  /** Asks a run executing here to stop; resolves once it has recorded its outcome (or after `waitMs`). */
  async abort(runId: string, waitMs = 5000): Promise<boolean> {
    const a = this.active.get(runId);
    if (!a) return false;
    a.controller.abort();
    await Promise.race([a.done, new Promise((r) => setTimeout(r, waitMs).unref())]);
    return true;
  }

  /** The lease a run accepted here to execute at once (sync, stream, a sync resume) starts under. */
  newLease(): { owner: string; until: string } {
    return { owner: this.owner, until: leaseUntil(this.config.leases.ttlMs) };
  }

  /** The graph a run executes: its deployment version (immutable, so cached) or, for manual runs, the draft. */
  async definitionFor(run: Pick<RunRecord, 'workflowId' | 'source' | 'deploymentVersionId'>): Promise<WorkflowDefinition | null> {
    if (run.source === 'manual' || !run.deploymentVersionId) {
      const w = await this.store.workflows.get(run.workflowId);
      return w ? { id: w.id, name: w.name, state: JSON.parse(w.state) } : null;
    }
    return this.versionDefinition(run.workflowId, run.deploymentVersionId);
  }

  private async versionDefinition(workflowId: string, versionId: string): Promise<WorkflowDefinition | null> {
    const cached = this.versions.get(versionId);
    if (cached) return cached;
    const v = await this.store.workflowVersions.getById(versionId);
    if (!v) return null;
    const def: WorkflowDefinition = { id: workflowId, name: v.name ?? undefined, state: JSON.parse(v.state) };
    if (this.versions.size >= 500) this.versions.delete(this.versions.keys().next().value!);
    this.versions.set(versionId, def);
    return def;
  }

  /** A child-workflow block's target: a deployed workflow of the same workspace. */
  private async resolveChild(workspaceId: string, workflowId: string): Promise<WorkflowDefinition | null> {
    const w = await this.store.workflows.get(workflowId);
    if (!w || w.workspaceId !== workspaceId || w.archived || !w.isDeployed || !w.activeVersionId) return null;
    const def = await this.versionDefinition(w.id, w.activeVersionId);
    return def && { ...def, name: w.name };
  }

  /** The plan's monthly usage limit: a message when the billing account has reached it. */
  /** What blocks of a run in this workspace may use: its skills (and, as they arrive, tools). */
  private resourcesFor(run: RunRecord): RunResources {
    const { workspaceId, triggeredBy: userId } = run;
    const tools = this.tools;
    const blobs = this.blobs;
    const actor = { workspaceId, userId };
    return {
      skills: async (refs) => {
        await assertAccess(this.store, actor, { kind: 'feature', key: 'disableSkills', action: 'Using skills' });
        return resolveSkills(this.store, workspaceId, refs);
      },
      modelRefusal: (model) => accessRefusal(this.store, actor, { kind: 'model', model }),
      ...(this.workspaceCredentials ? { accessToken: (id: string) => this.workspaceCredentials!.accessToken(workspaceId, id) } : {}),
      ...(this.sandboxes ? { sandboxPool: (ref: string) => sandboxPoolFor(this.store, this.sandboxes!, workspaceId, ref) } : {}),
      ...(tools ? { tools: (entries: unknown[], signal: AbortSignal) => agentTools(tools, entries, { workspaceId, userId, signal, timeoutMs: this.config.tools.timeoutMs, accessToken: this.workspaceCredentials ? (id: string) => this.workspaceCredentials!.accessToken(workspaceId, id) : undefined }) } : {}),
      ...(blobs
        ? {
            storeFile: async (file: { name: string; contentType: string; data: Buffer; blockId: string }) => {
              const blob = await blobs.write(Readable.from([file.data]));
              const id = `rf_${randomUUID()}`;
              await this.store.transaction((tx) =>
                tx.runFiles.insert({ id, runId: run.id, workflowId: run.workflowId, workspaceId, blockId: file.blockId, name: file.name, contentType: file.contentType, size: blob.size, blobKey: blob.key, createdAt: now() }),
              );
              return { id, name: file.name, size: blob.size, type: file.contentType, downloadPath: runFilePath(run.workflowId, run.key, id) };
            },
          }
        : {}),
    };
  }

  private async usageProblem(billingAccountId: string, workspaceId: string, userId: string | null): Promise<string | null> {
    // A per-person cap in the workspace's organization applies before the plan's pooled limit.
    const capped = await memberCreditProblem(this.store, workspaceId, userId);
    if (capped) return capped;
    const account = await this.store.billingAccounts.get(billingAccountId);
    const policy = this.config.runs.policies[account?.plan ?? 'free'];
    const used = await this.store.usage.periodTotal(billingAccountId, now().slice(0, 7));
    if (used.cost < policy.usageLimitUsd) return null;
    return `The usage limit of this plan (${policy.usageLimitUsd} USD this month) has been reached; upgrade the plan to run more.`;
  }

  /**
   * Executes a run that is already `running` in the store (a sync/stream run, a claimed queue run, or a resumed
   * one) and records its outcome. Never throws for run failures: they are in the result.
   */
  async execute(run: RunRecord, options: ExecuteOptions = {}): Promise<RunResult> {
    if (!tracingEnabled()) return this.executeHere(run, options);
    // A run executed inside its request (sync, stream) is a child of the request's span; one the queue executes
    // later continues the trace of the request that queued it, as a child of that request's span too.
    const parent = hasActiveSpan() ? undefined : storedTraceContext(run.traceContext);
    const attributes = { 'owa.run.id': run.key, 'owa.workspace.id': run.workspaceId, 'owa.workflow.id': run.workflowId, 'owa.run.trigger': run.trigger, 'owa.run.mode': run.mode, 'owa.run.attempt': run.attempts, 'owa.run.resumed': options.resume !== undefined };
    return inSpan('workflow.run', { attributes, parent }, async (span) => {
      const result = await this.executeHere(run, options);
      span?.setAttributes({ 'owa.run.status': result.status, 'owa.run.block_executions': result.blockExecutions });
      if (result.status === 'failed' && span) failSpan(span, new Error(result.error?.message ?? 'The run failed.'));
      return result;
    });
  }

  private async executeHere(run: RunRecord, options: ExecuteOptions): Promise<RunResult> {
    const controller = new AbortController();
    let settle!: () => void;
    const entry: ActiveRun = { mode: run.mode, controller, done: new Promise<void>((r) => (settle = r)), shutdown: false, release: false, runningBlocks: new Set() };
    this.active.set(run.id, entry);
    const holder: RunHolder = { owner: run.leaseOwner ?? this.owner, attempt: run.attempts };
    // The lease is renewed while the engine works; a renewal that finds a cancel asked for (by any process)
    // stops the run, and one that finds the lease lost stops it without recording anything.
    const keeper = new LeaseKeeper(
      async () => {
        const renewal = await this.store.transaction((tx) => tx.workflowRuns.renewLease(run.id, holder, leaseUntil(this.config.leases.ttlMs)), QUEUE_WRITE);
        if (renewal.held && renewal.cancelRequested) controller.abort();
        return renewal.held;
      },
      this.config.leases.renewMs,
      this.logger,
    );
    keeper.signal.addEventListener('abort', () => controller.abort(), { once: true });
    const startedAt = run.startedAt ?? now();
    let result: RunResult;
    try {
      // The sandbox processes start with the first run, so a server that never runs a workflow spawns none.
      this.engineStarted ??= this.startEngine();
      await this.engineStarted;
      const definition = await this.definitionFor(run);
      const runOptions: RunOptions = {
        // The engine reports the run under the id callers know it by.
        runId: run.key,
        input: JSON.parse(run.input),
        signal: controller.signal,
        timeoutMs: options.timeoutMs,
        onEvent: (event) => {
          if (event.type === 'block_started') entry.runningBlocks.add(event.blockId);
          else if (event.type === 'block_completed' || event.type === 'block_failed' || event.type === 'block_skipped') entry.runningBlocks.delete(event.blockId);
          options.onEvent?.(event);
        },
        triggerBlockId: run.triggerBlockId ?? undefined,
        resolveWorkflow: (id) => this.resolveChild(run.workspaceId, id),
        // {{NAME}}: the triggering user's personal secret, else the workspace's.
        secrets: (name) => this.secrets?.resolveEntry(run.workspaceId, run.triggeredBy, name),
        checkUsage: () => this.usageProblem(run.billingAccountId, run.workspaceId, run.triggeredBy),
        resources: this.resourcesFor(run),
        // MCP tool blocks call the servers registered in the run's workspace.
        mcp: this.mcp
          ? async (serverId, toolName, args, signal) => {
              await assertAccess(this.store, { workspaceId: run.workspaceId, userId: run.triggeredBy }, { kind: 'feature', key: 'disableMcpTools', action: 'Calling MCP tools' });
              return this.mcp!.callTool(run.workspaceId, serverId, toolName, args, signal);
            }
          : undefined,
      };
      // Access Control at run time too: a version deployed before its blocks were restricted does not run them.
      const blockRefusal = definition ? await accessRefusal(this.store, { workspaceId: run.workspaceId, userId: run.triggeredBy }, { kind: 'blocks', blocks: Object.values(definition.state.blocks) }) : null;
      if (!definition) {
        result = failedResult(run, { code: 'EXECUTION_FAILED', message: 'The workflow version this run was started from no longer exists.' }, startedAt);
      } else if (blockRefusal) {
        result = failedResult(run, { code: 'EXECUTION_FAILED', message: blockRefusal }, startedAt);
      } else if (options.resume) {
        const checkpoint = run.checkpoint ? (JSON.parse(run.checkpoint) as Checkpoint) : null;
        result = checkpoint
          ? await this.engine.resume(definition, checkpoint, options.resume, runOptions)
          : failedResult(run, { code: 'EXECUTION_FAILED', message: 'The paused run has no saved state to resume from.' }, startedAt);
      } else {
        result = await this.engine.execute(definition, runOptions);
      }
    } catch (err) {
      const message = err instanceof Error ? err.message : String(err);
      const code = (err as { code?: string }).code === 'INVALID_INPUT' ? 'INVALID_INPUT' : 'EXECUTION_FAILED';
      result = failedResult(run, { code, message }, startedAt);
    }
    keeper.stop();
    if (entry.shutdown && result.status === 'cancelled') result = { ...result, status: 'failed', error: SHUTDOWN_ERROR };
    try {
      if (keeper.lost) {
        // Another process took the run over after this lease expired, or it was settled meanwhile: the outcome is dropped.
        this.logger.warn({ runId: run.id, attempt: holder.attempt }, 'a run lost its lease before it finished; its outcome is dropped');
      } else if (entry.release && result.status === 'cancelled') {
        await this.store.transaction(async (tx) => {
          if (await tx.workflowRuns.release(run.id, holder, now())) await tx.executionLogs.setStatus(run.id, 'pending');
        }, QUEUE_WRITE);
        if (this.stopping) this.shutdownTally.returnedToQueue++;
        // Back in the queue: a server that is not stopping can take it now.
        this.store.wakes.announce('runs');
      } else {
        // An outcome that lost its lease was dropped: nothing settled here, so nothing is announced or counted.
        if (await this.finish(run, result, options.resume !== undefined, holder)) {
          this.settled({ trigger: run.trigger, status: result.status, durationMs: result.durationMs });
          if (this.stopping) this.shutdownTally[result.error === SHUTDOWN_ERROR ? 'interrupted' : 'finished']++;
        }
      }
    } catch (err) {
      this.logger.error({ err, runId: run.id }, 'recording a run outcome failed');
    } finally {
      this.active.delete(run.id);
      settle();
    }
    return result;
  }

  /**
   * running → the result's status, with the log and the usage of this segment, all committed together; false
   * when the lease was lost and nothing was written. Outcomes are group-committed: while one transaction of
   * outcomes commits, the next outcomes gather, and go in the next one (each still conditional on its own
   * lease). A transaction of several that fails is written again one outcome at a time, so one bad outcome
   * fails only itself.
   */
  private finish(run: RunRecord, result: RunResult, resumed: boolean, holder: RunHolder): Promise<boolean> {
    return new Promise<boolean>((resolve, reject) => {
      this.outcomes.push({ run, result, resumed, holder, resolve, reject });
      this.writingOutcomes ??= this.writeOutcomes();
    });
  }

  private async writeOutcomes(): Promise<void> {
    while (this.outcomes.length > 0) {
      const batch = this.outcomes.splice(0, MAX_OUTCOMES_PER_COMMIT);
      try {
        const moved = await this.store.transaction((tx) => this.writeOutcomesIn(tx, batch), QUEUE_WRITE);
        batch.forEach((o, i) => o.resolve(moved[i]!));
      } catch (err) {
        if (batch.length === 1) batch[0]!.reject(err);
        else {
          for (const o of batch) {
            try {
              o.resolve((await this.store.transaction((tx) => this.writeOutcomesIn(tx, [o]), QUEUE_WRITE))[0]!);
            } catch (e) {
              o.reject(e);
            }
          }
        }
      }
    }
    this.writingOutcomes = null;
  }

  /** Each outcome that still holds its lease, then the usage of all of them (its running totals once per account). */
  private async writeOutcomesIn(tx: Repositories, outcomes: readonly PendingOutcome[]): Promise<boolean[]> {
    const moved: boolean[] = [];
    const usage: UsageRecord[] = [];
    for (const o of outcomes) {
      const record = await this.writeOutcome(tx, o);
      moved.push(record !== null);
      if (record) usage.push(record);
    }
    await tx.usage.recordRuns(usage);
    return moved;
  }

  /** The outcome, its log and its callback delivery; the usage to record, or null when the lease was lost and nothing was written. */
  private async writeOutcome(tx: Repositories, { run, result, resumed, holder }: PendingOutcome): Promise<UsageRecord | null> {
    const status = result.status;
    const modelNames = [...new Set(result.cost.items.map((i) => i.description))];
    const moved = await moveRun(tx, run.id, { kind: 'finish', outcome: {
      status,
      output: json(result.output),
      blockOutputs: json(result.blockOutputs),
      error: result.error ? json(result.error) : null,
      checkpoint: status === 'paused' ? json(result.checkpoint) : null,
      pause: result.pause ? json(result.pause) : null,
      resumedCount: run.resumedCount + (resumed ? 1 : 0),
      costTotal: result.cost.total,
      blockExecutions: result.blockExecutions,
      endedAt: result.endedAt,
      durationMs: result.durationMs,
    }, holder });
    if (!moved) return null;
    await tx.executionLogs.complete(run.id, {
      status: logStatusOf(status),
      level: status === 'failed' ? 'error' : 'info',
      endedAt: status === 'paused' ? null : result.endedAt,
      durationMs: result.durationMs,
      costTotal: result.cost.total,
      cost: json(result.cost),
      hasHandledErrors: hasHandledErrors(result.traceSpans),
      errorMessage: result.error?.message ?? null,
      models: modelNames.length ? modelNames.join(',') : null,
      finalOutput: json(result.output),
      traceSpans: json(result.traceSpans),
    });
    return {
      id: sortableId(),
      billingAccountId: run.billingAccountId,
      workspaceId: run.workspaceId,
      workflowId: run.workflowId,
      runId: run.id,
      userId: run.triggeredBy,
      category: 'workflow_run',
      cost: Math.max(0, result.cost.total - (run.costTotal ?? 0)),
      blockExecutions: Math.max(0, result.blockExecutions - run.blockExecutions),
      durationMs: result.durationMs,
      recordedAt: result.endedAt,
    };
  }

  private stopListening: (() => void) | null = null;

  /** Wake-ups so far: a claim that saw this change while it ran looks again instead of idling past the wake-up. */
  private wakeCount = 0;

  private wakeAll(): void {
    this.wakeCount++;
    for (const wake of this.waiters) wake();
    this.waiters.clear();
  }

  /** Resolves at a wake-up, after the poll interval, or when one of `also` settles, whichever comes first. */
  private idle(also: Promise<unknown>[] = []): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.waiters.delete(done);
        resolve();
      };
      const timer = setTimeout(done, this.config.runs.pollIntervalMs);
      timer.unref();
      this.waiters.add(done);
      for (const p of also) p.then(done, done);
    });
  }

  /**
   * Takes up to `room` runs to execute under this process's lease, in one transaction: a running run whose
   * lease expired (its process died), which the policy above either executes again or settles here, else up to
   * `room` of the oldest queued runs in one statement. `settled`: an expired run was found (settled here or
   * taken), so more may be waiting: look again at once.
   */
  private async claim(room: number): Promise<{ runs: RunRecord[]; settled: boolean }> {
    const { ttlMs } = this.config.leases;
    // A run this claim settled (its process died); announced once the transaction committed.
    let ended = null as SettledRun | null;
    const result = await this.store.transaction(async (tx): Promise<{ runs: RunRecord[]; settled: boolean }> => {
      ended = null;
      const at = now();
      const expired = await tx.workflowRuns.nextExpired(at, [...this.active.keys()]);
      if (expired) {
        const max = this.config.runs.maxAttempts;
        const end: { to: 'cancelled' | 'failed'; error: RunError } | null = expired.cancelRequested
          ? { to: 'cancelled', error: CANCELLED_ERROR }
          : expired.mode !== 'async'
            ? { to: 'failed', error: INTERRUPTED_ERROR }
            : expired.attempts >= max
              ? { to: 'failed', error: attemptsExhaustedError(expired.attempts) }
              : null;
        const taken = await tx.workflowRuns.claim(expired, this.owner, leaseUntil(ttlMs), at, { countAttempt: end === null });
        if (!taken) return { runs: [], settled: true };
        if (end) {
          if (await moveRun(tx, expired.id, { kind: 'stop', from: 'running', to: end.to, error: JSON.stringify(end.error), at })) {
            await tx.executionLogs.stop(expired.id, end.to, at, end.error.message);
            ended = { trigger: taken.trigger, status: end.to, durationMs: null };
          }
          this.logger.warn({ runId: expired.id, attempts: expired.attempts, status: end.to }, 'a run whose process stopped was settled');
          return { runs: [], settled: true };
        }
        this.logger.warn({ runId: taken.id, attempt: taken.attempts }, 'a run whose process stopped is executed again');
        await tx.executionLogs.setStatus(taken.id, 'running', taken.resumeInput ? undefined : (taken.startedAt ?? at));
        // More expired or queued runs may be waiting: the loop claims again at once.
        return { runs: [taken], settled: true };
      }
      const runs = await tx.workflowRuns.claimQueued(this.owner, leaseUntil(ttlMs), at, room);
      // Each log shows the run running; a resumed run keeps the start of its first segment.
      const firstStarts = runs.filter((r) => !r.resumeInput && r.startedAt === at);
      await tx.executionLogs.setStatusOf(firstStarts.map((r) => r.id), 'running', at);
      for (const r of runs) if (!firstStarts.includes(r)) await tx.executionLogs.setStatus(r.id, 'running', r.resumeInput ? undefined : (r.startedAt ?? at));
      // The workflow's run count counts a run once, when it first starts; workflows in one order, so two claimers never deadlock on them.
      const perWorkflow = new Map<string, number>();
      for (const r of firstStarts) perWorkflow.set(r.workflowId, (perWorkflow.get(r.workflowId) ?? 0) + 1);
      for (const id of [...perWorkflow.keys()].sort()) await tx.workflows.recordRun(id, at, perWorkflow.get(id));
      return { runs, settled: false };
    }, QUEUE_WRITE);
    if (ended) this.settled(ended);
    return result;
  }

  /**
   * The queue's one claimer: keeps up to RUN_WORKERS runs executing, claiming as many as there is room for in
   * one statement each time (a batch when several runs ended while the previous claim committed), and idles
   * until woken (a run queued here or on another server, a run ended) or the poll interval passed.
   */
  private async queueLoop(): Promise<void> {
    const size = this.config.runs.workers;
    const executing = new Set<Promise<unknown>>();
    while (!this.stopping) {
      if (executing.size >= size) {
        await Promise.race(executing);
        continue;
      }
      const wakesBefore = this.wakeCount;
      let claimed: { runs: RunRecord[]; settled: boolean };
      try {
        claimed = await this.claim(size - executing.size);
      } catch (err) {
        if (this.stopping) return;
        this.logger.error({ err }, 'claiming queued runs failed');
        await this.idle();
        continue;
      }
      for (const run of claimed.runs) {
        const resume = run.resumeInput ? (JSON.parse(run.resumeInput) as ResumeInput) : undefined;
        const done: Promise<unknown> = this.execute(run, { timeoutMs: run.timeoutMs ?? undefined, resume })
          .catch((err: unknown) => this.logger.error({ err, runId: run.id }, 'executing a claimed run failed'))
          .finally(() => executing.delete(done));
        executing.add(done);
      }
      // A full batch (more may be waiting), an expired run, or a wake-up while claiming: look again at once.
      // Otherwise the queue is empty for now: wait for a wake-up, the poll, or a run to end (room for one more).
      if (claimed.settled || executing.size >= size || this.wakeCount !== wakesBefore) continue;
      await this.idle([...executing]);
    }
  }
}
