// Issue 2: an authenticated, validated GET /api/v2/workspaces against a bare Express route serving the same
// JSON, measured in the same run. Target: the full stack keeps at least 60% of the bare route's throughput.
import path from 'node:path';
import fs from 'node:fs';
import { figure, fmt, load, type LoadResult, median, root, startProcess, tempDir } from '../lib.ts';

const KEY = 'sk-owa-bench-key-0000000000000000';

export async function foundation(options: { seconds: number; rounds: number }): Promise<void> {
  const dataDir = tempDir('owa-bench-');
  const full = await startProcess(path.join(root, 'bin', 'start.js'), { DATA_DIR: dataDir, BOOTSTRAP_API_KEY: KEY, NODE_ENV: 'production', RATE_LIMIT_FREE_API: '100000000' });
  const sample = await (await fetch(`${full.url}/api/v2/workspaces`, { headers: { 'X-API-Key': KEY } })).text();
  const bare = await startProcess(path.join(root, 'bin', 'bench-bare.js'), { BARE_BODY: sample });
  try {
    const target = '/api/v2/workspaces';
    // Warm both (JIT, statement cache, key cache).
    await load(full.url + target, { 'X-API-Key': KEY }, 1);
    await load(bare.url + target, {}, 1);
    const fullRuns: LoadResult[] = [];
    const bareRuns: LoadResult[] = [];
    for (let i = 0; i < options.rounds; i++) {
      bareRuns.push(await load(bare.url + target, {}, options.seconds));
      fullRuns.push(await load(full.url + target, { 'X-API-Key': KEY }, options.seconds));
    }
    const summary = (runs: typeof fullRuns) => ({
      rps: median(runs.map((r) => r.rps)),
      p50: median(runs.map((r) => r.p50)),
      p99: median(runs.map((r) => r.p99)),
      errors: runs.reduce((a, r) => a + r.errors, 0),
    });
    const f = summary(fullRuns);
    const b = summary(bareRuns);
    console.log(`\nfoundation: GET ${target} (median of ${options.rounds} runs × ${options.seconds}s, 10 connections)`);
    console.log(`  bare express route      ${fmt(b.rps, 0).padStart(8)} req/s   p50 ${fmt(b.p50)} ms   p99 ${fmt(b.p99)} ms`);
    console.log(`  full stack (auth+valid.) ${fmt(f.rps, 0).padStart(7)} req/s   p50 ${fmt(f.p50)} ms   p99 ${fmt(f.p99)} ms   errors ${f.errors}`);
    console.log(`  ratio full/bare          ${fmt((f.rps / b.rps) * 100)}%   (target ≥ 60%)`);
    figure('foundation', 'full stack', f.rps, 'req/s', 'higher');
    figure('foundation', 'full/bare', f.rps / b.rps, 'ratio', 'higher');
    figure('foundation', 'full stack p99', f.p99, 'ms', 'lower');
  } finally {
    await full.stop();
    await bare.stop();
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}
