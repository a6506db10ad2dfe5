// Builds small workflow graphs for the engine tests: blocks keyed by an id derived from their name.
import { Engine, EgressPolicy, type Block, type Edge, type Variable, type EngineOptions, type WorkflowDefinition } from '../../src/execution/index.ts';
import { SandboxPool } from '../../src/sandbox/pool.ts';

export function block(type: string, name: string, sub: Record<string, unknown> = {}, extra: Partial<Block> = {}): Block {
  const id = extra.id ?? name.toLowerCase().replace(/\s+/g, '');
  return {
    id,
    type,
    name,
    enabled: true,
    subBlocks: Object.fromEntries(Object.entries(sub).map(([k, value]) => [k, { id: k, type: 'short-input', value }])),
    outputs: {},
    ...extra,
  };
}

let edgeSeq = 0;
export function edge(source: string, target: string, sourceHandle: string | null = 'source'): Edge {
  return { id: `e${++edgeSeq}`, source, target, sourceHandle, targetHandle: 'target' };
}

export function workflow(blocks: Block[], edges: Edge[], variables: Omit<Variable, 'id'>[] = [], id = 'wf-test'): WorkflowDefinition {
  return {
    id,
    name: id,
    state: {
      blocks: Object.fromEntries(blocks.map((b) => [b.id, b])),
      edges,
      loops: {},
      parallels: {},
      variables: Object.fromEntries(variables.map((v, i) => [`var${i}`, { id: `var${i}`, ...v }])),
    },
  };
}

export const start = (inputFormat: unknown[] = []) => block('start_trigger', 'Start', { inputFormat });
export const fn = (name: string, code: string, extra: Partial<Block> = {}) => block('function', name, { code }, extra);

/** An engine with a small sandbox pool; loopback egress allowed only when asked. */
export async function testEngine(overrides: Partial<EngineOptions> = {}, egress = new EgressPolicy({ allowPrivate: false, allowCidrs: [] })): Promise<{ engine: Engine; sandbox: SandboxPool }> {
  const sandbox = new SandboxPool({
    size: 2,
    timeoutMs: 2000,
    memoryMb: 64,
    fetch: egress.sandboxFetch(2000),
  });
  await sandbox.start();
  const engine = new Engine({
    sandbox,
    egress,
    agent: null,
    limits: { maxLoopIterations: 50, parallelConcurrency: 4, maxChildDepth: 2, functionTimeoutMs: 2000, apiTimeoutMs: 2000 },
    ...overrides,
  });
  return { engine, sandbox };
}
