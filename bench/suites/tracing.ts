// Issue 22: what tracing costs. The same authenticated GET /api/v2/workspaces against a server with tracing off
// (no OTLP endpoint: the SDK is never loaded) and one exporting every span to a local OTLP sink, rounds
// interleaved, medians printed. Off is the default and should match the foundation suite's full stack.
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import { fmt, load, median, root, startProcess, tempDir, type LoadResult } from '../lib.ts';

const KEY = 'sk-owa-bench-key-0000000000000000';

export async function tracing(options: { seconds: number; rounds: number }): Promise<void> {
  // A collector that accepts and drops every export.
  const sink = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => res.writeHead(200, { 'content-type': 'application/json' }).end('{}'));
  });
  await new Promise<void>((r) => sink.listen(0, '127.0.0.1', () => r()));
  const sinkUrl = `http://127.0.0.1:${(sink.address() as AddressInfo).port}`;
  const dirs = [tempDir('owa-bench-'), tempDir('owa-bench-')];
  const env = { BOOTSTRAP_API_KEY: KEY, NODE_ENV: 'production', RATE_LIMIT_FREE_API: '100000000' };
  const off = await startProcess(path.join(root, 'bin', 'start.js'), { ...env, DATA_DIR: dirs[0]! });
  const on = await startProcess(path.join(root, 'bin', 'start.js'), { ...env, DATA_DIR: dirs[1]!, OTEL_EXPORTER_OTLP_ENDPOINT: sinkUrl });
  try {
    const target = '/api/v2/workspaces';
    await load(off.url + target, { 'X-API-Key': KEY }, 1);
    await load(on.url + target, { 'X-API-Key': KEY }, 1);
    const offRuns: LoadResult[] = [];
    const onRuns: LoadResult[] = [];
    for (let i = 0; i < options.rounds; i++) {
      offRuns.push(await load(off.url + target, { 'X-API-Key': KEY }, options.seconds));
      onRuns.push(await load(on.url + target, { 'X-API-Key': KEY }, options.seconds));
    }
    const summary = (runs: LoadResult[]) => ({ rps: median(runs.map((r) => r.rps)), p50: median(runs.map((r) => r.p50)), p99: median(runs.map((r) => r.p99)), errors: runs.reduce((a, r) => a + r.errors, 0) });
    const a = summary(offRuns);
    const b = summary(onRuns);
    console.log(`\ntracing: GET ${target} (median of ${options.rounds} runs × ${options.seconds}s, 10 connections)`);
    console.log(`  tracing off (default)    ${fmt(a.rps, 0).padStart(7)} req/s   p50 ${fmt(a.p50)} ms   p99 ${fmt(a.p99)} ms   errors ${a.errors}`);
    console.log(`  tracing on (OTLP sink)   ${fmt(b.rps, 0).padStart(7)} req/s   p50 ${fmt(b.p50)} ms   p99 ${fmt(b.p99)} ms   errors ${b.errors}`);
    console.log(`  ratio on/off             ${fmt((b.rps / a.rps) * 100)}%`);
  } finally {
    await off.stop();
    await on.stop();
    sink.closeAllConnections();
    await new Promise<void>((r) => sink.close(() => r()));
    for (const d of dirs) fs.rmSync(d, { recursive: true, force: true });
  }
}
