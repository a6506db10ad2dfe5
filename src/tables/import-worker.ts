// The bulk of a table import, in a worker thread: parsing the CSV, turning every record into stored cells (or a
// rejection saying why) and writing them into the import's staging table through a database connection of its
// own. It runs here, not on the server's thread, because a million-row file allocates gigabytes of short-lived
// objects and takes seconds of CPU: in a worker with a capped heap that garbage never reaches the heap serving
// requests, and the event loop stays free. The server thread (src/workers/job-worker.ts and jobs.ts) decides
// the columns, and makes the staged rows visible in one transaction once the worker is done.
// Messages (worker ↔ server thread):
//   start: workerData {delimiter, store, importId}
//   → need                          wants the next chunk of the file
//   ← chunk {data} | end
//   → head {headers, samples}       the header record and up to INFER_ROWS records after it
//   ← plan ImportPlan               which column each header fills, where the rows go
//   → done ImportSummary | failed {message, canceled}
//   ← stop                          the server is shutting down: stop after the current batch
import { parentPort, workerData } from 'node:worker_threads';
import { Readable } from 'node:stream';
import { parse } from 'csv-parse';
import { generateNKeysBetween } from 'fractional-indexing';
import { type Column, ColumnError, fromStored, type StoredValue } from './columns.ts';
import { cellFromText, INFER_ROWS, MAX_RECORD_BYTES } from './csv.ts';
import { newRowId } from './ids.ts';
import { openWorkerStore, type Repositories, type Store, type StoreConnection } from '../store/index.ts';
import type { RejectedSample } from '../store/table-jobs.ts';

export interface ImportWorkerData {
  delimiter: string;
  /** The server's database, opened on a connection of this thread's own. */
  store: StoreConnection;
  importId: string;
}

export interface ImportPlan {
  /** The column each header position fills; null skips it. */
  byHeader: (Column | null)[];
  /** Every column of the staging table. */
  columns: Column[];
  stagingId: string;
  /** The table that receives an import into an existing table (its job shows progress; append checks uniques). */
  target: { id: string; columns: Column[]; append: boolean } | null;
  /** Order keys of staged rows start after this one (the target's last row on append). */
  lastKey: string | null;
  timeZone: string | undefined;
  maxRowBytes: number;
  batchSize: number;
  maxSamples: number;
}

export interface ImportSummary {
  processed: number;
  accepted: number;
  rejected: number;
  cellsRejected: number;
  samples: RejectedSample[];
}

export type WorkerMessage =
  | { type: 'need' }
  | { type: 'head'; headers: string[] | null; samples: string[][] }
  | ({ type: 'done' } & ImportSummary)
  | { type: 'failed'; message: string; canceled: boolean };

export type MainMessage = { type: 'chunk'; data: Uint8Array } | { type: 'end' } | { type: 'plan'; plan: ImportPlan } | { type: 'stop' };

/** Text a batch of rows may hold before it is written (wide rows make smaller batches). */
const BATCH_CHARS = 1024 * 1024;
/** Text the type-inference samples may hold. */
const SAMPLE_CHARS = 2 * 1024 * 1024;

class Failure extends Error {
  readonly canceled: boolean;
  constructor(message: string, canceled = false) {
    super(message);
    this.canceled = canceled;
  }
}

const port = parentPort!;
const post = (m: WorkerMessage) => port.postMessage(m);
const data = workerData as ImportWorkerData;

// Messages from the server thread become promises the import awaits.
let onChunk: ((m: MainMessage) => void) | null = null;
let resolvePlan!: (p: ImportPlan) => void;
const planned = new Promise<ImportPlan>((r) => (resolvePlan = r));
let stopping = false;
port.on('message', (m: MainMessage) => {
  if (m.type === 'plan') resolvePlan(m.plan);
  else if (m.type === 'stop') stopping = true;
  else onChunk?.(m);
});

/** Bytes handed to the parser at a time: a file of short records yields this many bytes' worth of records at once. */
const PARSE_SLICE = 64 * 1024;
let pending: Buffer | null = null;
const source = new Readable({
  highWaterMark: 0,
  read() {
    const pushSlice = () => {
      const slice = pending!.subarray(0, PARSE_SLICE);
      pending = pending!.length > PARSE_SLICE ? pending!.subarray(PARSE_SLICE) : null;
      this.push(slice);
    };
    if (pending) return pushSlice();
    onChunk = (m) => {
      onChunk = null;
      if (m.type !== 'chunk') return void this.push(null);
      if (m.data.byteLength === 0) return void this._read(0);
      pending = Buffer.from(m.data.buffer, m.data.byteOffset, m.data.byteLength);
      pushSlice();
    };
    post({ type: 'need' });
  },
});

async function setJobProgress(tx: Repositories, tableId: string, jobId: string, rowsProcessed: number): Promise<void> {
  const t = await tx.userTables.get(tableId);
  if (t?.job?.id === jobId) await tx.userTables.update(tableId, { job: { ...t.job, rowsProcessed } });
}

async function run(store: Store): Promise<void> {
  const parser = source.pipe(
    parse({ delimiter: data.delimiter, bom: true, relax_column_count: true, skip_empty_lines: false, raw: true, max_record_size: MAX_RECORD_BYTES, relax_quotes: false }),
  );
  const records = parser[Symbol.asyncIterator]() as AsyncIterator<{ record: string[]; raw: string }>;
  // Line numbers come from the raw text, so CRLF and quoted line breaks count once.
  let newlines = 0;
  const next = async (): Promise<{ record: string[]; line: number } | null> => {
    try {
      for (;;) {
        const r = await records.next();
        if (r.done) return null;
        const line = newlines + 1;
        // The raw text of a record holds its inner line breaks; of the break that ends it, csv-parse keeps a
        // "\n" but only the "\r" of a "\r\n".
        const raw = r.value.raw;
        for (let i = raw.indexOf('\n'); i !== -1; i = raw.indexOf('\n', i + 1)) newlines++;
        if (!raw.endsWith('\n')) newlines++;
        if (r.value.record.length === 1 && r.value.record[0]!.trim() === '') continue; // a blank line
        return { record: r.value.record, line };
      }
    } catch (err) {
      const e = err as { code?: string; message?: string; lines?: number };
      throw new Failure(`The file is not valid CSV${e.lines ? ` (line ${e.lines})` : ''}: ${e.message ?? e.code ?? 'unreadable'}.`);
    }
  };

  const first = await next();
  const buffered: { record: string[]; line: number }[] = [];
  // Type inference reads up to INFER_ROWS records, and no more than SAMPLE_CHARS of text (long records).
  let sampledChars = 0;
  while (first && buffered.length < INFER_ROWS && sampledChars < SAMPLE_CHARS) {
    const r = await next();
    if (!r) break;
    buffered.push(r);
    for (const f of r.record) sampledChars += f.length;
  }
  post({ type: 'head', headers: first?.record ?? null, samples: buffered.map((r) => r.record) });
  if (!first) return;
  const headers = first.record;
  const plan = await planned;
  const { byHeader, columns, target, timeZone, maxRowBytes } = plan;
  const width = columns.length;
  const slot = new Map(columns.map((c, i) => [c.id, i]));
  const slots = byHeader.map((c) => (c ? slot.get(c.id)! : -1));
  const uniques = columns.flatMap((c, i) => (c.unique ? [{ c, i, existing: target?.append === true && target.columns.some((t) => t.id === c.id) }] : []));
  const required = columns.flatMap((c, i) => (c.required ? [{ c, i }] : []));

  const summary: ImportSummary = { processed: 0, accepted: 0, rejected: 0, cellsRejected: 0, samples: [] };
  let lastKey = plan.lastKey;
  const now = new Date().toISOString();
  // The batch being built: each row's cells in column order, row after row, and each row's line (for the
  // uniqueness checks, which run inside the batch's transaction).
  let cells: StoredValue[] = [];
  let lines: number[] = [];
  let batchChars = 0;

  const reject = (line: number, code: string, message: string, count = 0) => {
    summary.rejected++;
    summary.cellsRejected += count;
    if (summary.samples.length < plan.maxSamples) summary.samples.push({ code, line, message });
  };

  const flush = async () => {
    const batchCells = cells;
    const batchLines = lines;
    cells = [];
    lines = [];
    batchChars = 0;
    const canceled = await store.transaction(async (tx) => {
      const current = await tx.tableImports.get(data.importId);
      if (current?.status !== 'processing') return true;
      let rowCells = batchCells;
      let count = batchLines.length;
      if (uniques.length > 0) {
        // Unique values are checked here, against the rows staged before, this batch's earlier rows and (on append)
        // the target's rows, through their indexes: memory stays bounded however many values the file has.
        const kept: StoredValue[] = [];
        const inBatch = uniques.map(() => new Set<StoredValue>());
        count = 0;
        for (let row = 0; row < batchLines.length; row++) {
          let taken: { c: Column; v: StoredValue } | null = null;
          for (const [k, u] of uniques.entries()) {
            const v = batchCells[row * width + u.i]!;
            if (v === null) continue;
            if (inBatch[k]!.has(v) || (await tx.tableRows.hasValue(plan.stagingId, u.c, v)) || (u.existing && (await tx.tableRows.hasValue(target!.id, u.c, v)))) {
              taken = { c: u.c, v };
              break;
            }
          }
          if (taken) {
            reject(batchLines[row]!, 'UNIQUE', `Column "${taken.c.name}" is unique and ${JSON.stringify(fromStored(taken.c, taken.v))} is already used.`, 1);
            continue;
          }
          for (const [k, u] of uniques.entries()) {
            const v = batchCells[row * width + u.i]!;
            if (v !== null) inBatch[k]!.add(v);
          }
          for (let i = row * width; i < (row + 1) * width; i++) kept.push(batchCells[i]!);
          count++;
        }
        rowCells = kept;
      }
      if (count > 0) {
        const keys = generateNKeysBetween(lastKey, null, count);
        const ids = keys.map(() => newRowId());
        const stamps = keys.map(() => now);
        await tx.tableRows.insertFlat(plan.stagingId, columns, { ids, orderKeys: keys, createdAt: stamps, updatedAt: stamps, cells: rowCells });
        lastKey = keys.at(-1)!;
        summary.accepted += count;
      }
      const { processed, rejected, cellsRejected, samples } = summary;
      await tx.tableImports.update(data.importId, { rowsProcessed: processed, rowsRejected: rejected, cellsRejected, rejectedSamples: samples, updatedAt: new Date().toISOString() });
      if (target) await setJobProgress(tx, target.id, data.importId, processed);
      return false;
    });
    if (canceled) throw new Failure('The import was canceled.', true);
    if (stopping) throw new Failure('The server is shutting down.');
  };

  const row: StoredValue[] = new Array(width);
  const handle = async (rec: { record: string[]; line: number }) => {
    summary.processed++;
    const { record, line } = rec;
    if (record.length !== headers.length) return reject(line, 'FIELD_COUNT', `The row has ${record.length} fields; the header has ${headers.length}.`);
    row.fill(null);
    let problems: string[] | null = null;
    for (let i = 0; i < record.length; i++) {
      const s = slots[i]!;
      if (s < 0) continue;
      try {
        row[s] = cellFromText(byHeader[i]!, record[i]!, timeZone);
      } catch (err) {
        if (!(err instanceof ColumnError)) throw err;
        (problems ??= []).push(`${byHeader[i]!.name}: ${err.message}`);
      }
    }
    if (problems) return reject(line, 'INVALID_VALUE', problems.join('; '), problems.length);
    for (const { c, i } of required) {
      if (row[i] === null) return reject(line, 'REQUIRED', `Column "${c.name}" is required.`, 1);
    }
    // A UTF-8 character takes at most 3 bytes per UTF-16 unit: only rows that could be too large are measured.
    let chars = 0;
    for (const f of record) chars += f.length + 3;
    if (chars * 3 > maxRowBytes && Buffer.byteLength(JSON.stringify(record)) > maxRowBytes) {
      return reject(line, 'ROW_TOO_LARGE', 'The row is larger than a row may be.');
    }
    for (let i = 0; i < width; i++) cells.push(row[i]!);
    lines.push(line);
    batchChars += chars;
    if (lines.length >= plan.batchSize || batchChars >= BATCH_CHARS) await flush();
  };

  for (const r of buffered) await handle(r);
  for (let r = await next(); r; r = await next()) await handle(r);
  await flush();
  post({ type: 'done', ...summary });
}

async function main(): Promise<void> {
  let store: Store | null = null;
  try {
    store = openWorkerStore(data.store);
    await run(store);
  } catch (err) {
    post({
      type: 'failed',
      message: err instanceof Failure ? err.message : `The import failed: ${err instanceof Error ? err.message : String(err)}`,
      canceled: err instanceof Failure && err.canceled,
    });
  } finally {
    await store?.close();
    port.close();
  }
}

void main();
