// The life of an upload session, shared by workspace files, knowledge documents and table imports: its control
// token, which parts must have arrived before it completes, and completion itself (claim the session, commit the
// staged bytes into a blob, let the caller record what the bytes became, or mark the session failed).
import type { Repositories, Store } from '../store/index.ts';
import type { UploadSessionRecord } from '../store/file-uploads.ts';
import type { Audit, Mutate } from '../domain/changes.ts';
import { DomainError } from '../domain/errors.ts';
import { BlobSizeError, type BlobInfo, type BlobStore } from './blob-store.ts';
import { checkUploadToken } from './tokens.ts';
import { handBackCompletion } from './recovery.ts';
import { LeaseKeeper, PROCESS_OWNER, leaseUntil } from '../workers/lease.ts';
import type { LeaseSettings } from '../config.ts';

const nowIso = () => new Date().toISOString();

export const isExpired = (s: UploadSessionRecord) => Date.parse(s.expiresAt) <= Date.now();

/** The exact byte count of part `n` (1-based): every part is `partSize` but the last, which holds the rest. */
export const partLength = (s: UploadSessionRecord, n: number) => (n < s.partCount ? s.partSize : s.size - (s.partCount - 1) * s.partSize);

/** Refuses an `upload-token` that was not signed for `subject` in this workspace, or has expired (403). */
export function assertUploadToken(key: Buffer, token: string, subject: string, workspaceId: string): void {
  const problem = checkUploadToken(key, token, subject, workspaceId);
  if (problem) {
    throw new DomainError(
      'forbidden',
      problem === 'expired' ? 'The upload token has expired.' : problem === 'foreign' ? 'The upload token belongs to another upload session.' : 'The upload token is not valid.',
      { code: 'INVALID_UPLOAD_TOKEN', reason: problem },
    );
  }
}

/** Refuses completion unless every part arrived with its exact size (409 listing the first missing parts). */
export function assertAllPartsArrived(session: UploadSessionRecord, parts: { partNumber: number; size: number }[]): void {
  const missing: number[] = [];
  for (let n = 1; n <= session.partCount; n++) {
    const expected = partLength(session, n);
    const got = parts.find((p) => p.partNumber === n);
    if (expected > 0 && (!got || got.size !== expected)) missing.push(n);
  }
  if (missing.length > 0) {
    throw new DomainError('conflict', `Not every byte has arrived: ${missing.length} of ${session.partCount} parts are missing.`, {
      code: 'UPLOAD_INCOMPLETE',
      missingParts: missing.slice(0, 100),
    });
  }
}

/** Refuses completion unless the session is still receiving and every part arrived with its exact size. */
export async function assertComplete(repos: Repositories, session: UploadSessionRecord): Promise<void> {
  if (session.status === 'completed') throw new DomainError('conflict', 'The upload is already completed.', { code: 'UPLOAD_COMPLETED' });
  if (session.status !== 'uploading') throw new DomainError('conflict', `The upload session is ${session.status}.`, { code: 'UPLOAD_NOT_ACTIVE', status: session.status });
  if (isExpired(session)) throw new DomainError('conflict', 'The upload session is expired.', { code: 'UPLOAD_NOT_ACTIVE', status: 'expired' });
  assertAllPartsArrived(session, await repos.fileUploads.parts(session.id));
}

/** Marks a session aborted (audited as `<auditPrefix>.aborted`) and drops its staged bytes; an aborted one stays as it is. */
export async function abortUpload(io: { blobs: BlobStore; mutate: Mutate }, session: UploadSessionRecord, auditPrefix: string): Promise<void> {
  if (session.status === 'aborted') return;
  await io.mutate(async (tx, audit) => {
    await tx.fileUploads.setStatus(session.id, 'aborted', nowIso());
    audit({ action: `${auditPrefix}.aborted`, resourceType: auditPrefix, resourceId: session.id, resourceName: session.name });
  });
  await io.blobs.discardUpload(session.id);
}

/**
 * Completes an upload session: claims it (so two completions cannot both go ahead), commits its staged bytes
 * into a blob, and has `register` record what the blob became, in one change with its audit event. A failure
 * leaves the session `failed` with a message a client can read (a DomainError's own, else `registrationFailure`).
 * The commit's temporary name, kept for crash recovery until the blob is recorded, is dropped either way.
 */
export async function completeUpload<T>(
  io: { store: Store; blobs: BlobStore; mutate: Mutate; leases: LeaseSettings },
  sessionId: string,
  register: (tx: Repositories, audit: Audit, blob: BlobInfo, session: UploadSessionRecord) => Promise<T>,
  registrationFailure: string,
): Promise<T> {
  // A completion whose process died holds the session until its lease runs out; after that, completing again
  // hands the session back first (as the purge job would) and goes ahead.
  const before = await io.store.fileUploads.get(sessionId);
  if (before?.status === 'completing') await handBackCompletion(io.store, io.blobs, before);
  const session = await io.store.transaction(async (tx) => {
    const current = (await tx.fileUploads.get(sessionId))!;
    await assertComplete(tx, current);
    if (!(await tx.fileUploads.claimCompletion(sessionId, PROCESS_OWNER, leaseUntil(io.leases.ttlMs), nowIso()))) {
      throw new DomainError('conflict', 'The upload session changed while it was being completed; read it again.', { code: 'UPLOAD_NOT_ACTIVE', status: current.status });
    }
    return current;
  });
  const keeper = new LeaseKeeper(() => io.store.transaction((tx) => tx.fileUploads.renewCompletion(sessionId, PROCESS_OWNER, leaseUntil(io.leases.ttlMs), nowIso())), io.leases.renewMs);
  try {
    const blob = await commitStaged(io, session, 'The uploaded bytes could not be stored.', async () => {});
    let result: T;
    try {
      result = await io.mutate(async (tx, audit) => {
        // A completion that lost its lease (it stalled past it and the session went back to its client) records nothing.
        if (!(await tx.fileUploads.holdsCompletion(sessionId, PROCESS_OWNER, nowIso()))) {
          throw new DomainError('conflict', 'The upload took too long to complete and was handed back; complete it again.', { code: 'UPLOAD_NOT_ACTIVE', status: 'uploading' });
        }
        return register(tx, audit, blob, session);
      });
    } catch (err) {
      const message = err instanceof DomainError ? err.message : registrationFailure;
      const held = await io.store.transaction(async (tx) => {
        if (!(await tx.fileUploads.holdsCompletion(sessionId, PROCESS_OWNER, nowIso()))) return false;
        await tx.fileUploads.setStatus(sessionId, 'failed', nowIso(), { error: message });
        return true;
      });
      if (held) await io.blobs.discardUpload(sessionId);
      throw err;
    }
    await io.blobs.discardUpload(sessionId);
    return result;
  } finally {
    keeper.stop();
  }
}

/**
 * Commits a claimed session's staged bytes into a blob. If they cannot be (too few or too many bytes, or the
 * disk failed), the session is marked failed with `failure` (or the size problem) in the same transaction as
 * `alsoOnFailure` writes, and a size problem is answered as 409 UPLOAD_INCOMPLETE.
 */
export async function commitStaged(
  io: { store: Store; blobs: BlobStore },
  session: UploadSessionRecord,
  failure: string,
  alsoOnFailure: (tx: Repositories, message: string) => Promise<void>,
): Promise<BlobInfo> {
  try {
    return await io.blobs.commitUpload(session.id, session.size);
  } catch (err) {
    const message = err instanceof BlobSizeError ? err.message : failure;
    await io.store.transaction(async (tx) => {
      await tx.fileUploads.setStatus(session.id, 'failed', nowIso(), { error: message });
      await alsoOnFailure(tx, message);
    });
    if (err instanceof BlobSizeError) throw new DomainError('conflict', message, { code: 'UPLOAD_INCOMPLETE' });
    throw err;
  }
}

/** A workspace file upload session by id, after checking the `upload-token` header was signed for it (404, 403). */
export async function loadUploadSession(repos: Repositories, key: Buffer, uploadId: string, token: string, workspaceId: string): Promise<UploadSessionRecord> {
  const session = await repos.fileUploads.get(uploadId);
  if (!session || session.workspaceId !== workspaceId) throw new DomainError('not_found', 'Upload session not found.');
  assertUploadToken(key, token, uploadId, workspaceId);
  return session;
}
