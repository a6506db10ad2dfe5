// Issue 3: what authentication plus authorization costs per request. The same authenticated GET of a
// workspace (role check included) against a server whose principal is pre-resolved, in the same run.
// Warm keys come from the credential cache, so the difference is hashing, the cache and the policy check.
import path from 'node:path';
import fs from 'node:fs';
import { figure, fmt, load, type LoadResult, median, root, startProcess, tempDir } from '../lib.ts';

const KEY = 'sk-owa-bench-auth-key-000000000000';
const UNLIMITED = { RATE_LIMIT_FREE_API: '100000000', NODE_ENV: 'production' };

export async function auth(options: { seconds: number; rounds: number }): Promise<void> {
  const dirs = [tempDir('owa-bench-auth-'), tempDir('owa-bench-auth-')];
  const full = await startProcess(path.join(root, 'bin', 'bench-auth.js'), { DATA_DIR: dirs[0]!, BOOTSTRAP_API_KEY: KEY, ...UNLIMITED });
  const pre = await startProcess(path.join(root, 'bin', 'bench-auth.js'), { DATA_DIR: dirs[1]!, BOOTSTRAP_API_KEY: KEY, BENCH_AUTH: 'preresolved', ...UNLIMITED });
  try {
    const wsOf = async (url: string) => ((await (await fetch(`${url}/api/v2/workspaces`, { headers: { 'X-API-Key': KEY } })).json()) as any).data[0].id as string;
    const fullUrl = `${full.url}/api/v2/workspaces/${await wsOf(full.url)}`;
    const preUrl = `${pre.url}/api/v2/workspaces/${await wsOf(pre.url)}`;
    await load(fullUrl, { 'X-API-Key': KEY }, 1);
    await load(preUrl, { 'X-API-Key': KEY }, 1);
    const a: LoadResult[] = [];
    const b: LoadResult[] = [];
    for (let i = 0; i < options.rounds; i++) {
      b.push(await load(preUrl, { 'X-API-Key': KEY }, options.seconds));
      a.push(await load(fullUrl, { 'X-API-Key': KEY }, options.seconds));
    }
    const rps = (xs: LoadResult[]) => median(xs.map((x) => x.rps));
    const p50 = (xs: LoadResult[]) => median(xs.map((x) => x.p50));
    const perReqUs = (r: number) => 1e6 / r;
    console.log(`\nauth: GET /api/v2/workspaces/{id} (median of ${options.rounds} runs × ${options.seconds}s, 10 connections)`);
    console.log(`  pre-resolved principal   ${fmt(rps(b), 0).padStart(7)} req/s   p50 ${fmt(p50(b))} ms`);
    console.log(`  full authentication      ${fmt(rps(a), 0).padStart(7)} req/s   p50 ${fmt(p50(a))} ms   errors ${a.reduce((n, x) => n + x.errors, 0)}`);
    console.log(`  ratio full/pre-resolved  ${fmt((rps(a) / rps(b)) * 100)}%   ≈ ${fmt(perReqUs(rps(a)) - perReqUs(rps(b)))} µs per request for authentication`);
    figure('auth', 'full authentication', rps(a), 'req/s', 'higher');
    figure('auth', 'full/pre-resolved', rps(a) / rps(b), 'ratio', 'higher');
  } finally {
    await full.stop();
    await pre.stop();
    for (const d of dirs) fs.rmSync(d, { recursive: true, force: true });
  }
}
