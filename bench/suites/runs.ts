// Issue 5, runs over HTTP. (1) Synchronous latency of a deployed 10-block workflow (function, condition, loop of
// 10, variables, response) through POST /execute, against the same JavaScript called directly in-process and
// against an authenticated GET /api/v2/meta on the same server (the HTTP floor). Target: executor overhead under
// 1 ms per block at p50. (2) Queue drain: 10,000 queued runs of a 3-block workflow (start → function →
// response) written to the store while the server is down, then drained by the server's workers on start; runs/s
// from the first run's start to the last run's end, and the server's peak resident memory (VmHWM).
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { openSqliteStore } from '../../src/store/index.ts';
import { apiCall, figure, fmt, median, percentile, type Proc, root, startProcess, tempDir, tenBlockDirect, time } from '../lib.ts';

const KEY = 'sk-owa-bench-runs-0000000000000000000000';
const ENV = {
  BOOTSTRAP_API_KEY: KEY,
  NODE_ENV: 'production',
  LOG_LEVEL: 'warn',
  FILE_PURGE_INTERVAL_SECONDS: '0',
  RATE_LIMIT_FREE_API: '100000000',
  RATE_LIMIT_FREE_SYNC: '100000000',
  RATE_LIMIT_FREE_ASYNC: '100000000',
  SANDBOX_POOL_SIZE: '2',
};

type B = { id: string; type: string; name: string; position: { x: number; y: number }; subBlocks: Record<string, unknown>; outputs: object; enabled: boolean; data?: object };
const block = (type: string, name: string, values: Record<string, unknown> = {}, data?: object): B => ({
  id: randomUUID(),
  type,
  name,
  position: { x: 0, y: 0 },
  subBlocks: Object.fromEntries(Object.entries(values).map(([id, value]) => [id, { id, type: 'short-input', value }])),
  outputs: {},
  enabled: true,
  ...(data ? { data } : {}),
});
const edge = (source: B, target: B, sourceHandle = 'source') => ({ id: randomUUID(), source: source.id, target: target.id, sourceHandle, targetHandle: 'target' });

/** The executor suite's 10-block graph, with UUID ids as the API wants. */
function tenBlocks() {
  const start = block('start_trigger', 'Start', { inputFormat: [{ name: 'values', type: 'array', required: true }] });
  const prepare = block('function', 'Prepare', { code: 'return <start.values>.map((v) => v * 2)' });
  const check = block('condition', 'Check', { conditions: [{ id: 'many', title: 'if', value: '<prepare.result>.length > 3' }, { id: 'few', title: 'else', value: '' }] });
  const big = block('function', 'Big', { code: 'return <prepare.result>.reduce((a, b) => a + b, 0)' });
  const small = block('function', 'Small', { code: 'return 0' });
  const repeat = block('loop', 'Repeat', {}, { loopType: 'for', count: 10 });
  const body = block('function', 'Body', { code: 'return <loop.index> * <big.result>' }, { parentId: repeat.id, extent: 'parent' });
  const summarize = block('function', 'Summarize', { code: 'return <repeat.results>.reduce((a, r) => a + r.result, 0)' });
  const note = block('variables', 'Note', { variables: [{ variableName: 'total', value: '<summarize.result>' }] });
  const reply = block('response', 'Reply', { data: '{"total": <variable.total>, "sum": <big.result>}' });
  const conditions = (check.subBlocks.conditions as { value: { id: string }[] }).value;
  return {
    blocks: Object.fromEntries([start, prepare, check, big, small, repeat, body, summarize, note, reply].map((b) => [b.id, b])),
    edges: [
      edge(start, prepare),
      edge(prepare, check),
      edge(check, big, `condition-${conditions[0]!.id}`),
      edge(check, small, `condition-${conditions[1]!.id}`),
      edge(big, repeat),
      edge(repeat, body, 'loop-start-source'),
      edge(repeat, summarize, 'loop-end-source'),
      edge(summarize, note),
      edge(note, reply),
    ],
    variables: { v1: { id: 'v1', name: 'total', type: 'number', value: 0 } },
  };
}

/** start → function → response (also the workflow the mcp suite serves as a tool). */
export function threeBlocks() {
  const start = block('start_trigger', 'Start', { inputFormat: [{ name: 'n', type: 'number' }] });
  const inc = block('function', 'Inc', { code: 'return <start.n> + 1' });
  const reply = block('response', 'Reply', { data: '{"n": <inc.result>}' });
  return { blocks: Object.fromEntries([start, inc, reply].map((b) => [b.id, b])), edges: [edge(start, inc), edge(inc, reply)] };
}

const api = (server: Proc, method: string, pathname: string, body?: unknown) => apiCall(server, KEY, method, pathname, body);

async function deployed(server: Proc, workspaceId: string, name: string, state: object): Promise<string> {
  const id = (await api(server, 'POST', '/api/v2/workflows', { workspaceId, name })).data.id as string;
  await api(server, 'PUT', `/api/v2/workflows/${id}/state`, state);
  await api(server, 'POST', `/api/v2/workflows/${id}/deploy`, {});
  return id;
}

function peakRssMb(pid: number): number {
  const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  return Number(/VmHWM:\s+(\d+) kB/.exec(status)?.[1] ?? 0) / 1024;
}

export async function runs(options: { seconds: number; rounds: number }): Promise<void> {
  const dataDir = tempDir('owa-bench-runs-');
  const script = path.join(root, 'bin', 'start.js');
  let server = await startProcess(script, { ...ENV, DATA_DIR: dataDir });
  try {
    const workspaceId = (await api(server, 'GET', '/api/v2/workspaces')).data[0].id as string;
    const ten = await deployed(server, workspaceId, 'Bench ten', tenBlocks());
    const three = await deployed(server, workspaceId, 'Bench three', threeBlocks());

    // (1) synchronous latency
    const input = { values: [1, 2, 3, 4, 5] };
    const check = await api(server, 'POST', `/api/v2/workflows/${ten}/execute`, { input });
    if (check.data.status !== 'completed' || JSON.stringify(check.data.output) !== JSON.stringify(tenBlockDirect(input))) {
      throw new Error(`The benchmark workflow is wrong: ${JSON.stringify(check.data)}`);
    }
    const n = Math.max(50, Math.round(options.seconds * 40));
    const execute = () => api(server, 'POST', `/api/v2/workflows/${ten}/execute`, { input });
    const meta = () => api(server, 'GET', '/api/v2/meta');
    await time(execute, 30);
    await time(meta, 30);
    const rounds: { http: number[]; meta: number[]; direct: number[] }[] = [];
    for (let r = 0; r < options.rounds; r++) {
      rounds.push({ direct: await time(() => tenBlockDirect(input), n), meta: await time(meta, n), http: await time(execute, n) });
    }
    const p = (key: 'http' | 'meta' | 'direct', q: number) => median(rounds.map((r) => percentile(r[key], q)));
    const overhead = p('http', 50) - p('direct', 50);
    console.log(`\nruns: POST /execute of a deployed 10-block workflow, sequential (median of ${options.rounds} rounds × ${n} runs)`);
    console.log(`  direct in-process JS      p50 ${fmt(p('direct', 50) * 1000, 1).padStart(8)} µs   p99 ${fmt(p('direct', 99) * 1000, 1).padStart(8)} µs`);
    console.log(`  GET /api/v2/meta (floor)  p50 ${fmt(p('meta', 50), 3).padStart(8)} ms   p99 ${fmt(p('meta', 99), 3).padStart(8)} ms`);
    console.log(`  POST /execute (sync)      p50 ${fmt(p('http', 50), 3).padStart(8)} ms   p99 ${fmt(p('http', 99), 3).padStart(8)} ms   (14 sandbox calls per run)`);
    console.log(`  overhead vs direct JS     ${fmt(overhead, 3)} ms = ${fmt(overhead / 10, 3)} ms per block (target < 1 ms per block); minus the HTTP floor ${fmt((p('http', 50) - p('meta', 50)) / 10, 3)} ms per block`);
    figure('runs', 'sync execute p50 (10 blocks)', p('http', 50), 'ms', 'lower');
    figure('runs', 'overhead per block', overhead / 10, 'ms', 'lower');

    // (2) queue drain: 10,000 queued runs written while the server is down, drained on start.
    await server.stop();
    const total = 10_000;
    const store = await openSqliteStore(path.join(dataDir, 'workspace.sqlite'));
    const w = (await store.workflows.get(three))!;
    const workspace = (await store.workspaces.get(workspaceId))!;
    const user = (await store.workflowRuns.list({ workflowId: ten, status: null, trigger: null, startDate: null, endDate: null, order: 'asc', after: null, limit: 1 }))[0]!.triggeredBy;
    const at = Date.now();
    for (let i = 0; i < total; i += 1000) {
      await store.transaction(async (tx) => {
        for (let j = i; j < Math.min(total, i + 1000); j++) {
          const id = randomUUID();
          const queuedAt = new Date(at + j).toISOString();
          await tx.workflowRuns.insert({
            id, workflowId: w.id, workspaceId, billingAccountId: workspace.billingAccountId, deploymentVersionId: w.activeVersionId, status: 'queued', mode: 'async',
            trigger: 'api', source: 'deployment', triggerBlockId: null, input: JSON.stringify({ n: j }), timeoutMs: 60_000, triggeredBy: user, resumeInput: null,
            checkpoint: null, pause: null, resumedCount: 0, output: null, blockOutputs: null, error: null, costTotal: null, blockExecutions: 0, queuedAt,
            startedAt: null, endedAt: null, durationMs: null, updatedAt: queuedAt,
          });
          await tx.executionLogs.insert({
            runId: id, workspaceId, workflowId: w.id, deploymentVersionId: w.activeVersionId, trigger: 'api', level: 'info', status: 'pending', startedAt: queuedAt,
            endedAt: null, durationMs: null, costTotal: null, cost: null, hasHandledErrors: false, errorMessage: null, models: null, executedBy: user,
            workflowInput: JSON.stringify({ n: j }), finalOutput: null, traceSpans: null, createdAt: queuedAt,
          });
        }
      });
    }
    await store.close();
    const workers = process.env.RUN_WORKERS ?? '8';
    server = await startProcess(script, { ...ENV, DATA_DIR: dataDir, RUN_WORKERS: workers });
    const db = new DatabaseSync(path.join(dataDir, 'workspace.sqlite'), { readOnly: true });
    const left = () => (db.prepare("SELECT COUNT(*) AS n FROM workflow_runs WHERE workflow_id = ? AND status IN ('queued', 'running')").get(three) as { n: number }).n;
    const deadline = Date.now() + 10 * 60_000;
    while (left() > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
    const peak = peakRssMb(server.child.pid!);
    const span = db
      .prepare("SELECT MIN(started_at) AS first, MAX(ended_at) AS last, SUM(status = 'completed') AS ok, COUNT(*) AS n FROM workflow_runs WHERE workflow_id = ? AND trigger = 'api' AND mode = 'async'")
      .get(three) as { first: string; last: string; ok: number; n: number };
    db.close();
    const seconds = (Date.parse(span.last) - Date.parse(span.first)) / 1000;
    console.log(`\nruns: draining ${total} queued runs of a 3-block workflow (start → function → response), RUN_WORKERS=${workers}, SANDBOX_POOL_SIZE=2`);
    console.log(`  completed ${span.ok} of ${span.n} in ${fmt(seconds, 2)} s = ${fmt(span.ok / seconds, 0)} runs/s (target > 500 runs/s)   server peak RSS ${fmt(peak, 0)} MB`);
    figure('runs', 'queue drain', span.ok / seconds, 'runs/s', 'higher');
    figure('runs', 'server peak RSS (drain)', peak, 'MB', 'lower');
  } finally {
    await server.stop();
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}
