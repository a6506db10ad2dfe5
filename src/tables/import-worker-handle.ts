// The server thread's side of an import worker (src/tables/import-worker.ts): starts it, feeds it the file's bytes
// on demand, hands the import job the header and the sample rows, passes the job's plan back and waits for the
// worker to have staged every row. The worker's heap is capped, so an import costs the server a bounded amount
// of memory whatever the file's size.
import { once } from 'node:events';
import { Worker } from 'node:worker_threads';
import type { Readable } from 'node:stream';
import type { ImportPlan, ImportSummary, ImportWorkerData, MainMessage, WorkerMessage } from './import-worker.ts';

export type { ImportPlan, ImportSummary };

/** Why a worker's import failed; `canceled` when it found the import canceled. */
export class ImportWorkerError extends Error {
  readonly canceled: boolean;
  constructor(message: string, canceled = false) {
    super(message);
    this.canceled = canceled;
  }
}

/**
 * Heap of one import's worker: it holds one batch (bounded in rows and in text), the inference samples and the
 * unique values seen so far; the cap keeps its garbage small.
 */
const WORKER_LIMITS = { maxOldGenerationSizeMb: 32, maxYoungGenerationSizeMb: 8, stackSizeMb: 4 };

export class ImportWorker {
  private readonly worker: Worker;
  private readonly input: AsyncIterator<Buffer>;
  private readonly queue: (WorkerMessage | Error)[] = [];
  private waiter: (() => void) | null = null;
  private settled = false;
  private reading = Promise.resolve();

  constructor(stream: Readable, data: ImportWorkerData) {
    this.input = stream[Symbol.asyncIterator]() as AsyncIterator<Buffer>;
    this.worker = new Worker(new URL('./import-worker.ts', import.meta.url), { workerData: data, resourceLimits: WORKER_LIMITS });
    this.worker.on('message', (m: WorkerMessage) => {
      if (m.type === 'need') this.reading = this.reading.then(() => this.feed());
      else this.push(m);
    });
    this.worker.on('error', (err) => {
      const oom = (err as { code?: string }).code === 'ERR_WORKER_OUT_OF_MEMORY';
      this.push(new ImportWorkerError(oom ? 'Reading the file needs more memory than an import may use (are its records very long?).' : `The import failed: ${err.message}`));
    });
    this.worker.on('exit', () => this.push(new ImportWorkerError('The import stopped before it had read the whole file.')));
  }

  private push(m: WorkerMessage | Error): void {
    this.queue.push(m);
    this.waiter?.();
  }

  private async feed(): Promise<void> {
    let r: IteratorResult<Buffer>;
    try {
      r = await this.input.next();
    } catch (err) {
      this.push(new ImportWorkerError(`The file could not be read: ${err instanceof Error ? err.message : String(err)}`));
      return;
    }
    if (r.done) {
      this.worker.postMessage({ type: 'end' } satisfies MainMessage);
      return;
    }
    // The bytes move to the worker when the chunk owns its whole buffer; a view into a shared pool is copied.
    const c = r.value;
    const own = c.byteOffset === 0 && c.byteLength === c.buffer.byteLength && c.buffer instanceof ArrayBuffer;
    const data = own ? new Uint8Array(c.buffer as ArrayBuffer, 0, c.byteLength) : new Uint8Array(c);
    this.worker.postMessage({ type: 'chunk', data } satisfies MainMessage, [data.buffer as ArrayBuffer]);
  }

  private async take(): Promise<WorkerMessage> {
    for (;;) {
      const m = this.queue.shift();
      if (m instanceof Error) throw m;
      if (m) return m;
      await new Promise<void>((r) => (this.waiter = r));
      this.waiter = null;
    }
  }

  /** The header record (null for an empty file) and up to INFER_ROWS records after it. */
  async head(): Promise<{ headers: string[] | null; samples: string[][] }> {
    const m = await this.take();
    if (m.type === 'failed') throw new ImportWorkerError(m.message, m.canceled);
    if (m.type !== 'head') throw new Error(`unexpected ${m.type} from the import worker`);
    return { headers: m.headers, samples: m.samples };
  }

  /** Which columns the headers fill and where rows go; resolves once every row is staged. */
  async stage(plan: ImportPlan): Promise<ImportSummary> {
    this.worker.postMessage({ type: 'plan', plan } satisfies MainMessage);
    const m = await this.take();
    this.settled = true;
    if (m.type === 'failed') throw new ImportWorkerError(m.message, m.canceled);
    if (m.type !== 'done') throw new Error(`unexpected ${m.type} from the import worker`);
    const { type: _, ...summary } = m;
    return summary;
  }

  /** Asks the worker to stop after the batch it is writing (the server is shutting down). */
  stop(): void {
    this.worker.postMessage({ type: 'stop' } satisfies MainMessage);
  }

  /**
   * Ends the worker. Before the plan, or once the worker has answered, it holds no transaction and is simply
   * stopped; it is never terminated while it may be writing.
   */
  async close(): Promise<void> {
    this.worker.removeAllListeners('exit');
    this.worker.removeAllListeners('error');
    this.worker.on('error', () => undefined);
    // A worker that has answered closes its connection and exits by itself; one that has not is waiting for
    // the plan or for bytes, holding no transaction, and is stopped.
    if (this.settled) await once(this.worker, 'exit');
    else await this.worker.terminate();
    await (this.input as { return?: () => Promise<unknown> }).return?.();
  }
}
