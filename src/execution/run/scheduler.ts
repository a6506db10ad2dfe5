// The scheduler: runs a scope (the top level, one loop iteration or one parallel branch) as a DAG. A block starts
// once every edge into it is resolved and at least one was taken; a block whose incoming edges were all left
// untaken is skipped, and its own outgoing edges with it, so skipping flows down untaken branches. Independent
// branches run concurrently. Each block runs with its span, events, retries and error path.
import type { BlockResult } from '../blocks.ts';
import { ExecutionError } from '../errors.ts';
import { sleep } from '../sleep.ts';
import { inSpan } from '../../ops/spans.ts';
import type { Block, Edge, PausePoint, SkippedBlock, TraceSpan } from '../types.ts';
import { blockContext, fetchSecrets } from './context.ts';
import type { Frame, NodeOutcome, ScopeOutcome, ScopeResume, ScopeState } from './frame.ts';
import { now, type RunState } from './state.ts';
import { runLoop, runParallel } from './subflows.ts';
import { closeSpan, openSpan } from './trace.ts';

/**
 * Runs a set of sibling blocks until nothing more can start. Rejects with the first unhandled block failure,
 * after the other branches of the scope stop. `resume` continues a paused top-level scope.
 */
export function runScope(run: RunState, nodes: string[], entries: string[], frame: Frame, parentSignal: AbortSignal, resume?: ScopeResume): Promise<ScopeOutcome> {
  const nodeSet = new Set(nodes);
  const incoming = new Map<string, Edge[]>();
  const outgoing = new Map<string, Edge[]>();
  for (const e of run.edges) {
    if (!nodeSet.has(e.source) || !nodeSet.has(e.target)) continue;
    incoming.set(e.target, [...(incoming.get(e.target) ?? []), e]);
    outgoing.set(e.source, [...(outgoing.get(e.source) ?? []), e]);
  }
  const state: ScopeState = resume?.state ?? { status: new Map(), edges: new Map(), completed: [] };
  for (const id of nodes) if (!state.status.has(id)) state.status.set(id, 'pending');
  const scopeController = new AbortController();
  const signal = AbortSignal.any([parentSignal, scopeController.signal]);
  const paused: PausePoint[] = resume ? resume.paused : [];

  return new Promise<ScopeOutcome>((resolve, reject) => {
    let running = 0;
    let failure: ExecutionError | null = null;
    let lastOutput: unknown = null;
    if (resume) {
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
      const block = run.blocks[id]!;
      run.skipped.push({ blockId: id, blockName: block.name, blockType: block.type, reason });
      skipChildren(run, id, reason);
      run.emit({ type: 'block_skipped', runId: run.runId, at: now(), ...run.ref(block, frame), reason });
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
      const block = run.blocks[id]!;
      if (block.enabled === false) {
        state.status.set(id, 'pending');
        return skip(id, 'disabled');
      }
      if (failure) return;
      state.status.set(id, 'running');
      running++;
      executeNode(run, block, frame, signal, (outgoing.get(id) ?? []).some((e) => e.sourceHandle === 'error')).then(
        (outcome) => {
          running--;
          if (!failure) complete(id, outcome);
          settleIfIdle();
        },
        (e: unknown) => {
          running--;
          if (!failure) {
            failure = e instanceof ExecutionError ? e : run.toExecutionError(e);
            scopeController.abort(failure);
          }
          settleIfIdle();
        },
      );
    };

    if (resume) complete(resume.resumed.id, resume.resumed.outcome);
    else {
      for (const id of nodes) {
        if (entries.includes(id)) launch(id);
        else if (!incoming.get(id)?.length) skip(id, 'unreachable');
      }
    }
    settleIfIdle();
  });
}

/** A skipped container skips everything inside it. */
function skipChildren(run: RunState, containerId: string, reason: SkippedBlock['reason']): void {
  for (const child of run.childrenOf.get(containerId) ?? []) {
    const block = run.blocks[child]!;
    run.skipped.push({ blockId: child, blockName: block.name, blockType: block.type, reason });
    skipChildren(run, child, reason);
  }
}

/** One block (or container) with its span, events, retries and error path. */
async function executeNode(run: RunState, block: Block, frame: Frame, signal: AbortSignal, hasErrorPath: boolean): Promise<NodeOutcome> {
  const retry = block.retry?.enabled ? block.retry : null;
  const maxTries = retry ? Math.max(1, Math.min(10, Math.floor(retry.maxTries ?? 1))) : 1;
  for (let attempt = 1; ; attempt++) {
    if (signal.aborted) throw run.scopeAbortError(signal);
    const span = openSpan(run, block, frame);
    const ref = run.ref(block, frame);
    run.emit({ type: 'block_started', runId: run.runId, at: span.startTime, ...ref });
    const started = performance.now();
    try {
      run.blockExecutions++;
      const limit = run.options.maxBlockExecutions;
      if (limit !== undefined && run.blockExecutions > limit) {
        throw new ExecutionError('USAGE_LIMIT_EXCEEDED', `The run exceeded its limit of ${limit} block executions`);
      }
      const result = await inSpan(`block ${block.type}`, { attributes: { 'owa.block.id': block.id, 'owa.block.type': block.type, 'owa.block.attempt': attempt } }, () => runBlock(run, block, frame, signal, span));
      const durationMs = performance.now() - started;
      closeSpan(run, span, 'success', result.output, durationMs);
      if (result.pause) {
        if (frame.nested) throw new ExecutionError('BLOCK_EXECUTION_FAILED', 'A human-in-the-loop block cannot pause inside a loop or parallel');
        const pause: PausePoint = { blockId: block.id, blockName: block.name, pausedAt: now(), ...result.pause };
        return { output: null, handles: null, pause };
      }
      run.emit({ type: 'block_completed', runId: run.runId, at: now(), ...ref, output: result.output, durationMs });
      const selected = result.handles ? new Set(result.handles) : null;
      return {
        output: result.output,
        handles: selected ? (e) => e.sourceHandle !== 'error' && selected.has(e.sourceHandle ?? 'source') : null,
      };
    } catch (e) {
      const durationMs = performance.now() - started;
      const error = (signal.aborted ? run.scopeAbortError(signal) : run.toBlockError(e, block)).setBlock(block);
      const finalAttempt = attempt >= maxTries || signal.aborted || error.code === 'USAGE_LIMIT_EXCEEDED';
      const handled = finalAttempt && hasErrorPath && !signal.aborted && error.code !== 'USAGE_LIMIT_EXCEEDED';
      closeSpan(run, span, 'error', undefined, durationMs, error, handled);
      if (!finalAttempt) {
        run.emit({ type: 'block_retry', runId: run.runId, at: now(), ...ref, attempt, error: error.message });
        await sleep(Math.max(0, retry?.waitBetweenTriesMs ?? 0), signal).catch(() => undefined);
        continue;
      }
      run.emit({ type: 'block_failed', runId: run.runId, at: now(), ...ref, error: error.toRunError(), handled, durationMs });
      if (handled) {
        return { output: { error: error.message, code: error.code }, handles: (edge) => edge.sourceHandle === 'error' };
      }
      throw error;
    }
  }
}

/** Runs one block: a container through subflows, any other type through its handler; records model cost. */
async function runBlock(run: RunState, block: Block, frame: Frame, signal: AbortSignal, span: TraceSpan): Promise<BlockResult> {
  await fetchSecrets(run, block);
  if (block.type === 'loop') return runLoop(run, runScope, block, frame, signal, span);
  if (block.type === 'parallel') return runParallel(run, runScope, block, frame, signal, span);
  const handler = run.engine.handlers[block.type];
  if (!handler) throw new ExecutionError('EXECUTION_FAILED', `Block type "${block.type}" cannot run on this server`, block);
  const ctx = blockContext(run, block, frame, signal, span);
  const result = await handler(ctx);
  if (result.tokens && result.model) {
    const { input, output } = result.tokens;
    const agent = run.engine.options.agent;
    const cost = agent ? (input * agent.inputCostPerMTok + output * agent.outputCostPerMTok) / 1e6 : 0;
    run.cost.items.push({ category: 'model', description: result.model, cost, inputTokens: input, outputTokens: output });
    run.cost.total += cost;
    span.tokens = { input, output, total: input + output };
  }
  if (result.children) span.children = result.children;
  return result;
}
