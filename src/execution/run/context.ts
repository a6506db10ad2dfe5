// What a block sees of its run: its inputs' references resolved in the frame it runs in (block outputs, loop and
// parallel state, variables, secrets), and the BlockContext its implementation works through.
import type { BlockContext } from '../blocks.ts';
import { ExecutionError } from '../errors.ts';
import { collectSecretNames, normalizeName, parsePath, resolveCode, resolveJson, resolveValue, UnresolvedReference, walkPath, type ReferenceSource } from '../references.ts';
import type { Block, TraceSpan } from '../types.ts';
import type { Frame } from './frame.ts';
import type { RunState } from './state.ts';

/** References as `block` (the block whose inputs they are in) resolves them in `frame`. */
export function referenceSource(run: RunState, frame: Frame, block: Block): ReferenceSource {
  return {
    secrets: run.secrets,
    knows: (root) => ['start', 'variable', 'loop', 'parallel'].includes(root) || run.byName.has(root),
    lookup: (body) => lookup(run, body, frame, block),
  };
}

/** The value of `<body>`; an unresolvable one fails naming the reference and the block it is in. */
function lookup(run: RunState, body: string, frame: Frame, from: Block): unknown {
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
    const variable = [...run.variables.values()].find((v) => normalizeName(v.name) === name);
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
  let id = run.byName.get(root);
  if (!id && root === 'start') id = run.triggerId ?? undefined;
  if (!id) return fail(`no block named "${path[0]}" exists`);
  const block = run.blocks[id]!;
  for (let f: Frame | null = frame; f; f = f.parent) {
    if (f.outputs.has(id)) return walk(f.outputs.get(id), path.slice(1), `the output of "${block.name}"`);
  }
  return fail(`block "${block.name}" has not run`);
}

/** Fetches the secrets a block's inputs name, once per run, and registers their values for redaction. */
export async function fetchSecrets(run: RunState, block: Block): Promise<void> {
  const names = collectSecretNames(Object.values(block.subBlocks ?? {}).map((s) => s?.value));
  for (const key of ['collection', 'whileCondition', 'doWhileCondition'] as const) collectSecretNames(block.data?.[key], names);
  await fetchSecretNames(run, names);
}

export async function fetchSecretNames(run: RunState, names: Iterable<string>): Promise<void> {
  for (const name of names) {
    if (run.secrets.has(name)) continue;
    const provider = run.options.secrets;
    const found = typeof provider === 'function' ? await provider(name) : provider && Object.hasOwn(provider, name) ? provider[name] : undefined;
    const entry = typeof found === 'string' ? { value: found, redact: true } : found;
    if (entry && typeof entry.value === 'string') {
      run.secrets.set(name, entry.value);
      if (entry.redact) run.redactor.add(entry.value);
    }
  }
}

export function blockContext(run: RunState, block: Block, frame: Frame, signal: AbortSignal, span: TraceSpan): BlockContext {
  const source = referenceSource(run, frame, block);
  const engine = run.engine;
  return {
    block,
    runId: run.runId,
    workflowId: run.workflow.id,
    runInput: run.input,
    signal,
    depth: run.depth,
    limits: engine.options.limits,
    sandbox: engine.options.sandbox,
    egress: engine.options.egress,
    agent: engine.options.agent,
    resources: run.options.resources,
    raw: (id) => block.subBlocks?.[id]?.value,
    resolve: (value) => resolveValue(value, source),
    resolveJson: (value, what) => (typeof value === 'string' ? resolveJson(value, source, what) : resolveValue(value, source)),
    resolveCode: (code, kind) => resolveCode(code, source, kind),
    setTraceInput: (value) => {
      span.input = value;
    },
    setVariable: (name, compute) => {
      const key = normalizeName(name);
      const variable = [...run.variables.values()].find((v) => normalizeName(v.name) === key);
      if (!variable) throw new ExecutionError('BLOCK_EXECUTION_FAILED', `No workflow variable named "${name}"`, block);
      variable.value = compute(variable);
      return variable;
    },
    setResponse: (response) => {
      run.response = response;
    },
    edgeTargets: (handle) =>
      run.edges
        .filter((e) => e.source === block.id && e.sourceHandle === handle)
        .map((e) => run.blocks[e.target])
        .filter((b): b is Block => b !== undefined),
    runChild: (workflow, input) =>
      engine.execute(workflow, {
        input,
        signal,
        secrets: run.options.secrets,
        resources: run.options.resources,
        resolveWorkflow: run.options.resolveWorkflow,
        mcp: run.options.mcp,
        depth: run.depth + 1,
        maxBlockExecutions: run.options.maxBlockExecutions,
      }),
    resolveWorkflow: run.options.resolveWorkflow,
    mcp: run.options.mcp,
    addChildCost: (cost) => {
      run.cost.total += cost.total;
      run.cost.items.push(...cost.items);
    },
  };
}
