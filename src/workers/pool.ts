// A pool of warm worker threads for short CPU-bound tasks on untrusted input. Each worker has a capped heap and
// each task a wall-clock budget: a task that overruns either is stopped by terminating its worker (the only way to
// stop synchronous JavaScript), the caller gets a WorkerOverrun naming the limit, and a fresh worker takes the
// slot. Workers are kept between tasks because a thread start (and loading the parsers) costs more than most
// tasks do; the table jobs' one-worker-per-job handle is in job-worker.ts beside this file.
import { Worker, type Transferable } from 'node:worker_threads';

export interface PoolOptions {
  /** Workers at most; tasks beyond them wait in order. */
  size: number;
  /** Old-generation heap cap of each worker (MB). */
  memoryMb: number;
  /** Longest a task may run (ms). */
  timeoutMs: number;
  /** Handed to every worker as its workerData. */
  data?: unknown;
  /** The settings that set the two limits, named in overrun messages. */
  settings: { memory: string; timeout: string };
}

/**
 * The task ran out of time or memory, or its worker died (a fact about this run, not the input's fault alone), or
 * the pool was closed under it (`stopped`: the server is shutting down).
 */
export class WorkerOverrun extends Error {
  override readonly name = 'WorkerOverrun';
  readonly reason: 'timeout' | 'memory' | 'crash' | 'stopped';
  constructor(reason: WorkerOverrun['reason'], message: string) {
    super(message);
    this.reason = reason;
  }
}

/** An error a task raised in its worker: its class name, message and own data fields. */
export class WorkerTaskError extends Error {
  override readonly name = 'WorkerTaskError';
  readonly remoteName: string;
  readonly props: Record<string, unknown>;
  constructor(remoteName: string, message: string, props: Record<string, unknown>) {
    super(message);
    this.remoteName = remoteName;
    this.props = props;
  }
}

export interface SerializedError {
  name: string;
  message: string;
  props: Record<string, unknown>;
}

/** Worker side: tells the pool the worker's code is loaded (its first task's clock starts then). */
export const READY = { ready: true } as const;

/** How a worker reports an error (worker side). */
export function serializeError(err: unknown): SerializedError {
  if (!(err instanceof Error)) return { name: 'Error', message: String(err), props: {} };
  const props: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(err)) {
    if (v === null || ['string', 'number', 'boolean'].includes(typeof v) || Array.isArray(v)) props[k] = v;
  }
  // Domain errors often keep Error's own `name`; the class says which one it is.
  return { name: err.constructor?.name || err.name, message: err.message, props };
}

/**
 * Bytes a worker may take over: moved when the view owns its whole buffer, copied once when it is a slice of a
 * shared pool (which must not be detached from the other views on it).
 */
export function movable(bytes: Uint8Array): Uint8Array {
  const own = bytes.byteOffset === 0 && bytes.byteLength === bytes.buffer.byteLength && bytes.buffer instanceof ArrayBuffer;
  return own ? new Uint8Array(bytes.buffer as ArrayBuffer, 0, bytes.byteLength) : new Uint8Array(bytes);
}

export const isOutOfMemory = (err: unknown) => (err as { code?: string }).code === 'ERR_WORKER_OUT_OF_MEMORY';

/** Resource limits of a worker whose old generation is capped at `heapMb`. */
export const cappedHeap = (heapMb: number) => ({ maxOldGenerationSizeMb: heapMb, maxYoungGenerationSizeMb: Math.min(16, Math.max(2, heapMb / 8)), stackSizeMb: 4 });

interface Job {
  id: number;
  task: string;
  input: unknown;
  transfer: Transferable[];
  resolve: (value: unknown) => void;
  reject: (err: Error) => void;
  timer?: NodeJS.Timeout;
}

interface Slot {
  worker: Worker;
  job: Job | null;
  /** The worker has loaded its code; a task's time budget starts only then. */
  ready: boolean;
}

type TaskMap = { [K in string]: (input: never) => Promise<unknown> };

export class WorkerPool<Tasks extends { [K in keyof Tasks]: (input: never) => Promise<unknown> } = TaskMap> {
  private readonly slots: Slot[] = [];
  private readonly queue: Job[] = [];
  private nextId = 1;
  private closed = false;
  private readonly script: URL;
  private readonly options: PoolOptions;

  constructor(script: URL, options: PoolOptions) {
    this.script = script;
    this.options = options;
  }

  /** Runs one task; `transfer` lists buffers of the input that move to the worker instead of being copied. */
  run<K extends keyof Tasks & string>(task: K, input: Parameters<Tasks[K]>[0], transfer: Transferable[] = []): Promise<Awaited<ReturnType<Tasks[K]>>> {
    if (this.closed) return Promise.reject(new WorkerOverrun('stopped', 'The server is shutting down.'));
    return new Promise((resolve, reject) => {
      this.queue.push({ id: this.nextId++, task, input, transfer, resolve: resolve as (v: unknown) => void, reject });
      this.dispatch();
    });
  }

  /** Workers now running a task, idle, and tasks waiting for one. */
  stats(): { busy: number; idle: number; queued: number } {
    const busy = this.slots.filter((s) => s.job).length;
    return { busy, idle: this.slots.length - busy, queued: this.queue.length };
  }

  async close(): Promise<void> {
    this.closed = true;
    const stopped = new WorkerOverrun('stopped', 'The server is shutting down.');
    for (const job of this.queue.splice(0)) job.reject(stopped);
    await Promise.all([...this.slots].map((s) => this.retire(s, stopped)));
  }

  private dispatch(): void {
    while (this.queue.length > 0) {
      let slot = this.slots.find((s) => !s.job);
      if (!slot) {
        if (this.slots.length >= this.options.size) return;
        slot = this.spawn();
      }
      const job = this.queue.shift()!;
      slot.job = job;
      slot.worker.ref();
      if (slot.ready) this.startClock(slot, job);
      slot.worker.postMessage({ id: job.id, task: job.task, input: job.input }, job.transfer);
    }
  }

  private startClock(slot: Slot, job: Job): void {
    job.timer = setTimeout(() => {
      const seconds = Math.round(this.options.timeoutMs / 100) / 10;
      void this.retire(slot, new WorkerOverrun('timeout', `Processing took longer than ${seconds} s and was stopped (the limit set by ${this.options.settings.timeout}).`));
    }, this.options.timeoutMs);
  }

  private spawn(): Slot {
    const worker = new Worker(this.script, { workerData: this.options.data, resourceLimits: cappedHeap(this.options.memoryMb) });
    const slot: Slot = { worker, job: null, ready: false };
    worker.unref();
    worker.on('message', (m: { id: number; ready?: true; value?: unknown; error?: SerializedError }) => {
      if (m.ready) {
        slot.ready = true;
        if (slot.job) this.startClock(slot, slot.job);
        return;
      }
      const job = slot.job;
      if (!job || job.id !== m.id) return;
      clearTimeout(job.timer);
      slot.job = null;
      worker.unref();
      if (m.error) job.reject(new WorkerTaskError(m.error.name, m.error.message, m.error.props));
      else job.resolve(m.value);
      this.dispatch();
    });
    worker.on('error', (err) => {
      const overrun = isOutOfMemory(err)
        ? new WorkerOverrun('memory', `Processing needed more than ${this.options.memoryMb} MB of memory and was stopped (the limit set by ${this.options.settings.memory}).`)
        : new WorkerOverrun('crash', `Processing stopped unexpectedly: ${err.message}`);
      void this.retire(slot, overrun);
    });
    worker.on('exit', () => void this.retire(slot, new WorkerOverrun('crash', 'Processing stopped unexpectedly (its worker exited).')));
    this.slots.push(slot);
    return slot;
  }

  /** Takes a worker out of the pool for good, failing the task it was running. */
  private async retire(slot: Slot, reason: WorkerOverrun): Promise<void> {
    const i = this.slots.indexOf(slot);
    if (i !== -1) this.slots.splice(i, 1);
    const job = slot.job;
    slot.job = null;
    if (job) {
      clearTimeout(job.timer);
      job.reject(reason);
    }
    slot.worker.removeAllListeners('exit');
    await slot.worker.terminate().catch(() => undefined);
    if (!this.closed) this.dispatch();
  }
}
