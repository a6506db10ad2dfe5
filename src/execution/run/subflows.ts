// Loops and parallels: a container runs its child blocks (data.parentId) as a nested scope per iteration or
// branch, through the scheduler it is handed. A loop's iterations run one after another; a parallel's branches
// run up to a concurrency limit, and the first branch to fail stops the others.
import type { BlockResult } from '../blocks.ts';
import { ExecutionError } from '../errors.ts';
import { resolveCode, resolveJson } from '../references.ts';
import type { Block, TraceSpan } from '../types.ts';
import { referenceSource } from './context.ts';
import type { Frame, ScopeOutcome } from './frame.ts';
import type { RunState } from './state.ts';
import { openGroupSpan } from './trace.ts';

/** Runs a set of sibling blocks to completion: the scheduler, handed in (it runs containers through this module). */
export type ScopeRunner = (run: RunState, nodes: string[], entries: string[], frame: Frame, signal: AbortSignal) => Promise<ScopeOutcome>;

const CONTAINER_START_HANDLES = new Set(['loop-start-source', 'parallel-start-source']);

/** Entry blocks of a container: targets of its start edges, else children nothing inside points to. */
function containerScope(run: RunState, container: Block): { nodes: string[]; entries: string[] } {
  const nodes = run.childrenOf.get(container.id) ?? [];
  const set = new Set(nodes);
  const fromContainer = run.edges.filter((e) => e.source === container.id && set.has(e.target));
  let entries = fromContainer.filter((e) => !e.sourceHandle || CONTAINER_START_HANDLES.has(e.sourceHandle) || e.sourceHandle === 'source').map((e) => e.target);
  if (entries.length === 0) {
    const targeted = new Set(run.edges.filter((e) => set.has(e.source) && set.has(e.target)).map((e) => e.target));
    entries = nodes.filter((id) => !targeted.has(id));
  }
  return { nodes, entries };
}

/** A loop's or parallel's collection: an array, an object (its entries), JSON text or a reference. */
function collection(run: RunState, block: Block, frame: Frame): unknown[] {
  let raw = block.data?.collection;
  if (typeof raw === 'string') {
    const text = raw.trim();
    raw = text === '' ? [] : resolveJson(text, referenceSource(run, frame, block), `The collection of "${block.name}"`);
  }
  if (Array.isArray(raw)) return raw;
  if (raw && typeof raw === 'object') return Object.entries(raw);
  if (raw === undefined || raw === null) return [];
  throw new ExecutionError('BLOCK_EXECUTION_FAILED', `The collection of "${block.name}" is not a list or an object`, block);
}

async function runIteration(
  run: RunState,
  runScope: ScopeRunner,
  container: Block,
  frame: Frame,
  signal: AbortSignal,
  child: Partial<Frame>,
  label: string,
  type: string,
  index: number,
): Promise<unknown> {
  const { nodes, entries } = containerScope(run, container);
  const started = Date.now();
  const span = openGroupSpan(run, frame, `${label} ${index + 1}`, type, started);
  const inner: Frame = { outputs: new Map(), parent: frame, iteration: [...frame.iteration, index], spans: span.children!, nested: true, ...child };
  try {
    const outcome = await runScope(run, nodes, entries, inner, signal);
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

export async function runLoop(run: RunState, runScope: ScopeRunner, block: Block, frame: Frame, signal: AbortSignal, span: TraceSpan): Promise<BlockResult> {
  const data = block.data ?? {};
  const loopType = data.loopType ?? 'for';
  const { limits, sandbox } = run.engine.options;
  const cap = limits.maxLoopIterations;
  span.children = [];
  const spanFrame: Frame = { ...frame, spans: span.children };
  const results: unknown[] = [];
  const source = (index: number, item: unknown, items: unknown[] | null) => referenceSource(run, { ...frame, loop: { index, currentItem: item, items } }, block);
  const test = async (expression: string | undefined, index: number, what: string): Promise<boolean> => {
    if (!expression || expression.trim() === '') throw new ExecutionError('BLOCK_EXECUTION_FAILED', `The loop "${block.name}" has no ${what} condition`, block);
    const { code, refs } = resolveCode(expression, source(index, results.at(-1), null), 'expression');
    const r = await sandbox.run({ code: `return Boolean(${code}\n)`, refs, signal, timeoutMs: limits.functionTimeoutMs });
    return r.value === true;
  };
  const iterate = (index: number, item: unknown, items: unknown[] | null) =>
    runIteration(run, runScope, block, spanFrame, signal, { loop: { index, currentItem: item, items } }, 'Iteration', 'loop-iteration', index);

  if (loopType === 'for') {
    const count = Number(data.count ?? 5);
    if (!Number.isInteger(count) || count < 0) throw new ExecutionError('BLOCK_EXECUTION_FAILED', `The loop "${block.name}" has an invalid count: ${data.count}`, block);
    if (count > cap) throw new ExecutionError('BLOCK_EXECUTION_FAILED', `The loop "${block.name}" asks for ${count} iterations; the limit is ${cap}`, block);
    span.input = { loopType, count };
    for (let i = 0; i < count; i++) results.push(await iterate(i, i, null));
  } else if (loopType === 'forEach') {
    const items = collection(run, block, frame);
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

export async function runParallel(run: RunState, runScope: ScopeRunner, block: Block, frame: Frame, signal: AbortSignal, span: TraceSpan): Promise<BlockResult> {
  const data = block.data ?? {};
  const { limits } = run.engine.options;
  const cap = limits.maxLoopIterations;
  let items: unknown[] | null = null;
  let count: number;
  if ((data.parallelType ?? 'count') === 'collection') {
    items = collection(run, block, frame);
    count = items.length;
  } else {
    count = Number(data.count ?? 5);
    if (!Number.isInteger(count) || count < 0) throw new ExecutionError('BLOCK_EXECUTION_FAILED', `The parallel "${block.name}" has an invalid count: ${data.count}`, block);
  }
  if (count > cap) throw new ExecutionError('BLOCK_EXECUTION_FAILED', `The parallel "${block.name}" asks for ${count} branches; the limit is ${cap}`, block);
  span.input = items ? { parallelType: 'collection', items } : { parallelType: 'count', count };
  span.children = [];
  const spanFrame: Frame = { ...frame, spans: span.children };
  const limit = Math.max(1, Math.min(limits.parallelConcurrency, typeof data.batchSize === 'number' && data.batchSize > 0 ? data.batchSize : Infinity));
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
        results[i] = await runIteration(run, runScope, block, spanFrame, branchSignal, { parallel: { index: i, currentItem: item, items } }, 'Branch', 'parallel-branch', i);
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
