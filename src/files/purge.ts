// The purge job: removes what no one can reach any more. Archived files (with their versions and share) and
// archived folders past the retention period, upload sessions that expired unfinished (and their staged
// bytes), and blobs no row refers to. A blob or staging file younger than the grace period is left alone,
// since a write that has stored its bytes may not have committed its row yet.
//
// It is also where a dead process's leftovers are swept, never at start (another live process may own them):
// sessions whose completer's lease ran out go back to their client (./recovery.ts), and temporary files
// untouched for the grace period are removed.
import type { Store } from '../store/index.ts';
import type { BlobStore } from './blob-store.ts';
import type { Logger } from 'pino';
import { returnAbandonedCompletions } from './recovery.ts';

export interface PurgeOptions {
  now?: number;
  archiveRetentionMs: number;
  /**
   * Age below which unreferenced blobs, staging and temporary files are kept, and after which a session still
   * `completing` is taken to be abandoned by its process (FILE_STALE_AFTER_SECONDS).
   */
  graceMs?: number;
  logger?: Logger;
  /** Finished upload sessions are forgotten after this long. */
  sessionRetentionMs?: number;
}

export interface PurgeReport {
  files: number;
  folders: number;
  expiredUploads: number;
  /** Sessions left `completing` by a dead process, handed back (`uploading`) or failed when their bytes were lost. */
  abandonedCompletions: number;
  stagingFiles: number;
  temporaryFiles: number;
  /** What a server that died mid-write or mid-purge left in the shared blob place (./blob-store.ts tidyShared). */
  sharedLeftovers: number;
  blobs: number;
}

const HOUR = 3600_000;

/** Every blob some row still needs: file versions and unfinished uploads, run outputs, knowledge sources. */
export async function blobKeysInUse(store: Store): Promise<Set<string>> {
  const referenced = await store.files.referencedBlobKeys();
  for (const key of await store.runFiles.blobKeys()) referenced.add(key); // files produced by runs
  // Knowledge documents keep their source bytes (for re-processing) in the same blob store.
  for (const key of await store.knowledgeDocuments.blobKeys()) referenced.add(key);
  return referenced;
}

export async function purgeFiles(store: Store, blobs: BlobStore, options: PurgeOptions): Promise<PurgeReport> {
  const now = options.now ?? Date.now();
  const grace = options.graceMs ?? HOUR;
  const cutoff = new Date(now - options.archiveRetentionMs).toISOString();
  const report: PurgeReport = { files: 0, folders: 0, expiredUploads: 0, abandonedCompletions: 0, stagingFiles: 0, temporaryFiles: 0, sharedLeftovers: 0, blobs: 0 };

  // First, before the temporary files go: a commit's bytes wait under a temporary name.
  const abandoned = await returnAbandonedCompletions(store, blobs, new Date(now).toISOString(), options.logger);
  report.abandonedCompletions = abandoned.restored + abandoned.failed;

  for (;;) {
    const batch = await store.files.archivedBefore(cutoff, 500);
    if (batch.length === 0) break;
    await store.transaction(async (tx) => {
      for (const f of batch) await tx.files.delete(f.id); // versions and share go with it (ON DELETE CASCADE)
    });
    report.files += batch.length;
    if (batch.length < 500) break;
  }
  report.folders = await store.transaction((tx) => tx.fileFolders.purgeArchivedBefore(cutoff));

  const nowIso = new Date(now).toISOString();
  const expired = await store.fileUploads.expiredUnfinished(nowIso, 1000);
  for (const s of expired) {
    await store.transaction((tx) => tx.fileUploads.setStatus(s.id, 'expired', nowIso, { error: 'The upload session expired before it was completed.' }));
    await blobs.discardUpload(s.id);
    report.expiredUploads++;
  }
  await store.transaction((tx) => tx.fileUploads.deleteFinishedBefore(new Date(now - (options.sessionRetentionMs ?? 7 * 24 * HOUR)).toISOString()));

  // Staged bytes whose session is gone or no longer receiving.
  for await (const staged of blobs.listUploads()) {
    if (now - staged.modifiedAt < grace) continue;
    const session = await store.fileUploads.get(staged.uploadId);
    if (session && session.status === 'uploading' && Date.parse(session.expiresAt) > now) continue;
    await blobs.discardUpload(staged.uploadId);
    report.stagingFiles++;
  }

  // Temporary files of writes that died. A commit's bytes stay while its session is still being completed
  // (the bytes' age says nothing then: they are as old as the last part written).
  for await (const temp of blobs.listTemporary()) {
    if (now - temp.modifiedAt < grace) continue;
    if (temp.uploadId) {
      const session = await store.fileUploads.get(temp.uploadId);
      if (session && (session.status === 'completing' || session.status === 'finalizing')) continue;
    }
    await blobs.removeTemporary(temp.name);
    report.temporaryFiles++;
  }

  // Blobs may be shared with other servers (one BLOB_DIR or bucket, one database): one that a writer is
  // committing right now is young, or was just refreshed, and deleteIfUnused looks at that time again last.
  report.sharedLeftovers = await blobs.tidyShared(now - grace);
  const referenced = await blobKeysInUse(store);
  for await (const blob of blobs.list()) {
    if (referenced.has(blob.key) || now - blob.modifiedAt < grace) continue;
    if (await blobs.deleteIfUnused(blob.key, now - grace)) report.blobs++;
  }
  return report;
}

/** Runs the purge every `intervalMs` until stopped; the timer never keeps the process alive. */
export function startPurgeTimer(run: () => Promise<PurgeReport>, intervalMs: number, logger: Logger): () => void {
  if (intervalMs <= 0) return () => {};
  let running = false;
  const timer = setInterval(() => {
    if (running) return;
    running = true;
    run()
      .then((report) => logger.info({ purge: report }, 'file purge finished'))
      .catch((err) => logger.error({ err }, 'file purge failed'))
      .finally(() => (running = false));
  }, intervalMs);
  timer.unref();
  return () => clearInterval(timer);
}
