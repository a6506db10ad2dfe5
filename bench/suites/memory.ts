// Issue 24: the server's resident memory. A fresh server (SQLite, production settings) is measured idle after
// start, then while it runs a deployed 3-block workflow (start → function → response) synchronously through
// POST /execute, 10 at a time: RSS after the load and the peak (VmHWM). Each round starts a new server. The figures
// are absolute (memory does not share the machine's CPU noise); compare commits with `--baseline <ref>`.
import fs from 'node:fs';
import path from 'node:path';
import autocannon from 'autocannon';
import { apiCall, figure, fmt, median, root, startProcess, tempDir } from '../lib.ts';
import { threeBlocks } from './runs.ts';

const KEY = 'sk-owa-bench-memory-000000000000000000';
const MB = 1024 * 1024;

function statusKb(pid: number, field: 'VmRSS' | 'VmHWM'): number {
  const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  return Number(new RegExp(`${field}:\\s+(\\d+) kB`).exec(status)?.[1] ?? 0) * 1024;
}

/** Until the process's RSS stops moving (start-up work settling), at most a few seconds. */
async function settledRss(pid: number): Promise<number> {
  let last = statusKb(pid, 'VmRSS');
  for (let i = 0; i < 20; i++) {
    await new Promise((r) => setTimeout(r, 250));
    const now = statusKb(pid, 'VmRSS');
    if (Math.abs(now - last) < MB) return now;
    last = now;
  }
  return last;
}

export async function memory(options: { seconds: number; rounds: number }): Promise<void> {
  const requests = Math.max(500, Math.round(options.seconds * 200));
  const rounds: { idle: number; after: number; peak: number }[] = [];
  for (let round = 0; round < options.rounds; round++) {
    const dataDir = tempDir('owa-bench-memory-');
    const server = await startProcess(path.join(root, 'bin', 'start.js'), { DATA_DIR: dataDir, BOOTSTRAP_API_KEY: KEY, NODE_ENV: 'production', FILE_PURGE_INTERVAL_SECONDS: '0', SANDBOX_POOL_SIZE: '2' });
    try {
      const pid = server.child.pid!;
      const idle = await settledRss(pid);
      const workspaceId = (await apiCall(server, KEY, 'GET', '/api/v2/workspaces')).data[0].id as string;
      const id = (await apiCall(server, KEY, 'POST', '/api/v2/workflows', { workspaceId, name: 'memory' })).data.id as string;
      await apiCall(server, KEY, 'PUT', `/api/v2/workflows/${id}/state`, threeBlocks());
      await apiCall(server, KEY, 'POST', `/api/v2/workflows/${id}/deploy`, {});
      const r = await autocannon({
        url: `${server.url}/api/v2/workflows/${id}/execute`,
        method: 'POST',
        headers: { 'X-API-Key': KEY, 'content-type': 'application/json' },
        body: JSON.stringify({ input: { n: 1 } }),
        amount: requests,
        connections: 10,
      });
      if (r.errors + r.non2xx > 0) throw new Error(`memory: ${r.errors + r.non2xx} of ${requests} executions failed`);
      rounds.push({ idle, after: statusKb(pid, 'VmRSS'), peak: statusKb(pid, 'VmHWM') });
    } finally {
      await server.stop();
      fs.rmSync(dataDir, { recursive: true, force: true });
    }
  }
  const m = (key: 'idle' | 'after' | 'peak') => median(rounds.map((r) => r[key])) / MB;
  console.log(`\nmemory: server RSS, idle after start and after ${requests} synchronous executions of a 3-block workflow (median of ${options.rounds} fresh servers)`);
  console.log(`  idle ${fmt(m('idle'))} MB   after the load ${fmt(m('after'))} MB   peak ${fmt(m('peak'))} MB`);
  figure('memory', 'RSS idle', m('idle'), 'MB', 'lower');
  figure('memory', 'RSS after sync executes', m('after'), 'MB', 'lower');
  figure('memory', 'RSS peak', m('peak'), 'MB', 'lower');
}
