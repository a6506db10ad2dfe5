// Issue 2: an authenticated, validated GET /api/v2/workspaces against a bare Express route serving the same
// JSON, measured in the same run. Target (issue 24): the full stack keeps at least 50% of the bare route's
// throughput. The servers' CPU per request is reported too: on a busy machine it is steadier than req/s.
import path from 'node:path';
import fs from 'node:fs';
import { figure, fmt, load, type LoadResult, median, root, startProcess, tempDir } from '../lib.ts';

const KEY = 'sk-owa-bench-key-0000000000000000';

/** The process's CPU time so far (user + system), in ms: on a busy shared machine CPU per request is steadier than req/s. */
function cpuMs(pid: number): number {
  const fields = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100;
}

async function measured(proc: { child: { pid?: number } }, url: string, headers: Record<string, string>, seconds: number): Promise<LoadResult & { cpuUsPerRequest: number }> {
  const before = cpuMs(proc.child.pid!);
  const r = await load(url, headers, seconds);
  return { ...r, cpuUsPerRequest: ((cpuMs(proc.child.pid!) - before) * 1000) / Math.max(1, r.rps * seconds) };
}

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
    const fullRuns: Awaited<ReturnType<typeof measured>>[] = [];
    const bareRuns: Awaited<ReturnType<typeof measured>>[] = [];
    for (let i = 0; i < options.rounds; i++) {
      bareRuns.push(await measured(bare, bare.url + target, {}, options.seconds));
      fullRuns.push(await measured(full, full.url + target, { 'X-API-Key': KEY }, options.seconds));
    }
    const summary = (runs: typeof fullRuns) => ({
      rps: median(runs.map((r) => r.rps)),
      p50: median(runs.map((r) => r.p50)),
      p99: median(runs.map((r) => r.p99)),
      errors: runs.reduce((a, r) => a + r.errors, 0),
      cpu: median(runs.map((r) => r.cpuUsPerRequest)),
    });
    const f = summary(fullRuns);
    const b = summary(bareRuns);
    console.log(`\nfoundation: GET ${target} (median of ${options.rounds} runs × ${options.seconds}s, 10 connections)`);
    console.log(`  bare express route      ${fmt(b.rps, 0).padStart(8)} req/s   p50 ${fmt(b.p50)} ms   p99 ${fmt(b.p99)} ms`);
    console.log(`  full stack (auth+valid.) ${fmt(f.rps, 0).padStart(7)} req/s   p50 ${fmt(f.p50)} ms   p99 ${fmt(f.p99)} ms   errors ${f.errors}`);
    console.log(`  ratio full/bare          ${fmt((f.rps / b.rps) * 100)}%   (target ≥ 50%)`);
    console.log(`  server CPU per request   bare ${fmt(b.cpu)} µs, full ${fmt(f.cpu)} µs: bare/full ${fmt((b.cpu / f.cpu) * 100)}%`);
    figure('foundation', 'full stack', f.rps, 'req/s', 'higher');
    figure('foundation', 'full/bare', f.rps / b.rps, 'ratio', 'higher');
    figure('foundation', 'full stack p99', f.p99, 'ms', 'lower');
    figure('foundation', 'full stack CPU per request', f.cpu, 'µs', 'lower');
    figure('foundation', 'bare/full CPU per request', b.cpu / f.cpu, 'ratio', 'higher');
  } finally {
    await full.stop();
    await bare.stop();
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}
