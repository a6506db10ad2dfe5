// Unzipping an uploaded archive: the server thread's side of an unzip job. The archive is read, checked and
// inflated into blobs by a worker thread of its own (unzip-worker.ts), one per job, with a capped heap and a
// wall-clock budget (UNZIP_TIMEOUT_MS); this side only sees the plan's summary and the list of written blobs.
import type { BlobStore } from './blob-store.ts';
import type { FileLimits } from '../config.ts';
import { JobWorker } from '../workers/job-worker.ts';
import type { ExtractedEntry, UnzipPlanSummary, UnzipWorkerData, UnzipWorkerMessage } from './unzip-worker.ts';

export type { ExtractedEntry, UnzipFailure } from './unzip-worker.ts';

/**
 * Heap of an unzip worker (MB): one entry's buffers and the plan, which keeps every entry of the central
 * directory until extraction (about 1.2 KB each with 50-character names, measured at 100,000 entries), so the
 * cap grows with UNZIP_MAX_ENTRIES and an archive within the limits fits.
 */
export const unzipHeapMb = (maxEntries: number) => 64 + Math.ceil((maxEntries * 2) / 1024);

/**
 * Plans and extracts `archive` in a worker; `beforeExtract` sees the plan first (the quota check) and may throw
 * to stop there. Fails with a JobWorkerError whose `reason` says why (ZipRefused's reasons, `not_extracted`,
 * `timeout`, `memory`, `crash`). Blobs written before a failure are left for the purge job.
 */
export async function unzipArchive(
  blobs: BlobStore,
  archive: { blobKey: string; size: number },
  limits: Pick<FileLimits, 'unzipMaxEntries' | 'unzipMaxBytes' | 'unzipTimeoutMs'>,
  beforeExtract: (plan: UnzipPlanSummary) => Promise<void>,
): Promise<{ entries: ExtractedEntry[]; skipped: number }> {
  const data: UnzipWorkerData = { blobs: blobs.settings, key: archive.blobKey, size: archive.size, maxEntries: limits.unzipMaxEntries, maxBytes: limits.unzipMaxBytes };
  const heapMb = unzipHeapMb(limits.unzipMaxEntries);
  const worker = new JobWorker<UnzipWorkerMessage>(new URL('./unzip-worker.ts', import.meta.url), data, 'unzip', null, {
    heapMb,
    outOfMemory: `The unzip needed more than the ${heapMb} MB of memory an unzip may use and was stopped (are the archive's entry names very long?).`,
    timeout: { ms: limits.unzipTimeoutMs, setting: 'UNZIP_TIMEOUT_MS' },
  });
  try {
    const plan = await worker.take();
    if (plan.type !== 'planned') throw new Error(`unexpected ${plan.type} from the unzip worker`);
    await beforeExtract(plan);
    worker.post({ type: 'extract' });
    const done = await worker.take();
    if (done.type !== 'done') throw new Error(`unexpected ${done.type} from the unzip worker`);
    return { entries: done.entries, skipped: plan.skipped };
  } finally {
    await worker.close();
  }
}
