// A warm pool of sandbox processes for untrusted JavaScript (function blocks, conditions, routes). Each process runs
// one call at a time in a fresh vm context; a call that overruns its wall-clock limit, its memory cap or is
// cancelled gets its process killed, and a new process takes its place so the pool keeps its size.
//
// fetch inside the sandbox is proxied to this (parent) process over IPC rather than done in the child: Node 24's
// permission model has no network wall, so a policy check living in the child could be skipped by code that
// escaped its vm context. Here the egress policy runs where the untrusted code cannot reach it.
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import { createRequire } from 'node:module';

export interface SandboxFetchRequest {
  url: string;
  method: string;
  headers: Record<string, string>;
  body: string | null;
}

export interface SandboxFetchResponse {
  status: number;
  statusText: string;
  url: string;
  headers: Record<string, string>;
  body: string;
}

export interface SandboxPoolOptions {
  /** Processes kept warm. */
  size: number;
  /** Default wall-clock limit of one call (ms). */
  timeoutMs: number;
  /** V8 old-space cap per process (MB); the resident set is also watched (this plus 128 MB). */
  memoryMb: number;
  /** Largest JSON result a call may return (bytes). */
  maxResultBytes?: number;
  /** Most fetches one call may make. */
  maxFetchesPerCall?: number;
  /** Performs a sandboxed fetch; without it fetch is not defined inside the sandbox. */
  fetch?: (request: SandboxFetchRequest, signal: AbortSignal) => Promise<SandboxFetchResponse>;
  /**
   * A built sandbox directory (with node_modules): the processes may read it (and nothing else), and the code gets
   * a `require` for the packages installed there.
   */
  modulesDir?: string;
  /** Replace the process after every call, so no state (module caches, patched prototypes) carries over. */
  recycle?: boolean;
}

export type SandboxErrorKind = 'timeout' | 'memory' | 'cancelled' | 'crashed' | 'user' | 'too-large' | 'closed';

export class SandboxError extends Error {
  readonly kind: SandboxErrorKind;
  readonly stdout: string;
  constructor(kind: SandboxErrorKind, message: string, stdout = '') {
    super(message);
    this.kind = kind;
    this.stdout = stdout;
  }
}

export interface SandboxResult {
  value: unknown;
  stdout: string;
}

export interface SandboxCall {
  /** The body of an async function: `return` gives the result, `await` is allowed. */
  code: string;
  /** Values the code reads as `__refs[i]` (resolved references), passed as JSON. */
  refs?: unknown[];
  timeoutMs?: number;
  signal?: AbortSignal;
}

/**
 * Node flags of a sandbox process: the permission model with nothing granted (no --allow-fs-read/write,
 * --allow-child-process, --allow-worker, --allow-addons, --allow-wasi), no compiling strings in the worker's own
 * realm, and a heap cap.
 */
export function sandboxNodeFlags(memoryMb: number): string[] {
  return ['--permission', '--disallow-code-generation-from-strings', `--max-old-space-size=${memoryMb}`, '--max-semi-space-size=16'];
}

const WORKER_SOURCE = fs.readFileSync(new URL('./worker-main.cjs', import.meta.url), 'utf8');
/** The globals built inside each call's context (timers, TextEncoder, URL, ...); see context-globals.js. */
const GLOBALS_SOURCE = fs.readFileSync(new URL('./context-globals.js', import.meta.url), 'utf8');

/**
 * Libraries a context evaluates on first use, as one script each (the worker cannot read files): `buffer` is the
 * pure-JS `buffer` package with its two dependencies, wired by a minimal CommonJS loader, defining `Buffer`.
 */
function libraries(): Record<string, string> {
  const require = createRequire(import.meta.url);
  // `buffer/` (with the slash) is the npm package, not Node's built-in module.
  const read = (id: string) => fs.readFileSync(require.resolve(id), 'utf8');
  const modules: Record<string, string> = { 'base64-js': read('base64-js'), ieee754: read('ieee754'), buffer: read('buffer/') };
  const table = Object.entries(modules)
    .map(([name, source]) => `${JSON.stringify(name)}: function (module, exports, require) {\n${source}\n}`)
    .join(',\n');
  const buffer = `(function () {
  const modules = {${table}};
  const cache = {};
  function load(name) {
    if (cache[name]) return cache[name].exports;
    const module = { exports: {} };
    cache[name] = module;
    modules[name].call(module.exports, module, module.exports, load);
    return module.exports;
  }
  globalThis.__bufferModule = load('buffer').Buffer;
})();
void 0;`;
  return { buffer };
}
const LIBRARIES = libraries();
const PAGE_SIZE = 4096;

interface ActiveCall {
  id: number;
  resolve: (r: SandboxResult) => void;
  reject: (e: SandboxError) => void;
  timer: NodeJS.Timeout;
  memoryTimer: NodeJS.Timeout | null;
  fetches: number;
  fetchAbort: AbortController;
  cleanupSignal: () => void;
}

/** A pool's processes now: `total` counts those still starting too, so busy + idle may be less. */
export interface SandboxPoolUsage {
  total: number;
  busy: number;
  idle: number;
  waiting: number;
}

interface Worker {
  child: ChildProcess;
  ready: Promise<void>;
  active: ActiveCall | null;
  dead: boolean;
  wasReady: boolean;
  stderr: string;
}

export class SandboxPool {
  private readonly options: Required<Omit<SandboxPoolOptions, 'fetch' | 'modulesDir' | 'recycle'>> & Pick<SandboxPoolOptions, 'fetch' | 'modulesDir' | 'recycle'>;
  private readonly workers = new Set<Worker>();
  private readonly idle: Worker[] = [];
  private readonly waiting: ((w: Worker) => void)[] = [];
  private nextCallId = 1;
  private closed = false;
  private startFailures = 0;
  /** How many processes were replaced after a kill or crash (for tests and metrics). */
  replacements = 0;

  constructor(options: SandboxPoolOptions) {
    this.options = { maxResultBytes: 10 * 1024 * 1024, maxFetchesPerCall: 50, ...options };
  }

  /** Starts every process and waits until each is ready. */
  async start(): Promise<void> {
    const started: Promise<void>[] = [];
    while (this.workers.size < this.options.size) started.push(this.spawnWorker().ready);
    await Promise.all(started);
  }

  get size(): number {
    return this.workers.size;
  }

  /** Processes running a call, ready for one, and calls waiting for a process (metrics read this at scrape). */
  usage(): SandboxPoolUsage {
    let busy = 0;
    for (const w of this.workers) if (w.active) busy++;
    return { total: this.workers.size, busy, idle: this.idle.length, waiting: this.waiting.length };
  }

  /** Process ids of the live workers (tests use them to see replacement). */
  pids(): number[] {
    return [...this.workers].map((w) => w.child.pid ?? -1);
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const wait of this.waiting.splice(0)) wait(null as unknown as Worker);
    const exits = [...this.workers].map(
      (w) =>
        new Promise<void>((resolve) => {
          if (w.child.exitCode !== null || w.child.signalCode !== null) return resolve();
          w.child.once('exit', () => resolve());
          w.child.kill('SIGKILL');
        }),
    );
    for (const w of this.workers) this.failActive(w, new SandboxError('closed', 'The sandbox pool was closed'));
    await Promise.all(exits);
    this.workers.clear();
    this.idle.length = 0;
  }

  async run(call: SandboxCall): Promise<SandboxResult> {
    if (this.closed) throw new SandboxError('closed', 'The sandbox pool is closed');
    if (call.signal?.aborted) throw new SandboxError('cancelled', 'The call was cancelled');
    const worker = await this.acquire(call.signal);
    if (!worker) throw new SandboxError('closed', 'The sandbox pool is closed');
    await worker.ready;
    if (worker.dead) return this.run(call);
    // Cancelled while the worker was getting ready: the code must not start.
    if (call.signal?.aborted) {
      this.release(worker);
      throw new SandboxError('cancelled', 'The call was cancelled');
    }
    const timeoutMs = Math.max(1, Math.floor(call.timeoutMs ?? this.options.timeoutMs));
    let refs: string;
    try {
      refs = JSON.stringify(call.refs ?? []);
    } catch {
      this.release(worker);
      throw new SandboxError('user', 'The values passed to the code cannot be serialized as JSON');
    }
    return new Promise<SandboxResult>((resolve, reject) => {
      const id = this.nextCallId++;
      const onAbort = () => this.kill(worker, new SandboxError('cancelled', 'The call was cancelled'));
      call.signal?.addEventListener('abort', onAbort, { once: true });
      const active: ActiveCall = {
        id,
        resolve,
        reject,
        // One wall-clock limit for everything (synchronous loops, async loops, promises that never settle): past
        // it the process is killed and replaced.
        timer: setTimeout(() => this.kill(worker, new SandboxError('timeout', `The code did not finish within ${timeoutMs} ms`)), timeoutMs),
        memoryTimer: this.watchMemory(worker),
        fetches: 0,
        fetchAbort: new AbortController(),
        cleanupSignal: () => call.signal?.removeEventListener('abort', onAbort),
      };
      worker.active = active;
      worker.child.send({ type: 'run', id, code: call.code, refs, timeoutMs, allowFetch: this.options.fetch !== undefined, modulesDir: this.options.modulesDir });
    });
  }

  private spawnWorker(): Worker {
    const child = spawn(
      process.execPath,
      [...sandboxNodeFlags(this.options.memoryMb), ...(this.options.modulesDir ? [`--allow-fs-read=${this.options.modulesDir}`] : []), '-e', WORKER_SOURCE],
      // No inherited environment: nothing of the server's configuration is visible to a process that escapes.
      { stdio: ['ignore', 'ignore', 'pipe', 'ipc'], env: {}, serialization: 'json' },
    );
    let markReady: () => void;
    let failReady: (e: Error) => void;
    const worker: Worker = {
      child,
      ready: new Promise<void>((resolve, reject) => {
        markReady = resolve;
        failReady = reject;
      }),
      active: null,
      dead: false,
      wasReady: false,
      stderr: '',
    };
    worker.ready.catch(() => undefined);
    this.workers.add(worker);
    child.send({ type: 'init', globals: GLOBALS_SOURCE, libraries: LIBRARIES });
    child.stderr!.on('data', (chunk: Buffer) => {
      worker.stderr = (worker.stderr + chunk.toString()).slice(-4096);
    });
    child.on('message', (m: { type: string; id?: number; [k: string]: unknown }) => {
      if (m.type === 'ready') {
        worker.wasReady = true;
        this.startFailures = 0;
        markReady();
        this.release(worker);
      } else if (m.type === 'done') this.onDone(worker, m);
      else if (m.type === 'fetch') void this.onFetch(worker, m);
    });
    child.on('error', () => undefined);
    child.on('exit', () => {
      worker.dead = true;
      this.workers.delete(worker);
      const at = this.idle.indexOf(worker);
      if (at >= 0) this.idle.splice(at, 1);
      failReady(new Error('sandbox process exited before it was ready'));
      const oom = /heap limit|out of memory/i.test(worker.stderr);
      this.failActive(
        worker,
        oom
          ? new SandboxError('memory', `The code exceeded the sandbox memory limit of ${this.options.memoryMb} MB`)
          : new SandboxError('crashed', 'The sandbox process stopped unexpectedly'),
      );
      if (!worker.wasReady) this.startFailures++;
      // A process that cannot even start would otherwise be respawned forever.
      if (!this.closed && this.startFailures < 5) {
        this.replacements++;
        this.spawnWorker();
      } else if (this.workers.size === 0) {
        for (const wait of this.waiting.splice(0)) wait(null as unknown as Worker);
      }
    });
    return worker;
  }

  /** A worker for one call; a call cancelled while it waits for one leaves the queue at once, never to run. */
  private acquire(signal?: AbortSignal): Promise<Worker> {
    // Oldest idle first: the process that finished most recently is still preparing its next context.
    const worker = this.idle.shift();
    if (worker) return Promise.resolve(worker);
    return new Promise((resolve, reject) => {
      const onAbort = () => {
        const at = this.waiting.indexOf(take);
        if (at >= 0) this.waiting.splice(at, 1);
        reject(new SandboxError('cancelled', 'The call was cancelled'));
      };
      const take = (w: Worker) => {
        signal?.removeEventListener('abort', onAbort);
        resolve(w);
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      this.waiting.push(take);
    });
  }

  private release(worker: Worker): void {
    if (worker.dead || this.closed) return;
    const next = this.waiting.shift();
    if (next) next(worker);
    else this.idle.push(worker);
  }

  private settle(worker: Worker): ActiveCall | null {
    const active = worker.active;
    if (!active) return null;
    worker.active = null;
    clearTimeout(active.timer);
    if (active.memoryTimer) clearInterval(active.memoryTimer);
    active.fetchAbort.abort();
    active.cleanupSignal();
    return active;
  }

  private failActive(worker: Worker, error: SandboxError): void {
    this.settle(worker)?.reject(error);
  }

  /** Kills a worker with a call in flight; its exit handler spawns the replacement. */
  private kill(worker: Worker, error: SandboxError): void {
    this.failActive(worker, error);
    worker.dead = true;
    worker.child.kill('SIGKILL');
  }

  private onDone(worker: Worker, m: { id?: number; [k: string]: unknown }): void {
    if (!worker.active || worker.active.id !== m.id) return;
    const active = this.settle(worker)!;
    if (this.options.recycle) {
      // One call per process: its exit handler starts the replacement.
      worker.dead = true;
      worker.child.kill('SIGKILL');
    } else this.release(worker);
    const stdout = typeof m.stdout === 'string' ? m.stdout : '';
    if (m.ok !== true) {
      const error = (m.error ?? {}) as { name?: string; message?: string };
      const prefix = error.name && error.name !== 'Error' ? `${error.name}: ` : '';
      return active.reject(new SandboxError('user', `${prefix}${error.message ?? 'The code failed'}`, stdout));
    }
    const text = typeof m.value === 'string' ? m.value : 'null';
    if (text.length > this.options.maxResultBytes) {
      return active.reject(new SandboxError('too-large', `The result is larger than ${this.options.maxResultBytes} bytes`, stdout));
    }
    active.resolve({ value: JSON.parse(text), stdout });
  }

  private async onFetch(worker: Worker, m: { id?: number; fetchId?: unknown; request?: unknown }): Promise<void> {
    const active = worker.active;
    if (!active || active.id !== m.id || !this.options.fetch) return;
    const reply = (payload: object) => {
      if (worker.active === active && !worker.dead) worker.child.send({ type: 'fetchResult', id: active.id, fetchId: m.fetchId, ...payload });
    };
    if (++active.fetches > this.options.maxFetchesPerCall) {
      return reply({ error: `fetch refused: more than ${this.options.maxFetchesPerCall} requests in one call` });
    }
    try {
      const response = await this.options.fetch(m.request as SandboxFetchRequest, active.fetchAbort.signal);
      reply({ response });
    } catch (e) {
      reply({ error: e instanceof Error ? e.message : String(e) });
    }
  }

  /** Polls the process's resident memory while it runs a call; array buffers live outside the V8 heap cap. */
  private watchMemory(worker: Worker): NodeJS.Timeout | null {
    const pid = worker.child.pid;
    if (!pid || process.platform !== 'linux') return null;
    const limit = (this.options.memoryMb + 128) * 1024 * 1024;
    return setInterval(() => {
      fs.readFile(`/proc/${pid}/statm`, 'utf8', (err, text) => {
        if (err || !worker.active) return;
        const resident = Number(text.split(' ')[1]) * PAGE_SIZE;
        if (resident > limit) this.kill(worker, new SandboxError('memory', `The code exceeded the sandbox memory limit of ${this.options.memoryMb} MB`));
      });
    }, 25);
  }
}
