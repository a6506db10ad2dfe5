// Shared benchmark plumbing: child-process servers on loopback, autocannon runs, medians and ratios.
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import autocannon from 'autocannon';
import { PLANS } from '../src/store/billing-accounts.ts';

export const root = path.resolve(import.meta.dirname, '..');

export interface Proc {
  child: ChildProcess;
  url: string;
  stop(): Promise<void>;
}

/** Benchmarks measure the server, not its rate limits: every bucket of every plan is raised out of the way. */
export const UNLIMITED_RATE_LIMITS: Record<string, string> = Object.fromEntries(
  PLANS.flatMap((plan) => ['API', 'SYNC', 'ASYNC'].map((bucket) => [`RATE_LIMIT_${plan.toUpperCase()}_${bucket}`, '100000000'])),
);

/**
 * Starts `node <script>` and waits for its "Listening on http://127.0.0.1:port" line. Every server a suite
 * starts gets UNLIMITED_RATE_LIMITS (a suite may still set its own limits in `env`).
 */
export function startProcess(script: string, env: Record<string, string>): Promise<Proc> {
  const child = spawn(process.execPath, [script], {
    env: { PATH: process.env.PATH, HOST: '127.0.0.1', PORT: '0', LOG_LEVEL: 'warn', ...UNLIMITED_RATE_LIMITS, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${script} did not start:\n${out}`)), 90_000);
    const onData = (c: Buffer) => {
      out += c;
      const m = /Listening on (http:\/\/127\.0\.0\.1:\d+)/.exec(out);
      if (m) {
        clearTimeout(timer);
        resolve({
          child,
          url: m[1]!,
          stop: () =>
            new Promise<void>((r) => {
              child.once('exit', () => r());
              child.kill('SIGTERM');
            }),
        });
      }
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    child.once('exit', (code) => reject(new Error(`${script} exited with ${code}:\n${out}`)));
  });
}

export function tempDir(prefix: string): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), prefix));
}

export interface LoadResult {
  rps: number;
  p50: number;
  p99: number;
  errors: number;
}

export async function load(url: string, headers: Record<string, string>, seconds: number, connections = 10): Promise<LoadResult> {
  const r = await autocannon({ url, headers, duration: seconds, connections, pipelining: 1 });
  return { rps: r.requests.average, p50: r.latency.p50, p99: r.latency.p99, errors: r.errors + r.non2xx };
}

export function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
}

export function fmt(n: number, digits = 1): string {
  return n.toFixed(digits);
}

export function percentile(xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]!;
}

/** Wall-clock milliseconds of `runs` sequential calls. */
export async function time(fn: () => Promise<unknown> | unknown, runs: number): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < runs; i++) {
    const t = performance.now();
    await fn();
    out.push(performance.now() - t);
  }
  return out;
}

/** What the 10-block benchmark workflow computes (function, condition, loop of 10, response), as plain JS. */
export function tenBlockDirect(input: { values: number[] }): unknown {
  const prepared = input.values.map((v) => v * 2);
  if (!(prepared.length > 3)) return { total: 0, sum: 0 };
  const big = prepared.reduce((a, b) => a + b, 0);
  const results: { result: number }[] = [];
  for (let i = 0; i < 10; i++) results.push({ result: i * big });
  const total = results.reduce((a, r) => a + r.result, 0);
  return JSON.parse(JSON.stringify({ total, sum: big }));
}

/** A JSON API call with a key; anything but 2xx throws with the answer, so a suite never measures errors. */
export async function apiCall(server: Proc, key: string, method: string, pathname: string, body?: unknown): Promise<any> {
  const r = await fetch(server.url + pathname, {
    method,
    headers: { 'X-API-Key': key, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await r.text();
  if (r.status >= 300) throw new Error(`${method} ${pathname}: ${r.status} ${text}`);
  return JSON.parse(text);
}

/** One measured figure of a suite, kept for `--figures <file>` (and so for `--baseline`, which compares them). */
export interface Figure {
  suite: string;
  name: string;
  value: number;
  unit: string;
  /** Which direction is an improvement. */
  better: 'higher' | 'lower';
}

const recorded: Figure[] = [];

/** Records a figure a suite printed; a figure that could not be measured (NaN) is left out. */
export function figure(suite: string, name: string, value: number, unit: string, better: Figure['better']): void {
  if (Number.isFinite(value)) recorded.push({ suite, name, value, unit, better });
}

export function recordedFigures(): readonly Figure[] {
  return recorded;
}
