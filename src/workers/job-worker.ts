// The server thread's handle on a job's worker thread (table imports and exports: src/tables/import-worker.ts,
// export-worker.ts; unzip: src/files/unzip-worker.ts): starts it with a capped heap, feeds it a file's bytes
// when it asks for them, and turns its messages, errors and exit into one queue the job reads in order. A capped
// worker heap means a large job costs the server a bounded amount of memory whatever its input, and its CPU work
// leaves the event loop free. A job may also have a wall-clock budget, past which its worker is terminated.
import { once } from 'node:events';
import { Worker } from 'node:worker_threads';
import type { Readable } from 'node:stream';
import { cappedHeap, isOutOfMemory, movable } from './pool.ts';

/**
 * Why a job's worker failed; `canceled` when it found its job canceled. `reason` says why in a word the caller
 * may map: the worker's own (sent with its failure), or `timeout`, `memory` or `crash` when it was stopped.
 */
export class JobWorkerError extends Error {
  readonly canceled: boolean;
  readonly reason: string | null;
  constructor(message: string, canceled = false, reason: string | null = null) {
    super(message);
    this.canceled = canceled;
    this.reason = reason;
  }
}

export interface JobWorkerOptions {
  /** Old-generation heap cap of the worker (MB); table jobs' 32 MB when not given. */
  heapMb?: number;
  /** The message when the worker runs out of memory; table jobs' when not given. */
  outOfMemory?: string;
  /** Longest the job may run (ms) from the worker's start, and the setting that sets it (named in the error). */
  timeout?: { ms: number; setting: string };
}

/**
 * Heap of one job's worker: it holds one batch (bounded in rows and in text) and what the job keeps between
 * batches; the cap keeps its garbage small.
 */
const WORKER_LIMITS = { maxOldGenerationSizeMb: 32, maxYoungGenerationSizeMb: 8, stackSizeMb: 4 };

const duration = (ms: number) => (ms < 1000 ? `${ms} ms` : `${Math.round(ms / 100) / 10} s`);

/** Messages every job worker may send besides its own. */
type Common = { type: 'need' } | { type: 'failed'; message: string; canceled: boolean; reason?: string };

export class JobWorker<Out extends { type: string }> {
  private readonly worker: Worker;
  private readonly input: AsyncIterator<Buffer> | null;
  private readonly queue: (Out | Error)[] = [];
  private waiter: (() => void) | null = null;
  /** The worker has sent its last message (done or failed), or died: nothing of it is still writing. */
  private ended = false;
  private reading = Promise.resolve();
  private timer: NodeJS.Timeout | null = null;

  /** `what` names the job in errors ("The import ..."); `input`, when given, is fed to the worker on demand. */
  constructor(script: URL, data: unknown, what: string, input: Readable | null = null, options: JobWorkerOptions = {}) {
    this.input = input ? (input[Symbol.asyncIterator]() as AsyncIterator<Buffer>) : null;
    const resourceLimits = options.heapMb ? cappedHeap(options.heapMb) : WORKER_LIMITS;
    this.worker = new Worker(script, { workerData: data, resourceLimits });
    this.worker.on('message', (m: Out | Common) => {
      if (m.type === 'need') this.reading = this.reading.then(() => this.feed());
      else if (m.type === 'failed') {
        this.finish();
        const f = m as Extract<Common, { type: 'failed' }>;
        this.push(new JobWorkerError(f.message, f.canceled, f.reason ?? null));
      } else {
        if (m.type === 'done') this.finish();
        this.push(m as Out);
      }
    });
    this.worker.on('error', (err) => {
      this.finish();
      if (isOutOfMemory(err)) this.push(new JobWorkerError(options.outOfMemory ?? `The ${what} needs more memory than a table job may use (are its records very long?).`, false, 'memory'));
      else this.push(new JobWorkerError(`The ${what} failed: ${err.message}`, false, 'crash'));
    });
    this.worker.on('exit', () => {
      this.finish();
      this.push(new JobWorkerError(`The ${what} stopped before it had finished.`, false, 'crash'));
    });
    if (options.timeout) {
      const { ms, setting } = options.timeout;
      // Synchronous work (inflating, parsing) cannot be interrupted from outside but by terminating the thread.
      this.timer = setTimeout(() => {
        this.timer = null;
        this.push(new JobWorkerError(`The ${what} took longer than ${duration(ms)} and was stopped (the limit set by ${setting}).`, false, 'timeout'));
        void this.worker.terminate();
      }, ms);
      this.timer.unref();
    }
  }

  /** The worker sent its last message or died: its clock stops. */
  private finish(): void {
    this.ended = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
  }

  private push(m: Out | Error): void {
    this.queue.push(m);
    this.waiter?.();
  }

  private async feed(): Promise<void> {
    let r: IteratorResult<Buffer>;
    try {
      r = await this.input!.next();
    } catch (err) {
      this.push(new JobWorkerError(`The file could not be read: ${err instanceof Error ? err.message : String(err)}`));
      return;
    }
    if (r.done) {
      this.worker.postMessage({ type: 'end' });
      return;
    }
    const data = movable(r.value);
    this.worker.postMessage({ type: 'chunk', data }, [data.buffer as ArrayBuffer]);
  }

  post(message: unknown): void {
    this.worker.postMessage(message);
  }

  /** The worker's next message; a failure (its own, an error or an early exit) is thrown as a JobWorkerError. */
  async take(): Promise<Out> {
    for (;;) {
      const m = this.queue.shift();
      if (m instanceof Error) throw m;
      if (m) return m;
      await new Promise<void>((r) => (this.waiter = r));
      this.waiter = null;
    }
  }

  /** Asks the worker to stop after the batch it is writing (the server is shutting down). */
  stop(): void {
    this.worker.postMessage({ type: 'stop' });
  }

  /**
   * Ends the worker. One that has ended (done or failed) closes its connection and exits by itself; one that has
   * not is waiting for a plan or for bytes (the job gave up on it), holds no transaction, and is terminated.
   */
  async close(): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    const exited = this.worker.threadId === -1 ? Promise.resolve() : once(this.worker, 'exit').then(() => undefined);
    this.worker.removeAllListeners('error');
    this.worker.on('error', () => undefined);
    if (this.ended) await exited;
    else await this.worker.terminate();
    await (this.input as { return?: () => Promise<unknown> } | null)?.return?.();
  }
}
