// Issue 5: what the executor adds on top of the work itself. A 10-block workflow (start, function, condition with
// two branches, a loop of 10 around a function, a function, variables, response) run synchronously through the
// engine, against the same JavaScript called directly in-process, in the same run. Target: executor overhead under
// 1 ms per block at p50. Function code runs in the sandbox pool (one IPC round trip and a fresh vm context each),
// so the sandbox round trip alone is measured too.
//
// Not measured here (they need the HTTP wiring): the HTTP sync latency (POST /execute through autocannon, like
// the foundation suite) and the 10,000-run async queue drain (enqueue 10,000 runs of a 3-block workflow through
// POST /execute {async: true}, then time until the store reports none queued or running; runs/s and the server's
// peak RSS from /proc/<pid>/status VmHWM).
import { Engine, EgressPolicy, type Block, type Edge, type WorkflowDefinition } from '../../src/execution/index.ts';
import { SandboxPool } from '../../src/sandbox/pool.ts';
import { figure, fmt, median, percentile, tenBlockDirect, time } from '../lib.ts';

const sub = (values: Record<string, unknown>) => Object.fromEntries(Object.entries(values).map(([id, value]) => [id, { id, type: 'short-input', value }]));
const block = (id: string, type: string, name: string, values: Record<string, unknown> = {}, extra: Partial<Block> = {}): Block => ({ id, type, name, enabled: true, subBlocks: sub(values), outputs: {}, ...extra });
let n = 0;
const edge = (source: string, target: string, sourceHandle = 'source'): Edge => ({ id: `e${++n}`, source, target, sourceHandle });

function benchWorkflow(): WorkflowDefinition {
  const blocks = [
    block('start', 'start_trigger', 'Start', { inputFormat: [{ name: 'values', type: 'array', required: true }] }),
    block('prepare', 'function', 'Prepare', { code: 'return <start.values>.map((v) => v * 2)' }),
    block('check', 'condition', 'Check', { conditions: [{ id: 'many', title: 'if', value: '<prepare.result>.length > 3' }, { id: 'few', title: 'else', value: '' }] }),
    block('big', 'function', 'Big', { code: 'return <prepare.result>.reduce((a, b) => a + b, 0)' }),
    block('small', 'function', 'Small', { code: 'return 0' }),
    block('repeat', 'loop', 'Repeat', {}, { data: { loopType: 'for', count: 10 } }),
    block('body', 'function', 'Body', { code: 'return <loop.index> * <big.result>' }, { data: { parentId: 'repeat' } }),
    block('summarize', 'function', 'Summarize', { code: 'return <repeat.results>.reduce((a, r) => a + r.result, 0)' }),
    block('note', 'variables', 'Note', { variables: [{ variableName: 'total', value: '<summarize.result>' }] }),
    block('reply', 'response', 'Reply', { data: '{"total": <variable.total>, "sum": <big.result>}' }),
  ];
  const edges = [
    edge('start', 'prepare'),
    edge('prepare', 'check'),
    edge('check', 'big', 'condition-many'),
    edge('check', 'small', 'condition-few'),
    edge('big', 'repeat'),
    edge('repeat', 'body', 'loop-start-source'),
    edge('repeat', 'summarize', 'loop-end-source'),
    edge('summarize', 'note'),
    edge('note', 'reply'),
  ];
  return {
    id: 'bench',
    name: 'bench',
    state: { blocks: Object.fromEntries(blocks.map((b) => [b.id, b])), edges, variables: { v1: { id: 'v1', name: 'total', type: 'number', value: 0 } } },
  };
}

export async function executor(options: { seconds: number; rounds: number }): Promise<void> {
  const sandbox = new SandboxPool({ size: 2, timeoutMs: 5000, memoryMb: 128 });
  await sandbox.start();
  const engine = new Engine({
    sandbox,
    egress: new EgressPolicy({ allowPrivate: false, allowCidrs: [] }),
    agent: null,
    limits: { maxLoopIterations: 1000, parallelConcurrency: 10, maxChildDepth: 5, functionTimeoutMs: 5000, apiTimeoutMs: 5000 },
  });
  const wf = benchWorkflow();
  const input = { values: [1, 2, 3, 4, 5] };
  try {
    const check = await engine.execute(wf, { input });
    if (check.status !== 'completed' || JSON.stringify(check.output) !== JSON.stringify(tenBlockDirect(input))) {
      throw new Error(`The benchmark workflow is wrong: ${JSON.stringify(check.error ?? check.output)}`);
    }
    const executions = check.blockExecutions;
    const runs = Math.max(50, Math.round(options.seconds * 60));
    await time(() => engine.execute(wf, { input }), 30);
    const rounds: { engine: number[]; direct: number[]; rtt: number[] }[] = [];
    for (let r = 0; r < options.rounds; r++) {
      rounds.push({
        direct: await time(() => tenBlockDirect(input), runs),
        engine: await time(() => engine.execute(wf, { input }), runs),
        rtt: await time(() => sandbox.run({ code: 'return 1' }), runs),
      });
    }
    const p = (key: 'engine' | 'direct' | 'rtt', q: number) => median(rounds.map((r) => percentile(r[key], q)));
    const e50 = p('engine', 50);
    const d50 = p('direct', 50);
    const overhead = e50 - d50;
    console.log(`\nexecutor: 10-block workflow run through the engine (median of ${options.rounds} rounds × ${runs} sequential runs)`);
    console.log(`  direct in-process JS     p50 ${fmt(d50 * 1000, 1).padStart(8)} µs   p99 ${fmt(p('direct', 99) * 1000, 1).padStart(8)} µs`);
    console.log(`  engine (sync)            p50 ${fmt(e50, 3).padStart(8)} ms   p99 ${fmt(p('engine', 99), 3).padStart(8)} ms   (${executions} block executions, 14 sandbox calls)`);
    console.log(`  sandbox round trip       p50 ${fmt(p('rtt', 50), 3).padStart(8)} ms   p99 ${fmt(p('rtt', 99), 3).padStart(8)} ms`);
    console.log(`  overhead per block       ${fmt(overhead / 10, 3)} ms (10 blocks)   ${fmt(overhead / executions, 3)} ms per block execution   (target < 1 ms per block)`);
    figure('executor', 'engine p50 (10 blocks)', e50, 'ms', 'lower');
    figure('executor', 'sandbox round trip p50', p('rtt', 50), 'ms', 'lower');
    figure('executor', 'overhead per block execution', overhead / executions, 'ms', 'lower');
  } finally {
    await sandbox.close();
  }
}
