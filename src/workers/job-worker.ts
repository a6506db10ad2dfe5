// The server thread's handle on a table job's worker thread (src/tables/import-worker.ts, export-worker.ts):
// starts it with a capped heap, feeds it a file's bytes when it asks for them, and turns its messages, errors and
// exit into one queue the job reads in order. A capped worker heap means a large import or export costs the
// server a bounded amount of memory whatever the table's size, and its CPU work leaves the event loop free.
import { once } from 'node:events';
import { Worker } from 'node:worker_threads';
import type { Readable } from 'node:stream';
import { isOutOfMemory } from './pool.ts';

/** Why a job's worker failed; `canceled` when it found its job canceled. */
export class JobWorkerError extends Error {
  readonly canceled: boolean;
  constructor(message: string, canceled = false) {
    super(message);
    this.canceled = canceled;
  }
}

/**
 * Heap of one job's worker: it holds one batch (bounded in rows and in text) and what the job keeps between
 * batches; the cap keeps its garbage small.
 */
const WORKER_LIMITS = { maxOldGenerationSizeMb: 32, maxYoungGenerationSizeMb: 8, stackSizeMb: 4 };

/** Messages every job worker may send besides its own. */
type Common = { type: 'need' } | { type: 'failed'; message: string; canceled: boolean };

export class JobWorker<Out extends { type: string }> {
  private readonly worker: Worker;
  private readonly input: AsyncIterator<Buffer> | null;
  private readonly queue: (Out | Error)[] = [];
  private waiter: (() => void) | null = null;
  /** The worker has sent its last message (done or failed), or died: nothing of it is still writing. */
  private ended = false;
  private reading = Promise.resolve();

  /** `what` names the job in errors ("The import ..."); `input`, when given, is fed to the worker on demand. */
  constructor(script: URL, data: unknown, what: string, input: Readable | null = null) {
    this.input = input ? (input[Symbol.asyncIterator]() as AsyncIterator<Buffer>) : null;
    this.worker = new Worker(script, { workerData: data, resourceLimits: WORKER_LIMITS });
    this.worker.on('message', (m: Out | Common) => {
      if (m.type === 'need') this.reading = this.reading.then(() => this.feed());
      else if (m.type === 'failed') {
        this.ended = true;
        this.push(new JobWorkerError((m as { message: string }).message, (m as { canceled: boolean }).canceled));
      } else {
        if (m.type === 'done') this.ended = true;
        this.push(m as Out);
      }
    });
    this.worker.on('error', (err) => {
      this.ended = true;
      const oom = isOutOfMemory(err);
      this.push(new JobWorkerError(oom ? `The ${what} needs more memory than a table job may use (are its records very long?).` : `The ${what} failed: ${err.message}`));
    });
    this.worker.on('exit', () => {
      this.ended = true;
      this.push(new JobWorkerError(`The ${what} stopped before it had finished.`));
    });
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
    // The bytes move to the worker when the chunk owns its whole buffer; a view into a shared pool is copied.
    const c = r.value;
    const own = c.byteOffset === 0 && c.byteLength === c.buffer.byteLength && c.buffer instanceof ArrayBuffer;
    const data = own ? new Uint8Array(c.buffer as ArrayBuffer, 0, c.byteLength) : new Uint8Array(c);
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
    const exited = this.worker.threadId === -1 ? Promise.resolve() : once(this.worker, 'exit').then(() => undefined);
    this.worker.removeAllListeners('error');
    this.worker.on('error', () => undefined);
    if (this.ended) await exited;
    else await this.worker.terminate();
    await (this.input as { return?: () => Promise<unknown> } | null)?.return?.();
  }
}
