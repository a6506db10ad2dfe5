// Issue 13, Idempotency-Key. A synchronous POST /execute of the runs suite's three-block workflow (start →
// function → response) three ways on one server: without a key (the baseline), with a fresh key each call
// (first: reserve the key, commit it with the run, store the answer), and with one repeated key (replay: the
// stored answer, no run). Sequential calls, median of the rounds' p50s, printed as ratios to the baseline.
// Targets: replay cheaper than the work (ratio < 1), first no more than 10 % slower (ratio ≤ 1.10).
import path from 'node:path';
import { apiCall, figure, fmt, median, percentile, type Proc, root, startProcess, tempDir, time } from '../lib.ts';
import { threeBlocks } from './runs.ts';

const KEY = 'sk-owa-bench-idempotency-000000000000000';
const ENV = { BOOTSTRAP_API_KEY: KEY, NODE_ENV: 'production', LOG_LEVEL: 'warn', FILE_PURGE_INTERVAL_SECONDS: '0', SANDBOX_POOL_SIZE: '2' };

async function execute(server: Proc, workflowId: string, idempotencyKey: string | null): Promise<void> {
  const r = await fetch(`${server.url}/api/v2/workflows/${workflowId}/execute`, {
    method: 'POST',
    headers: { 'X-API-Key': KEY, 'content-type': 'application/json', ...(idempotencyKey ? { 'Idempotency-Key': idempotencyKey } : {}) },
    body: JSON.stringify({ input: { n: 41 } }),
  });
  const body = (await r.json()) as { data?: { output?: { n?: number } } };
  if (r.status !== 200 || body.data?.output?.n !== 42) throw new Error(`execute answered ${r.status} ${JSON.stringify(body)}`);
}

export async function idempotency(options: { seconds: number; rounds: number }): Promise<void> {
  const dataDir = tempDir('owa-bench-idem-');
  const server = await startProcess(path.join(root, 'bin', 'start.js'), { ...ENV, DATA_DIR: dataDir });
  try {
    const api = (method: string, pathname: string, body?: unknown) => apiCall(server, KEY, method, pathname, body);
    const workspaceId = (await api('GET', '/api/v2/workspaces')).data[0].id as string;
    const workflowId = (await api('POST', '/api/v2/workflows', { workspaceId, name: 'Bench idempotency' })).data.id as string;
    await api('PUT', `/api/v2/workflows/${workflowId}/state`, threeBlocks());
    await api('POST', `/api/v2/workflows/${workflowId}/deploy`, {});

    let fresh = 0;
    const none = () => execute(server, workflowId, null);
    const first = () => execute(server, workflowId, `bench-first-${fresh++}`);
    const replay = () => execute(server, workflowId, 'bench-replay');
    const n = Math.max(50, Math.round(options.seconds * 40));
    // Warm up all three paths (sandbox, statement caches, JIT); the replay key gets its stored answer here.
    for (const fn of [none, first, replay]) await time(fn, 30);

    const rounds: { none: number[]; first: number[]; replay: number[] }[] = [];
    for (let r = 0; r < options.rounds; r++) {
      // Interleaved in small batches so drift (other load on the machine) hits all three alike.
      const round = { none: [] as number[], first: [] as number[], replay: [] as number[] };
      for (let b = 0; b < n; b += 10) {
        round.none.push(...(await time(none, 10)));
        round.first.push(...(await time(first, 10)));
        round.replay.push(...(await time(replay, 10)));
      }
      rounds.push(round);
    }
    const p = (key: 'none' | 'first' | 'replay', q: number) => median(rounds.map((r) => percentile(r[key], q)));
    const base = p('none', 50);
    console.log(`\nidempotency: sync POST /execute of a 3-block workflow (start → function → response), sequential (median of ${options.rounds} rounds × ${n} calls each)`);
    const line = (label: string, key: 'none' | 'first' | 'replay') =>
      console.log(`  ${label.padEnd(34)} p50 ${fmt(p(key, 50), 3).padStart(8)} ms   p99 ${fmt(p(key, 99), 3).padStart(8)} ms   ×${fmt(p(key, 50) / base, 2)} of no key`);
    line('no Idempotency-Key (baseline)', 'none');
    line('fresh key each call (first)', 'first');
    line('repeated key (replay)', 'replay');
    const firstRatio = p('first', 50) / base;
    const replayRatio = p('replay', 50) / base;
    console.log(`  targets: first ≤ 1.10 × baseline: ${firstRatio <= 1.1 ? 'met' : 'MISSED'} (${fmt(firstRatio, 2)}); replay < baseline: ${replayRatio < 1 ? 'met' : 'MISSED'} (${fmt(replayRatio, 2)})`);
    figure('idempotency', 'execute p50, no key', base, 'ms', 'lower');
    figure('idempotency', 'first/no key', firstRatio, 'ratio', 'lower');
    figure('idempotency', 'replay/no key', replayRatio, 'ratio', 'lower');
  } finally {
    await server.stop();
  }
}
