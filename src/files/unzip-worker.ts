// An unzip job's worker thread: reads an uploaded archive's central directory and checks it (planZip), then
// inflates every entry into the blob store (extractZip), through a blob store of its own opened from the same
// settings as the server's. It runs here because inflating is CPU work on untrusted bytes: in a worker with a
// capped heap and a wall-clock budget (src/workers/job-worker.ts) a hostile archive can cost the server neither
// its event loop nor more memory than the cap. It needs no database: the server thread checks the storage
// quota between the two steps and records the folders and files, in one transaction, once the worker is done.
// Messages (worker ↔ server thread):
//   start: workerData UnzipWorkerData
//   → planned UnzipPlanSummary       the archive passed every check
//   ← extract                        the quota allows it: write the entries
//   → done {entries}                 every entry is a blob now | failed {message, canceled, reason}
import { parentPort, workerData } from 'node:worker_threads';
import { openBlobStore, type BlobInfo, type BlobStoreSettings } from './blob-store.ts';
import { extractZip, planZip, ZipRefused } from './zip.ts';
import { ContentError } from '../content/guards.ts';

export interface UnzipWorkerData {
  blobs: BlobStoreSettings;
  /** The archive's blob and its size. */
  key: string;
  size: number;
  maxEntries: number;
  maxBytes: number;
}

export interface UnzipPlanSummary {
  /** Entries to extract, entries skipped (macOS and Windows metadata), their declared uncompressed bytes. */
  files: number;
  skipped: number;
  totalBytes: number;
}

export interface ExtractedEntry {
  /** Folder segments below the extraction folder (raw names, not yet encoded). */
  folders: string[];
  name: string;
  blob: BlobInfo;
}

export type UnzipWorkerMessage = ({ type: 'planned' } & UnzipPlanSummary) | { type: 'done'; entries: ExtractedEntry[] };

/**
 * Why an unzip failed, as the server thread maps it: ZipRefused's reasons, or `not_extracted` when an entry could
 * not be inflated or written (a corrupt archive, usually).
 */
export type UnzipFailure = ZipRefused['reason'] | 'not_extracted';

const port = parentPort!;
const data = workerData as UnzipWorkerData;
const fail = (message: string, reason?: UnzipFailure) => port.postMessage({ type: 'failed', message, canceled: false, reason });

const extractRequested = new Promise<void>((resolve) => port.on('message', (m: { type: string }) => m.type === 'extract' && resolve()));

const blobs = openBlobStore(data.blobs);

async function run(): Promise<void> {
  const plan = await planZip(blobs, data.key, data.size, { maxEntries: data.maxEntries, maxBytes: data.maxBytes });
  port.postMessage({ type: 'planned', files: plan.files.length, skipped: plan.skipped, totalBytes: plan.totalBytes } satisfies UnzipWorkerMessage);
  await extractRequested;
  const entries: ExtractedEntry[] = [];
  try {
    await extractZip(blobs, data.key, data.size, plan, { maxBytes: data.maxBytes }, async (item, content) => {
      const blob = await blobs.write(content, { expectedSize: item.entry.uncompressedSize });
      entries.push({ folders: item.folders, name: item.name, blob });
    });
  } catch (err) {
    if (err instanceof ContentError) throw new ZipRefused('too_large', err.message);
    if (err instanceof ZipRefused) throw err;
    return fail(`The archive could not be extracted: ${err instanceof Error ? err.message : String(err)}`, 'not_extracted');
  }
  port.postMessage({ type: 'done', entries } satisfies UnzipWorkerMessage);
}

run().then(
  () => {
    blobs.close();
    port.close();
  },
  (err: unknown) => {
    blobs.close();
    if (err instanceof ZipRefused) fail(err.message, err.reason);
    else fail(`The unzip failed: ${err instanceof Error ? err.message : String(err)}`);
    port.close();
  },
);
