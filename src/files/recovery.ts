// Uploads whose completing process died: a process killed while completing an upload leaves its session
// `completing` (refused by a new complete) and its bytes under the commit's temporary name. Nothing is done
// at start (another live process may be completing it); the purge job (./purge.ts) hands a session back to
// its client once it has been `completing` for longer than any completion takes (FILE_STALE_AFTER_SECONDS).
import type { Logger } from 'pino';
import type { Store } from '../store/index.ts';
import type { BlobStore } from './blob-store.ts';

export interface StaleCompletionReport {
  /** Sessions returned to `uploading` with their bytes: the client can complete them again. */
  restored: number;
  /** Sessions whose bytes were lost: `failed`, the client starts a new upload. */
  failed: number;
}

const LOST = 'The server stopped while completing this upload and its bytes were lost; start a new upload.';

/** Returns sessions `completing` since before `staleBefore` to their client (uploading with their bytes, or failed). */
export async function returnStaleCompletions(store: Store, blobs: BlobStore, staleBefore: string, logger?: Logger): Promise<StaleCompletionReport> {
  const report: StaleCompletionReport = { restored: 0, failed: 0 };
  for (const session of await store.fileUploads.completing()) {
    if (session.updatedAt >= staleBefore) continue;
    const kept = (await blobs.restoreUpload(session.id)) || session.size === 0;
    const at = new Date().toISOString();
    const changed = await store.transaction(async (tx) => {
      // Only if nobody moved it on meanwhile (a completion that did finish, however late, stands).
      const current = await tx.fileUploads.get(session.id);
      if (current?.status !== 'completing' || current.updatedAt !== session.updatedAt) return false;
      await tx.fileUploads.setStatus(session.id, kept ? 'uploading' : 'failed', at, kept ? {} : { error: LOST });
      return true;
    });
    if (!changed) continue;
    if (kept) report.restored++;
    else report.failed++;
  }
  if (report.restored + report.failed > 0) logger?.warn({ uploads: report }, 'uploads left completing by a process that died were handed back');
  return report;
}
