// Uploads whose completing process died: a completion holds its session under a lease (src/files/uploads.ts);
// a process killed while completing leaves the session `completing` and its bytes under the commit's temporary
// name. Once the lease has run out, the session goes back to its client: by the purge job's next pass, or at
// once when the client completes it again. Nothing is done at start (another live process may be completing it).
import type { Logger } from 'pino';
import type { Store } from '../store/index.ts';
import type { UploadSessionRecord } from '../store/file-uploads.ts';
import type { BlobStore } from './blob-store.ts';

export interface StaleCompletionReport {
  /** Sessions returned to `uploading` with their bytes: the client can complete them again. */
  restored: number;
  /** Sessions whose bytes were lost: `failed`, the client starts a new upload. */
  failed: number;
}

const LOST = 'The server stopped while completing this upload and its bytes were lost; start a new upload.';

/** Hands one abandoned completion back: `uploading` with its bytes (complete it again), or `failed` if they are lost. */
export async function handBackCompletion(store: Store, blobs: BlobStore, session: UploadSessionRecord, now = new Date().toISOString()): Promise<'restored' | 'failed' | null> {
  // A live completer (its lease not run out) keeps the session and its bytes.
  if (session.leaseUntil !== null && session.leaseUntil >= now) return null;
  const kept = (await blobs.restoreUpload(session.id)) || session.size === 0;
  // Only if its lease is still expired: an expired lease cannot be renewed, so this holds unless it finished.
  const moved = await store.transaction((tx) => tx.fileUploads.handBack(session.id, kept ? 'uploading' : 'failed', now, kept ? null : LOST));
  return moved ? (kept ? 'restored' : 'failed') : null;
}

/** Hands back every session whose completer's lease ran out by `now`. */
export async function returnAbandonedCompletions(store: Store, blobs: BlobStore, now: string, logger?: Logger): Promise<StaleCompletionReport> {
  const report: StaleCompletionReport = { restored: 0, failed: 0 };
  for (const session of await store.fileUploads.abandonedCompletions(now)) {
    const outcome = await handBackCompletion(store, blobs, session, now);
    if (outcome) report[outcome]++;
  }
  if (report.restored + report.failed > 0) logger?.warn({ uploads: report }, 'uploads left completing by a process that died were handed back');
  return report;
}
