// Start-up recovery of uploads, the counterpart of the run queue's recovery: a process killed while completing
// an upload leaves its session `completing` (refused by a new complete) and temporary files nobody will finish.
// Runs only at start, while this process holds the data directory lock, so no other process is completing
// anything: every `completing` session and every temporary file belongs to a process that is gone.
import type { Logger } from 'pino';
import type { Store } from '../store/index.ts';
import type { BlobStore } from './blob-store.ts';

export interface UploadRecoveryReport {
  /** Sessions returned to `uploading` with their bytes: the client can complete them again. */
  restored: number;
  /** Sessions whose bytes were lost: `failed`, the client starts a new upload. */
  failed: number;
  /** Temporary files of writes that never finished. */
  sweptTemporary: number;
  /** Staged bytes of sessions that no longer take parts (aborted, failed, expired, gone). */
  sweptStaging: number;
}

const LOST = 'The server stopped while completing this upload and its bytes were lost; start a new upload.';

export async function recoverUploads(store: Store, blobs: BlobStore, logger: Logger): Promise<UploadRecoveryReport> {
  const report: UploadRecoveryReport = { restored: 0, failed: 0, sweptTemporary: 0, sweptStaging: 0 };
  for (const session of await store.fileUploads.completing()) {
    const kept = (await blobs.restoreUpload(session.id)) || session.size === 0;
    const at = new Date().toISOString();
    await store.transaction((tx) => tx.fileUploads.setStatus(session.id, kept ? 'uploading' : 'failed', at, kept ? {} : { error: LOST }));
    if (kept) report.restored++;
    else report.failed++;
  }
  report.sweptTemporary = await blobs.sweepTemporary();
  for await (const staged of blobs.listUploads()) {
    const session = await store.fileUploads.get(staged.uploadId);
    if (session?.status === 'uploading') continue;
    try {
      await blobs.discardUpload(staged.uploadId);
      report.sweptStaging++;
    } catch (err) {
      logger.warn({ err, name: staged.uploadId }, 'could not remove a staged upload');
    }
  }
  if (report.restored + report.failed + report.sweptTemporary + report.sweptStaging > 0) {
    logger.warn({ uploads: report }, 'uploads interrupted by a previous stop were recovered');
  }
  return report;
}
